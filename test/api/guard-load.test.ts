// Bounded load on loopback: 10,000 POST /v1/generate at 32 concurrent connections through the
// guard, with no error and flat memory (RSS after warm-up vs at the end, generous slack).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "./guard-helpers.ts";

const TOTAL = Number(process.env.LOAD_REQUESTS ?? 10_000);
const WARM_UP = 1_000;
const CONCURRENCY = 32;
const BODY = JSON.stringify({ projectName: "x", services: ["redis"] });
/** Allowed RSS growth after warm-up: far above steady state, far below a per-request leak. */
const SLACK_BYTES = 96 * 1024 * 1024;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ logLevel: "silent", anonymousLimits: { standard: 1e9, generate: 1e9 } });
});
afterAll(async () => {
  await server.stop();
});

async function run(count: number): Promise<{ errors: string[]; statuses: Map<number, number> }> {
  const errors: string[] = [];
  const statuses = new Map<number, number>();
  let started = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (started < count) {
      started++;
      try {
        const res = await fetch(`${server.base}/v1/generate`, { method: "POST", headers: { "content-type": "application/json" }, body: BODY });
        const json = (await res.json()) as { files?: Record<string, string> };
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 200 || !json.files?.["docker-compose.yml"]) errors.push(`status ${res.status}`);
      } catch (e) {
        errors.push(String(e));
      }
    }
  }));
  return { errors, statuses };
}

const settledRss = () => {
  Bun.gc(true);
  return process.memoryUsage().rss;
};

test(`load: ${TOTAL} POST /v1/generate at ${CONCURRENCY} concurrent connections, no error, flat memory`, async () => {
  const warm = await run(WARM_UP);
  expect(warm.errors).toEqual([]);
  const before = settledRss();
  const started = performance.now();
  const { errors, statuses } = await run(TOTAL);
  const seconds = (performance.now() - started) / 1000;
  const after = settledRss();
  console.log(`load: ${TOTAL} in ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)}/s); RSS ${before >> 20} MiB -> ${after >> 20} MiB`);
  expect(errors.slice(0, 5)).toEqual([]);
  expect(statuses.get(200)).toBe(TOTAL);
  expect(after - before).toBeLessThan(SLACK_BYTES);
}, 180_000);
