// The guard makes the API safe on a network (CONTRACT §1, §3, SPEC §5, §8). It wraps the app:
// per request, in order: request id, security and CORS headers; preflight answer; rate limit
// (every response carries X-RateLimit-*); API key; declared body size; one log line at the end.
// Its Elysia plugin enforces the body limit on bodies without Content-Length while parsing.
import { Elysia } from "elysia";
import { StackgenError } from "../../errors.ts";
import { errorBodyFor } from "../errors.ts";
import type { GuardConfig } from "./config.ts";
import { corsHeaders, preflightHeaders } from "./cors.ts";
import { SECURITY_HEADERS } from "./headers.ts";
import { clientAddressOf, clientKey, type AddressSource } from "./client-ip.ts";
import { createKeyRing } from "./keys.ts";
import { MemoryStore } from "./memory-store.ts";
import { RedisStore } from "./redis-store.ts";
import { bucketOf, quotaFor, verdictOf, type CounterStore } from "./ratelimit.ts";
import { createGuardLog, pathOf, requestIdFrom, type GuardLog, type LogSink } from "./request-log.ts";

export { readGuardConfig, guardConfig, DEFAULT_GUARD_CONFIG, MAX_BODY_BYTES, type GuardConfig } from "./config.ts";
export { withSecurityHeaders, SECURITY_HEADERS } from "./headers.ts";
export type { CounterStore } from "./ratelimit.ts";

export interface GuardDeps {
  /** Where log lines go (default stdout). */
  logSink?: LogSink;
  /** A counter store to use instead of the one the config selects. */
  store?: CounterStore;
}

export interface Guard {
  readonly config: GuardConfig;
  readonly store: CounterStore;
  readonly log: GuardLog;
  /** The Elysia plugin (body-size checks while parsing); `.use()` it before the routes. */
  readonly plugin: Elysia<any, any, any, any, any, any, any>;
  /** Runs one request through the guard around `next` (the app): headers, limits, keys, log. */
  handle(request: Request, server: GuardServer | undefined, next: (request: Request) => Response | Promise<Response>): Response | Promise<Response>;
  /** Fields for /v1/health (`rateLimitStore`, `redis`). */
  health(): Record<string, string>;
  close(): Promise<void>;
  /** Whether this request carried a valid X-API-Key (checked when it arrived). */
  hasValidKey(request: Request): boolean;
  /** The client address the rate limiter used for this request. */
  clientOf(request: Request): string | undefined;
}

/** Bun.serve's own cap: requests declaring more never reach the app. Kept above the real limit so
 *  that declared sizes in between still get the JSON 413; bodies are never read past the limit. */
export const transportBodyLimit = (config: GuardConfig) => config.maxBodyBytes * 4;

type GuardServer = AddressSource | null;

/** True once a body without Content-Length proves longer than `limit` (read from a clone, then dropped). */
async function bodyExceeds(request: Request, limit: number): Promise<boolean> {
  const reader = request.clone().body?.getReader();
  if (!reader) return false;
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return false;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      return true;
    }
  }
}

/** Apply `then` to a value that may or may not be a promise, staying synchronous when it is not. */
function settle<T, R>(value: T | Promise<T>, then: (v: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** Stand-in body of a refused chunked request (never reaches a handler). */
const OVERSIZED_BODY = Object.freeze({});

export function createGuard(config: GuardConfig, deps: GuardDeps = {}): Guard {
  const log = createGuardLog(config.logLevel, deps.logSink);
  const store: CounterStore = deps.store ?? (config.redisUrl
    ? new RedisStore({ url: config.redisUrl, retryMs: config.redisRetryMs, timeoutMs: config.redisTimeoutMs, log: log.event })
    : new MemoryStore());
  const keys = createKeyRing(config.apiKeys);
  const oversized = new WeakSet<Request>();
  const withValidKey = new WeakSet<Request>();
  const clients = new WeakMap<Request, string>();

  const refusal = (path: string, status: number, code: string, message: string) =>
    new Response(JSON.stringify(errorBodyFor(path, { code, message })), { status, headers: { "content-type": "application/json" } });

  /** Keys, limits and declared size; a Response when the request is refused, else undefined. */
  const admit = (request: Request, path: string, client: string, headers: Record<string, string>): Response | undefined | Promise<Response | undefined> => {
    if (request.method === "OPTIONS") {
      // Preflights carry no key and are not counted; they show the caller's standard window.
      const quota = quotaFor(config, "standard", client, { kind: "none" });
      return settle(store.peek(quota.counterKey, config.windowMs), (window) => {
        const verdict = verdictOf(window, quota.limit, Date.now());
        delete verdict.headers["retry-after"];
        Object.assign(headers, verdict.headers, preflightHeaders());
        return new Response(null, { status: 204 });
      });
    }
    const key = keys.check(request.headers.get("x-api-key"));
    const quota = quotaFor(config, bucketOf(request.method, path), client, key);
    // The in-process store answers synchronously: no promise (and no extra tick) per request.
    return settle(store.hit(quota.counterKey, config.windowMs), (window) => {
      const verdict = verdictOf(window, quota.limit, Date.now());
      Object.assign(headers, verdict.headers);
      if (!verdict.allowed) return refusal(path, 429, "RATE_LIMITED", `Too many requests; try again in ${verdict.headers["retry-after"]} s.`);
      if (key.kind === "invalid") return refusal(path, 401, "UNAUTHORIZED", "Invalid API key.");
      if (key.kind === "valid") withValidKey.add(request);
      const declared = Number(request.headers.get("content-length") ?? 0);
      if (declared > config.maxBodyBytes) return refusal(path, 413, "PAYLOAD_TOO_LARGE", `Request body is larger than ${config.maxBodyBytes} bytes.`);
      return undefined;
    });
  };

  // Runs around the app rather than as Elysia hooks: request hooks would take Elysia off its
  // fastest path and cost more than the guard's own work.
  // Synchronous wherever the store and the app are, so a request costs no extra ticks.
  const handle = (request: Request, server: GuardServer | undefined, next: (request: Request) => Response | Promise<Response>) => {
    const started = performance.now();
    const path = pathOf(request.url);
    const id = requestIdFrom(request.headers.get("x-request-id"));
    const headers: Record<string, string> = { ...SECURITY_HEADERS, ...corsHeaders(config.corsOrigins, request.headers.get("origin")), "x-request-id": id };
    const address = clientAddressOf(request, config.trustProxy, server);
    // Only the deploy relay asks who called (a WeakMap entry per request would cost every request).
    if (address && path.startsWith("/v1/deploy")) clients.set(request, address);
    const finish = (response: Response) => {
      for (const name in headers) response.headers.set(name, headers[name]);
      log.request({ method: request.method, path, status: response.status, ms: Math.round((performance.now() - started) * 10) / 10, requestId: id });
      return response;
    };
    return settle(admit(request, path, clientKey(address ?? "unknown"), headers), (refused) =>
      refused ? finish(refused) : settle(next(request), finish));
  };

  const plugin = new Elysia()
    .onParse({ as: "global" }, async ({ request }) => {
      // Declared sizes were checked before the app; chunked bodies are measured before the real
      // parser runs. Elysia wraps anything thrown here as a 400 parse error, so the refusal
      // happens in transform.
      if (request.body !== null && !request.headers.has("content-length") && (await bodyExceeds(request, config.maxBodyBytes))) {
        oversized.add(request);
        return OVERSIZED_BODY;
      }
    })
    .onTransform({ as: "global" }, ({ request }) => {
      if (oversized.has(request)) {
        throw new StackgenError("PAYLOAD_TOO_LARGE", `Request body is larger than ${config.maxBodyBytes} bytes.`, 413);
      }
    });

  return {
    config,
    store,
    log,
    plugin,
    handle,
    health: () => store.health(),
    close: () => store.close(),
    hasValidKey: (request) => withValidKey.has(request),
    clientOf: (request) => clients.get(request),
  };
}

/** The plugin of `guard`, or an empty one (an app built without a guard, e.g. in unit tests). */
export function guardPlugin(guard: Guard | undefined) {
  return guard?.plugin ?? new Elysia();
}
