// `stackgen healthcheck` (the container's HEALTHCHECK): exit 0 only when /v1/health answers "ok".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runCommand } from "citty";
import healthcheck, { probeUrl } from "../../src/cli/healthcheck.ts";
import { StackgenError } from "../../src/errors.ts";
import { freePort } from "../support/tools.ts";

describe("probeUrl", () => {
  test("probes loopback when the server listens on every interface", () => {
    expect(probeUrl(undefined, undefined)).toBe("http://127.0.0.1:3456/v1/health");
    expect(probeUrl("8080", "0.0.0.0")).toBe("http://127.0.0.1:8080/v1/health");
    expect(probeUrl("8080", "::")).toBe("http://127.0.0.1:8080/v1/health");
  });
  test("probes a specific host, bracketing IPv6", () => {
    expect(probeUrl("3456", "127.0.0.2")).toBe("http://127.0.0.2:3456/v1/health");
    expect(probeUrl("3456", "::1")).toBe("http://[::1]:3456/v1/health");
  });
  test("refuses a port that is not a port", () => {
    expect(() => probeUrl("0", undefined)).toThrow(StackgenError);
    expect(() => probeUrl("http", undefined)).toThrow(/port/);
    expect(() => probeUrl("70000", undefined)).toThrow(/port/);
  });
  test("refuses a host that would move the probe to another URL", () => {
    for (const host of ["evil.example/path?", "user@evil.example", "a b", "[::1]/x"]) expect(() => probeUrl("3456", host), host).toThrow(/--host must be a host name or IP address/);
    expect(probeUrl("3456", "[::1]")).toBe("http://[::1]:3456/v1/health");
    expect(probeUrl("3456", "stackgen.internal")).toBe("http://stackgen.internal:3456/v1/health");
    expect(probeUrl("3456", "my_api")).toBe("http://my_api:3456/v1/health");
  });
});

describe("healthcheck command", () => {
  let answer: { status: number; body: unknown } = { status: 200, body: { status: "ok", version: "9.9.9" } };
  let server: ReturnType<typeof Bun.serve>;
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => new URL(req.url).pathname === "/v1/health" ? Response.json(answer.body, { status: answer.status }) : new Response(null, { status: 404 }),
    });
  });
  afterAll(() => server.stop(true));

  const probe = () => runCommand(healthcheck, { rawArgs: ["--host", "127.0.0.1", "--port", String(server.port), "--timeout", "2000"] });

  test("succeeds on a healthy answer", async () => {
    answer = { status: 200, body: { status: "ok", version: "9.9.9" } };
    await expect(probe()).resolves.toBeDefined();
  });

  test("--json prints one JSON document on success too", async () => {
    answer = { status: 200, body: { status: "ok", version: "9.9.9" } };
    const main = new URL("../../src/main.ts", import.meta.url).pathname;
    const proc = Bun.spawn([process.execPath, main, "healthcheck", "--host", "127.0.0.1", "--port", String(server.port), "--json"], { stdout: "pipe", stderr: "pipe" });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ status: "ok", version: "9.9.9", url: `http://127.0.0.1:${server.port}/v1/health` });
  });

  test("the server's own rate-limit answer counts as up (the probe shares 127.0.0.1's window with local clients)", async () => {
    answer = { status: 429, body: { error: { code: "RATE_LIMITED", message: "Too many requests; try again in 60 s." } } };
    await expect(probe()).resolves.toBeDefined();
    // A 429 that is not stackgen's own limit is not taken for it.
    answer = { status: 429, body: { message: "slow down" } };
    await expect(probe()).rejects.toMatchObject({ code: "UNHEALTHY" });
  });

  test("against a real server whose standard limit the probes use up, every probe still reports it up", async () => {
    const port = await freePort();
    const main = new URL("../../src/main.ts", import.meta.url).pathname;
    const server = Bun.spawn([process.execPath, main, "serve", "--host", "127.0.0.1", "--port", String(port), "--ui-port", "0"], { env: { ...process.env, RATE_LIMIT_STANDARD: "2", LOG_LEVEL: "error" }, stdout: "ignore", stderr: "ignore" });
    try {
      for (let i = 0; i < 100 && !(await fetch(`http://127.0.0.1:${port}/v1/health`).then(() => true, () => false)); i++) await Bun.sleep(50);
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) {
        const probe = Bun.spawn([process.execPath, main, "healthcheck", "--port", String(port)], { stdout: "ignore", stderr: "ignore" });
        codes.push(await probe.exited);
      }
      expect(codes).toEqual([0, 0, 0, 0]);
      expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(429);
    } finally {
      server.kill();
      await server.exited;
    }
  });

  test("fails on an error status or a body that is not ok", async () => {
    answer = { status: 503, body: { status: "ok" } };
    await expect(probe()).rejects.toMatchObject({ code: "UNHEALTHY", exitCode: 1 });
    answer = { status: 200, body: { status: "degraded" } };
    await expect(probe()).rejects.toMatchObject({ code: "UNHEALTHY" });
  });

  test("fails when nothing listens", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const port = closed.port!;
    await closed.stop(true);
    await expect(runCommand(healthcheck, { rawArgs: ["--host", "127.0.0.1", "--port", String(port)] })).rejects.toMatchObject({ code: "UNHEALTHY" });
  });
});
