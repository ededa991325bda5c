// `stackgen status` against a real engine: running, unhealthy and stopped services; clear errors.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASE_IMAGE, cli, dockerTest, TestStack } from "./helpers.ts";

const e2e = await dockerTest();

describe("status", () => {
  const stack = TestStack.unique("st");
  beforeAll(async () => {
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  ok:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    depends_on: {job: {condition: service_completed_successfully}}
    ports: ["127.0.0.1::80"]
    healthcheck: {test: ["CMD", "true"], interval: 1s, timeout: 2s, retries: 2}
  sick:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "false"], interval: 1s, timeout: 2s, retries: 1}
  gone:
    image: ${BASE_IMAGE}
    command: ["sh", "-c", "exit 3"]
    restart: "no"
  job:
    image: ${BASE_IMAGE}
    command: ["true"]
    restart: "no"
`,
    );
    stack.write("stackgen.json", JSON.stringify({ configVersion: 2, projectName: stack.project, services: [] }));
  });
  afterAll(() => stack.cleanup());

  e2e(
    "reports running, unhealthy and stopped services",
    async () => {
      const up = await stack.compose("up", "-d");
      expect(up.code).toBe(0);
      // Wait (bounded) until the failing health check has fired and the one-shot has exited.
      let report: any;
      for (let i = 0; i < 60; i++) {
        const r = await cli(["status", "--dir", stack.dir, "--json"]);
        expect(r.code).toBe(0);
        report = JSON.parse(r.stdout);
        const byName = Object.fromEntries(report.services.map((s: any) => [s.name, s]));
        if (byName.sick?.status === "unhealthy" && byName.ok?.status === "healthy" && byName.gone?.state === "exited" && byName.job?.state === "exited") break;
        await Bun.sleep(500);
      }
      const byName = Object.fromEntries(report.services.map((s: any) => [s.name, s]));
      expect(Object.keys(byName).sort()).toEqual(["gone", "job", "ok", "sick"]);
      // SPEC §2.8/§3: `status` holds the health verdict; Docker's own words are `statusText`.
      expect(byName.ok).toMatchObject({ state: "running", status: "healthy", image: BASE_IMAGE });
      expect(byName.ok.uptime).toMatch(/^\d+[smhd]/);
      expect(byName.ok.ports[0]).toMatch(/^127\.0\.0\.1:\d+->80\/tcp$/);
      expect(byName.ok.exitCode).toBeUndefined();
      expect(byName.sick).toMatchObject({ state: "running", status: "unhealthy" });
      expect(byName.gone).toMatchObject({ state: "exited", uptime: "", exitCode: 3, status: "none" });
      expect(byName.gone.statusText).toMatch(/Exited \(3\)/);
      // A one-shot job (ok waits for it to complete) that ended with 0 is done, not down; a
      // service that failed, or that merely has no restart policy, is not.
      expect(byName.job).toMatchObject({ state: "exited", exitCode: 0, finished: true });
      expect(byName.gone.finished).toBeUndefined();
      expect(byName.ok.finished).toBeUndefined();
      for (const s of report.services) expect(Object.keys(s)).not.toContain("health");
      expect(report.summary).toEqual({ total: 4, running: 2, stopped: 2, healthy: 1, unhealthy: 1, finished: 1 });

      const text = await cli(["status", "--dir", stack.dir]);
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/sick\s+running\s+\S+\s+unhealthy/);
      expect(text.stdout).toMatch(/job\s+finished \(0\)/);
      expect(text.stdout).toMatch(/gone\s+exited \(3\)/);
      expect(text.stdout).toContain("Finished one-shot job, not down: job\n");
      expect(text.stdout.trim().split("\n").pop()).toBe("Services: 2/4 running");
    },
    90_000,
  );

  e2e(
    "a stopped stack still lists its containers",
    async () => {
      expect((await stack.compose("stop", "-t", "0")).code).toBe(0);
      const r = await cli(["status", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      const report = JSON.parse(r.stdout);
      expect(report.summary).toMatchObject({ total: 4, running: 0, stopped: 4 });
      expect(report.services.every((s: any) => s.uptime === "" && typeof s.exitCode === "number")).toBe(true);
    },
    60_000,
  );

  e2e("files compose refuses, or that are not YAML, are bad input (exit 2, STACK_INVALID), not a failure", async () => {
    const override = join(stack.dir, "docker-compose.override.yml");
    try {
      writeFileSync(override, "services:\n  ok:\n    depends_on: [nowhere]\n");
      const refused = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout).error).toMatchObject({ code: "STACK_INVALID", message: expect.stringContaining("docker compose refuses the stack's files") });
      writeFileSync(override, "services: [\n");
      const unreadable = await cli(["status", "--dir", stack.dir, "--json"]);
      expect(unreadable.code).toBe(2);
      expect(JSON.parse(unreadable.stdout).error).toMatchObject({ code: "STACK_INVALID", message: expect.stringContaining("is not valid YAML") });
    } finally {
      rmSync(override, { force: true });
    }
  });
});

describe("status errors", () => {
  const empty = mkdtempSync(join(tmpdir(), "stackgen-empty-"));
  const idle = mkdtempSync(join(tmpdir(), "stackgen-idle-"));
  writeFileSync(join(idle, "docker-compose.yml"), `name: sgtidle${process.pid}\nservices:\n  a:\n    image: ${BASE_IMAGE}\n`);
  afterAll(() => {
    rmSync(empty, { recursive: true, force: true });
    rmSync(idle, { recursive: true, force: true });
  });

  e2e("a directory that is not a bundle is bad input (exit 2)", async () => {
    const r = await cli(["status", "--dir", empty]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("not a stack directory");
    expect(r.stderr).not.toContain("    at ");
  });

  e2e("a stack that never ran has no containers: an empty report (exit 0), and the text says how to start it", async () => {
    const r = await cli(["status", "--dir", idle, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ services: [], summary: { total: 0, running: 0, stopped: 0, healthy: 0, unhealthy: 0 } });
    const text = await cli(["status", "--dir", idle]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("has no containers: it is not started (`docker compose up -d` starts it).");
    expect(text.stdout.trim().split("\n").at(-1)).toBe("Services: 0/0 running");
  });

  e2e("a missing engine is a clear failure (exit 1)", async () => {
    const r = await cli(["status", "--dir", idle], { DOCKER_HOST: `unix://${empty}/no.sock` });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Cannot reach the Docker engine");
    expect(r.stderr.trim().split("\n").length).toBe(1);
  });
});
