// Ctrl-C during backup create, restore and update, against a real engine: the signal goes to the
// whole process group, as a terminal sends it, and the stack is left as it was, never stopped.
import { afterAll, beforeAll, describe, expect } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { Engine } from "../../src/docker/engine.ts";
import { loadVerifiedBackup, restoreBackup } from "../../src/docker/backup-restore.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, MAIN, cli, docker, dockerTest, dockerUnavailable, TestStack } from "./helpers.ts";
import { UNFINISHED_UPDATE_FILE } from "../../src/docker/update.ts";

const e2e = await dockerTest();

interface Interrupted {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in its own process group and sends SIGINT (or `signal`) to the group once stderr
 *  shows `when` (and SIGINT once more when it then shows `again`). */
async function interruptWhen(args: string[], when: string, again?: string, signal: "SIGINT" | "SIGKILL" = "SIGINT"): Promise<Interrupted> {
  const proc = Bun.spawn([BUN, MAIN, ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore", detached: true, env: { ...process.env, NO_COLOR: "1" } });
  let stderr = "";
  let sent = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    const reader = proc.stderr.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value, { stream: true });
      if (!sent && stderr.includes(when)) {
        sent = true;
        process.kill(-proc.pid, signal);
      } else if (sent && again && stderr.slice(stderr.indexOf(when)).includes(again)) {
        again = undefined;
        process.kill(-proc.pid, "SIGINT");
      }
    }
  })();
  const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited, reading]);
  if (!sent) throw new Error(`never saw "${when}" in: ${stderr}`);
  return { code, stdout, stderr };
}

describe("Ctrl-C", () => {
  const stack = TestStack.unique("int");
  const appRef = stack.ref("app");
  const backupsDir = join(stack.dir, "backups");
  const leftovers = () => (existsSync(backupsDir) ? readdirSync(backupsDir).filter((f) => f.startsWith(".") || f.endsWith(".partial")) : []);
  const running = async () => (await stack.container("app")).State.Running as boolean;
  const marker = async () => (await stack.exec("app", "cat", "/more/marker")).trim();

  /** An update of app to an image whose container exits at once (the compose file's command is
   *  gone from it), killed while the stack is stopped: its record is left. The image app ran before. */
  const killedWhileStopped = async () => {
    const before = (await stack.container("app")).Image as string;
    await stack.pushNewVersion(appRef, ["RUN rm /bin/sleep"]);
    const killed = await interruptWhen(["update", "--dir", stack.dir], "Starting layer 1/1", undefined, "SIGKILL");
    expect(killed.code).not.toBe(0);
    // Left by the kill: cleanup removes it, also when an assertion fails.
    stack.images.add(`stackgen-rollback/${stack.project}:app`);
    expect(existsSync(join(stack.dir, UNFINISHED_UPDATE_FILE))).toBe(true);
    return before;
  };

  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    await stack.publish(appRef, ["RUN echo v1 > /version"]);
    // No health check: the update waits the settle time for it, long enough to be interrupted.
    stack.write(
      "docker-compose.yml",
      `name: ${stack.project}
services:
  app:
    image: ${appRef}
    init: true
    command: ["sleep", "3600"]
    volumes: ["data:/data", "more:/more"]
volumes:
  data: {}
  more: {}
`,
    );
    await stack.up();
    // Enough data that copying it takes a while; the marker tells states apart.
    await stack.exec("app", "sh", "-c", "dd if=/dev/zero of=/data/big bs=1M count=256 2>/dev/null && echo before > /more/marker");
  }, 120_000);
  afterAll(() => stack.cleanup(), 60_000);

  e2e(
    "during backup create: exit 130, the services run again and no partial archive or work folder is left",
    async () => {
      const r = await interruptWhen(["backup", "create", "--dir", stack.dir], "Copying");
      expect(r.code).toBe(130);
      expect(r.stderr).toContain("SIGINT: stopping the backup at the next safe point");
      expect(await running()).toBe(true);
      expect(existsSync(backupsDir) ? readdirSync(backupsDir).filter((f) => f.endsWith(".tar.gz")) : []).toEqual([]);
      expect(leftovers()).toEqual([]);
    },
    120_000,
  );

  e2e(
    "twice during backup create: it quits at once, removes its unfinished files and says what may be left stopped",
    async () => {
      // The first Ctrl-C stops the copy and starts the service again; the second lands while it starts.
      const r = await interruptWhen(["backup", "create", "--dir", stack.dir], "Copying", "SIGINT: stopping");
      try {
        expect(r.code).toBe(130);
        expect(r.stderr).toMatch(/SIGINT again: quitting now; no backup was written; (app may be left stopped; `docker compose start app` in \S+ starts it|nothing was left stopped or paused)\./);
        expect(leftovers()).toEqual([]);
      } finally {
        await stack.compose("start", "app");
      }
      expect(await running()).toBe(true);
    },
    120_000,
  );

  e2e(
    "while the archive is written (the services already run again): exit 130 and no partial archive",
    async () => {
      const r = await interruptWhen(["backup", "create", "--dir", stack.dir], "Writing the archive");
      expect(r.code).toBe(130);
      expect(r.stderr).not.toContain("Wrote ");
      expect(await running()).toBe(true);
      expect(existsSync(backupsDir) ? readdirSync(backupsDir).filter((f) => f.endsWith(".tar.gz")) : []).toEqual([]);
      expect(leftovers()).toEqual([]);
    },
    120_000,
  );

  e2e(
    "during restore, while volumes are written: the state before the restore is put back and runs",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code).toBe(0);
      const file = JSON.parse(made.stdout).file as string;
      await stack.exec("app", "sh", "-c", "echo after > /more/marker");
      const r = await interruptWhen(["backup", "restore", file, "--dir", stack.dir, "--yes"], "Writing volume contents");
      expect(r.code).toBe(130);
      expect(r.stderr).toContain("put back as it was before the restore");
      expect(await running()).toBe(true);
      expect(await marker()).toBe("after");
      expect(leftovers()).toEqual([]);
    },
    180_000,
  );

  e2e(
    "during restore, while the last volume is written: the stack does not start on the restored data, the state before is put back",
    async () => {
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code).toBe(0);
      await stack.exec("app", "sh", "-c", "echo after > /more/marker");
      const { stack: loaded, compose, model } = await stack.opened();
      // Outside the stack directory: the safety backup would count the unpacked volumes as its files.
      const work = mkdtempSync(join(tmpdir(), "stackgen-restore-test-"));
      const backup = await loadVerifiedBackup(JSON.parse(made.stdout).file, loaded.project, work);
      const last = backup.volumes.at(-1)!.name;
      // Ctrl-C as the last volume's write begins: writeVolumes has made its last check by then.
      const ctrlC = new AbortController();
      const said: string[] = [];
      const progress = (line: string) => {
        said.push(line);
        if (line.startsWith(`Writing volume ${last}`)) ctrlC.abort(new Error("interrupted"));
      };
      const restoring = restoreBackup(loaded, new Engine(), compose, model, JSON.parse(made.stdout).file, backup, { timeoutMs: 60_000, progress, signal: ctrlC.signal });
      await expect(restoring).rejects.toThrow(/put back as it was before the restore/);
      rmSync(work, { recursive: true, force: true });
      expect(said).not.toContain("Starting the stack");
      expect(await running()).toBe(true);
      expect(await marker()).toBe("after");
    },
    180_000,
  );

  e2e(
    "twice during restore, while volumes are written: it quits at once, says the safety backup is the way back, and that backup brings the state back",
    async () => {
      await stack.exec("app", "sh", "-c", "echo before-twice > /more/marker");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code).toBe(0);
      await stack.exec("app", "sh", "-c", "echo current > /more/marker");
      const r = await interruptWhen(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes"], "Writing volume contents", "SIGINT: stopping");
      expect(r.code).toBe(130);
      const safety = /the state before the restore is in (\S+), and `stackgen backup restore \S+ --dir \S+ --yes` puts it back/.exec(r.stderr)?.[1];
      expect(safety).toContain("-pre-restore-");
      expect(r.stderr).not.toContain("docker compose up -d starts it");
      // The unpacked volume tars do not stay behind in backups/.
      expect(leftovers()).toEqual([]);
      const back = await cli(["backup", "restore", safety!, "--dir", stack.dir, "--yes"]);
      // On failure the report shows both runs' messages.
      expect({ code: back.code, interrupted: r.stderr, restore: back.stderr }).toMatchObject({ code: 0 });
      expect(await running()).toBe(true);
      expect(await marker()).toBe("current");
    },
    240_000,
  );

  e2e(
    "during restore, once restored and waiting for health: it stops waiting, keeps the restore, exits 130",
    async () => {
      await stack.exec("app", "sh", "-c", "echo in-backup > /more/marker");
      const made = await cli(["backup", "create", "--dir", stack.dir, "--json"]);
      expect(made.code).toBe(0);
      await stack.exec("app", "sh", "-c", "echo later > /more/marker");
      const started = Date.now();
      const r = await interruptWhen(["backup", "restore", JSON.parse(made.stdout).file, "--dir", stack.dir, "--yes", "--timeout", "120"], "Waiting for app");
      expect(r.code).toBe(130);
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(await running()).toBe(true);
      expect(await marker()).toBe("in-backup");
    },
    180_000,
  );

  e2e(
    "during update, while the new image starts: it rolls back to the previous image",
    async () => {
      const { oldId } = await stack.pushNewVersion(appRef, ["RUN echo v2 > /version"]);
      const r = await interruptWhen(["update", "--dir", stack.dir, "--json"], "Starting layer 1/1");
      expect(r.code).toBe(130);
      const out = JSON.parse(r.stdout);
      expect(out.rolledBack).toMatchObject({ services: ["app"], reason: expect.stringContaining("interrupted"), recovered: true });
      expect((await stack.container("app")).Image).toBe(oldId);
      expect(await running()).toBe(true);
      expect((await stack.exec("app", "cat", "/version")).trim()).toBe("v1");
    },
    180_000,
  );

  e2e(
    "during update, while the stack stops: the new image never starts, and the data is said to be as it was",
    async () => {
      const before = (await stack.container("app")).Image as string;
      await stack.pushNewVersion(appRef, ["RUN echo v2b > /version"]);
      const r = await interruptWhen(["update", "--dir", stack.dir, "--json"], "Stopping the stack");
      expect(r.code, `${r.stderr}\n${r.stdout}`).toBe(130);
      expect(JSON.parse(r.stdout).rolledBack).toMatchObject({ services: ["app"], recovered: true, newImagesStarted: false });
      expect(r.stderr).toContain("The new images never started, so the data is as it was.");
      expect(r.stderr).not.toContain("changed its data");
      expect((await stack.container("app")).Image).toBe(before);
      expect(await running()).toBe(true);
    },
    180_000,
  );

  e2e(
    "during update, a second Ctrl-C quits at once and says where the previous images are and how to put them back",
    async () => {
      const before = (await stack.container("app")).Image as string;
      const { newId } = await stack.pushNewVersion(appRef, ["RUN echo v3 > /version"]);
      const r = await interruptWhen(["update", "--dir", stack.dir], "Starting layer 1/1", "SIGINT: stopping");
      expect(r.code).toBe(130);
      const rollbackRepo = `stackgen-rollback/${stack.project}`;
      // Left on purpose by the quit: cleanup removes it, also when an assertion fails.
      stack.images.add(`${rollbackRepo}:app`);
      expect(r.stderr).toContain(`docker tag ${rollbackRepo}:<service>`);
      // What the note promises: the tag names the image that ran before, the service's tag the new one.
      expect(await docker("image", "inspect", "-f", "{{.Id}}", `${rollbackRepo}:app`)).toBe(before);
      expect(await docker("image", "inspect", "-f", "{{.Id}}", appRef)).toBe(newId);
      // `stackgen update` again finishes it: what ran before is started on the new image (or
      // rolled back), not taken for a service the user stopped with nothing to do.
      expect(existsSync(join(stack.dir, UNFINISHED_UPDATE_FILE))).toBe(true);
      const again = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(again.code, again.stderr).toBe(0);
      // (Or, had the first Ctrl-C's rollback started it before the second, it runs and the record is dropped.)
      expect(again.stderr).toContain("did not finish");
      expect(JSON.parse(again.stdout).restarted).toEqual(["app"]);
      expect(await running()).toBe(true);
      expect((await stack.container("app")).Image).toBe(newId);
      expect(existsSync(join(stack.dir, UNFINISHED_UPDATE_FILE))).toBe(false);
    },
    240_000,
  );

  e2e(
    "an update killed while the stack is stopped, whose new image cannot start: the next update rolls back to what ran before it",
    async () => {
      const before = await killedWhileStopped();
      // status and a dry run say it too, and change nothing.
      expect((await cli(["status", "--dir", stack.dir])).stderr).toContain("did not finish");
      const dry = await cli(["update", "--dir", stack.dir, "--dry-run"]);
      expect(dry.stderr).toContain("did not finish: the real update starts again what ran before it (app)");
      expect(existsSync(join(stack.dir, UNFINISHED_UPDATE_FILE))).toBe(true);
      const again = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(again.code, again.stderr).toBe(1);
      expect(again.stderr).toContain("stopped the stack and did not finish: this one starts again what ran before it (app), and rolls back to the images app ran then");
      expect(JSON.parse(again.stdout).rolledBack).toMatchObject({ services: ["app"], recovered: true });
      expect((await stack.container("app")).Image).toBe(before);
      expect(await running()).toBe(true);
      expect(await marker()).toBeTruthy();
      expect(existsSync(join(stack.dir, UNFINISHED_UPDATE_FILE))).toBe(false);
    },
    240_000,
  );

  e2e(
    "a resumed update that cannot pull keeps the record and says the stack is still stopped; with nothing new it starts the stack again",
    async () => {
      const before = await killedWhileStopped();
      const record = join(stack.dir, UNFINISHED_UPDATE_FILE);
      // The pull fails: this run starts nothing, and the record stays for the next one.
      const composeText = readFileSync(join(stack.dir, "docker-compose.yml"), "utf8");
      stack.write("docker-compose.yml", composeText.replace(appRef, stack.ref("app", "missing")));
      const failed = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(failed.code).toBe(1);
      expect(JSON.parse(failed.stdout).error.message).toContain("The stack is still stopped by the update of");
      expect(existsSync(record)).toBe(true);
      // The registry's tag back on the image that ran: nothing new, and the stack starts all the same.
      stack.write("docker-compose.yml", composeText);
      await docker("tag", before, appRef);
      await docker("push", appRef);
      const again = await cli(["update", "--dir", stack.dir, "--json"]);
      expect(again.code, again.stderr).toBe(0);
      expect(await running()).toBe(true);
      expect((await stack.container("app")).Image).toBe(before);
      expect(existsSync(record)).toBe(false);
    },
    240_000,
  );
});
