// `stackgen update` against a real engine and the local registry on 127.0.0.1:5000.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { verifyBackupFile } from "../../src/docker/backup.ts";
import { Engine, EngineError } from "../../src/docker/engine.ts";
import { rollbackTag, runUpdate } from "../../src/docker/update.ts";
import type { StackgenError } from "../../src/errors.ts";
import { startedStack } from "../support/started-stack.ts";
import { BASE_IMAGE, cli, docker, dockerRefusingStops, dockerTest, dockerUnavailable, run, TestStack } from "./helpers.ts";

const e2e = await dockerTest();

const repoDigest = async (id: string) => {
  const digests: string[] = JSON.parse(await docker("image", "inspect", "-f", "{{json .RepoDigests}}", id));
  return digests[0]?.split("@")[1];
};

describe("update", () => {
  const stack = TestStack.unique("up");
  const dbRef = stack.ref("db");
  const webRef = stack.ref("web");
  const composeText = (webImage: string) => `name: ${stack.project}
services:
  db:
    image: ${dbRef}
    init: true
    command: ["sh", "-c", "[ -f /data/seed ] || date +%s%N > /data/seed; exec sleep 3600"]
    volumes: ["data:/data"]
    environment: {KEEP_ME: "yes"}
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
  web:
    image: ${webImage}
    init: true
    command: ["sleep", "3600"]
    depends_on: {db: {condition: service_healthy}}
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
volumes:
  data: {}
`;

  startedStack(stack, composeText(webRef), { [dbRef]: ["RUN echo db-v1 > /version && touch /ok"], [webRef]: ["RUN echo web-v1 > /version && touch /ok"] }, () => {
    // The user's own change, which compose loads beside the bundle's file.
    stack.write("docker-compose.override.yml", "services:\n  db:\n    environment: {MY_OWN: from-override}\n");
    return stack.up();
  });

  e2e(
    "--dry-run reports old and new digests and changes nothing",
    async () => {
      const { oldId, newId } = await stack.pushNewVersion(dbRef, ["RUN echo db-v2 > /version && touch /ok"]);
      const before = await stack.container("db");
      const r = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated).toEqual([{ service: "db", image: dbRef, oldDigest: await repoDigest(oldId), newDigest: await repoDigest(newId) }]);
      expect(out.updated[0].oldDigest).not.toBe(out.updated[0].newDigest);
      expect(out.unchanged).toEqual(["web"]);
      expect(out.restarted).toEqual(["db", "web"]);
      const after = await stack.container("db");
      expect(after.Id).toBe(before.Id);
      expect(after.State.StartedAt).toBe(before.State.StartedAt);
      expect(await stack.imageId(dbRef)).toBe(oldId);
      // --backup asks for something a dry run does not do: said, not ignored.
      const withBackup = await cli(["update", "--dir", stack.dir, "--dry-run", "--backup", "--json"]);
      expect(withBackup.code).toBe(0);
      expect(withBackup.stderr).toContain("--backup has no effect with --dry-run");
      expect(existsSync(join(stack.dir, "backups"))).toBe(false);
    },
    60_000,
  );

  e2e(
    "update pulls the new digest, restarts in dependency order and keeps data and env",
    async () => {
      const seed = await stack.exec("db", "cat", "/data/seed");
      const r = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["db"]);
      expect(out.unchanged).toEqual(["web"]);
      expect(out.restarted).toEqual(["db", "web"]);
      expect(r.stderr).toContain(`Pulling ${dbRef}`);
      expect((await stack.exec("db", "cat", "/version")).trim()).toBe("db-v2");
      expect(await stack.exec("db", "cat", "/data/seed")).toBe(seed);
      expect((await stack.exec("db", "sh", "-c", "echo $KEEP_ME")).trim()).toBe("yes");
      // The recreated container still has what the override file adds.
      expect((await stack.exec("db", "sh", "-c", "echo $MY_OWN")).trim()).toBe("from-override");
      const db = await stack.container("db");
      const web = await stack.container("web");
      expect(Date.parse(db.State.StartedAt)).toBeLessThan(Date.parse(web.State.StartedAt));
      expect(db.State.Health.Status).toBe("healthy");
      expect(web.State.Health.Status).toBe("healthy");
      expect(await repoDigest(db.Image)).toBe(out.updated[0].newDigest);
    },
    120_000,
  );

  e2e(
    "a failed pull stops nothing",
    async () => {
      await stack.pushNewVersion(dbRef, ["RUN echo db-v3 > /version && touch /ok"]);
      // web now names a tag that exists only locally: its pull fails.
      const localOnly = stack.ref("web", "local-only");
      stack.images.add(localOnly);
      await docker("tag", webRef, localOnly);
      stack.write("docker-compose.yml", composeText(localOnly));
      const before = { db: await stack.container("db"), web: await stack.container("web") };
      try {
        const r = await cli(["update", "--dir", stack.dir, "--json"]);
        expect(r.code).toBe(1);
        const message = JSON.parse(r.stdout).error.message;
        expect(message).toContain("nothing was stopped");
        // Named by service, with what to check.
        expect(message).toContain(`web (${localOnly}): `);
        expect(message).toContain("docker login");
        // db's pull worked, but its tag is back on the running image: a later `up` changes nothing.
        expect(await stack.imageId(dbRef)).toBe(before.db.Image);
        for (const s of ["db", "web"] as const) {
          const now = await stack.container(s);
          expect(now.Id).toBe(before[s].Id);
          expect(now.State.Running).toBe(true);
          expect(now.State.StartedAt).toBe(before[s].State.StartedAt);
        }
      } finally {
        stack.write("docker-compose.yml", composeText(webRef));
      }
      expect(readFileSync(join(stack.dir, "docker-compose.yml"), "utf8")).toContain(webRef);
    },
    60_000,
  );

  e2e(
    "--backup: when the backup cannot be written nothing is updated and the stack runs its previous images again",
    async () => {
      // Since the failed pull above, the registry has a db version the stack does not run.
      const before = await stack.container("db");
      writeFileSync(join(stack.dir, "backups"), "a file where the backups folder would go\n");
      try {
        const r = await cli(["update", "--dir", stack.dir, "--backup", "--json", "--timeout", "60"]);
        expect(r.code, r.stderr).toBe(1);
        const error = JSON.parse(r.stdout).error;
        expect(error.code).toBe("BACKUP_FAILED");
        expect(error.message).toContain("nothing was updated");
        const db = await stack.container("db");
        expect(db.Image).toBe(before.Image);
        expect(db.State.Health.Status).toBe("healthy");
        expect(await stack.imageId(dbRef)).toBe(before.Image);
        expect((await stack.container("web")).State.Health.Status).toBe("healthy");
      } finally {
        rmSync(join(stack.dir, "backups"));
      }
    },
    120_000,
  );

  e2e(
    "--backup takes a verified backup of the stopped stack before the new images start",
    async () => {
      const seed = await stack.exec("db", "cat", "/data/seed");
      const r = await cli(["update", "--dir", stack.dir, "--backup", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["db"]);
      expect(out.backup).toMatch(/pre-update-.*\.tar\.gz$/);
      expect((await stack.exec("db", "cat", "/version")).trim()).toBe("db-v3");
      const listed = JSON.parse((await cli(["backup", "list", "--dir", stack.dir, "--json"])).stdout).backups;
      expect(listed).toEqual([expect.objectContaining({ file: out.backup, verified: true, project: stack.project, volumes: [`${stack.project}_data`] })]);
      // Taken cold: the manifest says so, and the volume holds the data as it was.
      const manifest = await verifyBackupFile(out.backup);
      expect(manifest.manifest.hot).toBe(false);
      expect(await stack.exec("db", "cat", "/data/seed")).toBe(seed);
    },
    120_000,
  );

  e2e(
    "a service that does not come up healthy is rolled back",
    async () => {
      const webBefore = await stack.container("web");
      const { oldId } = await stack.pushNewVersion(webRef, ["RUN echo web-broken > /version"]); // no /ok: health fails
      expect(oldId).toBe(webBefore.Image);
      const r = await cli(["update", "--dir", stack.dir, "--backup", "--json", "--timeout", "60"]);
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack.services).toContain("web");
      // The data before the update stays, and the message says how to bring it back.
      expect(r.stderr).toContain(`stackgen backup restore ${out.backup} --dir ${stack.dir}\``);
      expect(out.rolledBack.recovered).toBe(true);
      expect(out.rolledBack.reason).toContain("web");
      expect(r.stderr).toMatch(/rolled back/i);
      const web = await stack.container("web");
      expect(web.Image).toBe(oldId);
      expect(web.State.Health.Status).toBe("healthy");
      expect((await stack.exec("web", "cat", "/version")).trim()).toBe("web-v1");
      expect(await stack.imageId(webRef)).toBe(oldId);
      const status = JSON.parse((await cli(["status", "--dir", stack.dir, "--json"])).stdout);
      expect(status.summary).toMatchObject({ total: 2, running: 2, healthy: 2 });
      // The user's next plain `up` finds every container as compose would have made it (web, which
      // depends on db, was made again by the update): nothing is made again, nothing restarts.
      const plain = await stack.compose("up", "-d");
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stderr).not.toContain("Recreate");
      expect((await stack.container("web")).Id).toBe(web.Id);
    },
    150_000,
  );
});

describe("update --dry-run after the tag moved to a new multi-platform index", () => {
  const stack = TestStack.unique("um");
  const listRef = stack.ref("multi");
  const amd64Ref = stack.ref("multi", "amd64");
  const otherRef = stack.ref("multi", "other");

  /** Push `ref` as an index of the given images (the second labelled arm64); returns its digest. */
  async function pushIndex(ref: string, images: string[]): Promise<string> {
    await run(["docker", "manifest", "rm", ref]);
    const created = await run(["docker", "manifest", "create", "--insecure", ref, ...images]);
    if (created.code !== 0) throw new Error(created.stderr);
    if (images[1]) await docker("manifest", "annotate", "--os", "linux", "--arch", "arm64", ref, images[1]);
    const pushed = await run(["docker", "manifest", "push", "--insecure", "--purge", ref]);
    if (pushed.code !== 0) throw new Error(pushed.stderr);
    return /sha256:[0-9a-f]{64}/.exec(pushed.stdout)![0];
  }

  startedStack(stack, `services:
  multi:
    image: ${listRef}
    init: true
    command: ["sleep", "3600"]
`, { [amd64Ref]: ["RUN echo amd64 > /version"], [otherRef]: ["RUN echo other > /version"] }, async () => {
    await pushIndex(listRef, [amd64Ref]);
    stack.images.add(listRef);
    expect((await stack.compose("pull")).code).toBe(0);
    expect((await stack.compose("up", "-d")).code).toBe(0);
  });

  e2e(
    "this platform's image is the same, so the dry run and the update agree it is unchanged",
    async () => {
      // The index gains an arm64 entry; the amd64 one this host runs stays the same image. The
      // engine lists an image's digests sorted: one that sorts after the old keeps the old first,
      // which a check of the first digest alone would take for the registry's (a new arm64
      // image each try, until the index's digest sorts so).
      const oldIndex: string = JSON.parse(await docker("image", "inspect", listRef))[0].RepoDigests[0].split("@")[1];
      let newIndex = await pushIndex(listRef, [amd64Ref, otherRef]);
      for (let i = 0; newIndex < oldIndex && i < 30; i++) {
        await stack.publish(otherRef, [`RUN echo other-${i} > /version`]);
        newIndex = await pushIndex(listRef, [amd64Ref, otherRef]);
      }
      expect(newIndex > oldIndex).toBe(true);
      const real = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(real.code, real.stdout + real.stderr).toBe(0);
      expect(JSON.parse(real.stdout).unchanged).toEqual(["multi"]);
      const dry = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      expect(dry.code, dry.stdout + dry.stderr).toBe(0);
      const out = JSON.parse(dry.stdout);
      expect(out.updated).toEqual([]);
      expect(out.unchanged).toEqual(["multi"]);
    },
    150_000,
  );
});

describe("update --dry-run of a service whose image was loaded with docker load", () => {
  const stack = TestStack.unique("ul");
  const appRef = stack.ref("app");
  startedStack(stack, `services:\n  app:\n    image: ${appRef}\n    init: true\n    command: ["sleep", "3600"]\n`, { [appRef]: ["RUN echo app-v1 > /version"] }, async () => {
    // The registry's image, brought here as an archive: the engine knows no registry digest of it.
    const archive = join(stack.dir, "app.tar");
    await docker("save", "-o", archive, appRef);
    await docker("rmi", appRef);
    await docker("load", "-i", archive);
    await stack.up();
  });

  e2e(
    "agrees with the update, which compares image ids after its pull: unchanged while the registry has the same image, updated once it has another",
    async () => {
      expect(JSON.parse(await docker("image", "inspect", "-f", "{{json .RepoDigests}}", appRef))).toEqual([]);
      const dry = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      expect(dry.code, dry.stdout + dry.stderr).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ updated: [], unchanged: ["app"], restarted: [] });
      const real = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(real.code, real.stdout + real.stderr).toBe(0);
      expect(JSON.parse(real.stdout)).toMatchObject({ updated: [], unchanged: ["app"], restarted: [] });
      const { oldId, newId } = await stack.pushNewVersion(appRef, ["RUN echo app-v2 > /version"]);
      const dryNew = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dryNew.updated).toEqual([expect.objectContaining({ service: "app", oldDigest: await repoDigest(oldId), newDigest: await repoDigest(newId) })]);
      const realNew = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(realNew.code, realNew.stdout + realNew.stderr).toBe(0);
      expect(JSON.parse(realNew.stdout).updated.map((u: any) => u.service)).toEqual(["app"]);
      expect((await stack.container("app")).Image).toBe(newId);
    },
    120_000,
  );
});

describe("update --dry-run of a stack with an image built here", () => {
  const stack = TestStack.unique("ub");
  const pulledRef = stack.ref("pulled");
  // Built from the stack's own Dockerfile and never pushed: no registry knows it.
  const builtRef = stack.ref("built", "local");

  startedStack(stack, `services:
  pulled:
    image: ${pulledRef}
    init: true
    command: ["sleep", "3600"]
  built:
    build: ./app
    image: ${builtRef}
    init: true
    command: ["sleep", "3600"]
  local:
    build: ./app
    init: true
    command: ["sleep", "3600"]
`, { [pulledRef]: ["RUN echo v1 > /version"] }, async () => {
    mkdirSync(join(stack.dir, "app"));
    stack.write("app/Dockerfile", `FROM ${BASE_IMAGE}\nRUN echo built > /version\n`);
    expect((await stack.compose("up", "-d", "--build")).code).toBe(0);
  });

  e2e(
    "asks no registry about the built image (update does not pull it either) and reports it unchanged",
    async () => {
      const r = await cli(["update", "--dir", stack.dir, "--dry-run", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.failed).toBeUndefined();
      // Built under no image name too: accounted for, as the update leaves its image as it is.
      expect(out.unchanged).toEqual(["built", "local", "pulled"]);
      expect(r.stderr).not.toContain(builtRef);
      const real = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(real.code, real.stdout + real.stderr).toBe(0);
      expect(JSON.parse(real.stdout)).toMatchObject({ updated: [], unchanged: ["built", "local", "pulled"], restarted: [] });
    },
    60_000,
  );
});

describe("update of a service without a health check", () => {
  const stack = TestStack.unique("uq");
  const gateRef = stack.ref("gate");

  // Like the generated gateway: no health check, restarted by its policy when it dies.
  startedStack(stack, `services:
  gate:
    image: ${gateRef}
    init: true
    restart: unless-stopped
    command: ["sleep", "3600"]
`, { [gateRef]: ["RUN echo gate-v1 > /version"] });

  e2e(
    "a new image that crashes on start is caught and rolled back, not reported as done",
    async () => {
      const before = await stack.container("gate");
      // The new version dies a moment after it starts, whatever the command.
      const { oldId } = await stack.pushNewVersion(gateRef, ["RUN echo gate-v2 > /version", 'ENTRYPOINT ["sh", "-c", "sleep 1; exit 3", "--"]']);
      expect(oldId).toBe(before.Image);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack.services).toEqual(["gate"]);
      expect(out.rolledBack.recovered).toBe(true);
      expect(out.rolledBack.reason).toMatch(/gate.*(restart|exited)/);
      // No backup was made: the user is told the data may have moved on, and where to look.
      expect(r.stderr).toContain("this update made no backup");
      expect(r.stderr).toContain("stackgen backup list");
      const gate = await stack.container("gate");
      expect(gate.Image).toBe(oldId);
      expect(gate.State.Running).toBe(true);
      expect((await stack.exec("gate", "cat", "/version")).trim()).toBe("gate-v1");
    },
    150_000,
  );
});

describe("update --backup of a stack with a service of a profile", () => {
  const stack = TestStack.unique("ub");
  const mainRef = stack.ref("main");

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await stack.publish(mainRef, ["RUN echo main-v1 > /version"]);
    await stack.upWithProfiledWorker(mainRef);
  }, 120_000);
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "the safety backup holds the volume of the running service of a profile too",
    async () => {
      await stack.pushNewVersion(mainRef, ["RUN echo main-v2 > /version"]);
      const workerBefore = (await stack.container("worker")).State.StartedAt;
      const r = await cli(["update", "--dir", stack.dir, "--backup", "--json", "--timeout", "60"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["main"]);
      const manifest = await verifyBackupFile(out.backup);
      expect(manifest.manifest.volumes.map((v) => v.name).sort()).toEqual([`${stack.project}_mdata`, `${stack.project}_wdata`]);
      // Cold, as --backup promises: the worker, which the update's stop leaves running, was
      // stopped for the copy of its volume (copied while it wrote, marked hot) and runs again.
      expect(manifest.manifest.hot).toBe(false);
      const worker = await stack.container("worker");
      expect(worker.State.Running).toBe(true);
      expect(worker.State.StartedAt).not.toBe(workerBefore);
    },
    150_000,
  );
});

describe("update of a stack the user has partly stopped", () => {
  const stack = TestStack.unique("us");
  const aRef = stack.ref("a");
  const bRef = stack.ref("b");

  const service = (ref: string) => `    image: ${ref}\n    init: true\n    command: ["sleep", "3600"]\n    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}\n`;
  startedStack(stack, `services:\n  a:\n${service(aRef)}  b:\n${service(bRef)}`, { [aRef]: ["RUN echo a-v1 > /version && touch /ok"], [bRef]: ["RUN echo b-v1 > /version && touch /ok"] });

  e2e(
    "a service the user stopped stays stopped; one without a container is not an image change",
    async () => {
      expect((await stack.compose("stop", "b")).code).toBe(0);
      await stack.pushNewVersion(aRef, ["RUN echo a-v2 > /version && touch /ok"]);
      const dry = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dry.restarted).toEqual(["a"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["a"]);
      expect(out.restarted).toEqual(["a"]);
      expect(r.stderr).toContain("Leaving b stopped, as before the update");
      expect((await stack.container("b")).State.Running).toBe(false);
      expect((await stack.exec("a", "cat", "/version")).trim()).toBe("a-v2");

      // b's container is gone, no image is new: nothing is reported changed, nothing restarts.
      expect((await stack.compose("rm", "-sf", "b")).code).toBe(0);
      const started = (await stack.container("a")).State.StartedAt;
      const again = JSON.parse((await cli(["update", "--dir", stack.dir, "--json"])).stdout);
      expect(again).toMatchObject({ updated: [], restarted: [] });
      expect(again.unchanged).toEqual(["a", "b"]);
      const dryAgain = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dryAgain).toMatchObject({ updated: [], restarted: [] });
      expect((await stack.container("a")).State.StartedAt).toBe(started);
      await stack.up();

      // Only a stopped service has a new image: the command named is the one that runs it on it
      // (`compose start` would run its old container, on the old image).
      expect((await stack.compose("stop", "b")).code).toBe(0);
      await stack.pushNewVersion(bRef, ["RUN echo b-v2 > /version && touch /ok"]);
      const only = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(only.code, only.stderr).toBe(0);
      expect(JSON.parse(only.stdout)).toMatchObject({ updated: [{ service: "b" }], restarted: [] });
      const named = /`(docker compose (?:[^`]* )?up -d b)` in (\S+) starts it on the new image/.exec(only.stderr);
      expect(named?.[2], only.stderr + only.stdout).toBe(stack.dir);
      const ran = await run(named![1].split(" "), { cwd: stack.dir });
      expect(ran.code, ran.stderr).toBe(0);
      expect((await stack.exec("b", "cat", "/version")).trim()).toBe("b-v2");
    },
    150_000,
  );

  e2e(
    "the rollback runs the previous image even when the service pulls always",
    async () => {
      stack.write("docker-compose.override.yml", "services:\n  a:\n    pull_policy: always\n");
      try {
        const before = await stack.container("a");
        const { oldId } = await stack.pushNewVersion(aRef, ["RUN echo a-broken > /version"]); // no /ok: never healthy
        const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "20"]);
        expect(r.code).toBe(1);
        const out = JSON.parse(r.stdout);
        expect(out.rolledBack).toMatchObject({ services: ["a"], recovered: true });
        const a = await stack.container("a");
        expect(a.Image).toBe(oldId);
        expect(a.Image).toBe(before.Image);
        expect((await stack.exec("a", "cat", "/version")).trim()).toBe("a-v2");
      } finally {
        rmSync(join(stack.dir, "docker-compose.override.yml"));
      }
    },
    150_000,
  );

  e2e(
    "--backup on a stack directory a backup cannot hold is refused before anything is pulled or stopped",
    async () => {
      const before = (await stack.container("a")).State.StartedAt;
      const big = join(stack.dir, "big.bin");
      writeFileSync(big, new Uint8Array(65 * 1024 * 1024));
      try {
        const r = await cli(["update", "--dir", stack.dir, "--backup", "--json"]);
        expect(r.code).toBe(1);
        expect(JSON.parse(r.stdout).error).toMatchObject({ code: "BACKUP_FAILED", message: expect.stringContaining("Nothing was pulled or stopped.") });
        expect(r.stderr).not.toContain("Pulling");
        expect((await stack.container("a")).State.StartedAt).toBe(before);
      } finally {
        rmSync(big);
      }
    },
    60_000,
  );
});

describe("update of a stack with a service the user stopped that exits 0 on SIGTERM", () => {
  const stack = TestStack.unique("ut");
  const mainRef = stack.ref("main");
  const sideRef = stack.ref("side");

  // Compose's default restart policy ("no") and a clean exit on SIGTERM, as most servers do:
  // after `docker compose stop` it looks like a job that ran to completion.
  const service = (ref: string) => `    image: ${ref}
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
`;
  startedStack(stack, `services:\n  main:\n${service(mainRef)}  side:\n${service(sideRef)}`, { [mainRef]: ["RUN echo main-v1 > /version && touch /ok"], [sideRef]: ["RUN echo side-v1 > /version && touch /ok"] }, async () => {
    await stack.up();
    expect((await stack.compose("stop", "side")).code).toBe(0);
    expect((await stack.container("side")).State).toMatchObject({ Status: "exited", ExitCode: 0 });
  });

  e2e(
    "it stays stopped, and its broken new image neither starts nor rolls back the update of the others",
    async () => {
      await stack.pushNewVersion(mainRef, ["RUN echo main-v2 > /version && touch /ok"]);
      // Would never turn healthy: no /ok.
      await stack.pushNewVersion(sideRef, ["RUN echo side-v2 > /version"]);
      const dry = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dry.restarted).toEqual(["main"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "30"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toBeUndefined();
      expect(out.restarted).toEqual(["main"]);
      expect(r.stderr).toContain("Leaving side stopped, as before the update");
      expect((await stack.container("side")).State.Running).toBe(false);
      expect((await stack.exec("main", "cat", "/version")).trim()).toBe("main-v2");
    },
    150_000,
  );
});

describe("update of a stack with a crash-looping service, seen between two crashes", () => {
  const stack = TestStack.unique("uc");
  const appRef = stack.ref("app");
  const crashRef = stack.ref("crash");

  startedStack(stack, `services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
  crash:
    image: ${crashRef}
    restart: always
    command: ["sh", "-c", "sleep 5; exit 3"]
`, { [appRef]: ["RUN echo v1 > /version && touch /ok"], [crashRef]: ["RUN echo v1 > /version"] });

  e2e(
    "it was failing on an image that does not change: not waited for, so it does not roll back the update of another",
    async () => {
      const { newId } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version && touch /ok"]);
      // Restarted by the engine and running again: the container list says "running".
      for (let i = 0; i < 150; i++) {
        const c = await stack.container("crash");
        if (c.RestartCount > 0 && c.State.Running) break;
        await Bun.sleep(100);
      }
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toBeUndefined();
      expect(out.unhealthyBefore).toEqual(["crash"]);
      expect((await stack.container("app")).Image).toBe(newId);
    },
    150_000,
  );
});

describe("update whose rollback fails too", () => {
  const stack = TestStack.unique("ur");
  const dbRef = stack.ref("db");
  const webRef = stack.ref("web");

  // The database is healthy until a new version has migrated its data, which the old version
  // cannot read: the rollback starts it again, still unhealthy.
  startedStack(stack, `services:
  db:
    image: ${dbRef}
    init: true
    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "sh", "-c", "test ! -f /data/schema-v2"], interval: 1s, timeout: 2s, retries: 2}
  web:
    image: ${webRef}
    init: true
    restart: unless-stopped
    depends_on: [db]
  api:
    image: ${webRef}
    init: true
    restart: unless-stopped
    # A layer after web's: web's start does not race api's failing one.
    depends_on: {db: {condition: service_healthy}, web: {condition: service_started}}
volumes:
  data: {}
`, { [dbRef]: ['CMD ["sleep", "3600"]'], [webRef]: ['CMD ["sleep", "3600"]'] });

  e2e(
    "starts every service after the failing one that can run, and names those that do not with the command to start them",
    async () => {
      await stack.pushNewVersion(dbRef, ['CMD ["sh", "-c", "touch /data/schema-v2; exec sleep 3600"]']);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "15"]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toMatchObject({ services: ["db"], recovered: false, notRunning: ["api"] });
      expect(r.stderr).toContain("docker compose up -d api");
      // web needs db started, not healthy: it runs again, as before the update.
      expect((await stack.container("web")).State.Running).toBe(true);
      expect((await stack.container("db")).State.Running).toBe(true);
      expect((await stack.container("api")).State.Running).toBe(false);
    },
    200_000,
  );
});

describe("update of a stack with a job that ran to completion", () => {
  const stack = TestStack.unique("uj");
  const appRef = stack.ref("app");
  const jobRef = stack.ref("job");

  // A migration-style job: runs once, exits 0, no restart policy.
  startedStack(stack, `services:
  app:
    image: ${appRef}
    init: true
    restart: unless-stopped
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
    depends_on: {migrate: {condition: service_completed_successfully}}
  migrate:
    image: ${jobRef}
    restart: "no"
    command: ["cat", "/version"]
`, { [appRef]: ["RUN touch /ok"], [jobRef]: ["RUN echo job-v1 > /version"] }, async () => {
    expect((await stack.compose("up", "-d", "--wait", "app")).code).toBe(0);
    for (let i = 0; i < 50 && (await stack.container("migrate")).State.Status !== "exited"; i++) await Bun.sleep(100);
  });

  e2e(
    "the job the app depends on runs again on its new image; the stopped-service rule does not skip it",
    async () => {
      const { newId } = await stack.pushNewVersion(jobRef, ["RUN echo job-v2 > /version"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["migrate"]);
      expect(out.restarted).toContain("migrate");
      const job = await stack.container("migrate");
      expect(job.Image).toBe(newId);
      expect(job.State).toMatchObject({ Status: "exited", ExitCode: 0 });
      expect((await stack.compose("logs", "--no-log-prefix", "migrate")).stdout).toContain("job-v2");
    },
    150_000,
  );

  e2e(
    "a job the app waits for that failed before the update is named, and nothing is stopped or left on the new images",
    async () => {
      // compose up would run it again to start app, fail, and roll back an update it did not cause.
      stack.write("docker-compose.override.yml", "services:\n  migrate:\n    command: [\"sh\", \"-c\", \"exit 3\"]\n");
      try {
        expect((await stack.compose("up", "-d", "--no-deps", "--force-recreate", "migrate")).code).toBe(0);
        for (let i = 0; i < 50 && (await stack.container("migrate")).State.Status !== "exited"; i++) await Bun.sleep(100);
        const appBefore = (await stack.container("app")).State.StartedAt;
        // Nothing new: nothing to refuse, as before.
        const idle = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
        expect(idle.code, idle.stderr).toBe(0);
        expect(idle.stderr).toContain("Every image is up to date");
        // A new app image: the job would be run again to start it, and fail.
        const { oldId } = await stack.pushNewVersion(appRef, ["RUN touch /ok && echo v2 > /version"]);
        const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
        expect(r.code, r.stderr).toBe(1);
        expect(JSON.parse(r.stdout).error).toMatchObject({ code: "JOB_FAILED", message: expect.stringContaining("migrate, a one-shot job that app waits for, exited with code 3 before the update") });
        const app = await stack.container("app");
        expect({ running: app.State.Running, startedAt: app.State.StartedAt }).toEqual({ running: true, startedAt: appBefore });
        // The pulled tag is put back: a later plain `docker compose up` runs what ran.
        expect(await stack.imageId(appRef)).toBe(oldId);
      } finally {
        rmSync(join(stack.dir, "docker-compose.override.yml"), { force: true });
      }
    },
    60_000,
  );
});

describe("update of a stack whose app waits for a database that turned unhealthy", () => {
  const stack = TestStack.unique("uh");
  const dbRef = stack.ref("db");
  const appRef = stack.ref("app");

  // db passes its check only until /tmp/ok2 goes: started again, it stays unhealthy.
  startedStack(stack, `services:
  db:
    image: ${dbRef}
    init: true
    command: ["sh", "-c", "mkdir -p /tmp; [ -f /tmp/started ] || touch /tmp/started /tmp/ok2; exec sleep 3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/tmp/ok2"], interval: 1s, timeout: 2s, retries: 2}
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    depends_on: {db: {condition: service_healthy}}
`, { [dbRef]: ["RUN echo db-v1 > /version"], [appRef]: ["RUN echo app-v1 > /version"] });

  e2e(
    "is refused before anything stops, naming the unhealthy dependency: compose would not start the app again",
    async () => {
      await stack.exec("db", "rm", "/tmp/ok2");
      for (let i = 0; i < 100 && (await stack.container("db")).State.Health.Status !== "unhealthy"; i++) await Bun.sleep(200);
      const before = { db: await stack.container("db"), app: await stack.container("app") };
      expect(before.db.State.Health.Status).toBe("unhealthy");
      const { oldId } = await stack.pushNewVersion(appRef, ["RUN echo app-v2 > /version"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "30"]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const error = JSON.parse(r.stdout).error;
      expect(error.code).toBe("DEPENDENCY_UNHEALTHY");
      expect(error.message).toContain("app waits for db to be healthy");
      expect(error.message).toContain("Nothing was stopped");
      expect(error.message).toContain("docker compose logs db");
      for (const s of ["db", "app"] as const) {
        const now = await stack.container(s);
        expect({ s, id: now.Id, running: now.State.Running, startedAt: now.State.StartedAt }).toEqual({ s, id: before[s].Id, running: true, startedAt: before[s].State.StartedAt });
      }
      // The pulled tag is put back: a later plain `docker compose up` runs what ran.
      expect(await stack.imageId(appRef)).toBe(oldId);
    },
    120_000,
  );
});

describe("update of a stack with a scaled service a later layer depends on", () => {
  const stack = TestStack.unique("uk");
  const dbRef = stack.ref("db");
  const appRef = stack.ref("app");
  const health = `    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}\n`;

  startedStack(stack, `services:
  db:
    image: ${dbRef}
    init: true
    command: ["sleep", "3600"]
${health}  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
${health}    depends_on: {db: {condition: service_healthy}}
`, { [dbRef]: ["RUN touch /ok"], [appRef]: ["RUN echo v1 > /version && touch /ok"] }, async () => {
    const up = await stack.compose("up", "-d", "--wait", "--scale", "db=2");
    if (up.code !== 0) throw new Error(`compose up failed: ${up.stderr}`);
  });

  const running = async (service: string) =>
    (await docker("ps", "-q", "--filter", `label=com.docker.compose.project=${stack.project}`, "--filter", `label=com.docker.compose.service=${service}`)).split("\n").filter(Boolean).length;

  e2e(
    "keeps its count through the later layer's start and through a rollback",
    async () => {
      expect(await running("db")).toBe(2);
      const { newId } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version && touch /ok"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).restarted).toEqual(["db", "app"]);
      expect((await stack.container("app")).Image).toBe(newId);
      expect(await running("db")).toBe(2);

      // A new app that never turns healthy: the rollback's layers keep the count too.
      await stack.pushNewVersion(appRef, ["RUN echo v3 > /version"]);
      const failed = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "10"]);
      expect(failed.code, failed.stdout + failed.stderr).toBe(1);
      expect(JSON.parse(failed.stdout).rolledBack).toMatchObject({ services: ["app"], recovered: true });
      expect((await stack.container("app")).Image).toBe(newId);
      expect(await running("db")).toBe(2);
    },
    150_000,
  );
});

describe("update of a service with pull_policy missing", () => {
  const stack = TestStack.unique("um");
  const appRef = stack.ref("app");

  startedStack(stack, `services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    pull_policy: missing
`, { [appRef]: ["RUN echo v1 > /version"] });

  e2e(
    "pulls the new image the dry run reports, though compose's own pull skips one the engine has",
    async () => {
      const { oldId, newId } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version"]);
      const dry = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dry.updated.map((u: any) => u.service)).toEqual(["app"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["app"]);
      expect(out.restarted).toEqual(["app"]);
      const app = await stack.container("app");
      expect(app.Image).not.toBe(oldId);
      expect(app.Image).toBe(newId);
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("v2");
    },
    150_000,
  );
});

describe("update of a stack with services the update does not pull whose images are absent", () => {
  const stack = TestStack.unique("un");
  const appRef = stack.ref("app");
  const sideRef = stack.ref("side");
  // Never built, never pulled: no image of these names exists on the engine.
  const localRef = `${stack.project}-local:dev`;
  const builtRef = stack.ref("built", "local");

  startedStack(stack, `services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
  side:
    image: ${sideRef}
    init: true
    command: ["sleep", "3600"]
  local:
    image: ${localRef}
    pull_policy: never
    command: ["sleep", "3600"]
  built:
    build: ./app
    image: ${builtRef}
    command: ["sleep", "3600"]
`, { [appRef]: ["RUN echo v1 > /version"], [sideRef]: ["RUN echo v1 > /version"] }, async () => {
    mkdirSync(join(stack.dir, "app"));
    stack.write("app/Dockerfile", `FROM ${BASE_IMAGE}\n`);
    const up = await stack.compose("up", "-d", "app", "side");
    if (up.code !== 0) throw new Error(`compose up failed: ${up.stderr}`);
  });

  e2e(
    "counts them unchanged, as the dry run does, and updates the others",
    async () => {
      const { newId } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version"]);
      const dry = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dry).toMatchObject({ unchanged: ["built", "local", "side"] });
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "30"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["app"]);
      expect(out.unchanged).toEqual(["built", "local", "side"]);
      expect((await stack.container("app")).Image).toBe(newId);
      expect((await run(["docker", "image", "inspect", localRef])).code).not.toBe(0);
    },
    120_000,
  );

  e2e(
    "a refusal after the pulls puts the tags they moved back on the images that ran",
    async () => {
      const before = { app: await stack.container("app"), side: await stack.container("side") };
      await stack.pushNewVersion(appRef, ["RUN echo v3 > /version"]);
      await stack.pushNewVersion(sideRef, ["RUN echo v2 > /version"]);
      // side's image goes missing once the pulls are done: the update refuses after app's pull moved its tag.
      let pulled = false;
      const engine = new (class extends Engine {
        override async inspectImage(ref: string) {
          return pulled && ref === sideRef ? undefined : super.inspectImage(ref);
        }
      })();
      const { stack: loaded, compose, model } = await stack.opened();
      const progress = (line: string) => void (pulled ||= line === `Pulled ${sideRef}`);
      const error: StackgenError = await runUpdate(engine, loaded, compose, model, { timeoutMs: 30_000, progress }).then(
        () => { throw new Error("the update did not fail"); },
        (e) => e,
      );
      expect(error.code).toBe("PULL_FAILED");
      expect(error.message).toContain(`Image ${sideRef} is not present after the pull`);
      expect(await stack.imageId(appRef)).toBe(before.app.Image);
      expect(await stack.imageId(sideRef)).toBe(before.side.Image);
      for (const s of ["app", "side"] as const) expect((await stack.container(s)).State.StartedAt).toBe(before[s].State.StartedAt);
    },
    120_000,
  );
});

describe("update of a service whose job hangs when compose runs it again", () => {
  const stack = TestStack.unique("uh");
  const appRef = stack.ref("app");
  const jobRef = stack.ref("job");
  startedStack(stack, `services:
  migrate:
    image: ${jobRef}
    init: true
    restart: "no"
    command: ["sh", "-c", "if [ -f /data/hang ]; then sleep 3600; fi"]
    volumes: ["data:/data"]
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
    depends_on: {migrate: {condition: service_completed_successfully}}
volumes:
  data: {}
`, { [appRef]: ["RUN touch /ok"], [jobRef]: ["RUN echo job > /version"] }, async () => {
    expect((await stack.compose("up", "-d", "--wait", "app")).code).toBe(0);
  });

  e2e(
    "--timeout bounds compose's wait for the job: the update and its rollback end, saying so, instead of waiting with it",
    async () => {
      // The job, finished, now hangs on the data (a migration that never ends). The update's own
      // wait for it ends at --timeout; the rollback's `up` of app runs it again first, and compose
      // waited on it with no limit, so the rollback never ended.
      await stack.exec("app", "touch", "/data/hang");
      await stack.pushNewVersion(appRef, ["RUN touch /ok && echo v2 > /version"]);
      const started = Date.now();
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "5"]);
      expect(Date.now() - started).toBeLessThan(100_000);
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout).rolledBack).toMatchObject({ services: ["app"], recovered: false, newImagesStarted: false });
      expect(r.stderr).toContain("starting app did not finish within 5s, so it was stopped: compose was still waiting on migrate (a one-shot job, still running)");
    },
    150_000,
  );
});

describe("update of a stack with a job that services in several layers depend on", () => {
  const stack = TestStack.unique("un");
  const appRef = stack.ref("app");
  const jobRef = stack.ref("job");
  const healthy = `    init: true\n    command: ["sleep", "3600"]\n    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}\n`;
  const afterJob = (more = "") => `    depends_on: {migrate: {condition: service_completed_successfully}${more}}\n`;
  startedStack(stack, `services:
  migrate:
    image: ${jobRef}
    restart: "no"
    command: ["sh", "-c", "cat /version >> /data/runs"]
    volumes: ["data:/data"]
  app:
    image: ${appRef}
    volumes: ["data:/data"]
${healthy}${afterJob()}  worker:
    image: ${appRef}
${healthy}${afterJob(", app: {condition: service_healthy}")}  side:
    image: ${appRef}
${healthy}${afterJob()}volumes:
  data: {}
`, { [appRef]: ["RUN touch /ok"], [jobRef]: ["RUN echo job-v1 > /version"] }, async () => {
    expect((await stack.compose("up", "-d", "--wait", "app", "worker", "side")).code).toBe(0);
    expect((await stack.compose("stop", "side")).code).toBe(0);
  });

  e2e(
    "runs the job once on its new image, not once per layer, and the containers are as compose makes them",
    async () => {
      expect(await stack.exec("app", "cat", "/data/runs")).toBe("job-v1\n");
      const { newId } = await stack.pushNewVersion(jobRef, ["RUN echo job-v2 > /version"]);
      const r = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.updated.map((u: any) => u.service)).toEqual(["migrate"]);
      expect(out.restarted).toEqual(["migrate", "app", "worker"]);
      expect(await stack.exec("app", "cat", "/data/runs")).toBe("job-v1\njob-v2\n");
      expect((await stack.container("migrate")).Image).toBe(newId);
      // The user stopped side: it stays so, though it depends on the job too.
      expect((await stack.container("side")).State.Running).toBe(false);
      // Made with their dependencies as plain `up` makes them: the user's next `up` keeps them.
      const ids = { app: (await stack.container("app")).Id, worker: (await stack.container("worker")).Id };
      const plain = await stack.compose("up", "-d", "app", "worker");
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stderr).not.toContain("Recreate");
      expect({ app: (await stack.container("app")).Id, worker: (await stack.container("worker")).Id }).toEqual(ids);
    },
    150_000,
  );
});

describe("update on a stack the user runs with COMPOSE_FILE and COMPOSE_PROJECT_NAME in .env", () => {
  const stack = TestStack.unique("uf");
  const appRef = stack.ref("app");
  // The files' own name differs from the one .env sets: compose uses .env's, and so must update.
  const fileName = `${stack.project}-file`;

  startedStack(stack, `name: ${fileName}
services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
`, { [appRef]: ["RUN echo app-v1 > /version && touch /ok"] }, async () => {
    stack.write("extra.yml", "services:\n  app:\n    environment: {FROM_EXTRA: \"yes\"}\n");
    // An override file compose skips once COMPOSE_FILE is set: update must skip it too.
    stack.write("docker-compose.override.yml", "services:\n  app:\n    environment: {FROM_OVERRIDE: \"yes\"}\n");
    stack.write(".env", `COMPOSE_FILE=docker-compose.yml:extra.yml\nCOMPOSE_PROJECT_NAME=${stack.project}\n`);
    // Started the way the user does it: plain `docker compose` in the directory.
    const up = await run(["docker", "compose", "up", "-d", "--wait"], { cwd: stack.dir });
    if (up.code !== 0) throw new Error(`compose up failed: ${up.stderr}`);
  });

  e2e(
    "the recreated container keeps what the listed files add, in the same project",
    async () => {
      const before = await stack.container("app");
      expect(before.Config.Env).toContain("FROM_EXTRA=yes");
      await stack.pushNewVersion(appRef, ["RUN echo app-v2 > /version && touch /ok"]);
      const status = await cli(["status", "--dir", stack.dir, "--json"]);
      expect(JSON.parse(status.stdout).summary).toMatchObject({ total: 1, running: 1 });
      const r = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).updated.map((u: any) => u.service)).toEqual(["app"]);
      const after = await stack.container("app");
      expect(after.Id).not.toBe(before.Id);
      expect(after.Config.Env).toContain("FROM_EXTRA=yes");
      expect(after.Config.Env.some((e: string) => e.startsWith("FROM_OVERRIDE="))).toBe(false);
      expect((await run(["docker", "exec", after.Id, "cat", "/version"])).stdout.trim()).toBe("app-v2");
      // Nothing was started under the files' own name.
      expect(await docker("ps", "-aq", "--filter", `label=com.docker.compose.project=${fileName}`)).toBe("");
    },
    120_000,
  );
});

describe("update to a new tag named in the override file", () => {
  const stack = TestStack.unique("ut");
  const v1 = stack.ref("app", "1");
  const v2 = stack.ref("app", "2");
  const v3 = stack.ref("app", "3");
  const override = (ref: string) => `services:\n  app:\n    image: ${ref}\n`;

  startedStack(stack, `services:
  app:
    image: ${v1}
    init: true
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
`, { [v1]: ["RUN echo app-v1 > /version && touch /ok"], [v2]: ["RUN echo app-v2 > /version && touch /ok"], [v3]: ["RUN echo app-v3 > /version"] }, async () => {
    // v3 has no /ok: never healthy. Only v1 is here; the new tags come from the registry, as after a release.
    await docker("rmi", v2, v3);
    await stack.up();
  });

  e2e(
    "a healthy new tag is taken; a failing one is rolled back to the old tag, leaving the new tag as the registry serves it, and the user is told what their files still name",
    async () => {
      stack.write("docker-compose.override.yml", override(v2));
      const dry = JSON.parse((await cli(["update", "--dir", stack.dir, "--dry-run", "--json"])).stdout);
      expect(dry.updated).toEqual([expect.objectContaining({ service: "app", image: v2, oldImage: v1 })]);
      const up = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(up.code, up.stderr).toBe(0);
      expect(JSON.parse(up.stdout).updated[0]).toMatchObject({ service: "app", image: v2, oldImage: v1 });
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("app-v2");
      const v2Id = await stack.imageId(v2);

      stack.write("docker-compose.override.yml", override(v3));
      const failed = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "30"]);
      expect(failed.code).toBe(1);
      const out = JSON.parse(failed.stdout);
      expect(out.rolledBack).toMatchObject({ services: ["app"], recovered: true, stillNamed: [{ service: "app", image: v3, restored: v2 }] });
      expect(failed.stderr).toContain(`Your compose files still name ${v3} for app, which runs its previous image again: put ${v2} back`);
      // The old version runs under its own name; the new tag is still the registry's broken image.
      const app = await stack.container("app");
      expect(app.Config.Image).toBe(v2);
      expect(app.Image).toBe(v2Id);
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("app-v2");
      expect(await stack.imageId(v3)).not.toBe(v2Id);
      expect(await stack.imageId(v2)).toBe(v2Id);
      // Put back as told: nothing to pull, but the service is made again under the name the files give.
      stack.write("docker-compose.override.yml", override(v2));
      const back = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "60"]);
      expect(back.code, back.stderr).toBe(0);
      expect((await stack.container("app")).Config.Image).toBe(v2);
    },
    240_000,
  );
});

describe("update when docker compose stop fails", () => {
  const stack = TestStack.unique("us");
  const appRef = stack.ref("app");
  startedStack(stack, `services:\n  app:\n    image: ${appRef}\n    init: true\n    command: ["sleep", "3600"]\n`, { [appRef]: ["RUN echo app-v1 > /version"] });

  e2e(
    "a stop refused once is tried again and the update goes on; refused twice, the stack runs its previous image again and the tag is put back",
    async () => {
      const { newId: v2Id } = await stack.pushNewVersion(appRef, ["RUN echo app-v2 > /version"]);
      const once = dockerRefusingStops("once");
      const retried = await cli(["update", "--dir", stack.dir, "--json"], once.env);
      const refusedOnce = once.refused();
      once.remove();
      expect(retried.code, retried.stdout + retried.stderr).toBe(0);
      expect(refusedOnce).toBe(true);
      expect(JSON.parse(retried.stdout)).toMatchObject({ updated: [expect.objectContaining({ service: "app" })], restarted: ["app"] });
      expect((await stack.container("app")).Image).toBe(v2Id);

      const { newId: v3Id } = await stack.pushNewVersion(appRef, ["RUN echo app-v3 > /version"]);
      const always = dockerRefusingStops("always");
      const failed = await cli(["update", "--dir", stack.dir, "--json"], always.env);
      always.remove();
      expect(failed.code, failed.stdout + failed.stderr).toBe(1);
      const error = JSON.parse(failed.stdout).error;
      expect(error.code).toBe("COMPOSE_FAILED");
      expect(error.message).toContain("docker compose stop failed: Error response from daemon: cannot stop container: it is being removed, so nothing was updated");
      expect(failed.stderr).toContain("starting it again on its previous images");
      // Never left half stopped on the new tag: v2 runs, and the tag names v2 again.
      const app = await stack.container("app");
      expect(app.State.Running).toBe(true);
      expect(app.Image).toBe(v2Id);
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("app-v2");
      expect(await stack.imageId(appRef)).toBe(v2Id);
      expect(v3Id).not.toBe(v2Id);
    },
    180_000,
  );

  e2e(
    "when the stack cannot be started again after a refused stop, the error names what is left down and the command that starts it",
    async () => {
      const before = (await stack.container("app")).Image;
      await stack.pushNewVersion(appRef, ["RUN echo app-next > /version"]);
      const stopAndUpRefused = dockerRefusingStops("always", ["stop", "up"]);
      const { code, stdout, stderr } = await cli(["update", "--dir", stack.dir, "--json", "--timeout", "20"], stopAndUpRefused.env);
      stopAndUpRefused.remove();
      expect(code, stdout + stderr).toBe(1);
      expect(JSON.parse(stdout).error).toMatchObject({
        code: "COMPOSE_FAILED",
        message: expect.stringMatching(/^docker compose stop failed: .*, so nothing was updated; .* Not running now, though it ran before the update: app \(`docker compose up -d app` starts it once the cause above is fixed\)\.$/),
      });
      // As said: down, with its tag on the image it ran, which the command starts again.
      expect((await stack.container("app")).State.Running).toBe(false);
      expect(await stack.imageId(appRef)).toBe(before);
      await stack.up();
      expect((await stack.container("app")).Image).toBe(before);
    },
    180_000,
  );
});

describe("update whose rollback meets an engine error", () => {
  const stack = TestStack.unique("ue");
  const appRef = stack.ref("app");
  startedStack(stack, `services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
`, { [appRef]: ["RUN echo app-v1 > /version && touch /ok"] });

  e2e(
    "keeps the rollback tag that still names the previous image and says why the rollback started, what failed and how to get back",
    async () => {
      const { oldId, newId } = await stack.pushNewVersion(appRef, ["RUN echo app-broken > /version"]); // no /ok: health fails
      // The engine refuses to tag once the rollback has begun: putting the previous image's tag back fails.
      let rollingBack = false;
      const engine = new (class extends Engine {
        override async tagImage(id: string, repo: string, tag: string) {
          if (rollingBack) throw new EngineError("image tag: Error response from daemon: no space left on device", 500);
          return super.tagImage(id, repo, tag);
        }
      })();
      const { stack: loaded, compose, model } = await stack.opened();
      const progress = (line: string) => void (rollingBack ||= line.startsWith("Update failed ("));
      const error: StackgenError = await runUpdate(engine, loaded, compose, model, { timeoutMs: 15_000, progress }).then(
        () => { throw new Error("the update did not fail"); },
        (e) => e,
      );
      expect(rollingBack).toBe(true);
      expect(error.code).toBe("DOCKER_ERROR");
      expect(error.message).toMatch(/^Update failed \(app .*\), and the rollback failed: image tag: Error response from daemon: no space left on device; the stack may be left stopped/);
      const kept = rollbackTag(stack.project, "app");
      stack.images.add(kept); // removed by cleanup, also when an assertion fails
      expect(error.message).toContain(`docker tag ${kept.split(":")[0]}:<service> <the image the service names>`);
      // The previous image keeps a name, as the message says; the service's tag still names the new one.
      expect(await stack.imageId(kept)).toBe(oldId);
      expect(await stack.imageId(appRef)).toBe(newId);
      // Following the message brings the previous version back.
      await docker("tag", kept, appRef);
      await stack.up();
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("app-v1");
    },
    120_000,
  );

  e2e(
    "an update that worked is not failed by the engine refusing to remove its rollback tags afterwards",
    async () => {
      const { newId } = await stack.pushNewVersion(appRef, ["RUN echo app-v3 > /version && touch /ok"]);
      const engine = new (class extends Engine {
        override async removeImage(): Promise<void> {
          throw new EngineError("image delete: Cannot connect to the Docker daemon", 500);
        }
      })();
      stack.images.add(rollbackTag(stack.project, "app"));
      const { stack: loaded, compose, model } = await stack.opened();
      const said: string[] = [];
      const result = await runUpdate(engine, loaded, compose, model, { timeoutMs: 15_000, progress: (line) => void said.push(line) });
      expect(result).toMatchObject({ updated: [expect.objectContaining({ service: "app" })], restarted: ["app"] });
      expect(result.rolledBack).toBeUndefined();
      expect((await stack.container("app")).Image).toBe(newId);
      expect(said.at(-1)).toStartWith("Could not remove the rollback tags (image delete: Cannot connect to the Docker daemon)");
    },
    120_000,
  );
});
