// Several instances share one budget through a real redis-server, and the API keeps serving
// (counting in memory, saying so in /v1/health and the log) while Redis is gone.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { RedisClient } from "bun";
import { startTestServer, startRedis, freePort, eventually, REDIS_SERVER, type RedisProcess, type TestServer } from "./guard-helpers.ts";

const haveRedis = existsSync(REDIS_SERVER);
if (!haveRedis) {
  if (process.env.CI === "true") throw new Error(`${REDIS_SERVER} is required under CI`);
  console.warn(`SKIP guard-redis tests: ${REDIS_SERVER} is not installed`);
}

const POLL_KEY = "health-poller";
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of cleanup.splice(0).reverse()) await stop().catch(() => {});
});

async function instance(redisUrl: string): Promise<TestServer> {
  const server = await startTestServer({
    redisUrl,
    windowMs: 60_000,
    anonymousLimits: { standard: 5, generate: 2 },
    // The health poller has its own large budget so polling never uses the one under test.
    apiKeys: [{ key: POLL_KEY, limits: { standard: 100_000, generate: 10 } }],
    redisRetryMs: 100,
    redisTimeoutMs: 300,
  });
  cleanup.push(() => server.stop());
  return server;
}

const health = async (server: TestServer) =>
  (await (await fetch(`${server.base}/v1/health`, { headers: { "x-api-key": POLL_KEY } })).json()) as Record<string, string>;
const redisIs = (server: TestServer, state: string) => async () => (await health(server)).redis === state;
const hit = (server: TestServer) => fetch(`${server.base}/v1/services`).then(async (r) => (await r.arrayBuffer(), r));

describe.skipIf(!haveRedis)("Redis store", () => {
  test("two instances share one budget; counters always carry a TTL", async () => {
    const redis = await startRedis();
    cleanup.push(() => redis.stop());
    const a = await instance(redis.url);
    const b = await instance(redis.url);
    await eventually(redisIs(a, "connected"), 5000, "instance A to connect");
    await eventually(redisIs(b, "connected"), 5000, "instance B to connect");
    expect(await health(a)).toMatchObject({ status: "ok", rateLimitStore: "redis", redis: "connected" });

    const remaining: string[] = [];
    for (const server of [a, b, a, b, a]) {
      const res = await hit(server);
      expect(res.status).toBe(200);
      remaining.push(res.headers.get("x-ratelimit-remaining")!);
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"]);
    expect((await hit(b)).status).toBe(429);
    expect((await hit(a)).status).toBe(429);

    const client = new RedisClient(redis.url);
    try {
      const keys = (await client.send("KEYS", ["stackgen:rl:*"])) as string[];
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        const ttl = Number(await client.send("PTTL", [key]));
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
      // No API key is ever stored in Redis.
      expect(keys.join(" ")).not.toContain(POLL_KEY);
    } finally {
      client.close();
    }
  });

  test("Redis killed mid-test: the API keeps serving, health and log say so, and it recovers", async () => {
    let redis: RedisProcess = await startRedis();
    cleanup.push(() => redis.stop());
    const a = await instance(redis.url);
    const b = await instance(redis.url);
    await eventually(redisIs(a, "connected"), 5000, "A to connect");
    await eventually(redisIs(b, "connected"), 5000, "B to connect");
    expect((await hit(a)).headers.get("x-ratelimit-remaining")).toBe("4");

    await redis.stop();
    for (let i = 0; i < 4; i++) {
      const res = await hit(a);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBe("5");
    }
    await eventually(redisIs(a, "unavailable"), 5000, "A to report Redis unavailable");
    expect(await health(a)).toMatchObject({ status: "ok", rateLimitStore: "redis", redis: "unavailable" });
    expect(a.logs.some((line) => /"level":"warn".*Redis unavailable/.test(line))).toBe(true);
    // No log line carries the Redis URL.
    expect(a.logs.join("")).not.toContain(`:${redis.port}`);
    // Still limited while Redis is away (counted in this process).
    let limited = false;
    for (let i = 0; i < 6 && !limited; i++) limited = (await hit(a)).status === 429;
    expect(limited).toBe(true);

    redis = await startRedis(redis.port);
    await eventually(redisIs(a, "connected"), 10_000, "A to reconnect");
    await eventually(redisIs(b, "connected"), 10_000, "B to reconnect");
    expect(a.logs.some((line) => line.includes("Redis reachable again"))).toBe(true);
    // Shared again: the fresh Redis counts requests from both instances together.
    expect((await hit(a)).headers.get("x-ratelimit-remaining")).toBe("4");
    expect((await hit(b)).headers.get("x-ratelimit-remaining")).toBe("3");
  });

  test("Redis unreachable at start: serves from memory, then picks Redis up when it appears", async () => {
    const port = await freePort();
    const a = await instance(`redis://127.0.0.1:${port}`);
    await eventually(redisIs(a, "unavailable"), 5000, "A to report Redis unavailable");
    expect((await hit(a)).status).toBe(200);
    const redis = await startRedis(port);
    cleanup.push(() => redis.stop());
    await eventually(redisIs(a, "connected"), 10_000, "A to connect once Redis is up");
    expect((await hit(a)).headers.get("x-ratelimit-remaining")).toBe("4");
  });
});
