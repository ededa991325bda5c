// The UI page is a Bun HTML bundle, which Bun serves itself with no way to add headers. So it is
// served by an inner listener on loopback, and the public UI listener relays GET/HEAD requests to
// it and adds the security headers (CSP, frame and sniffing protection) to what comes back.
import type { HTMLBundle } from "bun";
import { withSecurityHeaders } from "./headers.ts";
import { pathOf } from "./request-log.ts";

const RELAYED_REQUEST_HEADERS = ["accept", "if-none-match", "if-modified-since"];
/** Set by the inner hop; the outer response is re-framed by Bun (fetch already decoded the body). */
const DROPPED_RESPONSE_HEADERS = ["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"];

export interface UiPageServer {
  /** The page or one of its assets; `undefined` when the bundle has no such path. */
  fetch(request: Request): Promise<Response | undefined>;
  stop(): Promise<void>;
}

export function startUiPageServer(page: HTMLBundle): UiPageServer {
  const inner = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    development: false,
    routes: { "/": page },
    fetch: () => new Response(null, { status: 404 }),
  });
  return {
    async fetch(request) {
      if (request.method !== "GET" && request.method !== "HEAD") return undefined;
      // Read as a string: `new URL` throws on what a client may put in Host (`[`, `a b`).
      const path = pathOf(request.url);
      const headers = new Headers();
      for (const name of RELAYED_REQUEST_HEADERS) {
        const value = request.headers.get(name);
        if (value !== null) headers.set(name, value);
      }
      const answer = await fetch(`http://127.0.0.1:${inner.port}${path}`, { method: request.method, headers, redirect: "manual" });
      if (answer.status === 404) return undefined;
      const relayed = withSecurityHeaders(answer);
      for (const name of DROPPED_RESPONSE_HEADERS) relayed.headers.delete(name);
      // A HEAD answer has no body for Bun to measure: it says the size a GET would send.
      const size = answer.headers.get("content-length");
      if (request.method === "HEAD" && size !== null && !answer.headers.has("content-encoding")) relayed.headers.set("content-length", size);
      return relayed;
    },
    stop: () => inner.stop(true),
  };
}
