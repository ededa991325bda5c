// `stackgen serve` reads the guard's environment once at start: bad values exit 2 with a clear
// message that never repeats a key; good ones apply to the running server and its stdout log.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { freePort, eventually } from "./guard-helpers.ts";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const baseEnv = { ...process.env, CI: process.env.CI ?? "", NO_COLOR: "1", HOST: "", PORT: "", UI_PORT: "" };

test("bad guard environment: exit 2, every problem named, no key echoed", async () => {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--port", String(await freePort()), "--ui-port", "0", "--host", "127.0.0.1"], {
    env: { ...baseEnv, API_KEYS: "very-secret-key:12", RATE_LIMIT_GENERATE: "many", CORS_ORIGINS: "not-an-origin" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), 15_000);
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  clearTimeout(timer);
  expect(code).toBe(2);
  for (const name of ["API_KEYS entry 1", "RATE_LIMIT_GENERATE", "CORS_ORIGINS"]) expect(err).toContain(name);
  expect(out + err).not.toContain("very-secret-key");
});

test("good environment: limits, keys and the JSON request log apply to the served API", async () => {
  const port = await freePort();
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--port", String(port), "--ui-port", "0", "--host", "127.0.0.1"], {
    env: { ...baseEnv, API_KEYS: "serve-key:7:3", RATE_LIMIT_STANDARD: "4", LOG_LEVEL: "info" },
    stdout: "pipe",
    stderr: "ignore",
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => fetch(`${base}/v1/health`).then(() => true, () => false), 15_000, "the server to listen");
    const anon = await fetch(`${base}/v1/health?probe=1`);
    expect(anon.headers.get("x-ratelimit-limit")).toBe("4");
    const keyed = await fetch(`${base}/v1/health`, { headers: { "x-api-key": "serve-key", "x-request-id": "cli-req-1" } });
    expect(keyed.headers.get("x-ratelimit-limit")).toBe("7");
    expect((await fetch(`${base}/v1/health`, { headers: { "x-api-key": "nope" } })).status).toBe(401);
  } finally {
    proc.kill();
  }
  await proc.exited;
  const lines = (await new Response(proc.stdout).text()).trim().split("\n").map((l) => JSON.parse(l));
  expect(lines.some((l) => l.msg === "request" && l.requestId === "cli-req-1" && l.path === "/v1/health" && l.status === 200)).toBe(true);
  expect(lines.some((l) => l.status === 401)).toBe(true);
  expect(JSON.stringify(lines)).not.toContain("serve-key");
  expect(JSON.stringify(lines)).not.toContain("probe=1");
}, 30_000);
