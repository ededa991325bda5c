// The guard makes the API safe on a network (CONTRACT §1, §3, SPEC §5, §8). It wraps the app:
// per request, in order: request id, security and CORS headers; preflight answer; rate limit
// (every response carries X-RateLimit-*); API key; declared body size; one log line at the end.
// Bodies without Content-Length are measured where they are read (../json-body.ts).
import { errorBodyFor } from "../errors.ts";
import { tooLarge } from "../json-body.ts";
import type { Server } from "bun";
import type { Reply } from "../hot-routes.ts";
import type { GuardConfig } from "./config.ts";
import { addCorsHeaders, preflightHeaders } from "./cors.ts";
import { PAGE_SECURITY_HEADERS } from "./headers.ts";
import { clientAddressOf, clientKey, type AddressSource } from "./client-ip.ts";
import { createKeyRing } from "./keys.ts";
import { MemoryStore } from "./memory-store.ts";
import { RedisStore } from "./redis-store.ts";
import { bucketOf, quotaFor, verdictOf, type CounterStore } from "./ratelimit.ts";
import { createGuardLog, pathOf, requestIdFrom, type GuardLog, type LogSink } from "./request-log.ts";

export { readGuardConfig, guardConfig, DEFAULT_GUARD_CONFIG, MAX_BODY_BYTES, type GuardConfig } from "./config.ts";
export { withSecurityHeaders, PAGE_SECURITY_HEADERS } from "./headers.ts";
export type { CounterStore } from "./ratelimit.ts";

export interface GuardDeps {
  /** Where log lines go (default stdout). */
  logSink?: LogSink;
  /** A counter store to use instead of the one the config selects. */
  store?: CounterStore;
  /** The methods the app answers at a path (a preflight's `Allow`); none known without it. */
  methodsAt?: (path: string) => string[];
}

export interface Guard {
  readonly config: GuardConfig;
  readonly store: CounterStore;
  readonly log: GuardLog;
  /** Runs one request through the guard around `next` (the app): headers, limits, keys, log.
   *  With `counted` false (the UI's page and assets) the request only shows the caller's
   *  standard window: loading the page must not spend the quota the page then calls the API with. */
  handle(request: Request, server: GuardServer | undefined, next: Next, counted?: boolean): Response | Promise<Response>;
  /** Fields for /v1/health (`rateLimitStore`, `redis`). */
  health(): Record<string, string>;
  close(): Promise<void>;
  /** Whether this request carried a valid X-API-Key (checked when it arrived). */
  hasValidKey(request: Request): boolean;
  /** The socket address of a /v1/deploy request's caller (a proxy's, when one is in front). */
  peerOf(request: Request): string | undefined;
}

/** Bun.serve's own cap, which answers a bare 413 (no JSON, no headers) before the guard sees the
 *  request. Left open: the guard refuses any declared size over the limit with the JSON 413 before
 *  a byte of the body is read, and a body without a declared size is read only up to the limit
 *  (../json-body.ts). Bun streams bodies, so an unread one costs nothing. */
export const TRANSPORT_BODY_LIMIT = Number.MAX_SAFE_INTEGER;

/** The server a request came through: its socket address, and its idle timeout per request. */
type GuardServer = (AddressSource & Partial<Pick<Server<unknown>, "timeout">>) | null;
/** The app behind the guard: a Response, or a Reply the guard builds into one with its headers. */
export type Next = (request: Request, path: string) => Response | Reply | Promise<Response | Reply>;

/** Apply `then` to a value that may or may not be a promise, staying synchronous when it is not. */
function settle<T, R>(value: T | Promise<T>, then: (v: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}

export function createGuard(config: GuardConfig, deps: GuardDeps = {}): Guard {
  const log = createGuardLog(config.logLevel, deps.logSink);
  const store: CounterStore = deps.store ?? (config.redisUrl
    ? new RedisStore({ url: config.redisUrl, retryMs: config.redisRetryMs, timeoutMs: config.redisTimeoutMs, log: log.event })
    : new MemoryStore());
  const keys = createKeyRing(config.apiKeys);
  const withValidKey = new WeakSet<Request>();
  const peers = new WeakMap<Request, string>();

  const refusal = (path: string, status: number, code: string, message: string) =>
    new Response(JSON.stringify(errorBodyFor(path, { code, message })), { status, headers: { "content-type": "application/json" } });

  /** Keys, limits and declared size; a Response when the request is refused, else undefined. */
  const admit = (request: Request, path: string, client: string, headers: Record<string, string>, counted: boolean): Response | undefined | Promise<Response | undefined> => {
    const preflight = request.method === "OPTIONS";
    if (preflight || !counted) {
      // Preflights and page loads carry no key and are not counted; they show the caller's standard window.
      const quota = quotaFor(config, "standard", client, { kind: "none" });
      return settle(store.peek(quota.counterKey, config.windowMs), (window) => {
        const verdict = verdictOf(window, quota.limit, Date.now());
        delete verdict.headers["retry-after"];
        Object.assign(headers, verdict.headers);
        if (!preflight) return undefined;
        Object.assign(headers, preflightHeaders(deps.methodsAt?.(path) ?? []));
        return new Response(null, { status: 204 });
      });
    }
    const key = keys.check(request.headers.get("x-api-key"));
    const quota = quotaFor(config, bucketOf(request.method, path), client, key);
    // The in-process store answers synchronously: no promise (and no extra tick) per request.
    return settle(store.hit(quota.counterKey, config.windowMs), (window) => {
      const verdict = verdictOf(window, quota.limit, Date.now());
      Object.assign(headers, verdict.headers);
      if (!verdict.allowed) return refusal(path, 429, "RATE_LIMITED", `Too many requests; try again in ${retryText(Number(verdict.headers["retry-after"]))}.`);
      if (key.kind === "invalid") return refusal(path, 401, "UNAUTHORIZED", "Invalid API key.");
      if (key.kind === "valid") withValidKey.add(request);
      const declared = Number(request.headers.get("content-length") ?? 0);
      if (declared > config.maxBodyBytes) {
        const error = tooLarge(config.maxBodyBytes);
        return refusal(path, error.status, error.code, error.message);
      }
      return undefined;
    });
  };

  // Runs around the app rather than as Elysia hooks: request hooks would take Elysia off its
  // fastest path and cost more than the guard's own work.
  // Synchronous wherever the store and the app are, so a request costs no extra ticks.
  const handle = (request: Request, server: GuardServer | undefined, next: Next, counted = true) => {
    const started = performance.now();
    const path = pathOf(request.url);
    const id = requestIdFrom(request.headers.get("x-request-id"));
    // Built as one literal (then extended in the same order every time): Bun copies such an
    // object into the response headers faster than one made by spreading.
    const headers: Record<string, string> = { "x-content-type-options": "nosniff", "x-frame-options": "DENY", "x-request-id": id };
    addCorsHeaders(headers, config.corsOrigins, request.headers.get("origin"));
    // A generation answers with fresh secrets: no cache or proxy on the way may keep a copy.
    if (bucketOf(request.method, path) === "generate") headers["cache-control"] = "no-store";
    const address = clientAddressOf(request, config.trustProxy, server);
    // Only the deploy relay asks who called (a WeakMap entry per request would cost every request).
    // It wants the socket's own peer: forwarded addresses are the caller's word.
    const deploy = path.startsWith("/v1/deploy");
    if (deploy) {
      const peer = server?.requestIP(request)?.address;
      if (peer) peers.set(request, peer);
    }
    const finish = (answer: Response | Reply) => {
      let response: Response;
      if (answer instanceof Response) {
        response = answer;
        // A Vary of the answer's own (the UI's assets vary by Accept-Encoding) is kept beside CORS's.
        const vary = headers.vary === undefined ? null : response.headers.get("vary");
        for (const name in headers) response.headers.set(name, headers[name]);
        if (vary) response.headers.set("vary", `${vary}, ${headers.vary}`);
        // The CSP and referrer policy matter for pages (the docs), not for JSON answers.
        if (response.headers.get("content-type")?.startsWith("text/html")) {
          for (const name in PAGE_SECURITY_HEADERS) response.headers.set(name, PAGE_SECURITY_HEADERS[name]);
        }
      } else {
        headers["content-type"] = answer.type;
        response = new Response(answer.body, { status: answer.status, headers });
      }
      // A deploy streams a line per step, and one step waits on the platform for up to the
      // deployer's own timeouts: Bun's idle timeout (10 s) would cut the stream of a slow but
      // working platform while the deploy went on unseen. Lifted only once a deploy was admitted,
      // its body read and its stream started (the deploy's calls bound it), never for a caller
      // that sends half a body or is refused.
      if (deploy && response.status === 200 && response.headers.get("content-type")?.startsWith("application/x-ndjson")) server?.timeout?.(request, 0);
      if (log.logsRequests || response.status >= 500) {
        log.request({ method: request.method, path, status: response.status, ms: Math.round((performance.now() - started) * 10) / 10, requestId: id });
      }
      return response;
    };
    return settle(admit(request, path, clientKey(address ?? "unknown"), headers, counted), (refused) =>
      refused ? finish(refused) : settle(next(request, path), finish));
  };

  return {
    config,
    store,
    log,
    handle,
    health: () => store.health(),
    close: () => store.close(),
    hasValidKey: (request) => withValidKey.has(request),
    peerOf: (request) => peers.get(request),
  };
}

/** "850 s (about 14 minutes)": a wait of minutes said in minutes too. */
export function retryText(seconds: number): string {
  return seconds >= 120 ? `${seconds} s (about ${Math.round(seconds / 60)} minutes)` : `${seconds} s`;
}
