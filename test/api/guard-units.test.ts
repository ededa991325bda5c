// Pure parts of the guard: configuration parsing, key checks, client addresses, counters.
import { describe, expect, test } from "bun:test";
import { readGuardConfig, DEFAULT_GUARD_CONFIG } from "../../src/api/guard/config.ts";
import { createKeyRing } from "../../src/api/guard/keys.ts";
import { clientKey, forwardedClient, forwardedHops } from "../../src/api/guard/client-ip.ts";
import { MemoryStore } from "../../src/api/guard/memory-store.ts";
import { bucketOf, quotaFor, verdictOf } from "../../src/api/guard/ratelimit.ts";
import { pathOf, requestIdFrom } from "../../src/api/guard/request-log.ts";
import { createGuard, guardConfig, retryText } from "../../src/api/guard/index.ts";
import { StackgenError } from "../../src/errors.ts";

const configError = (env: Record<string, string>): StackgenError => {
  try {
    readGuardConfig(env);
  } catch (e) {
    return e as StackgenError;
  }
  throw new Error("expected a configuration error");
};

describe("readGuardConfig", () => {
  test("defaults match CONTRACT §1", () => {
    const c = readGuardConfig({});
    expect(c.windowMs).toBe(900_000);
    expect(c.anonymousLimits).toEqual({ standard: 100, generate: 10 });
    expect(c.authenticatedLimits).toEqual({ standard: 1000, generate: 50 });
    expect(c.corsOrigins).toBe("*");
    expect(c.trustProxy).toBe(false);
    expect(c.redisUrl).toBeUndefined();
    expect(c.logLevel).toBe("info");
    expect(c.maxBodyBytes).toBe(1024 * 1024);
    expect(c.apiKeys).toEqual([]);
  });

  test("reads every variable", () => {
    const c = readGuardConfig({
      API_KEYS: " alpha , beta:5:2,gamma",
      CORS_ORIGINS: "https://a.example.com, http://localhost:3000",
      RATE_LIMIT_WINDOW_MS: "1000",
      RATE_LIMIT_STANDARD: "7",
      RATE_LIMIT_GENERATE: "3",
      RATE_LIMIT_AUTH_STANDARD: "70",
      RATE_LIMIT_AUTH_GENERATE: "30",
      TRUST_PROXY: "TRUE",
      REDIS_URL: "redis://:pw@127.0.0.1:6380/0",
      LOG_LEVEL: "silent",
    });
    expect(c.apiKeys).toEqual([{ key: "alpha" }, { key: "beta", limits: { standard: 5, generate: 2 } }, { key: "gamma" }]);
    expect(c.corsOrigins).toEqual(["https://a.example.com", "http://localhost:3000"]);
    expect(c.windowMs).toBe(1000);
    expect(c.anonymousLimits).toEqual({ standard: 7, generate: 3 });
    expect(c.authenticatedLimits).toEqual({ standard: 70, generate: 30 });
    expect(c.trustProxy).toBe(true);
    expect(c.redisUrl).toBe("redis://:pw@127.0.0.1:6380/0");
    expect(c.logLevel).toBe("silent");
  });

  test("lists every problem as a usage error (exit 2) without repeating keys or the Redis password", () => {
    const err = configError({
      API_KEYS: "s3cr3t-one:10:5,s3cr3t-two:x:1,,s3cr3t-one,s3cr3t-three:1",
      RATE_LIMIT_STANDARD: "0",
      RATE_LIMIT_WINDOW_MS: "-5",
      TRUST_PROXY: "yes",
      REDIS_URL: "http://user:hunter2@host",
      LOG_LEVEL: "loud",
      CORS_ORIGINS: "https://ok.example, https://bad.example/path",
    });
    expect(err).toBeInstanceOf(StackgenError);
    expect(err.exitCode).toBe(2);
    for (const name of ["API_KEYS entry 5", "API_KEYS entry 2", "API_KEYS entry 3", "API_KEYS entry 4", "RATE_LIMIT_STANDARD", "RATE_LIMIT_WINDOW_MS", "TRUST_PROXY", "REDIS_URL", "LOG_LEVEL", "CORS_ORIGINS"]) {
      expect(err.message).toContain(name);
    }
    expect(err.message).not.toContain("s3cr3t");
    expect(err.message).not.toContain("hunter2");
  });

  test("a Redis URL with no host or with a path that is no database number is a usage error, before any connection", () => {
    for (const url of ["redis://user:hunter2@127.0.0.1:6379/x1", "redis://", "redis:///0", "rediss://host:6380/0/extra"]) {
      const err = configError({ REDIS_URL: url });
      expect(err.exitCode, url).toBe(2);
      expect(err.message, url).toContain("REDIS_URL must name a host and, after it, at most a database number");
      expect(err.message).not.toContain("hunter2");
    }
    for (const url of ["redis://127.0.0.1:6379", "redis://127.0.0.1:6379/", "redis://:pw@127.0.0.1:6379/3", "rediss://cache.example:6380/0"]) {
      expect(readGuardConfig({ REDIS_URL: url }).redisUrl, url).toBe(url);
    }
  });

  test("a wildcard mixed with origins is refused", () => {
    expect(configError({ CORS_ORIGINS: "*,https://a.example" }).message).toContain("CORS_ORIGINS");
  });
});

describe("keys", () => {
  const ring = createKeyRing([{ key: "first-key" }, { key: "second-key", limits: { standard: 3, generate: 1 } }]);
  test("no header, valid keys with their own limits, invalid keys", () => {
    expect(ring.check(null)).toEqual({ kind: "none" });
    expect(ring.check("first-key")).toEqual({ kind: "valid", id: "key0", limits: undefined });
    expect(ring.check("second-key")).toEqual({ kind: "valid", id: "key1", limits: { standard: 3, generate: 1 } });
    for (const wrong of ["", "first-ke", "first-key ", "FIRST-KEY", "second-key\u0000", "x".repeat(10_000)]) expect(ring.check(wrong)).toEqual({ kind: "invalid" });
  });
  test("with no keys configured every presented key is invalid", () => {
    expect(createKeyRing([]).check("anything")).toEqual({ kind: "invalid" });
  });
});

describe("client addresses", () => {
  test("the X-Forwarded-For client: right-most public entry, internal hops skipped, ports and brackets removed, junk refused", () => {
    expect(forwardedClient("203.0.113.9, 10.0.0.1")).toBe("203.0.113.9");
    // A client can only prepend: what it wrote before the address our proxy saw does not count.
    expect(forwardedClient("198.51.100.1, 203.0.113.9")).toBe("203.0.113.9");
    expect(forwardedClient("1.2.3.4, 203.0.113.9, 172.20.0.3, 192.168.1.1")).toBe("203.0.113.9");
    expect(forwardedClient("junk, 2001:db8::7, fd00::1")).toBe("2001:db8::7");
    // Only internal addresses (a LAN): the left-most.
    expect(forwardedClient("10.0.0.9, 10.0.0.1")).toBe("10.0.0.9");
    expect(forwardedClient("203.0.113.9:5555")).toBe("203.0.113.9");
    expect(forwardedClient("[2001:db8::1]:443, 10.0.0.1")).toBe("2001:db8::1");
    expect(forwardedClient("<script>")).toBeUndefined();
    expect(forwardedClient("")).toBeUndefined();
    expect(forwardedClient(null)).toBeUndefined();
    const hops = new Headers({ "x-forwarded-for": "127.0.0.1, 203.0.113.9:80", "x-real-ip": "10.0.0.2", forwarded: 'for="[2001:db8::1]:4711";proto=https, for=unknown' });
    expect(forwardedHops(hops)).toEqual(["127.0.0.1", "203.0.113.9", "10.0.0.2", "2001:db8::1", "unknown"]);
    expect(forwardedHops(new Headers())).toEqual([]);
  });
  test("IPv6 clients are grouped by /64, IPv4-mapped addresses unwrapped", () => {
    expect(clientKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(clientKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(clientKey("::ffff:192.0.2.4")).toBe("192.0.2.4");
    expect(clientKey("192.0.2.4")).toBe("192.0.2.4");
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
  });
});

describe("rate limit arithmetic", () => {
  test("only POST /v1/generate (as the router spells it) is the generate bucket", () => {
    expect(bucketOf("POST", "/v1/generate")).toBe("generate");
    expect(bucketOf("POST", "/v1/generate/")).toBe("generate");
    expect(bucketOf("post", "/V1//Generate")).toBe("generate");
    expect(bucketOf("GET", "/v1/generate")).toBe("standard");
    expect(bucketOf("POST", "/v1/validate")).toBe("standard");
  });
  test("valid keys get their own counters and limits; invalid keys count as the anonymous caller", () => {
    const c = { ...DEFAULT_GUARD_CONFIG };
    expect(quotaFor(c, "generate", "1.2.3.4", { kind: "none" })).toEqual({ counterKey: "generate:1.2.3.4", limit: 10 });
    expect(quotaFor(c, "generate", "1.2.3.4", { kind: "invalid" })).toEqual({ counterKey: "generate:1.2.3.4", limit: 10 });
    expect(quotaFor(c, "standard", "1.2.3.4", { kind: "valid", id: "key3" })).toEqual({ counterKey: "standard:1.2.3.4:key3", limit: 1000 });
    expect(quotaFor(c, "generate", "1.2.3.4", { kind: "valid", id: "key3", limits: { standard: 9, generate: 4 } }).limit).toBe(4);
  });
  test("headers: remaining never negative, reset in Unix seconds, Retry-After only when over", () => {
    const now = 1_700_000_000_000;
    expect(verdictOf({ count: 3, resetAt: now + 1500 }, 5, now)).toEqual({
      allowed: true,
      headers: { "x-ratelimit-limit": "5", "x-ratelimit-remaining": "2", "x-ratelimit-reset": String(Math.ceil((now + 1500) / 1000)) },
    });
    const over = verdictOf({ count: 6, resetAt: now + 1500 }, 5, now);
    expect(over.allowed).toBe(false);
    expect(over.headers["x-ratelimit-remaining"]).toBe("0");
    expect(over.headers["retry-after"]).toBe("2");
  });
});

describe("MemoryStore", () => {
  test("counts in a window, resets after it, evicts expired windows and stays within its cap", async () => {
    let now = 1000;
    const store = new MemoryStore({ maxEntries: 50, now: () => now });
    expect(await store.hit("a", 100)).toEqual({ count: 1, resetAt: 1100 });
    expect(await store.hit("a", 100)).toEqual({ count: 2, resetAt: 1100 });
    expect(await store.peek("a", 100)).toEqual({ count: 2, resetAt: 1100 });
    now = 1100;
    expect(await store.hit("a", 100)).toEqual({ count: 1, resetAt: 1200 });
    now = 1300;
    store.sweep();
    expect(store.size).toBe(0);
    for (let i = 0; i < 500; i++) await store.hit(`client-${i}`, 10_000);
    expect(store.size).toBeLessThanOrEqual(50);
    // The newest clients are kept.
    expect((await store.peek("client-499", 10_000)).count).toBe(1);
    await store.close();
  });
});

describe("request log helpers", () => {
  test("paths lose their query; request ids are accepted only when plain", () => {
    expect(pathOf("http://h:1/v1/services?category=x&key=secret")).toBe("/v1/services");
    expect(pathOf("http://h/v1/a#frag")).toBe("/v1/a");
    expect(requestIdFrom("abc-123_X.y:z")).toBe("abc-123_X.y:z");
    for (const bad of ["", "has space", "x".repeat(129), "new\nline", "<script>"]) {
      const id = requestIdFrom(bad);
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe("request lines by level", () => {
  const answer = (status: number) => () => ({ status, type: "application/json", body: "{}" });
  const run = async (logLevel: "info" | "warn" | "error") => {
    const lines: string[] = [];
    const guard = createGuard(guardConfig({ logLevel }), { logSink: (line) => void lines.push(line) });
    for (const status of [200, 404, 500, 503]) await guard.handle(new Request(`http://127.0.0.1/v1/s${status}`), undefined, answer(status));
    await guard.close();
    return lines.map((line) => JSON.parse(line));
  };

  test("info logs every request; warn and error still log the server's own failures, with their duration", async () => {
    expect((await run("info")).map((l) => l.status)).toEqual([200, 404, 500, 503]);
    for (const level of ["warn", "error"] as const) {
      const lines = await run(level);
      expect(lines.map((l) => [l.level, l.status, l.path])).toEqual([["error", 500, "/v1/s500"], ["error", 503, "/v1/s503"]]);
      for (const line of lines) {
        expect(line.ms).toBeGreaterThanOrEqual(0);
        expect(line.ms).toBeLessThan(5000);
      }
    }
  });
});

describe("429 message", () => {
  test("a wait of minutes is said in minutes too", () => {
    expect(retryText(850)).toBe("850 s (about 14 minutes)");
    expect(retryText(30)).toBe("30 s");
  });
});
