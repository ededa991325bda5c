// `stackgen doctor` against a real engine: the engine's version is reported, and a port the
// stack's own running container publishes is the stack's, not a clash.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { BASE_IMAGE, cli, dockerTest, dockerUnavailable, TestStack } from "./helpers.ts";
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
