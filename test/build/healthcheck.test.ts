// `stackgen healthcheck` (the container's HEALTHCHECK): exit 0 only when /v1/health answers "ok".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runCommand } from "citty";
import healthcheck, { probeUrl } from "../../src/cli/healthcheck.ts";
import { StackgenError } from "../../src/errors.ts";

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
