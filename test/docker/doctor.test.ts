// `stackgen doctor` against a real engine: the engine's version is reported, and a port the
// stack's own running container publishes is the stack's, not a clash.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { chmodSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { BASE_IMAGE, BUN, MAIN, cli, docker, dockerTest, dockerUnavailable, run, TestStack } from "./helpers.ts";
import { freePort } from "../support/tools.ts";

const e2e = await dockerTest();
type Check = { id: string; status: string; message: string };

describe("doctor", () => {
  const stack = TestStack.unique("dr");
  let port = 0;
  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    port = await freePort();
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  web:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    ports: ["127.0.0.1:${port}:80"]
`,
    );
  });
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "before the start the port is free; once the stack runs it is held by the stack itself, and both pass",
    async () => {
      const before = await cli(["doctor", "--dir", stack.dir, "--json"]);
      expect(before.code, before.stderr).toBe(0);
      const first = JSON.parse(before.stdout) as { ok: boolean; checks: Check[] };
      expect(first.ok).toBe(true);
      expect(first.checks.find((c) => c.id === "engine")).toMatchObject({ status: "ok", message: expect.stringMatching(/^Docker \d+\./) });
      expect(first.checks.find((c) => c.id === "compose")?.status).toBe("ok");
      expect(first.checks.find((c) => c.id === `port ${port}/tcp`)).toMatchObject({ status: "ok", message: expect.stringContaining("free") });
      // The engine's data root is on this machine (a local socket): its free space is read.
      const root = (await docker("info", "--format", "{{.DockerRootDir}}")).trim();
      expect(first.checks.find((c) => c.id === "disk")).toMatchObject({ status: expect.stringMatching(/^(ok|warn)$/), message: expect.stringContaining(root) });

      await stack.up();
      const after = await cli(["doctor", "--dir", stack.dir, "--json"]);
      expect(after.code, after.stderr).toBe(0);
      const second = JSON.parse(after.stdout) as { checks: Check[] };
      expect(second.checks.find((c) => c.id === `port ${port}/tcp`)).toMatchObject({ status: "ok", message: "held by this stack's web" });
      expect(second.checks.find((c) => c.id === "orphans")).toBeUndefined();
    },
    90_000,
  );

  e2e(
    "a user who may not open the engine's socket is told so, and the stack's own port is not blamed on another program",
    async () => {
      if (process.getuid?.() !== 0 || !Bun.which("setpriv")) return; // needs root to act as another user
      // The stack runs and holds its port; `nobody` may read the stack but not the socket.
      chmodSync(stack.dir, 0o755);
      for (const name of readdirSync(stack.dir)) chmodSync(join(stack.dir, name), 0o644);
      const r = await run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BUN, MAIN, "doctor", "--dir", stack.dir, "--json"], { env: { PATH: process.env.PATH!, HOME: "/tmp", NO_COLOR: "1" } });
      const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
      expect(checks.find((c) => c.id === "engine")).toMatchObject({ status: "fail", message: expect.stringContaining("usermod -aG docker") });
      expect(checks.find((c) => c.id === `port ${port}/tcp`)).toMatchObject({ status: "warn", message: expect.stringContaining("without access to the engine") });
    },
    60_000,
  );

  e2e(
    "a container of a service the compose file no longer names is reported, with the command that removes it",
    async () => {
      stack.write("docker-compose.yml", `name: ${stack.project}\nservices:\n  other:\n    image: ${BASE_IMAGE}\n    command: ["sleep", "3600"]\n`);
      const r = await cli(["doctor", "--dir", stack.dir, "--json"]);
      const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
      expect(checks.find((c) => c.id === "orphans")).toEqual({ id: "orphans", status: "warn", message: expect.stringContaining("containers of web, which the compose files no longer name") });
      expect(checks.find((c) => c.id === "orphans")!.message).toContain("--remove-orphans");
    },
    60_000,
  );
});
