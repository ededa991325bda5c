// Counters shared by every instance through Redis. One Lua script increments and sets the expiry
// atomically, so no crash can leave a counter without a TTL. When Redis is unreachable or slow the
// store counts in memory instead (the API keeps serving), says so in the log and in /v1/health,
// and probes Redis in the background until it answers again.
import { RedisClient } from "bun";
import type { CounterStore, WindowCount } from "./ratelimit.ts";
import { MemoryStore } from "./memory-store.ts";

const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

const PEEK_SCRIPT = `
local count = redis.call('GET', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
return {count or '0', ttl}`;

export type RedisState = "connecting" | "connected" | "unavailable";

export interface RedisStoreOptions {
  url: string;
  retryMs: number;
  timeoutMs: number;
  /** State changes only; never the URL (it may carry a password). */
  log: (level: "info" | "warn", message: string, fields?: Record<string, string>) => void;
  keyPrefix?: string;
}

class TimeoutError extends Error {
  readonly code = "ERR_TIMEOUT";
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const errorCode = (error: unknown) => String((error as { code?: string })?.code ?? (error as Error)?.name ?? "ERROR");

export class RedisStore implements CounterStore {
  private readonly client: RedisClient;
  private readonly fallback = new MemoryStore();
  private readonly prefix: string;
  private state: RedisState = "connecting";
  private probing: Promise<void> | undefined;
  private retryTimer: ReturnType<typeof setInterval> | undefined;
  private closed = false;
  /** Settles once the first connection attempt has succeeded or failed. */
  readonly ready: Promise<void>;

  constructor(private readonly options: RedisStoreOptions) {
    this.prefix = options.keyPrefix ?? "stackgen:rl:";
    // No offline queue: while disconnected a command must fail at once, not hold the request.
    this.client = new RedisClient(options.url, {
      enableOfflineQueue: false,
      connectionTimeout: Math.max(options.timeoutMs, 1000),
      autoReconnect: true,
      maxRetries: 5,
    });
    this.client.onclose = () => this.markUnavailable("ERR_CONNECTION_CLOSED");
    this.client.onconnect = () => void this.probe();
    this.ready = this.probe();
  }

  get currentState(): RedisState {
    return this.state;
  }

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    if (this.state !== "connected") return this.fallback.hit(key, windowMs);
    try {
      const [count, ttl] = await withTimeout(this.client.send("EVAL", [HIT_SCRIPT, "1", this.prefix + key, String(windowMs)]), this.options.timeoutMs);
      return { count: Number(count), resetAt: Date.now() + Number(ttl) };
    } catch (error) {
      this.markUnavailable(errorCode(error));
      return this.fallback.hit(key, windowMs);
    }
  }

  async peek(key: string, windowMs: number): Promise<WindowCount> {
    if (this.state !== "connected") return this.fallback.peek(key, windowMs);
    try {
      const [count, ttl] = await withTimeout(this.client.send("EVAL", [PEEK_SCRIPT, "1", this.prefix + key]), this.options.timeoutMs);
      const remainingMs = Number(ttl) > 0 ? Number(ttl) : windowMs;
      return { count: Number(count) || 0, resetAt: Date.now() + remainingMs };
    } catch (error) {
      this.markUnavailable(errorCode(error));
      return this.fallback.peek(key, windowMs);
    }
  }

  health(): Record<string, string> {
    return { rateLimitStore: "redis", redis: this.state };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.client.onclose = null;
    this.client.onconnect = null;
    try {
      this.client.close();
    } catch {
      // already closed
    }
    await this.fallback.close();
  }

  private markUnavailable(reason: string): void {
    if (this.closed) return;
    const wasUp = this.state !== "unavailable";
    this.state = "unavailable";
    if (wasUp) this.options.log("warn", "Redis unavailable: rate limits are counted in this process until it returns", { reason });
    if (!this.retryTimer) {
      this.retryTimer = setInterval(() => void this.probe(), this.options.retryMs);
      this.retryTimer.unref?.();
    }
  }

  private markConnected(): void {
    if (this.closed || this.state === "connected") return;
    const recovered = this.state === "unavailable";
    this.state = "connected";
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.options.log("info", recovered ? "Redis reachable again: rate limits are shared" : "Redis connected: rate limits are shared");
  }

  /** (Re)connects and PINGs; one probe at a time. */
  private probe(): Promise<void> {
    this.probing ??= (async () => {
      try {
        if (!this.client.connected) await withTimeout(this.client.connect(), Math.max(this.options.timeoutMs, 1000));
        await withTimeout(this.client.send("PING", []), this.options.timeoutMs);
        this.markConnected();
      } catch (error) {
        this.markUnavailable(errorCode(error));
      } finally {
        this.probing = undefined;
      }
    })();
    return this.probing;
  }
}
