// `stackgen update` on stacks as users leave them running: a service that must keep running, one
// that was failing before, paused, scaled, in a profile, on a local-only image. Real engine and
// the local registry on 127.0.0.1:5000.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { cli, docker, dockerTest, dockerUnavailable, TestStack } from "./helpers.ts";

const e2e = await dockerTest();

/** Ids of a service's containers, running or not. */
const containersOf = async (stack: TestStack, service: string) =>
  (await docker("ps", "-aq", "--filter", `label=com.docker.compose.project=${stack.project}`, "--filter", `label=com.docker.compose.service=${service}`)).split("\n").filter(Boolean);

describe("update of a service meant to keep running, without a health check", () => {
  const stack = TestStack.unique("uk");
  const appRef = stack.ref("app");
  /** The one service, with a restart policy or with compose's default (none). */
  const writeCompose = (restart: string | undefined) =>
    stack.write("docker-compose.yml", `name: ${stack.project}\nservices:\n  app:\n    image: ${appRef}\n    init: true\n${restart ? `    restart: ${restart}\n` : ""}    command: ["sleep", "3600"]\n`);

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await stack.publish(appRef, ["RUN echo app-v1 > /version"]);
    writeCompose("unless-stopped");
    await stack.up();
  }, 120_000);
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "a new image that exits cleanly (it only prints its usage) is down, not done: rolled back",
    async () => {
      writeCompose(undefined);
      await stack.up();
      const { oldId } = await stack.pushNewVersion(appRef, ["RUN echo app-v2 > /version", 'ENTRYPOINT ["sh", "-c", "echo usage: app serve; exit 0", "--"]']);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stderr).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toMatchObject({ services: ["app"], recovered: true, reason: expect.stringContaining("app exited with code 0") });
      const app = await stack.container("app");
      expect(app.Image).toBe(oldId);
      expect(app.State.Running).toBe(true);
    },
    150_000,
  );

  e2e(
    "a new image that gives up some seconds after it starts (past the old 5 s window) is caught and rolled back",
    async () => {
      writeCompose("unless-stopped");
      await stack.up();
      const { oldId } = await stack.pushNewVersion(appRef, ["RUN echo app-v3 > /version", 'ENTRYPOINT ["sh", "-c", "sleep 6; echo fatal: no database >&2; exit 1", "--"]']);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "90"]);
      expect(r.code, r.stderr).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toMatchObject({ services: ["app"], recovered: true });
      expect(out.rolledBack.reason).toMatch(/app.*(restart|exited)/);
      const app = await stack.container("app");
      expect(app.Image).toBe(oldId);
      expect(app.State.Running).toBe(true);
    },
    240_000,
  );
});

describe("update of a stack with a failing, a paused, a scaled, a profiled and a local-only service", () => {
  const stack = TestStack.unique("ur");
  const appRef = stack.ref("app");
  const sideRef = stack.ref("side");
  const webRef = stack.ref("web");
  const workerRef = stack.ref("worker");
  // Built here, never pushed: its name means nothing to any registry.
  const localRef = `${stack.project}-local:dev`;

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    for (const ref of [appRef, sideRef, webRef, workerRef]) await stack.publish(ref, ["RUN echo v1 > /version && touch /ok"]);
    await stack.build(localRef, ["RUN echo local > /version"]);
    const sleeper = (ref: string, extra = "") => `    image: ${ref}\n    init: true\n    restart: unless-stopped\n    command: ["sleep", "3600"]\n${extra}`;
    stack.write("docker-compose.yml", `name: ${stack.project}
services:
  app:
${sleeper(appRef, '    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}\n')}  side:
${sleeper(sideRef, '    healthcheck: {test: ["CMD", "false"], interval: 1s, timeout: 2s, retries: 1}\n')}  idle:
${sleeper(sideRef)}  web:
${sleeper(webRef)}  worker:
${sleeper(workerRef, "    profiles: [extra]\n")}  local:
${sleeper(localRef, "    pull_policy: never\n")}`);
    expect((await stack.compose("--profile", "extra", "up", "-d", "--scale", "web=3")).code).toBe(0);
    expect((await stack.compose("pause", "idle")).code).toBe(0);
    for (let i = 0; i < 100 && !(await stack.container("side")).State.Health?.Status.startsWith("unhealthy"); i++) await Bun.sleep(200);
    expect((await stack.container("side")).State.Health.Status).toBe("unhealthy");
  }, 120_000);
  afterAll(async () => {
    await stack.compose("--profile", "extra", "down", "-v", "-t", "0");
    await stack.cleanup();
  }, 60_000);

  e2e(
    "only the new images count: the failing service is not waited for, paused and scaled ones come back as they were, the profiled one is named",
    async () => {
      const { newId: newApp } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version && touch /ok"]);
      const { newId: newWeb } = await stack.pushNewVersion(webRef, ["RUN echo v2 > /version && touch /ok"]);
      await stack.pushNewVersion(workerRef, ["RUN echo v2 > /version && touch /ok"]);

      const dry = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      // The local-only image is not looked up (Docker Hub is unreachable here: that was a failure).
      expect(dry.code, dry.stderr).toBe(0);
      const planned = JSON.parse(dry.stdout);
      expect(planned.failed).toBeUndefined();
      expect(planned.updated.map((u: { service: string }) => u.service).sort()).toEqual(["app", "web"]);
      expect(planned.unchanged).toContain("local");
      expect(planned).toMatchObject({ unhealthyBefore: ["side"], notInCompose: ["worker"], unpaused: ["idle"] });

      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toBeUndefined();
      expect(out.updated.map((u: { service: string }) => u.service).sort()).toEqual(["app", "web"]);
      expect(out).toMatchObject({ unhealthyBefore: ["side"], notInCompose: ["worker"] });
      expect(r.stderr).toContain("worker has containers but is not in the compose files");
      expect(r.stderr).toContain("COMPOSE_PROFILES");
      expect(r.stderr).not.toContain(`Pulling ${localRef}`);

      expect((await stack.container("app")).Image).toBe(newApp);
      // Scaled to three by the user: still three, all on the new image.
      const web = await containersOf(stack, "web");
      expect(web).toHaveLength(3);
      for (const id of web) expect(JSON.parse(await docker("inspect", id))[0]).toMatchObject({ Image: newWeb, State: { Running: true } });
      // Paused before: `compose stop` stopped it, so it is started again rather than left down.
      expect((await stack.container("idle")).State).toMatchObject({ Running: true, Paused: false });
      // Said, not done in silence.
      expect(out.unpaused).toEqual(["idle"]);
      expect(r.stderr).toContain("docker compose pause idle");
      expect((await stack.container("local")).State.Running).toBe(true);
    },
    240_000,
  );
});
