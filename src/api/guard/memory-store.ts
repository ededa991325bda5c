// In-process counters: one Map in insertion order, expired windows swept on a timer and on growth,
// and a hard cap on entries so a flood of distinct clients cannot grow memory without bound.
import type { CounterStore, WindowCount } from "./ratelimit.ts";

export interface MemoryStoreOptions {
  maxEntries?: number;
  sweepEveryMs?: number;
  now?: () => number;
}

export class MemoryStore implements CounterStore {
  private readonly windows = new Map<string, WindowCount>();
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(options: MemoryStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    this.now = options.now ?? Date.now;
    this.timer = setInterval(() => this.sweep(), options.sweepEveryMs ?? 60_000);
    this.timer.unref?.();
  }

  get size(): number {
    return this.windows.size;
  }

  hit(key: string, windowMs: number): WindowCount {
    const now = this.now();
    const current = this.windows.get(key);
    if (current && current.resetAt > now) {
      current.count += 1;
      return { ...current };
    }
    if (current) this.windows.delete(key);
    if (this.windows.size >= this.maxEntries) this.makeRoom(now);
    const fresh = { count: 1, resetAt: now + windowMs };
    this.windows.set(key, fresh);
    return { ...fresh };
  }

  peek(key: string, windowMs: number): WindowCount {
    const now = this.now();
    const current = this.windows.get(key);
    return current && current.resetAt > now ? { ...current } : { count: 0, resetAt: now + windowMs };
  }

  health(): Record<string, string> {
    return { rateLimitStore: "memory" };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.windows.clear();
  }

  /** Drops expired windows. */
  sweep(now = this.now()): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }

  /** Frees at least one slot: expired windows first, then the oldest (first inserted) ones. */
  private makeRoom(now: number): void {
    this.sweep(now);
    const excess = this.windows.size - this.maxEntries + 1;
    if (excess <= 0) return;
    let dropped = 0;
    for (const key of this.windows.keys()) {
      if (dropped++ >= excess) break;
      this.windows.delete(key);
    }
  }
}
