// Starts the two listeners: the API (all /v1 routes) and the UI listener, which serves the web
// UI and answers the same /v1 routes so the page can use relative URLs.
import type { Server } from "bun";
import { createApp, methodsOf, type AppOptions } from "./app.ts";
import { createGuard, readGuardConfig, TRANSPORT_BODY_LIMIT, type GuardConfig, type Next } from "./guard/index.ts";
import { hotRoutes } from "./hot-routes.ts";
import { pathOf } from "./guard/request-log.ts";
import { getCatalog } from "../catalog/index.ts";
import { startUiPageServer } from "./guard/ui-page.ts";
import uiPage from "../web/index.html";

export interface ServeOptions extends AppOptions {
  port: number;
  uiPort: number;
  host: string;
  /** Tests: with `uiPort` 0, listen on a free port (read it from `ui.port`) instead of disabling the UI. */
  uiAnyPort?: boolean;
  /** Guard settings; read from the environment when neither this nor `guard` is given. */
  guardConfig?: GuardConfig;
}

/** Elysia finds a request's path from the URL's 12th character on (past `http://` and a host of
 *  at least 4 characters): under a shorter Host (`x`, `api`) it would route another path than the
 *  guard counted and checked (`/v1/v1/generate` as `/v1/generate`). Such a request, and one
 *  without a Host, gets a URL with a placeholder host; its Host header stays as sent. */
function routable(request: Request): Request {
  const url = request.url;
  // Without a Host header (HTTP/1.0) or with an empty one, Bun's URL is the bare path.
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  return start >= 0 && start < 11 ? new Request(`http://localhost${url.slice(start)}`, request) : request;
}

/** The server as the guard sees it for `request`, which may be a copy of what the socket sent
 *  (routable): Bun knows the caller's address and the idle timeout by the original only. */
function through(server: Server<unknown>, sent: Request, request: Request) {
  return request === sent ? server : { requestIP: () => server.requestIP(sent), timeout: (_: Request, seconds: number) => server.timeout(sent, seconds) };
}

/** Bun's own answer to an exception would be its development page (stack, source lines, working
 *  directory) or a bare 500: every exception that escapes is the SPEC's INTERNAL_ERROR instead. */
const internalError = () => Response.json({ error: { code: "INTERNAL_ERROR", message: "Unexpected failure" } }, { status: 500 });

export function startServers(options: ServeOptions) {
  // A preflight's Allow names the methods the app answers at the path (the app is built below).
  const guard = options.guard ?? createGuard(options.guardConfig ?? readGuardConfig(process.env), { methodsAt: (path) => methodsOf(app)(path) });
  const app = createApp({
    ...options,
    guard,
    healthExtra: () => ({ ...guard.health(), ...(options.healthExtra?.() ?? {}) }),
    ownPorts: () => [api.port, ui?.port].filter((port): port is number => port !== undefined),
  });
  const hot = hotRoutes(options.catalog ?? getCatalog(), guard.config.maxBodyBytes);
  const next: Next = (request, path) => hot(request, path) ?? app.handle(request);
  // The app never sees the socket: the guard reads the caller's address from the server. On the
  // UI listener (`pages`) the page and its assets go through the guard too (request id, limiter
  // headers, log line), uncounted; a path the bundle does not have is the app's 404.
  const handle = (sent: Request, server: Server<unknown>, pages?: Next) => {
    const req = routable(sent);
    const isPage = pages !== undefined && (req.method === "GET" || req.method === "HEAD") && !pathOf(req.url).startsWith("/v1/");
    return guard.handle(req, through(server, sent, req), isPage ? pages : next, !isPage);
  };
  const maxRequestBodySize = TRANSPORT_BODY_LIMIT;
  // reusePort off: a second server on the same port must fail to start, not quietly take a share
  // of the requests (keys and deploy bodies included) beside a stale or differently set one.
  const api = Bun.serve({ port: options.port, hostname: options.host, reusePort: false, maxRequestBodySize, development: false, error: internalError, fetch: (req, server) => handle(req, server) });
  let page: ReturnType<typeof startUiPageServer> | undefined;
  let ui: Server<unknown> | undefined;
  try {
    page = options.uiPort === 0 && !options.uiAnyPort ? undefined : startUiPageServer(uiPage);
    const relay = page;
    const pageNext: Next = async (request, path) => (await relay?.fetch(request)) ?? next(request, path);
    ui = relay && Bun.serve({
      port: options.uiPort,
      hostname: options.host,
      reusePort: false,
      maxRequestBodySize,
      development: false,
      error: internalError,
      fetch: (req, server) => handle(req, server, pageNext),
    });
  } catch (error) {
    // No half-started server: the API listener must not outlive a UI listener that failed.
    api.stop(true);
    void page?.stop();
    if (!options.guard) void guard.close();
    throw error;
  }
  return {
    api,
    ui,
    guard,
    stop: async () => {
      await api.stop(true);
      await ui?.stop(true);
      await page?.stop();
      if (!options.guard) await guard.close();
    },
  };
}
