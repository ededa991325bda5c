// The UI page is a Bun HTML bundle, which Bun serves itself with no way to add headers. So it is
// served by an inner listener on loopback, and the public UI listener relays GET/HEAD requests to
// it and adds the security headers (CSP, frame and sniffing protection) to what comes back.
// Text assets go out compressed when the client accepts it (brotli, zstd or gzip), each asset
// compressed once (at its first request in that encoding) and kept; conditional requests are
// answered here, against the ETag of the representation actually sent.
import type { HTMLBundle } from "bun";
import { withSecurityHeaders } from "./headers.ts";
import { pathOf } from "./request-log.ts";

const RELAYED_REQUEST_HEADERS = ["accept"];
/** Set by the inner hop; the outer response is re-framed by Bun (fetch already decoded the body). */
const DROPPED_RESPONSE_HEADERS = ["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"];
/** Headers a 304 repeats from the 200 it stands for (RFC 9110 §15.4.5). */
const NOT_MODIFIED_HEADERS = ["cache-control", "content-location", "date", "etag", "expires", "vary"];

export type ContentCoding = "br" | "zstd" | "gzip";
/** On equal preference of the client: the smallest output on the UI's text first. */
const SERVER_PREFERENCE: readonly ContentCoding[] = ["br", "zstd", "gzip"];
/** Below this an answer is sent as it is: the coding's own framing would eat the gain. */
const MIN_COMPRESSIBLE_BYTES = 1024;
const COMPRESSIBLE_TYPE = /^(text\/|application\/(javascript|json|manifest\+json|xml)|image\/svg\+xml)/i;
/** Distinct contents kept compressed (the bundle has a handful; bounded all the same). */
const MAX_CACHED_ASSETS = 64;

/** Once per asset, so the slowest, smallest settings; off the event loop (zlib's thread pool).
 *  zlib is loaded at the first compression, not when the server starts (start-up time). */
const COMPRESSORS: Record<ContentCoding, (bytes: Uint8Array) => Promise<Uint8Array>> = {
  br: async (bytes) => {
    const { brotliCompress, constants } = await import("node:zlib");
    return new Promise((done, fail) => brotliCompress(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength } }, (e, out) => (e ? fail(e) : done(out))));
  },
  zstd: (bytes) => Bun.zstdCompress(bytes, { level: 19 }),
  gzip: async (bytes) => {
    const { gzip, constants } = await import("node:zlib");
    return new Promise((done, fail) => gzip(bytes, { level: constants.Z_BEST_COMPRESSION }, (e, out) => (e ? fail(e) : done(out))));
  },
};

/** The coding to send under `accept` (an Accept-Encoding value), or undefined for the bytes as
 *  they are: the highest q-value wins (RFC 9110 §12.5.3); identity only when no coding we have is
 *  accepted or the client ranks it above them by name. */
export function chooseCoding(accept: string | null): ContentCoding | undefined {
  if (accept === null) return undefined;
  const q = new Map<string, number>();
  for (const part of accept.split(",")) {
    const [rawName, ...params] = part.split(";");
    const name = rawName.trim().toLowerCase();
    if (name === "") continue;
    let weight = 1;
    for (const param of params) {
      const [key, value] = param.split("=").map((s) => s.trim());
      if (key.toLowerCase() === "q") weight = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value ?? "") ? Number(value) : 0;
    }
    q.set(name === "x-gzip" ? "gzip" : name, weight);
  }
  const weightOf = (coding: string) => q.get(coding) ?? q.get("*") ?? 0;
  const identity = q.get("identity") ?? 0;
  let best: ContentCoding | undefined;
  for (const coding of SERVER_PREFERENCE) if (weightOf(coding) > 0 && (best === undefined || weightOf(coding) > weightOf(best))) best = coding;
  return best !== undefined && weightOf(best) >= identity ? best : undefined;
}

/** `"tag"` → `"tag-br"`, weak tags staying weak: one tag per representation. */
export function etagFor(etag: string, coding: ContentCoding): string {
  return etag.endsWith('"') ? `${etag.slice(0, -1)}-${coding}"` : `${etag}-${coding}`;
}

/** Whether an If-None-Match value matches `etag` by the weak comparison GET uses. */
function matchesNoneMatch(header: string, etag: string): boolean {
  if (header.trim() === "*") return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  const own = opaque(etag);
  return header.split(",").some((tag) => opaque(tag) === own);
}

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
  /** Compressed forms by content (the inner ETag, else a hash of the bytes) and coding; a
   *  promise, so concurrent first requests share one compression. */
  const compressed = new Map<string, Promise<Uint8Array<ArrayBuffer> | undefined>>();
  const compressedForm = (key: string, coding: ContentCoding, bytes: Uint8Array) => {
    const id = `${coding} ${key}`;
    let form = compressed.get(id);
    if (form === undefined) {
      // Not smaller (already compressed data): sent as it is, and remembered so.
      form = COMPRESSORS[coding](bytes).then((out) => (out.byteLength < bytes.byteLength ? new Uint8Array(out) : undefined));
      if (compressed.size >= MAX_CACHED_ASSETS) compressed.delete(compressed.keys().next().value!);
      compressed.set(id, form);
    }
    return form;
  };
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
      // Always a GET without conditions: the size and ETag of the representation sent depend on
      // its coding, which the inner listener knows nothing of.
      const answer = await fetch(`http://127.0.0.1:${inner.port}${path}`, { headers, redirect: "manual" });
      if (answer.status === 404) {
        await answer.body?.cancel();
        return undefined;
      }
      let body: Uint8Array<ArrayBuffer> = new Uint8Array(await answer.arrayBuffer());
      const sent = new Headers(answer.headers);
      for (const name of DROPPED_RESPONSE_HEADERS) sent.delete(name);
      const type = answer.headers.get("content-type") ?? "";
      if (answer.status === 200 && COMPRESSIBLE_TYPE.test(type) && body.byteLength >= MIN_COMPRESSIBLE_BYTES) {
        // The answer depends on Accept-Encoding even when it is sent as it is.
        sent.append("vary", "Accept-Encoding");
        const coding = chooseCoding(request.headers.get("accept-encoding"));
        const etag = answer.headers.get("etag");
        const form = coding && (await compressedForm(etag ?? String(Bun.hash(body)), coding, body));
        if (coding && form) {
          body = form;
          sent.set("content-encoding", coding);
          if (etag !== null) sent.set("etag", etagFor(etag, coding));
        }
      }
      const etag = sent.get("etag");
      const noneMatch = request.headers.get("if-none-match");
      if (answer.status === 200 && etag !== null && noneMatch !== null && matchesNoneMatch(noneMatch, etag)) {
        const notModified = new Headers();
        for (const name of NOT_MODIFIED_HEADERS) {
          const value = sent.get(name);
          if (value !== null) notModified.set(name, value);
        }
        return withSecurityHeaders(new Response(null, { status: 304, headers: notModified }));
      }
      // A HEAD answer has no body for Bun to measure: it says the size a GET would send.
      sent.set("content-length", String(body.byteLength));
      return withSecurityHeaders(new Response(request.method === "HEAD" ? null : body, { status: answer.status, statusText: answer.statusText, headers: sent }));
    },
    stop: () => inner.stop(true),
  };
}
