// The guard: one Elysia plugin that makes the API safe on a network (CONTRACT §1, §3, SPEC §5, §8).
// Per request, in order: request id, security and CORS headers; preflight answer; rate limit
// (every response carries X-RateLimit-*); API key; declared body size. The parse hook enforces the
// body limit on bodies without Content-Length, and every request ends with one log line.
import { Elysia, StatusMap } from "elysia";
import { StackgenError } from "../../errors.ts";
import type { GuardConfig } from "./config.ts";
import { corsHeaders, preflightHeaders } from "./cors.ts";
import { SECURITY_HEADERS } from "./headers.ts";
import { clientAddressOf, clientIpOf } from "./client-ip.ts";
import { createKeyRing } from "./keys.ts";
import { MemoryStore } from "./memory-store.ts";
import { RedisStore } from "./redis-store.ts";
import { bucketOf, quotaFor, verdictOf, type CounterStore } from "./ratelimit.ts";
import { createGuardLog, pathOf, requestIdFrom, type GuardLog, type LogSink } from "./request-log.ts";

export { readGuardConfig, guardConfig, DEFAULT_GUARD_CONFIG, MAX_BODY_BYTES, type GuardConfig } from "./config.ts";
export { noteClientAddress } from "./client-ip.ts";
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
  /** The Elysia plugin; `.use()` it before the routes. */
  readonly plugin: Elysia<any, any, any, any, any, any, any>;
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

interface RequestState {
  id: string;
  started: number;
  method: string;
  path: string;
}

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

/** Stand-in body of a refused chunked request (never reaches a handler). */
const OVERSIZED_BODY = Object.freeze({});

const statusNumber = (status: unknown): number =>
  typeof status === "number" ? status : (StatusMap as Record<string, number>)[String(status)] ?? 200;

export function createGuard(config: GuardConfig, deps: GuardDeps = {}): Guard {
  const log = createGuardLog(config.logLevel, deps.logSink);
  const store: CounterStore = deps.store ?? (config.redisUrl
    ? new RedisStore({ url: config.redisUrl, retryMs: config.redisRetryMs, timeoutMs: config.redisTimeoutMs, log: log.event })
    : new MemoryStore());
  const keys = createKeyRing(config.apiKeys);
  const states = new WeakMap<Request, RequestState>();
  const oversized = new WeakSet<Request>();
  const withValidKey = new WeakSet<Request>();
  const clients = new WeakMap<Request, string>();

  const logRequest = (request: Request, status: number) => {
    const state = states.get(request);
    if (!state) return;
    states.delete(request); // one line per request
    log.request({ method: state.method, path: state.path, status, ms: Math.round((performance.now() - state.started) * 10) / 10, requestId: state.id });
  };

  /** Guard refusals use the SPEC body; /v1/skills keeps its flat shape (SPEC §7). */
  const refusal = (request: Request, path: string, status: number, code: string, message: string) => {
    const body = path.replace(/\/+$/, "") === "/v1/skills" ? { error: message, code } : { error: { code, message } };
    logRequest(request, status);
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  };

  const plugin = new Elysia()
    .onRequest(async ({ request, set, server }) => {
      const path = pathOf(request.url);
      const id = requestIdFrom(request.headers.get("x-request-id"));
      states.set(request, { id, started: performance.now(), method: request.method, path });
      Object.assign(set.headers, SECURITY_HEADERS, corsHeaders(config.corsOrigins, request.headers.get("origin")), { "x-request-id": id });

      const client = clientIpOf(request, config.trustProxy, server);
      const address = clientAddressOf(request, config.trustProxy, server);
      if (address) clients.set(request, address);
      if (request.method === "OPTIONS") {
        // Preflights carry no key and are not counted; they show the caller's standard window.
        const quota = quotaFor(config, "standard", client, { kind: "none" });
        const { headers } = verdictOf(await store.peek(quota.counterKey, config.windowMs), quota.limit, Date.now());
        delete headers["retry-after"];
        Object.assign(set.headers, headers, preflightHeaders());
        logRequest(request, 204);
        return new Response(null, { status: 204 });
      }

      const key = keys.check(request.headers.get("x-api-key"));
      const quota = quotaFor(config, bucketOf(request.method, path), client, key);
      const verdict = verdictOf(await store.hit(quota.counterKey, config.windowMs), quota.limit, Date.now());
      Object.assign(set.headers, verdict.headers);
      if (!verdict.allowed) {
        return refusal(request, path, 429, "RATE_LIMITED", `Too many requests; try again in ${verdict.headers["retry-after"]} s.`);
      }
      if (key.kind === "invalid") return refusal(request, path, 401, "UNAUTHORIZED", "Invalid API key.");
      if (key.kind === "valid") withValidKey.add(request);
      const declared = Number(request.headers.get("content-length") ?? 0);
      if (declared > config.maxBodyBytes) {
        return refusal(request, path, 413, "PAYLOAD_TOO_LARGE", `Request body is larger than ${config.maxBodyBytes} bytes.`);
      }
    })
    .onParse({ as: "global" }, async ({ request }) => {
      // Declared sizes were checked above; chunked bodies are measured before the real parser runs.
      // Elysia wraps anything thrown here as a 400 parse error, so the refusal happens in transform.
      if (!request.headers.has("content-length") && (await bodyExceeds(request, config.maxBodyBytes))) {
        oversized.add(request);
        return OVERSIZED_BODY;
      }
    })
    .onTransform({ as: "global" }, ({ request }) => {
      if (oversized.has(request)) {
        throw new StackgenError("PAYLOAD_TOO_LARGE", `Request body is larger than ${config.maxBodyBytes} bytes.`, 413);
      }
    })
    .onAfterResponse({ as: "global" }, (context) => {
      const { request, set } = context;
      const value = (context as { responseValue?: unknown }).responseValue ?? (context as { response?: unknown }).response;
      logRequest(request, value instanceof Response ? value.status : statusNumber(set.status));
    });

  return {
    config,
    store,
    log,
    plugin,
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
