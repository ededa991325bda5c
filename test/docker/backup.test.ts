// `stackgen backup create|list|restore` against a real engine.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { verifyBackupFile } from "../../src/docker/backup.ts";
import { backupInFlight, createBackup, quitBackupNote } from "../../src/docker/backup-create.ts";
import { loadVerifiedBackup, refuseProjectElsewhere, restoreBackup } from "../../src/docker/backup-restore.ts";
import { Engine } from "../../src/docker/engine.ts";
import { readTar, writeTar, fileEntry, type TarEntry } from "../../src/docker/tar.ts";
import { BASE_IMAGE, cli, cliMeasured, docker, dockerRefusingStops, dockerTest, dockerUnavailable, run, TestStack } from "./helpers.ts";
import { startedStack } from "../support/started-stack.ts";

const e2e = await dockerTest();

/** Rewrite a backup archive's members (to forge tampered or foreign archives). */
function forge(src: string, dest: string, change: (entries: TarEntry[]) => TarEntry[]): void {
  const entries = readTar(Bun.gunzipSync(new Uint8Array(readFileSync(src))));
  writeFileSync(dest, Bun.gzipSync(writeTar(change(entries)) as Uint8Array<ArrayBuffer>));
}

/** A stack of one service, `app`, with the volume `data` at /data, sleeping or running `command`. */
const appWithData = (project: string, { image = BASE_IMAGE, command = `["sleep", "3600"]`, more = "" } = {}) =>
  `name: ${project}\nservices:\n  app:\n    image: ${image}\n${more}    init: true\n    command: ${command}\n    volumes: ["data:/data"]\nvolumes:\n  data: {}\n`;

describe("backup", () => {
  const stack = TestStack.unique("bk");
  const ref = stack.ref("store");
  const backupsDir = join(stack.dir, "backups");
  const listBackups = () => (existsSync(backupsDir) ? readdirSync(backupsDir).filter((f) => f.endsWith(".tar.gz")) : []);
  let first = "";

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await stack.build(ref, ["RUN touch /ok"]);
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  store:
    image: ${ref}
    init: true
    command: ["sleep", "3600"]
    volumes: ["data:/data", "more:/more"]
    healthcheck: {test: ["CMD", "test", "-f", "/ok"], interval: 1s, timeout: 2s, retries: 2}
volumes:
  data: {}
  more: {}
`,
    );
    stack.write(".env", "SETTING=original\n");
    stack.write("stackgen.json", JSON.stringify({ configVersion: 2, projectName: stack.project, services: [] }));
    await stack.up();
    await stack.exec("store", "sh", "-c", "echo one > /data/a.txt && mkdir -p /data/d && echo two > /data/d/b.txt && ln -s a.txt /data/l && ln -s /data/d/b.txt /data/abs && echo m > /more/m.txt");
    // What a Linux file system may hold and a backup must give back: a backslash in a name, a device node.
    await stack.exec("store", "sh", "-c", "printf odd > '/data/back\\slash' && mknod /data/null c 1 3");
    // A database's folder as its non-root server keeps it (PostgreSQL refuses to start on a data
    // folder of another owner or mode): owners and modes must survive the round trip.
    await stack.exec("store", "sh", "-c", "mkdir /data/pg && echo x > /data/pg/f && chown 999:70 /data/pg/f && chmod 600 /data/pg/f && chown 70:70 /data/pg && chmod 700 /data/pg");
  }, 120_000);
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "create writes one archive with config and every volume; list verifies them newest first",
    async () => {
      const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      first = out.file;
      expect(out.file.startsWith(backupsDir)).toBe(true);
      expect(existsSync(out.file)).toBe(true);
      // Every archive holds .env: the folder made for them is the owner's alone, and so is each file.
      expect(statSync(backupsDir).mode & 0o777).toBe(0o700);
      expect(statSync(out.file).mode & 0o777).toBe(0o600);
      expect(out.volumes.map((v: any) => v.name).sort()).toEqual([`${stack.project}_data`, `${stack.project}_more`]);
      expect(out.files).toEqual(expect.arrayContaining([".env", "docker-compose.yml", "stackgen.json"]));
      expect(out.notIncluded).toEqual([]);
      expect(r.stderr).toContain("Stopping");
      // Services were started again after the cold copy.
      expect((await stack.container("store")).State.Running).toBe(true);

      const entries = readTar(Bun.gunzipSync(new Uint8Array(readFileSync(out.file))));
      const manifest = JSON.parse(new TextDecoder().decode(entries.find((e) => e.name === "manifest.json")!.data));
      expect(manifest).toMatchObject({ formatVersion: 1, project: stack.project });
      expect(manifest.members.every((m: any) => /^[0-9a-f]{64}$/.test(m.sha256) && m.size >= 0)).toBe(true);

      await Bun.sleep(20);
      const hot = await cli(["backup", "create", "--dir", stack.dir, "--hot", "--json"]);
      expect(hot.code).toBe(0);
      expect(hot.stderr).not.toContain("Stopping");
      const list = await cli(["backup", "list", "--dir", stack.dir, "--json"]);
      expect(list.code).toBe(0);
      const backups = JSON.parse(list.stdout).backups;
      expect(backups.map((b: any) => b.file)).toEqual([JSON.parse(hot.stdout).file, first]);
      expect(backups.every((b: any) => b.verified === true && b.size > 0)).toBe(true);
    },
    120_000,
  );

  e2e(
    "create into an existing folder it may not write is refused as the user's input, before anything stops",
    async () => {
      const before = (await stack.container("store")).State.StartedAt;
      // An existing folder where no one, root included, may make the work folder.
      const r = await cli(["backup", "create", "--dir", stack.dir, "--output", "/sys", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toMatch(/^Cannot write backups to \/sys: E[A-Z]+\. Nothing was done\.$/);
      expect((await stack.container("store")).State.StartedAt).toBe(before);
    },
    60_000,
  );

  e2e(
    "restore brings back volume contents and config, after a safety backup",
    async () => {
      await stack.exec("store", "sh", "-c", "echo changed > /data/a.txt && echo junk > /data/junk && rm -rf /more/m.txt && chown -R 0:0 /data/pg && chmod -R 777 /data/pg");
      stack.write(".env", "SETTING=edited\n");
      const refused = await cli(["backup", "restore", first, "--dir", stack.dir]);
      expect(refused.code).toBe(2);
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("changed");

      const before = listBackups().length;
      const r = await cli(["backup", "restore", first, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.healthy).toBe(true);
      expect(existsSync(out.safetyBackup)).toBe(true);
      expect(listBackups().length).toBe(before + 1);
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("one");
      expect((await stack.exec("store", "cat", "/data/d/b.txt")).trim()).toBe("two");
      expect((await stack.exec("store", "readlink", "/data/l")).trim()).toBe("a.txt");
      // An app's own absolute link comes back as it was.
      expect((await stack.exec("store", "readlink", "/data/abs")).trim()).toBe("/data/d/b.txt");
      expect((await stack.exec("store", "cat", "/more/m.txt")).trim()).toBe("m");
      expect(await stack.exec("store", "cat", "/data/back\\slash")).toBe("odd");
      expect((await stack.exec("store", "stat", "-c", "%F %t,%T", "/data/null")).trim()).toBe("character special file 1,3");
      expect((await stack.exec("store", "sh", "-c", "ls /data")).split("\n")).not.toContain("junk");
      expect((await stack.exec("store", "stat", "-c", "%u:%g %a", "/data/pg", "/data/pg/f")).trim().split("\n")).toEqual(["70:70 700", "999:70 600"]);
      expect(readFileSync(join(stack.dir, ".env"), "utf8")).toBe("SETTING=original\n");
      expect((await stack.container("store")).State.Health.Status).toBe("healthy");
    },
    120_000,
  );

  e2e(
    "restoring data under a newer image than the one that wrote it says so, and how to run the old one",
    async () => {
      const oldId = await stack.imageId(ref);
      const newId = await stack.build(ref, ["RUN touch /ok && echo v2 > /version"]);
      expect(newId).not.toBe(oldId);
      const r = await cli(["backup", "restore", first, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.imageChanges).toEqual([{ service: "store", image: ref, backupImageId: oldId, runningImageId: newId, backupImagePresent: true }]);
      expect(r.stderr).toContain(`docker tag ${oldId.replace("sha256:", "").slice(0, 12)} ${ref}`);
      // Following the hint runs the backup's version again; a restore then has nothing to report.
      await docker("tag", oldId, ref);
      await stack.up();
      expect((await stack.container("store")).Image).toBe(oldId);
      const again = JSON.parse((await cli(["backup", "restore", first, "--dir", stack.dir, "--yes", "--json"])).stdout);
      expect(again.imageChanges).toEqual([]);
    },
    120_000,
  );

  e2e(
    "a restore whose stack cannot start puts the state before it back and starts that",
    async () => {
      const composePath = join(stack.dir, "docker-compose.yml");
      const overridePath = join(stack.dir, "docker-compose.override.yml");
      const current = readFileSync(composePath, "utf8");
      // A backup taken while the stack ran an image that is deleted since (and in no registry),
      // with an override file the stack no longer has.
      const gone = stack.ref("gone");
      await stack.build(gone, ["RUN touch /ok"]);
      stack.write("docker-compose.yml", current.replace(`image: ${ref}`, `image: ${gone}`));
      // The override also brings a volume of its own, which the state before the restore lacks.
      stack.write("docker-compose.override.yml", "services:\n  store:\n    environment: {FROM_OVERRIDE: \"1\"}\n    volumes: [\"extra:/extra\"]\nvolumes:\n  extra: {}\n");
      await stack.up();
      await stack.exec("store", "sh", "-c", "echo in-backup > /data/a.txt && echo x > /extra/x.txt");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout).volumes.map((v: any) => v.name)).toContain(`${stack.project}_extra`);
      stack.write("docker-compose.yml", current);
      rmSync(overridePath);
      await stack.up();
      await docker("volume", "rm", `${stack.project}_extra`);
      await stack.exec("store", "sh", "-c", "echo before-restore > /data/a.txt");
      await docker("rmi", gone);

      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code).toBe(1);
      const error = JSON.parse(r.stdout).error;
      expect(error.code).toBe("RESTORE_FAILED");
      expect(error.message).toContain("The stack was put back as it was before the restore and started again.");
      // Config, data and the running container are those from before the restore.
      expect(readFileSync(composePath, "utf8")).toBe(current);
      expect(existsSync(overridePath)).toBe(false);
      const store = await stack.container("store");
      expect(store.State.Running).toBe(true);
      expect(store.Config.Image).toBe(ref);
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("before-restore");
      expect((await stack.exec("store", "cat", "/more/m.txt")).trim()).toBe("m");
      // The volume the failed restore created is gone again: it did not exist before.
      expect((await run(["docker", "volume", "inspect", `${stack.project}_extra`])).code).not.toBe(0);
      expect(readdirSync(backupsDir).filter((f) => f.startsWith("."))).toEqual([]);

      // As it was includes stopped: a stack the user had stopped is put back, not started.
      expect((await stack.compose("stop", "-t", "0")).code).toBe(0);
      const stopped = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(stopped.code).toBe(1);
      expect(JSON.parse(stopped.stdout).error.message).toContain("put back as it was before the restore (nothing was running before it, so nothing was started)");
      expect((await stack.container("store")).State.Running).toBe(false);
      await stack.up();
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("before-restore");
    },
    120_000,
  );

  e2e(
    "tampered, foreign and escaping archives are refused with nothing changed",
    async () => {
      await stack.exec("store", "sh", "-c", "echo marker > /data/a.txt");
      const before = listBackups().length;
      const bad = (name: string) => join(stack.dir, name);

      forge(first, bad("tampered.tar.gz"), (es) =>
        es.map((e) => (e.name.startsWith("volumes/") && e.name.endsWith("_data.tar") ? { ...e, data: e.data.map((b, i) => (i === Math.floor(e.data.length / 2) ? b ^ 1 : b)) } : e)),
      );
      forge(first, bad("foreign.tar.gz"), (es) =>
        es.map((e) => {
          if (e.name !== "manifest.json") return e;
          const m = JSON.parse(new TextDecoder().decode(e.data));
          return fileEntry(e.name, JSON.stringify({ ...m, project: "someone-else" }));
        }),
      );
      forge(first, bad("escape.tar.gz"), (es) => [...es, fileEntry("config/../../escaped.txt", "x")]);

      const expectations: [string, RegExp][] = [
        ["tampered.tar.gz", /sha256|size/],
        ["foreign.tar.gz", /belongs to project "someone-else"/],
        ["escape.tar.gz", /'\.\.'/],
      ];
      for (const [name, message] of expectations) {
        const r = await cli(["backup", "restore", bad(name), "--dir", stack.dir, "--yes"]);
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(message);
        expect(r.stderr).toContain("Nothing was changed");
      }
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("marker");
      expect(listBackups().length).toBe(before);
      expect(existsSync(join(stack.dir, "..", "escaped.txt"))).toBe(false);
      expect((await stack.container("store")).State.Running).toBe(true);

      // In the backups folder, a foreign archive verifies but is marked as one restore refuses.
      copyFileSync(bad("foreign.tar.gz"), join(backupsDir, "zz-foreign.tar.gz"));
      try {
        const listed = await cli(["backup", "list", "--dir", stack.dir], { ...(process.env as Record<string, string>), NO_COLOR: "1" });
        expect(listed.stdout).toMatch(/verified\s+zz-foreign\.tar\.gz\s+\(project someone-else: restore refuses it here\)/);
      } finally {
        rmSync(join(backupsDir, "zz-foreign.tar.gz"));
      }
    },
    60_000,
  );

  e2e(
    "a volume far larger than the process's memory streams through create and restore",
    async () => {
      // 512 MiB in a volume. Held in memory, the archive alone would need that much again;
      // streamed, the CLI stays near its own size whatever the volume holds.
      const MIB = 512;
      await stack.exec("store", "sh", "-c", `dd if=/dev/zero of=/more/big bs=1048576 count=${MIB} 2>/dev/null && echo tail >> /more/big && echo big-marker > /data/a.txt`);
      const created = await cliMeasured(["backup", "create", "--dir", stack.dir, "--hot", "--json"]);
      expect(created.code).toBe(0);
      const out = JSON.parse(created.stdout);
      const more = out.volumes.find((v: { name: string }) => v.name === `${stack.project}_more`);
      expect(more.size).toBeGreaterThan(MIB * 1024 * 1024);
      expect(created.peakMiB!).toBeLessThan(MIB / 2);

      await stack.exec("store", "sh", "-c", "rm /more/big && echo other > /data/a.txt");
      const restored = await cliMeasured(["backup", "restore", out.file, "--dir", stack.dir, "--yes", "--json"]);
      expect(restored.code).toBe(0);
      expect(restored.peakMiB!).toBeLessThan(MIB / 2);
      expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("big-marker");
      expect((await stack.exec("store", "sh", "-c", "wc -c < /more/big")).trim()).toBe(String(MIB * 1024 * 1024 + 5));
      expect((await stack.exec("store", "tail", "-c", "5", "/more/big")).trim()).toBe("tail");
      // No work folders are left beside the backups.
      expect(readdirSync(backupsDir).filter((f) => f.startsWith("."))).toEqual([]);
    },
    240_000,
  );

  e2e(
    "a full disk stops create and restore with a clear error, nothing half-written and the stack running",
    async () => {
      // Small filesystems in place of a full disk: the stack's volumes hold far more than 1 MiB.
      const full = join(stack.dir, "full");
      const keep = mkdtempSync(join(tmpdir(), "stackgen-keep-"));
      const small = join(keep, "small.tar.gz");
      copyFileSync(first, small); // a few KiB: its own extraction fits, the safety backup does not
      // The previous test's backup holds 512 MiB (of zeros, so its archive is small): unpacked it does not fit.
      const large = join(keep, "large.tar.gz");
      const largest = listBackups().map((f) => join(backupsDir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
      copyFileSync(largest, large);
      const mounted: string[] = [];
      const mountSmall = async (dir: string) => {
        mkdirSync(dir, { recursive: true });
        const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stderr: "pipe" });
        if (r.exitCode !== 0) throw new Error(`this test mounts a 1 MiB tmpfs (needs root): ${r.stderr.toString()}`);
        mounted.push(dir);
      };
      try {
        await mountSmall(full);
        const created = await cli(["backup", "create", "--dir", stack.dir, "--output", full, "--json"]);
        expect(created.code).toBe(1);
        const createError = JSON.parse(created.stdout).error;
        expect(createError.code).toBe("BACKUP_FAILED");
        expect(createError.message).toContain(`The disk holding ${full} is full`);
        expect(createError.message).toContain("--output");
        expect(readdirSync(full)).toEqual([]);
        expect((await stack.container("store")).State.Running).toBe(true);

        await mountSmall(backupsDir);
        const unpacked = await cli(["backup", "restore", large, "--dir", stack.dir, "--yes", "--json"]);
        expect(unpacked.code).toBe(1);
        const unpackError = JSON.parse(unpacked.stdout).error;
        expect(unpackError.code).toBe("RESTORE_FAILED");
        expect(unpackError.message).toContain(`The disk holding ${backupsDir} is too full to unpack the backup to check it`);
        expect(unpackError.message).toContain("Nothing was changed");
        expect(unpacked.stderr).not.toContain("Stopping");

        const restored = await cli(["backup", "restore", small, "--dir", stack.dir, "--yes", "--json"]);
        expect(restored.code).toBe(1);
        const restoreError = JSON.parse(restored.stdout).error;
        expect(restoreError.code).toBe("RESTORE_FAILED");
        expect(restoreError.message).toContain("safety backup");
        expect(restoreError.message).toContain("nothing was restored (started again: store)");
        expect(restoreError.message).not.toContain("--output");
        // The restore stopped the service for its safety backup; it runs again on untouched data.
        expect((await stack.container("store")).State.Running).toBe(true);
        expect((await stack.exec("store", "cat", "/data/a.txt")).trim()).toBe("big-marker");
        expect(readdirSync(backupsDir)).toEqual([]);
      } finally {
        for (const dir of mounted.reverse()) Bun.spawnSync(["umount", "-l", dir]);
        rmSync(full, { recursive: true, force: true });
        rmSync(keep, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

/** A test stack and a scratch folder outside it, both removed after the block. */
function stackAndScratch(prefix: string): { stack: TestStack; scratch: string } {
  const stack = TestStack.unique(prefix);
  const scratch = mkdtempSync(join(tmpdir(), `stackgen-${prefix}-`));
  afterAll(async () => {
    await stack.cleanup();
    rmSync(scratch, { recursive: true, force: true });
  }, 60_000);
  return { stack, scratch };
}

describe("backup of a stack that keeps data outside its directory", () => {
  const { stack, scratch: outside } = stackAndScratch("bo");

  e2e(
    "create and restore name what no backup holds: writable host folders and files, compose files elsewhere",
    async () => {
      mkdirSync(join(outside, "pgdata"));
      mkdirSync(join(outside, "certs"));
      writeFileSync(join(outside, "app.db"), "rows");
      writeFileSync(join(outside, "extra.yml"), "services:\n  app:\n    environment: {EXTRA: \"1\"}\n");
      mkdirSync(join(stack.dir, "conf"), { recursive: true });
      stack.write(
        "docker-compose.yml",
        `name: ${stack.project}
services:
  app:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    volumes:
      - ${join(outside, "pgdata")}:/var/lib/data
      - ${join(outside, "app.db")}:/app.db
      - ${join(outside, "certs")}:/certs:ro
      - ./conf:/conf
      - /dev/null:/dev/quiet
      - /scratch
`,
      );
      stack.write(".env", `COMPOSE_FILE=docker-compose.yml:${join(outside, "extra.yml")}\n`);
      // A volume without a name: compose makes an anonymous one, which nothing backs up.
      await stack.up();
      const anonymous = "the anonymous volume at /scratch in app";
      const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.notIncluded).toEqual([
        `compose file ${join(outside, "extra.yml")}`,
        `${join(outside, "pgdata")} (bind-mounted into app at /var/lib/data)`,
        `${join(outside, "app.db")} (bind-mounted into app at /app.db)`,
        `${anonymous} (name it in docker-compose.override.yml to have it backed up)`,
        // Only regular files of the stack directory are copied.
        "conf/ (an empty folder)",
      ]);
      expect(r.stderr).toContain(`Not in the backup, outside ${stack.dir}`);
      const text = await cli(["backup", "create", "--dir", stack.dir, "--hot"]);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain(`Not in this backup (copy what you need yourself):\n  compose file ${join(outside, "extra.yml")}`);
      // A restore says what it did not bring back: those paths hold what they held before it.
      writeFileSync(join(outside, "app.db"), "rows written after the backup");
      const scratchVolume = async () => (await stack.container("app")).Mounts.find((m: { Destination: string }) => m.Destination === "/scratch").Name as string;
      const oldScratch = await scratchVolume();
      const restored = await cli(["backup", "restore", out.file, "--dir", stack.dir, "--yes", "--json"]);
      expect(restored.code).toBe(0);
      const notRestored = JSON.parse(restored.stdout).notRestored;
      expect(notRestored.slice(0, 3)).toEqual(out.notIncluded.slice(0, 3));
      expect(notRestored[3]).toStartWith(`${anonymous} (the new container has a new, empty one; the old one is kept unused`);
      // As said: the old one is still there (holding what the service wrote), beside the new one.
      expect(await scratchVolume()).not.toBe(oldScratch);
      expect(await docker("volume", "inspect", "-f", "{{.Name}}", oldScratch)).toBe(oldScratch);
      await docker("volume", "rm", oldScratch);
      expect(restored.stderr).toContain(`Not restored (no backup holds them): compose file ${join(outside, "extra.yml")}`);
      expect(readFileSync(join(outside, "app.db"), "utf8")).toBe("rows written after the backup");
    },
    60_000,
  );
});

describe("backup of data kept in the stack directory", () => {
  const { stack } = stackAndScratch("bd");
  const external = `${stack.project}-kept`;
  afterAll(() => docker("volume", "rm", "-f", external).catch(() => {}), 60_000);

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await docker("volume", "create", external);
    mkdirSync(join(stack.dir, "appdata"), { recursive: true });
    // Each start writes a line into the bind-mounted folder, as a database writes its files.
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  app:
    image: ${BASE_IMAGE}
    init: true
    command: ["sh", "-c", "echo started >> /bind/log; exec sleep 3600"]
    volumes: ["./appdata:/bind", "kept:/kept"]
volumes:
  kept: {external: true, name: ${external}}
`,
    );
    await stack.up();
  }, 120_000);

  e2e(
    "the stack directory is read while the services are stopped; an external volume is named as left out",
    async () => {
      expect(readFileSync(join(stack.dir, "appdata", "log"), "utf8")).toBe("started\n");
      const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      // Started again after the copy: the log has a second line, the backup only the first.
      expect(readFileSync(join(stack.dir, "appdata", "log"), "utf8")).toBe("started\nstarted\n");
      const { files } = await verifyBackupFile(out.file);
      expect(new TextDecoder().decode(files.find((f) => f.path === "appdata/log")!.data)).toBe("started\n");
      expect(out.notIncluded).toContain(`volume ${external} (declared external: not the stack's own, so not copied; back it up where it is managed)`);
    },
    60_000,
  );

  e2e(
    "what the stack directory holds besides regular files (links, FIFOs, empty folders) is named as not in the backup",
    async () => {
      mkdirSync(join(stack.dir, "appdata", "pg_notify"));
      symlinkSync("log", join(stack.dir, "appdata", "current"));
      await run(["mkfifo", join(stack.dir, "appdata", "pipe")]);
      try {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).notIncluded).toEqual(expect.arrayContaining(["appdata/current (a symbolic link)", "appdata/pg_notify/ (an empty folder)", "appdata/pipe (a FIFO)"]));
        expect(r.stderr).toContain("only its regular files are copied");
      } finally {
        for (const p of ["pg_notify", "current", "pipe"]) rmSync(join(stack.dir, "appdata", p), { recursive: true, force: true });
      }
    },
    60_000,
  );

  e2e(
    "a data file whose name restore refuses (a backslash) is named as not in the backup, and that backup and its safety backup restore",
    async () => {
      const odd = join(stack.dir, "appdata", "win\\path.txt");
      writeFileSync(odd, "kept where it is");
      try {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
        expect(r.code, r.stderr).toBe(0);
        const out = JSON.parse(r.stdout);
        expect(out.notIncluded).toContain("appdata/win\\path.txt (a name a restore refuses: it contains a backslash)");
        const restored = await cli(["backup", "restore", out.file, "--dir", stack.dir, "--yes", "--json"]);
        expect(restored.code, restored.stdout + restored.stderr).toBe(0);
        // No backup holds it, so no restore removes it as stale.
        expect(readFileSync(odd, "utf8")).toBe("kept where it is");
        const back = await cli(["backup", "restore", JSON.parse(restored.stdout).safetyBackup, "--dir", stack.dir, "--yes", "--json"]);
        expect(back.code, back.stdout + back.stderr).toBe(0);
      } finally {
        rmSync(odd, { force: true });
      }
    },
    180_000,
  );

  e2e(
    "a data file whose name is not UTF-8 is named as not in the backup, and create and restore work",
    async () => {
      const bad = Buffer.concat([Buffer.from(join(stack.dir, "appdata", "bad")), Buffer.from([0xff]), Buffer.from("name")]);
      writeFileSync(bad, "bytes of another encoding");
      try {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).notIncluded).toContain("appdata/bad\ufffdname (a name that is not valid UTF-8)");
        const restored = await cli(["backup", "restore", JSON.parse(r.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
        expect(restored.code, restored.stdout + restored.stderr).toBe(0);
        // No backup holds it, so no restore removes it.
        expect(readFileSync(bad, "utf8")).toBe("bytes of another encoding");
      } finally {
        rmSync(bad, { force: true });
      }
    },
    180_000,
  );

  e2e(
    "archives kept in a bind-mounted data folder are never removed as stale, nor copied into other backups",
    async () => {
      const archives = join(stack.dir, "appdata", "archive");
      try {
        const older = await cli(["backup", "create", "--dir", stack.dir, "--output", archives, "--json"]);
        expect(older.code, older.stderr).toBe(0);
        const made = await cli(["backup", "create", "--dir", stack.dir, "--output", archives, "--json"]);
        expect(made.code, made.stderr).toBe(0);
        const file = JSON.parse(made.stdout).file as string;
        // A copy under a name of the user's, restored from where it lies.
        const renamed = join(archives, "before-upgrade.tar.gz");
        copyFileSync(file, renamed);
        const r = await cli(["backup", "restore", renamed, "--dir", stack.dir, "--yes", "--json"]);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).removedFiles).toEqual([]);
        expect(readdirSync(archives).sort()).toEqual([basename(JSON.parse(older.stdout).file), basename(file), "before-upgrade.tar.gz"].sort());
        // The safety backup (in backups/) names the stackgen archives rather than holding them.
        const safety = await verifyBackupFile(JSON.parse(r.stdout).safetyBackup);
        expect(safety.files.map((f) => f.path).filter((path) => path.startsWith("appdata/archive/"))).toEqual(["appdata/archive/before-upgrade.tar.gz"]);
      } finally {
        rmSync(archives, { recursive: true, force: true });
      }
    },
    180_000,
  );

  e2e(
    "restore brings the bind-mounted data back whole and drops an override file made since; the safety backup keeps both",
    async () => {
      const made = JSON.parse((await cli(["backup", "create", "--dir", stack.dir, "--json"])).stdout);
      const logThen = new TextDecoder().decode((await verifyBackupFile(made.file)).files.find((f) => f.path === "appdata/log")!.data);
      writeFileSync(join(stack.dir, "appdata", "wal-000002"), "written after the backup");
      mkdirSync(join(stack.dir, "appdata", "later"));
      writeFileSync(join(stack.dir, "appdata", "later", "segment"), "also after");
      stack.write("docker-compose.override.yml", "services:\n  app:\n    environment: {LATER: \"1\"}\n");
      stack.write("notes.txt", "the user's own file, in no data folder");
      await stack.up();
      const r = await cli(["backup", "restore", made.file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.removedFiles.sort()).toEqual(["appdata/later/segment", "appdata/wal-000002", "docker-compose.override.yml"]);
      expect(existsSync(join(stack.dir, "appdata", "wal-000002"))).toBe(false);
      expect(existsSync(join(stack.dir, "docker-compose.override.yml"))).toBe(false);
      expect(readFileSync(join(stack.dir, "notes.txt"), "utf8")).toBe("the user's own file, in no data folder");
      // The app started again on the restored folder: the log as backed up, plus this start.
      expect(readFileSync(join(stack.dir, "appdata", "log"), "utf8")).toBe(`${logThen}started\n`);
      expect((await stack.exec("app", "sh", "-c", "echo ${LATER:-unset}")).trim()).toBe("unset");
      const safety = (await verifyBackupFile(out.safetyBackup)).files.map((f) => f.path);
      expect(safety).toEqual(expect.arrayContaining(["appdata/wal-000002", "appdata/later/segment", "docker-compose.override.yml"]));
      rmSync(join(stack.dir, "notes.txt"));
    },
    120_000,
  );

  e2e(
    "while another stackgen command works on the stack, backup create is refused and stops nothing",
    async () => {
      const before = (await stack.container("app")).State.StartedAt;
      // This test process stands in for an update at work.
      writeFileSync(join(stack.dir, ".stackgen.lock"), JSON.stringify({ pid: process.pid, command: "update", startedAt: new Date().toISOString() }));
      try {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
        expect(r.code).toBe(1);
        expect(JSON.parse(r.stdout).error).toMatchObject({ code: "STACK_BUSY", message: expect.stringContaining(`update (process ${process.pid}`) });
        expect((await stack.container("app")).State.StartedAt).toBe(before);
      } finally {
        rmSync(join(stack.dir, ".stackgen.lock"));
      }
    },
    60_000,
  );

  e2e(
    "more data in the directory than a backup can restore is refused before anything stops",
    async () => {
      const earlier = JSON.parse((await cli(["backup", "create", "--dir", stack.dir, "--json"])).stdout).file;
      const before = (await stack.container("app")).State.StartedAt;
      const big = join(stack.dir, "appdata", "big.bin");
      writeFileSync(big, new Uint8Array(65 * 1024 * 1024));
      try {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
        expect(r.code).toBe(1);
        const error = JSON.parse(r.stdout).error;
        expect(error.code).toBe("BACKUP_FAILED");
        expect(error.message).toContain("largest: appdata/big.bin (65.0 MiB)");
        expect(error.message).toContain("No backup was written and nothing was stopped");
        expect((await stack.container("app")).State.StartedAt).toBe(before);
        expect(readdirSync(join(stack.dir, "backups")).filter((f) => f.includes("big") || f.endsWith(".partial"))).toEqual([]);
        // Into folders that did not exist: the failed run takes away the ones it made, no more.
        const parent = mkdtempSync(join(tmpdir(), "stackgen-out-"));
        const fresh = await cli(["backup", "create", "--dir", stack.dir, "--output", join(parent, "new", "backups"), "--json"]);
        expect(JSON.parse(fresh.stdout).error.code).toBe("BACKUP_FAILED");
        expect(readdirSync(parent)).toEqual([]);
        rmSync(parent, { recursive: true });
        // A restore's safety backup would hit the same limit once the stack is stopped: found first.
        const restore = await cli(["backup", "restore", earlier, "--dir", stack.dir, "--yes", "--json"]);
        expect(restore.code).toBe(1);
        expect(JSON.parse(restore.stdout).error.message).toMatch(/^The safety backup of the current state could not hold the stack directory: .*largest: appdata\/big.bin .* Nothing was changed\.$/);
        expect((await stack.container("app")).State.StartedAt).toBe(before);
      } finally {
        rmSync(big);
      }
    },
    60_000,
  );
});

describe("restore over a volume the compose files no longer name", () => {
  const stack = TestStack.unique("bv");
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "the safety backup holds the orphan's contents before the restore replaces them",
    async () => {
      const withVolume = `name: ${stack.project}\nservices:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n    volumes: ["keep:/keep"]\nvolumes:\n  keep: {}\n`;
      stack.write("docker-compose.yml", withVolume);
      await stack.up();
      await stack.exec("app", "sh", "-c", "echo old > /keep/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      // The user drops the volume from the stack; it stays on the engine and gets newer data.
      stack.write("docker-compose.yml", withVolume.replace('    volumes: ["keep:/keep"]\nvolumes:\n  keep: {}\n', ""));
      await stack.up();
      const orphan = `${stack.project}_keep`;
      expect((await run(["docker", "run", "--rm", "-v", `${orphan}:/k`, BASE_IMAGE, "sh", "-c", "echo newer > /k/f"])).code).toBe(0);

      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const result = JSON.parse(r.stdout);
      expect((await stack.exec("app", "cat", "/keep/f")).trim()).toBe("old");
      // What the orphan held is in the safety backup, byte for byte.
      const unpacked = mkdtempSync(join(tmpdir(), "stackgen-safety-"));
      try {
        const safety = await verifyBackupFile(result.safetyBackup, unpacked);
        const kept = safety.volumes.find((v) => v.name === orphan);
        expect(kept).toBeDefined();
        const entry = readTar(new Uint8Array(readFileSync(kept!.path!))).find((e) => e.name === `${orphan}/f`);
        expect(new TextDecoder().decode(entry!.data)).toBe("newer\n");
      } finally {
        rmSync(unpacked, { recursive: true, force: true });
      }
    },
    120_000,
  );
});

describe("restore into an empty directory (a new machine)", () => {
  const { stack, scratch: elsewhere } = stackAndScratch("bn");

  e2e(
    "the stack comes back from the archive alone: config, secrets, volume contents, running",
    async () => {
      stack.write(
        "docker-compose.yml",
        `name: ${stack.project}
services:
  app:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    environment: {SECRET: "\${SECRET}"}
    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "test", "-f", "/data/f"], interval: 1s, timeout: 2s, retries: 5}
volumes:
  data: {}
`,
      );
      stack.write(".env", "SECRET=s3cret\n");
      chmodSync(join(stack.dir, ".env"), 0o600);
      mkdirSync(join(stack.dir, "conf"), { recursive: true });
      stack.write("conf/app.conf", "x=1\n");
      expect((await stack.compose("up", "-d")).code).toBe(0);
      await stack.exec("app", "sh", "-c", "echo precious > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const archive = JSON.parse(made.stdout).file as string;
      // The old machine is gone: its containers and volumes with it.
      expect((await stack.compose("down", "-v", "-t", "0")).code).toBe(0);

      // Refusals on the way leave nothing behind: no terminal and no --yes; a directory that holds
      // something else than a stack.
      const missing = join(elsewhere, "not-yet");
      const refused = await cli(["backup", "restore", archive, "--dir", missing]);
      expect(refused.code).toBe(2);
      expect(existsSync(missing)).toBe(false);
      const other = join(elsewhere, "other");
      mkdirSync(other);
      writeFileSync(join(other, "notes.txt"), "mine");
      const notStack = await cli(["backup", "restore", archive, "--dir", other, "--yes"]);
      expect(notStack.code).toBe(2);
      expect(notStack.stderr).toContain("is not a stack directory");
      expect(readdirSync(other)).toEqual(["notes.txt"]);

      // The archive copied to the new machine's backups/ folder, restored from there.
      const target = join(elsewhere, "restored");
      mkdirSync(join(target, "backups"), { recursive: true });
      const copied = join(target, "backups", basename(archive));
      copyFileSync(archive, copied);
      // What is there to restore from, before any stack exists.
      const listed = await cli(["backup", "list", "--dir", target, "--json"]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).backups).toMatchObject([{ file: copied, project: stack.project, verified: true }]);
      expect((await cli(["backup", "list", "--dir", target])).stdout).toContain(`verified  ${basename(archive)}  (project ${stack.project})`);
      const r = await cli(["backup", "restore", copied, "--dir", target, "--yes", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ project: stack.project, services: ["app"], healthy: true });
      expect(readFileSync(join(target, ".env"), "utf8")).toBe("SECRET=s3cret\n");
      expect(statSync(join(target, ".env")).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(target, "conf/app.conf"), "utf8")).toBe("x=1\n");
      const app = await stack.container("app");
      expect(app.Config.Labels["com.docker.compose.project.working_dir"]).toBe(target);
      expect(app.Config.Env).toContain("SECRET=s3cret");
      expect((await run(["docker", "exec", app.Id, "cat", "/data/f"])).stdout).toBe("precious\n");

      // A copy of the bundle in a second folder is the same project: restoring there would take
      // over the containers running from the first (and run beside its commands, which lock
      // their own folder only). Refused before anything changes.
      const second = join(elsewhere, "second");
      mkdirSync(second);
      for (const name of ["docker-compose.yml", ".env"]) copyFileSync(join(target, name), join(second, name));
      const taken = await cli(["backup", "restore", copied, "--dir", second, "--yes", "--json"]);
      expect(taken.code, taken.stdout + taken.stderr).toBe(2);
      expect(JSON.parse(taken.stdout).error).toMatchObject({ code: "BACKUP_FOREIGN", message: expect.stringContaining(`running from ${target}: restoring it into ${second} would take them over`) });
      const still = await stack.container("app");
      expect(still.Id).toBe(app.Id);
      expect(still.State.StartedAt).toBe(app.State.StartedAt);
      // The same folder by another path (a link to it) is not another folder.
      const link = join(elsewhere, "link");
      symlinkSync(target, link);
      await expect(refuseProjectElsewhere(new Engine(), stack.project, link)).resolves.toBeUndefined();
      // A folder that no longer exists is the bundle moved: restoring into the new place is the move.
      const moved = join(elsewhere, "moved");
      renameSync(target, moved);
      try {
        await expect(refuseProjectElsewhere(new Engine(), stack.project, moved)).resolves.toBeUndefined();
        await expect(refuseProjectElsewhere(new Engine(), stack.project, second)).resolves.toBeUndefined();
      } finally {
        renameSync(moved, target);
      }
    },
    120_000,
  );
});

/** Rewrite a backup so that it still verifies: `change` edits members and the manifest, then every
 *  member's size and sha256 in the manifest are computed again (what a crafted archive would do). */
function reseal(src: string, dest: string, change: (entries: TarEntry[], manifest: any) => TarEntry[]): void {
  forge(src, dest, (es) => {
    const manifest = JSON.parse(new TextDecoder().decode(es.find((e) => e.name === "manifest.json")!.data));
    const members = change(es.filter((e) => e.name !== "manifest.json"), manifest);
    const sum = (e: TarEntry) => ({ path: e.name, size: e.data.length, sha256: new Bun.CryptoHasher("sha256").update(e.data).digest("hex") });
    manifest.members = members.filter((e) => e.type === "file").map(sum);
    for (const v of manifest.volumes) {
      const member = members.find((e) => e.name === v.member)!;
      Object.assign(v, { size: member.data.length, sha256: sum(member).sha256 });
    }
    return [fileEntry("manifest.json", JSON.stringify(manifest)), ...members];
  });
}

describe("restore never reaches beyond its own stack", () => {
  const { stack, scratch } = stackAndScratch("br");
  const victim = TestStack.unique("bw");
  afterAll(() => victim.cleanup(), 60_000);
  const composeOf = (project: string) => appWithData(project);
  let archive = "";

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    victim.write("docker-compose.yml", composeOf(victim.project));
    await victim.up();
    await victim.exec("app", "sh", "-c", "echo precious > /data/f");
    stack.write("docker-compose.yml", composeOf(stack.project));
    await stack.up();
    await stack.exec("app", "sh", "-c", "echo ours > /data/f");
    const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
    archive = JSON.parse(made.stdout).file;
  }, 120_000);

  const expectUntouched = async () => {
    expect((await victim.exec("app", "cat", "/data/f")).trim()).toBe("precious");
    expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("ours");
    expect((await stack.container("app")).State.Running).toBe(true);
    expect((await victim.container("app")).State.Running).toBe(true);
  };

  e2e(
    "a manifest naming another project's volume is refused before anything changes",
    async () => {
      const ours = `${stack.project}_data`;
      const theirs = `${victim.project}_data`;
      const forged = join(scratch, "other-volume.tar.gz");
      reseal(archive, forged, (es, manifest) => {
        const v = manifest.volumes.find((x: any) => x.name === ours);
        const inner = readTar(es.find((e) => e.name === v.member)!.data).map((e) => ({ ...e, name: e.name.replace(ours, theirs) }));
        Object.assign(v, { name: theirs, member: `volumes/${theirs}.tar` });
        return es.map((e) => (e.name === `volumes/${ours}.tar` ? { ...e, name: `volumes/${theirs}.tar`, data: writeTar(inner) } : e));
      });
      expect((await verifyBackupFile(forged)).volumes.map((v) => v.name)).toEqual([theirs]);
      const r = await cli(["backup", "restore", forged, "--dir", stack.dir, "--yes"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${theirs} belongs to project "${victim.project}"`);
      expect(r.stderr).toContain("Nothing was changed");
      await expectUntouched();
    },
    120_000,
  );

  e2e(
    "config files that make another project than the manifest's are refused (up would take that project over)",
    async () => {
      const forged = join(scratch, "other-config.tar.gz");
      reseal(archive, forged, (es) => es.map((e) => (e.name === "config/docker-compose.yml" ? fileEntry(e.name, composeOf(victim.project)) : e)));
      const r = await cli(["backup", "restore", forged, "--dir", stack.dir, "--yes"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`its config files make the project "${victim.project}"`);
      await expectUntouched();
      expect(readFileSync(join(stack.dir, "docker-compose.yml"), "utf8")).toBe(composeOf(stack.project));
    },
    120_000,
  );

  e2e(
    "a config file that is a symbolic link is not written through: refused before anything changes",
    async () => {
      const outside = join(scratch, "outside.txt");
      writeFileSync(outside, "mine\n");
      chmodSync(outside, 0o600);
      const forged = join(scratch, "with-notes.tar.gz");
      reseal(archive, forged, (es) => [...es, fileEntry("config/notes.txt", "from the backup\n", 0o777)]);
      symlinkSync(outside, join(stack.dir, "notes.txt"));
      try {
        const r = await cli(["backup", "restore", forged, "--dir", stack.dir, "--yes"]);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain("notes.txt is a symbolic link");
        expect(r.stderr).toContain("Nothing was changed");
        expect(readFileSync(outside, "utf8")).toBe("mine\n");
        expect(statSync(outside).mode & 0o777).toBe(0o600);
        await expectUntouched();
      } finally {
        rmSync(join(stack.dir, "notes.txt"));
      }
    },
    120_000,
  );

  e2e(
    "a volume another container uses is found before anything changes (the engine would refuse to remove it after the stack was down)",
    async () => {
      const user = `${stack.project}-visitor`;
      await docker("run", "-d", "--name", user, "-v", `${stack.project}_data:/x`, BASE_IMAGE, "sleep", "3600");
      try {
        const r = await cli(["backup", "restore", archive, "--dir", stack.dir, "--yes"]);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`${stack.project}_data is in use by ${user}`);
        expect(r.stderr).toContain("Nothing was changed");
        await expectUntouched();
      } finally {
        await docker("rm", "-f", user);
      }
    },
    120_000,
  );

  e2e(
    "an orphan container (its service since removed from the compose file) on a stack volume is found too: down would leave it",
    async () => {
      stack.write("docker-compose.yml", composeOf(stack.project).replace("volumes:\n  data: {}", `  extra:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n    volumes: ["data:/x"]\nvolumes:\n  data: {}`));
      await stack.up();
      stack.write("docker-compose.yml", composeOf(stack.project));
      try {
        const r = await cli(["backup", "restore", archive, "--dir", stack.dir, "--yes"]);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(new RegExp(`${stack.project}_data is in use by ${stack.project}-extra-1`));
        expect(r.stderr).toContain("Nothing was changed");
        await expectUntouched();
      } finally {
        await docker("rm", "-f", `${stack.project}-extra-1`);
      }
    },
    120_000,
  );

  e2e(
    "into a new directory, a project that runs from another one is refused, not taken over",
    async () => {
      const fresh = join(scratch, stack.project);
      const r = await cli(["backup", "restore", archive, "--dir", fresh, "--yes"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`Project "${stack.project}" already has containers on this engine, running from ${stack.dir}`);
      expect(existsSync(fresh)).toBe(false);
      await expectUntouched();
      expect((await stack.container("app")).Config.Labels["com.docker.compose.project.working_dir"]).toBe(stack.dir);
    },
    120_000,
  );

  e2e(
    "a COMPOSE_FILE in the backup's .env naming the stack's own compose file cannot smuggle another project past the check",
    async () => {
      // The copy checked first reads the live file through the absolute path; the restore then
      // writes the backup's compose file there, which names the other project.
      const forged = join(scratch, "compose-file.tar.gz");
      reseal(archive, forged, (es) => [
        ...es.filter((e) => e.name !== "config/docker-compose.yml" && e.name !== "config/.env"),
        fileEntry("config/docker-compose.yml", composeOf(victim.project)),
        fileEntry("config/.env", `COMPOSE_FILE=${join(stack.dir, "docker-compose.yml")}\n`, 0o600),
      ]);
      const r = await cli(["backup", "restore", forged, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code).toBe(1);
      const error = JSON.parse(r.stdout).error;
      expect(error.code).toBe("RESTORE_FAILED");
      expect(error.message).toContain(`its config files make the project "${victim.project}"`);
      expect(error.message).toContain("put back as it was");
      await expectUntouched();
      expect(readFileSync(join(stack.dir, "docker-compose.yml"), "utf8")).toBe(composeOf(stack.project));
    },
    120_000,
  );

  e2e(
    "a volume made outside compose is not replaced because the backup's own compose file declares it",
    async () => {
      const loose = `${stack.project}-loose`;
      expect((await run(["docker", "volume", "create", loose])).code).toBe(0);
      try {
        expect((await run(["docker", "run", "--rm", "-v", `${loose}:/v`, BASE_IMAGE, "sh", "-c", "echo theirs > /v/f"])).code).toBe(0);
        const ours = `${stack.project}_data`;
        const forged = join(scratch, "loose-volume.tar.gz");
        reseal(archive, forged, (es, manifest) => {
          const v = manifest.volumes.find((x: any) => x.name === ours);
          const inner = readTar(es.find((e) => e.name === v.member)!.data).map((e) => ({ ...e, name: e.name.replace(ours, loose) }));
          Object.assign(v, { name: loose, member: `volumes/${loose}.tar` });
          return es.map((e) =>
            e.name === `volumes/${ours}.tar` ? { ...e, name: `volumes/${loose}.tar`, data: writeTar(inner) }
            : e.name === "config/docker-compose.yml" ? fileEntry(e.name, composeOf(stack.project).replace("  data: {}\n", `  data: {name: ${loose}}\n`))
            : e);
        });
        const r = await cli(["backup", "restore", forged, "--dir", stack.dir, "--yes"]);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain(`${loose} is not a volume of "${stack.project}"`);
        expect((await run(["docker", "run", "--rm", "-v", `${loose}:/v`, BASE_IMAGE, "cat", "/v/f"])).stdout.trim()).toBe("theirs");
        await expectUntouched();
      } finally {
        await run(["docker", "volume", "rm", "-f", loose]);
      }
    },
    120_000,
  );

  e2e(
    "backups written into the stack directory or a folder above it still hold its config; a file as --output is bad input",
    async () => {
      for (const output of [stack.dir, scratch]) {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--output", output, "--hot", "--json"]);
        expect(r.code, r.stderr).toBe(0);
        const out = JSON.parse(r.stdout);
        expect(out.files).toContain("docker-compose.yml");
        expect(out.files.some((f: string) => f.endsWith(".tar.gz") || f.startsWith(".work-"))).toBe(false);
        rmSync(out.file);
      }
      const notAFolder = join(scratch, "a-file");
      writeFileSync(notAFolder, "x");
      const bad = await cli(["backup", "create", "--dir", stack.dir, "--output", notAFolder, "--json"]);
      expect(bad.code).toBe(2);
      expect(JSON.parse(bad.stdout).error.message).toContain(`Cannot write backups to ${notAFolder}`);
    },
    120_000,
  );
});

describe("restore into a volume bound to a host folder", () => {
  const { stack, scratch: folder } = stackAndScratch("bf");

  e2e(
    "is refused before anything changes: recreating the volume would not empty the folder, and the backup would be mixed into it",
    async () => {
      stack.write(
        "docker-compose.yml",
        `name: ${stack.project}\nservices:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n    volumes: ["data:/data"]\nvolumes:\n  data:\n    driver: local\n    driver_opts: {type: none, o: bind, device: ${folder}}\n`,
      );
      await stack.up();
      await stack.exec("app", "sh", "-c", "echo kept > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "echo newer > /data/f && echo stale > /data/junk");
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${stack.project}_data keeps its data in ${folder}`);
      expect(r.stderr).toContain("Nothing was changed");
      expect(readFileSync(join(folder, "f"), "utf8")).toBe("newer\n");
      expect((await stack.container("app")).State.Running).toBe(true);
    },
    120_000,
  );
});

describe("backup of a stack whose volumes do not exist", () => {
  const stack = TestStack.unique("bn");
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "one missing: named as not in the backup, and restore names it as left as it was; all missing: refused, nothing written (prune would count it newest)",
    async () => {
      const service = (name: string, dir: string) => `  ${name}:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n    volumes: ["${dir}:/${dir}"]\n`;
      stack.write("docker-compose.yml", `name: ${stack.project}\nservices:\n${service("main", "mdata")}${service("worker", "wdata")}volumes:\n  mdata: {}\n  wdata: {}\n`);
      await stack.up();
      await stack.compose("rm", "-sf", "worker");
      await docker("volume", "rm", `${stack.project}_wdata`);
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const out = JSON.parse(made.stdout);
      expect(out.volumes.map((v: { name: string }) => v.name)).toEqual([`${stack.project}_mdata`]);
      expect(out.notIncluded).toContainEqual(expect.stringMatching(new RegExp(`^volume ${stack.project}_wdata \\(does not exist on this engine`)));
      expect(made.stderr).toContain(`volume ${stack.project}_wdata (does not exist on this engine`);
      // The worker runs again, with a new volume the backup does not hold: a restore leaves it and says so.
      await stack.up();
      await stack.exec("worker", "sh", "-c", "echo newer > /wdata/job");
      const restored = await cli(["backup", "restore", out.file, "--dir", stack.dir, "--yes", "--json"]);
      expect(restored.code, restored.stderr).toBe(0);
      expect(JSON.parse(restored.stdout).notRestored).toContainEqual(expect.stringMatching(new RegExp(`^volume ${stack.project}_wdata \\(not in the backup: left as it was`)));
      expect((await stack.exec("worker", "cat", "/wdata/job")).trim()).toBe("newer");

      const before = readdirSync(join(stack.dir, "backups")).sort();
      const down = await stack.compose("down", "-v", "-t", "0");
      expect(down.code, down.stderr).toBe(0);
      const empty = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(empty.code).toBe(1);
      expect(JSON.parse(empty.stdout).error).toMatchObject({ code: "BACKUP_FAILED", message: expect.stringContaining("None of the stack's volumes exists on this engine") });
      expect(readdirSync(join(stack.dir, "backups")).sort()).toEqual(before);
    },
    180_000,
  );
});

describe("backup of a stack with a one-shot job", () => {
  const stack = TestStack.unique("bj");
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "a cold backup starts the services again without running the finished job again, in order",
    async () => {
      const sleeper = `    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n`;
      stack.write("docker-compose.yml", `name: ${stack.project}
services:
  db:
${sleeper}    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "true"], interval: 1s, timeout: 2s, retries: 3}
  init:
    image: ${BASE_IMAGE}
    restart: "no"
    command: ["sh", "-c", "test ! -f /data/poison || exit 1; echo ran >> /data/initlog"]
    volumes: ["data:/data"]
  app:
${sleeper}    depends_on:
      db: {condition: service_healthy}
      init: {condition: service_completed_successfully}
volumes:
  data: {}
`);
      await stack.up();
      const runs = async () => (await stack.exec("db", "cat", "/data/initlog")).trim().split("\n").length;
      expect(await runs()).toBe(1);
      const appBefore = (await stack.container("app")).State.StartedAt;
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      expect(made.stderr).toContain("(the finished job init not run again)");
      expect(await runs()).toBe(1);
      const [db, app] = [await stack.container("db"), await stack.container("app")];
      expect(db.State.Running && app.State.Running).toBe(true);
      // Stopped for the copy and started again, after db was healthy.
      expect(app.State.StartedAt).not.toBe(appBefore);
      expect(Date.parse(app.State.StartedAt)).toBeGreaterThanOrEqual(Date.parse(db.State.StartedAt));
    },
    120_000,
  );

  e2e(
    "a job whose container was pruned, or that failed since, does not keep the app down: the backup is written and the app runs again",
    async () => {
      // `docker container prune` removes the finished job's container: compose start then refused
      // ("app is missing dependency init") and left the app stopped, with no backup.
      await docker("rm", (await stack.container("init")).Id);
      const pruned = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(pruned.code, pruned.stderr).toBe(0);
      expect(pruned.stderr).toContain("(init, not running before, left so)");
      expect((await stack.container("app")).State.Running).toBe(true);
      // A job run again since, failing: compose start ran it once more and failed the same way.
      await stack.exec("db", "touch", "/data/poison");
      expect((await stack.compose("up", "-d", "--force-recreate", "--no-deps", "init")).code).toBe(0);
      for (let i = 0; i < 40 && (await stack.container("init")).State.Status !== "exited"; i++) await Bun.sleep(250);
      expect((await stack.container("init")).State.ExitCode).toBe(1);
      const failed = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(failed.code, failed.stderr).toBe(0);
      expect((await stack.container("app")).State.Running).toBe(true);
      expect((await stack.container("db")).State.Running).toBe(true);
      const runs = (await stack.exec("db", "cat", "/data/initlog")).trim().split("\n").length;
      expect(runs).toBe(1);
    },
    120_000,
  );

  e2e(
    "a service unhealthy before the backup is started again, not waited for: the backup is written and the app runs",
    async () => {
      // Started layer by layer (the finished job stays as it is), the start waited for every
      // service of a layer: one sick before the backup held the app back, and no backup was written.
      const sleeper = `    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n`;
      stack.write("docker-compose.yml", `name: ${stack.project}
services:
  db:
${sleeper}    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "true"], interval: 1s, timeout: 2s, retries: 3}
  metrics:
${sleeper}    healthcheck: {test: ["CMD", "false"], interval: 1s, timeout: 2s, retries: 1}
  init:
    image: ${BASE_IMAGE}
    restart: "no"
    command: ["sh", "-c", "echo ran >> /data/initlog"]
    volumes: ["data:/data"]
  app:
${sleeper}    depends_on:
      db: {condition: service_healthy}
      init: {condition: service_completed_successfully}
      metrics: {condition: service_started}
volumes:
  data: {}
`);
      expect((await stack.compose("up", "-d", "--force-recreate")).code).toBe(0);
      for (let i = 0; i < 40 && (await stack.container("metrics")).State.Health?.Status !== "unhealthy"; i++) await Bun.sleep(250);
      expect((await stack.container("metrics")).State.Health?.Status).toBe("unhealthy");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stdout + made.stderr).toBe(0);
      expect(existsSync(JSON.parse(made.stdout).file)).toBe(true);
      for (const name of ["db", "metrics", "app"]) expect((await stack.container(name)).State.Running, name).toBe(true);

      // Without a job, compose start would start them all, and wait for a service_healthy
      // dependency that was sick before: the app depending on it was left down.
      stack.write("docker-compose.yml", `name: ${stack.project}
services:
  db:
${sleeper}    volumes: ["data:/data"]
    healthcheck: {test: ["CMD", "false"], interval: 1s, timeout: 2s, retries: 1}
  app:
${sleeper}    depends_on:
      db: {condition: service_healthy}
volumes:
  data: {}
`);
      expect((await stack.compose("up", "-d", "--force-recreate", "--remove-orphans", "db")).code).toBe(0);
      for (let i = 0; i < 40 && (await stack.container("db")).State.Health?.Status !== "unhealthy"; i++) await Bun.sleep(250);
      expect((await stack.compose("up", "-d", "--no-deps", "app")).code).toBe(0);
      expect((await stack.container("db")).State.Health?.Status).toBe("unhealthy");
      const again = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      for (const name of ["db", "app"]) expect((await stack.container(name)).State.Running, name).toBe(true);
    },
    120_000,
  );
});

describe("restore of a stack whose job hangs on the restored data", () => {
  const { stack, scratch } = stackAndScratch("bh");

  e2e(
    "--timeout bounds compose's wait for the job: the restore fails and the state before it is put back and runs",
    async () => {
      const sleeper = `    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n    volumes: ["data:/data"]\n`;
      stack.write("docker-compose.yml", `name: ${stack.project}
services:
  init:
    image: ${BASE_IMAGE}
    init: true
    restart: "no"
    command: ["sh", "-c", "if [ -f /data/hang ]; then sleep 3600; fi"]
    volumes: ["data:/data"]
  app:
${sleeper}    depends_on:
      init: {condition: service_completed_successfully}
volumes:
  data: {}
`);
      await stack.up();
      // Data on which the job hangs (a migration that never ends) goes into the backup.
      await stack.exec("app", "sh", "-c", "touch /data/hang; echo backed-up > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "rm /data/hang; echo current > /data/f");
      // compose up waited on the job with no limit: the restore never ended.
      const started = Date.now();
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--timeout", "6", "--json"]);
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(r.code, r.stderr).toBe(1);
      const error = JSON.parse(r.stdout).error;
      expect(error.code).toBe("RESTORE_FAILED");
      // 6 s for each layer of dependencies (init, then app), as compose waits for them in turn.
      expect(error.message).toContain("did not finish within 12s");
      expect(error.message).toContain("still waiting on init (a one-shot job, still running)");
      expect(error.message).toContain("put back as it was before the restore and started again");
      expect((await stack.container("app")).State.Running).toBe(true);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("current");
    },
    120_000,
  );
});

describe("restore of a stack whose image is always pulled, its registry out of reach", () => {
  const { stack, scratch } = stackAndScratch("bp");

  e2e(
    "uses the image the engine has: the data goes back under the image that ran it, and the stack runs",
    async () => {
      // Nothing listens on this port: a pull fails at once, as an offline registry does.
      const image = `127.0.0.1:5999/${stack.project}/app:1`;
      await docker("tag", BASE_IMAGE, image);
      stack.images.add(image);
      stack.write("docker-compose.yml", appWithData(stack.project, { image, more: "    pull_policy: always\n" }));
      const up = await stack.compose("up", "-d", "--pull", "never", "--wait");
      expect(up.code, up.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "echo backed-up > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "echo current > /data/f");
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).healthy).toBe(true);
      expect((await stack.container("app")).State.Running).toBe(true);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("backed-up");
    },
    120_000,
  );
});

describe("restore of a stack whose image the engine no longer has", () => {
  const { stack, scratch } = stackAndScratch("bn");

  e2e(
    "pulls it as compose would; never one marked pull_policy: never (its name may mean another image on a registry)",
    async () => {
      const image = stack.ref("app");
      await stack.publish(image, ["RUN echo published > /published"]);
      stack.write("docker-compose.yml", appWithData(stack.project, { image }));
      await stack.up();
      await stack.exec("app", "sh", "-c", "echo backed-up > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const file = JSON.parse(made.stdout).file;
      // A new machine, or an image prune: the tag is gone from the engine, the registry has it.
      await docker("rmi", "-f", image);
      const pulled = await cli(["backup", "restore", file, "--dir", stack.dir, "--yes", "--json"]);
      expect(pulled.code, pulled.stdout + pulled.stderr).toBe(0);
      expect(pulled.stderr).toContain(`Pulling ${image} for app (not on this engine)`);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("backed-up");
      // The same image marked local-only: not fetched from the registry, the restore fails instead.
      stack.write("docker-compose.yml", appWithData(stack.project, { image, more: "    pull_policy: never\n" }));
      const local = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(local.code, local.stderr).toBe(0);
      await docker("rmi", "-f", image);
      const refused = await cli(["backup", "restore", JSON.parse(local.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).not.toContain("Pulling");
      expect((await run(["docker", "image", "inspect", image])).code).not.toBe(0);
    },
    120_000,
  );
});

describe("restore of a stack whose server quits cleanly on the restored data", () => {
  const { stack, scratch } = stackAndScratch("bq");

  e2e(
    "a service that ran before the restore and exits with 0 after it is down: the restore is not healthy",
    async () => {
      stack.write("docker-compose.yml", appWithData(stack.project, { command: `["sh", "-c", "test -f /data/stop && exit 0; sleep 3600"]` }));
      await stack.up();
      // The backup holds data on which the server quits (cleanly) at once.
      await stack.exec("app", "touch", "/data/stop");
      const made = await cli(["backup", "create", "--hot", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "rm", "/data/stop");
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json", "--timeout", "20"]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const out = JSON.parse(r.stdout);
      const result = out.error ?? out;
      expect(JSON.stringify(result)).toContain("app");
      expect(JSON.stringify(result)).toContain("exited with code 0");
    },
    120_000,
  );
});

describe("backup of a stack whose volume a one-off container writes", () => {
  const { stack, scratch } = stackAndScratch("bx");

  e2e(
    "the copy is not called consistent: the container compose does not stop is named and the backup is marked hot",
    async () => {
      stack.write("docker-compose.yml", appWithData(stack.project));
      await stack.up();
      // `docker compose stop` leaves a `compose run` container running.
      const oneOff = await stack.compose("run", "-d", "--name", `${stack.project}-writer`, "app", "sh", "-c", "while true; do date >> /data/log; sleep 0.2; done");
      expect(oneOff.code, oneOff.stderr).toBe(0);
      const made = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const out = JSON.parse(made.stdout);
      expect(out.hot).toBe(true);
      expect(out.writers).toEqual([`${stack.project}_data: ${stack.project}-writer`]);
      expect(made.stderr).toContain("Stop them first for a consistent copy");
      // The stack's own service was stopped for the copy and runs again; without writers the copy is cold.
      expect((await stack.container("app")).State.Running).toBe(true);
      await docker("rm", "-f", `${stack.project}-writer`);
      const cold = JSON.parse((await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"])).stdout);
      expect([cold.hot, cold.writers]).toEqual([false, []]);
    },
    120_000,
  );
});

describe("restore into the stack's own directory after it was lost", () => {
  const { stack, scratch } = stackAndScratch("bl");

  e2e(
    "brings the stack back over its own containers and volumes (they run from that directory)",
    async () => {
      stack.write("docker-compose.yml", appWithData(stack.project));
      await stack.up();
      await stack.exec("app", "sh", "-c", "echo saved > /data/f");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--output", scratch, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "echo lost > /data/f");
      // The directory is gone (a wiped disk); the engine still runs the stack from there.
      for (const name of readdirSync(stack.dir)) rmSync(join(stack.dir, name), { recursive: true, force: true });
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).healthy).toBe(true);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("saved");
      expect(existsSync(join(stack.dir, "docker-compose.yml"))).toBe(true);
    },
    120_000,
  );
});

describe("backup of a stack whose compose file is a link", () => {
  const { stack, scratch } = stackAndScratch("bs");

  e2e(
    "is written, naming the linked file as left out (links are never followed)",
    async () => {
      const real = join(scratch, "compose.yml");
      writeFileSync(real, `name: ${stack.project}\nservices:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\n`);
      symlinkSync(real, join(stack.dir, "docker-compose.yml"));
      stack.write(".env", "A=1\n");
      const r = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.files).toEqual([".env"]);
      expect(out.notIncluded).toContain(`compose file ${join(stack.dir, "docker-compose.yml")} (a symbolic link, not followed)`);
    },
    60_000,
  );
});

describe("backup of a stack with a service of a profile", () => {
  const stack = TestStack.unique("bp");
  afterAll(() => stack.cleanup(), 60_000);
  const volume = (key: string) => `${stack.project}_${key}`;

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await stack.upWithProfiledWorker(BASE_IMAGE);
  }, 120_000);

  e2e(
    "the volume of a running service of a profile is backed up, and restore stops, restores and starts that service too",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      expect(JSON.parse(made.stdout).volumes.map((v: any) => v.name).sort()).toEqual([volume("mdata"), volume("wdata")]);
      expect(made.stderr).toContain("Stopping 2 service(s)");
      expect((await stack.container("worker")).State.Running).toBe(true);

      await stack.exec("worker", "sh", "-c", "echo done > /w/job");
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).volumes.sort()).toEqual([volume("mdata"), volume("wdata")]);
      expect(JSON.parse(r.stdout).services).toEqual(["main", "worker"]);
      expect((await stack.exec("worker", "cat", "/w/job")).trim()).toBe("queued");
    },
    180_000,
  );

  e2e(
    "once that service's container is gone, its volume is named as not in the backup, not left out unsaid",
    async () => {
      expect((await stack.compose("--profile", "extra", "rm", "-sf", "worker")).code).toBe(0);
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const out = JSON.parse(made.stdout);
      expect(out.volumes.map((v: any) => v.name)).toEqual([volume("mdata")]);
      const said = `volume ${volume("wdata")} (the project's on this engine, but no service of the compose files as they run now uses it`;
      expect(out.notIncluded.some((n: string) => n.startsWith(said))).toBe(true);
      expect(made.stderr).toContain(said);
    },
    120_000,
  );
});

describe("restore over a stack whose own config is refused", () => {
  const stack = TestStack.unique("bb");
  afterAll(() => stack.cleanup(), 60_000);
  const compose = `name: ${stack.project}
services:
  app:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    environment: {SECRET: "\${SECRET:?set SECRET in .env}"}
    volumes: ["data:/data"]
volumes:
  data: {}
`;
  let backup = "";

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    stack.write("docker-compose.yml", compose);
    stack.write(".env", "SECRET=kept\n");
    await stack.up();
    await stack.exec("app", "sh", "-c", "echo backed-up > /data/f");
    const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
    if (made.code !== 0) throw new Error(made.stderr);
    backup = JSON.parse(made.stdout).file;
  }, 120_000);

  for (const [what, breakIt] of [
    ["a .env that is gone while compose requires one of its values", () => rmSync(join(stack.dir, ".env"))],
    ["a compose file that is not YAML", () => stack.write("docker-compose.yml", "services: [unclosed\n")],
  ] as const) {
    e2e(
      `the backup's config goes in first, the files there are kept in an archive, and the stack is restored: ${what}`,
      async () => {
        await stack.exec("app", "sh", "-c", "echo later > /data/f");
        breakIt();
        const broken = readFileSync(join(stack.dir, "docker-compose.yml"));
        const r = await cli(["backup", "restore", backup, "--dir", stack.dir, "--yes", "--json"]);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).healthy).toBe(true);
        expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("backed-up");
        expect(readFileSync(join(stack.dir, ".env"), "utf8")).toBe("SECRET=kept\n");
        expect(readFileSync(join(stack.dir, "docker-compose.yml"), "utf8")).toBe(compose);
        const keptIn = /The files that were there are kept in (\S+)/.exec(r.stderr)?.[1];
        expect(keptIn).toContain("-broken-config-");
        // The compose file as it was, broken or not.
        const held = (await verifyBackupFile(keptIn!)).files.find((f) => f.path === "docker-compose.yml");
        expect(Buffer.from(held!.data).equals(broken)).toBe(true);
      },
      180_000,
    );
  }
});

describe("backup of a service whose image declares a VOLUME", () => {
  const stack = TestStack.unique("ba");
  const ref = stack.ref("db");
  afterAll(() => stack.cleanup(), 60_000);
  const volumeCount = async () => (await docker("volume", "ls", "-q")).split("\n").filter(Boolean).length;

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    // As postgres and redis images do: the helper that copies the volumes is made from it.
    await stack.build(ref, ["VOLUME /declared"]);
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  db:
    image: ${ref}
    init: true
    command: ["sleep", "3600"]
    volumes: ["data:/data", "declared:/declared"]
volumes:
  data: {}
  declared: {}
`,
    );
    await stack.up();
  }, 120_000);

  e2e(
    "backup and restore leave no anonymous volume behind",
    async () => {
      const before = await volumeCount();
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      expect(await volumeCount()).toBe(before);
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(await volumeCount()).toBe(before);
    },
    180_000,
  );

  e2e(
    "a volume helper left by a stackgen that quit at once does not block the restore, which removes it",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      // As a second Ctrl-C leaves one: created, never started, mounting the stack's volume.
      const helper = await docker("create", "--label", "dev.stackgen.role=volume-helper", "-v", `${stack.project}_data:/stackgen-volumes/data`, ref, "/stackgen-volume-helper-never-started");
      const r = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect((await run(["docker", "inspect", helper])).code).not.toBe(0);
    },
    180_000,
  );
});

describe("backup when docker compose stop fails", () => {
  const stack = startedStack(TestStack.unique("bf"), `services:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sh", "-c", "[ -f /data/f ] || echo v1 > /data/f; exec sleep 3600"]\n    volumes: ["data:/data"]\nvolumes:\n  data: {}\n`, {});
  const backups = () => (existsSync(join(stack.dir, "backups")) ? readdirSync(join(stack.dir, "backups")).filter((f) => f.endsWith(".tar.gz")) : []);

  e2e(
    "create and restore start again what the failed stop stopped, and write or replace nothing",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      await stack.exec("app", "sh", "-c", "echo v2 > /data/f");

      // The stop stops the service, then fails (twice): no backup, and the service runs again.
      const create = dockerRefusingStops("always");
      const failedCreate = await cli(["backup", "create", "--dir", stack.dir, "--json"], create.env);
      const createRefused = create.refused();
      create.remove();
      expect(createRefused).toBe(true);
      expect(failedCreate.code, failedCreate.stdout + failedCreate.stderr).toBe(1);
      expect(JSON.parse(failedCreate.stdout).error).toMatchObject({ code: "COMPOSE_FAILED", message: expect.stringContaining("No backup was written (started again: app)") });
      expect(backups()).toEqual([basename(JSON.parse(made.stdout).file)]);
      expect((await stack.container("app")).State.Running).toBe(true);

      const restore = dockerRefusingStops("always");
      const failedRestore = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"], restore.env);
      restore.remove();
      expect(failedRestore.code, failedRestore.stdout + failedRestore.stderr).toBe(1);
      expect(JSON.parse(failedRestore.stdout).error).toMatchObject({ code: "COMPOSE_FAILED", message: expect.stringContaining("Nothing was restored (started again: app)") });
      expect((await stack.container("app")).State.Running).toBe(true);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("v2");
      expect(backups()).toHaveLength(1);
    },
    180_000,
  );

  e2e(
    "when starting again fails too, create and restore keep the error that stopped them and name what is left stopped with the command that starts it",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stderr).toBe(0);
      const written = backups();
      const refusedStart = "Starting it again failed too (docker compose start failed: Error response from daemon: cannot start container: it is being removed): app is left stopped; `docker compose start app` in ";
      const refusedStop = "docker compose stop failed: Error response from daemon: cannot stop container: it is being removed.";
      const errorOf = (r: { code: number; stdout: string; stderr: string }) => {
        expect(r.code, r.stdout + r.stderr).toBe(1);
        return JSON.parse(r.stdout).error;
      };

      // The copy is taken, but the start is refused: the whole copy is still written (a nightly
      // backup is not lost to it), and the user is told the stack is down.
      const start = dockerRefusingStops("always", ["start"]);
      const created = await cli(["backup", "create", "--dir", stack.dir, "--json"], start.env);
      start.remove();
      const startError = errorOf(created);
      expect(startError.code).toBe("COMPOSE_FAILED");
      expect(startError.message).toContain(`, but the stack is not as it was. ${refusedStart}`);
      expect((await stack.container("app")).State.Running).toBe(false);
      const added = backups().filter((name) => !written.includes(name));
      expect(added).toHaveLength(1);
      expect(startError.message).toContain(`The backup was written (${join(stack.dir, "backups", added[0]!)})`);
      await expect(verifyBackupFile(join(stack.dir, "backups", added[0]!))).resolves.toBeDefined();
      rmSync(join(stack.dir, "backups", added[0]!));
      expect((await stack.compose("start")).code).toBe(0);

      // Stop and start both refused: the stop's error is not hidden by the start's.
      const both = dockerRefusingStops("always", ["stop", "start"]);
      const createdBoth = await cli(["backup", "create", "--dir", stack.dir, "--json"], both.env);
      expect((await stack.container("app")).State.Running).toBe(false);
      expect((await stack.compose("start")).code).toBe(0);
      const restoredBoth = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"], both.env);
      both.remove();
      expect(errorOf(createdBoth)).toMatchObject({ code: "COMPOSE_FAILED", message: expect.stringContaining(`${refusedStop} No backup was written. ${refusedStart}`) });
      expect(errorOf(restoredBoth)).toMatchObject({ code: "COMPOSE_FAILED", message: expect.stringContaining(`${refusedStop} Nothing was restored. ${refusedStart}`) });
      expect((await stack.container("app")).State.Running).toBe(false);
      expect(backups()).toEqual(written);
      expect((await stack.compose("start")).code).toBe(0);
      expect((await stack.container("app")).State.Running).toBe(true);
    },
    180_000,
  );

  e2e(
    "a start that fails after starting what it was asked to leaves nothing named as stopped",
    async () => {
      // Stop and start both do their work, then exit 1: the stack runs, as the engine shows.
      const shim = dockerRefusingStops("always", ["stop", "start"], ["stop", "start"]);
      const created = await cli(["backup", "create", "--dir", stack.dir, "--json"], shim.env);
      shim.remove();
      expect(created.code, created.stdout + created.stderr).toBe(1);
      const { message } = JSON.parse(created.stdout).error;
      expect(message).toContain("No backup was written (started again: app)");
      expect(message).not.toContain("left stopped");
      expect((await stack.container("app")).State.Running).toBe(true);
    },
    180_000,
  );
});

describe("backup --hot of a service that writes short-lived files into the stack directory", () => {
  const stack = startedStack(
    TestStack.unique("bh"),
    // Always one file t<n> there, each removed some 50 ms after it was made (as a database's journal).
    `services:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sh", "-c", "i=0; while :; do i=$$((i+1)); echo x > /bind/t$$i; rm -f /bind/t$$((i-1)); sleep 0.05; done"]\n    volumes: ["./appdata:/bind", "big:/big"]\nvolumes:\n  big: {}\n`,
    {},
    async () => {
      mkdirSync(join(stack.dir, "appdata"));
      const up = await stack.compose("up", "-d");
      if (up.code !== 0) throw new Error(`compose up failed: ${up.stderr}`);
      // A volume whose copy takes a while: the files listed before it are gone when they are read.
      await stack.exec("app", "dd", "if=/dev/zero", "of=/big/zero", "bs=1M", "count=64");
    },
  );

  e2e(
    "a file removed while the copy runs is named as not in the backup, and the backup is written",
    async () => {
      let gone: string[] = [];
      for (let attempt = 0; attempt < 5 && gone.length === 0; attempt++) {
        const r = await cli(["backup", "create", "--dir", stack.dir, "--hot", "--json"]);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        const out = JSON.parse(r.stdout);
        gone = out.notIncluded.filter((x: string) => /^appdata\/t\d+ \(removed while the backup was taken\)$/.test(x));
        expect((await verifyBackupFile(out.file)).manifest.volumes.map((v) => v.name)).toEqual([`${stack.project}_big`]);
      }
      expect(gone.length).toBeGreaterThan(0);
    },
    180_000,
  );
});

describe("backup of a stack with a running container whose service left the compose files", () => {
  const app = `  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sh", "-c", "[ -f /data/f ] || echo v1 > /data/f; exec sleep 3600"]\n    volumes: ["data:/data"]\n`;
  const stack = startedStack(TestStack.unique("bo"), `services:\n${app}  gone:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sleep", "3600"]\nvolumes:\n  data: {}\n`, {});

  e2e(
    "create and restore stop and start the services of the compose files, and leave the other running",
    async () => {
      stack.write("docker-compose.yml", `name: ${stack.project}\nservices:\n${app}volumes:\n  data: {}\n`);
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code, made.stdout + made.stderr).toBe(0);
      expect(made.stderr).toContain("Not stopped for the copy: gone (running, but not in the compose files");
      expect(JSON.parse(made.stdout).hot).toBe(false);
      await stack.exec("app", "sh", "-c", "echo v2 > /data/f");
      const restored = await cli(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--json"]);
      expect(restored.code, restored.stdout + restored.stderr).toBe(0);
      expect((await stack.exec("app", "cat", "/data/f")).trim()).toBe("v1");
      expect((await stack.container("gone")).State.Running).toBe(true);
    },
    180_000,
  );
});

describe("backup create of a volume that takes a while to copy", () => {
  const stack = startedStack(TestStack.unique("bg"), `services:\n  app:\n    image: ${BASE_IMAGE}\n    init: true\n    command: ["sh", "-c", "[ -f /data/blob ] || head -c 8388608 /dev/urandom > /data/blob; exec sleep 3600"]\n    volumes: ["data:/data"]\nvolumes:\n  data: {}\n`, {});

  e2e(
    "says how far the copy and the archive are as they go",
    async () => {
      const { stack: loaded, compose, model } = await stack.opened();
      const said: string[] = [];
      // Every chunk reported (the CLI says so every few seconds): the wiring, not the pace, is tested.
      const made = await createBackup(loaded, new Engine(), compose, model, { hot: false, progress: (line) => void said.push(line), progressEveryMs: 0 });
      const volume = `${stack.project}_data`;
      const copying = said.filter((line) => line.startsWith(`Copying volume ${volume}: `));
      expect(copying.length).toBeGreaterThan(1);
      expect(copying.at(-1)).toMatch(/: 8\.\d MiB$/);
      expect(said.filter((line) => line.startsWith("Writing the archive: ")).at(-1)).toMatch(/^Writing the archive: 8\.\d MiB of 8\.\d MiB$/);
      expect((await verifyBackupFile(made.file)).volumes.map((v) => v.name)).toEqual([volume]);
      // A restore names each volume it writes, with its size.
      const restored = await cli(["backup", "restore", made.file, "--dir", stack.dir, "--yes"]);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stderr).toMatch(new RegExp(`Writing volume ${volume} \\(8\\.\\d MiB\\)`));
      // ... and says how far each write is as the bytes go to the engine (streamed, not one
      // silent upload), and the volume holds what it held.
      const blob = await stack.exec("app", "md5sum", "/data/blob");
      const work = mkdtempSync(join(stack.dir, ".restore-test-"));
      const backup = await loadVerifiedBackup(made.file, loaded.project, work);
      const heard: string[] = [];
      const again = await restoreBackup(loaded, new Engine(), compose, model, made.file, backup, { timeoutMs: 60_000, progress: (line) => void heard.push(line), progressEveryMs: 0 });
      rmSync(work, { recursive: true, force: true });
      expect(again.volumes).toEqual([volume]);
      const writing = heard.filter((line) => line.startsWith(`Writing volume ${volume}: `));
      expect(writing.length).toBeGreaterThan(1);
      expect(writing.at(-1)).toMatch(/: 8\.\d MiB of 8\.\d MiB$/);
      expect(await stack.exec("app", "md5sum", "/data/blob")).toBe(blob);
    },
    120_000,
  );
});

describe("backup create --hot of a stack with a database", () => {
  // `postgresql` is a database (its catalog category): it writes a line every 20 ms, as a
  // database writes its journal. `app` is not one and is never paused.
  const stack = startedStack(
    TestStack.unique("bp"),
    `services:
  postgresql:
    image: ${BASE_IMAGE}
    init: true
    command: ["sh", "-c", "while :; do date >> /db/journal; usleep 20000; done"]
    volumes: ["db:/db"]
  app:
    image: ${BASE_IMAGE}
    init: true
    command: ["sh", "-c", "echo app > /files/a; exec sleep 3600"]
    volumes: ["files:/files"]
volumes:
  db: {}
  files: {}
`,
    {},
  );

  /** The real engine, but for one call, which fails with `message`. */
  const engineFailing = (call: "pauseContainer" | "unpauseContainer", message: string) =>
    Object.assign(Object.create(new Engine()) as Engine, { [call]: () => Promise.reject(new Error(message)) });

  /** The pause and unpause events of the stack's containers since `since` (Unix seconds, with
   *  milliseconds: the test before may have paused in the same second), in order. */
  const pauseEvents = async (since: string) => {
    const out = await docker("events", "--since", since, "--until", String(Math.ceil(Date.now() / 1000) + 1), "--filter", "type=container", "--filter", `label=com.docker.compose.project=${stack.project}`, "--filter", "event=pause", "--filter", "event=unpause", "--format", "{{index .Actor.Attributes \"com.docker.compose.service\"}} {{.Action}}");
    return out.split("\n").filter(Boolean);
  };

  e2e(
    "pauses the database (not the app) for the copy of its volume only, and unpauses it; both run on as before",
    async () => {
      const before = { db: (await stack.container("postgresql")).State.StartedAt, app: (await stack.container("app")).State.StartedAt };
      const since = (Date.now() / 1000).toFixed(3);
      const r = await cli(["backup", "create", "--dir", stack.dir, "--hot", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out.paused).toEqual(["postgresql"]);
      expect(out.volumes.map((v: { name: string }) => v.name)).toEqual([`${stack.project}_db`, `${stack.project}_files`]);
      expect(r.stderr).toContain("Pausing postgresql (not stopping) while its volumes are copied");
      expect(r.stderr).not.toContain("Warning: a hot copy");
      expect(await pauseEvents(since)).toEqual(["postgresql pause", "postgresql unpause"]);
      // Neither was stopped or restarted, and the database is writing again.
      const db = await stack.container("postgresql");
      expect([db.State.Running, db.State.Paused, db.State.StartedAt]).toEqual([true, false, before.db]);
      expect((await stack.container("app")).State.StartedAt).toBe(before.app);
      const lines = async () => (await stack.exec("postgresql", "wc", "-l", "/db/journal")).trim().split(" ")[0];
      const now = await lines();
      await Bun.sleep(300);
      expect(await lines()).not.toBe(now);
      // The archive holds the journal as it was when paused.
      const entries = readTar(Bun.gunzipSync(new Uint8Array(readFileSync(out.file))));
      const volume = readTar(entries.find((e) => e.name === `volumes/${stack.project}_db.tar`)!.data);
      expect(new TextDecoder().decode(volume.find((e) => e.name.endsWith("/journal"))!.data)).toMatch(/\n$/);
    },
    120_000,
  );

  e2e(
    "an unpause that fails is an error naming the database left paused and the command that unpauses it; no backup is written",
    async () => {
      const { stack: loaded, compose, model } = await stack.opened();
      // The engine as it is, but for unpause (as when it went away in the middle of the copy).
      const engine = engineFailing("unpauseContainer", "the engine went away");
      const inFlight = backupInFlight();
      const archives = () => (existsSync(join(stack.dir, "backups")) ? readdirSync(join(stack.dir, "backups")).filter((f) => !f.startsWith(".")) : []);
      const before = archives();
      const error = await createBackup(loaded, engine, compose, model, { hot: true, inFlight }).then(() => undefined, (e: Error & { code?: string }) => e);
      try {
        expect(error?.code).toBe("DOCKER_ERROR");
        expect(error?.message).toContain("Unpausing failed (the engine went away): postgresql is left paused, answering nothing;");
        expect(error?.message).toContain(`\`docker compose unpause postgresql\` in ${stack.dir} unpauses it.`);
        // What a second Ctrl-C would say now: the one left paused, not a stack left stopped.
        expect(inFlight).toEqual({ stopped: [], paused: ["postgresql"], unfinished: [] });
        expect(quitBackupNote(compose, inFlight)).toBe(`no backup was written; postgresql is left paused, answering nothing; \`docker compose unpause postgresql\` in ${stack.dir} unpauses it.`);
        expect((await stack.container("postgresql")).State.Paused).toBe(true);
        expect(archives()).toEqual(before);
      } finally {
        await stack.compose("unpause", "postgresql");
      }
      expect((await stack.container("postgresql")).State.Paused).toBe(false);
    },
    120_000,
  );

  e2e(
    "a database the engine will not pause (no cgroup freezer) is copied while it writes, with a warning naming it; the backup is written",
    async () => {
      const { stack: loaded, compose, model } = await stack.opened();
      // The engine as it is, but for pause (as on a host without the cgroup freezer).
      const engine = engineFailing("pauseContainer", "cgroup freezer not available");
      const said: string[] = [];
      const inFlight = backupInFlight();
      const made = await createBackup(loaded, engine, compose, model, { hot: true, inFlight, progress: (line) => void said.push(line) });
      try {
        expect(made.paused).toEqual([]);
        expect(said).toContain("Warning: postgresql could not be paused (cgroup freezer not available); its volumes are copied while it writes, and may not restore to a consistent state.");
        expect(said.some((line) => line.startsWith("Unpausing"))).toBe(false);
        expect(made.volumes.map((v) => v.name)).toEqual([`${stack.project}_db`, `${stack.project}_files`]);
        expect(inFlight).toEqual({ stopped: [], paused: [], unfinished: [] });
        expect((await stack.container("postgresql")).State.Paused).toBe(false);
        expect((await verifyBackupFile(made.file)).manifest.hot).toBe(true);
      } finally {
        rmSync(made.file, { force: true });
      }
    },
    120_000,
  );

  e2e(
    "--no-pause copies the database while it writes, with the warning, and pauses nothing",
    async () => {
      const since = (Date.now() / 1000).toFixed(3);
      const r = await cli(["backup", "create", "--dir", stack.dir, "--hot", "--no-pause", "--json"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).paused).toEqual([]);
      expect(r.stderr).toContain("Warning: a hot copy of postgresql is taken while they write");
      expect(await pauseEvents(since)).toEqual([]);
    },
    120_000,
  );
});
