// Fixed-window counters per (bucket, client[, key]) behind one store interface (SPEC §8, CONTRACT §3).
import type { BucketLimits, GuardConfig } from "./config.ts";
import type { KeyCheck } from "./keys.ts";

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number;
  /** Epoch milliseconds at which the window ends. */
  resetAt: number;
}

export interface CounterStore {
  /** Counts one request for `key` and returns the window's state. Must not throw. */
  hit(key: string, windowMs: number): WindowCount | Promise<WindowCount>;
  /** The window's state without counting (preflights). */
  peek(key: string, windowMs: number): WindowCount | Promise<WindowCount>;
  /** Fields for /v1/health. */
  health(): Record<string, string>;
  close(): Promise<void>;
}

export type Bucket = keyof BucketLimits;

/** `POST /v1/generate` (any spelling the router accepts) has its own bucket; everything else is standard. */
export function bucketOf(method: string, path: string): Bucket {
  if (method.length !== 4) return "standard"; // not POST in any case: skip the string work
  if (path === "/v1/generate") return method.toUpperCase() === "POST" ? "generate" : "standard";
  if (!/generate/i.test(path)) return "standard";
  const normalized = path.toLowerCase().replace(/\/{2,}/g, "/").replace(/\/+$/, "");
  return method.toUpperCase() === "POST" && normalized === "/v1/generate" ? "generate" : "standard";
}

export interface Quota {
  counterKey: string;
  limit: number;
}

/** Which counter a request uses and its limit. Invalid keys count as the anonymous caller. */
export function quotaFor(config: GuardConfig, bucket: Bucket, client: string, key: KeyCheck): Quota {
  if (key.kind === "valid") {
    const limits = key.limits ?? config.authenticatedLimits;
    return { counterKey: `${bucket}:${client}:${key.id}`, limit: limits[bucket] };
  }
  return { counterKey: `${bucket}:${client}`, limit: config.anonymousLimits[bucket] };
}

export interface Verdict {
  allowed: boolean;
  headers: Record<string, string>;
}

/** The X-RateLimit-* headers (and Retry-After when over) for a counted window. */
export function verdictOf(window: WindowCount, limit: number, now: number): Verdict {
  const headers: Record<string, string> = {
    "x-ratelimit-limit": String(limit),
    "x-ratelimit-remaining": String(Math.max(0, limit - window.count)),
    "x-ratelimit-reset": String(Math.ceil(window.resetAt / 1000)),
  };
  const allowed = window.count <= limit;
  if (!allowed) headers["retry-after"] = String(Math.max(1, Math.ceil((window.resetAt - now) / 1000)));
  return { allowed, headers };
}
