// The day-2 commands (status, update, backup, deploy) check what the user gave them (the stack's
// stackgen.json, a backup file, --yes) before they talk to Docker: bad input is exit 2 whether an
// engine runs or not. No engine is needed: DOCKER_HOST points at a socket that does not exist.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeArchive } from "../../src/docker/backup.ts";
import { cli, hasTool } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-stack-input-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1", DOCKER_HOST: "unix:///nonexistent.sock" };
const jsonError = (stdout: string) => JSON.parse(stdout).error as { code: string; message: string };

/** A stack directory as generate leaves it, with the stackgen.json fields given. */
function stackDir(name: string, config: Record<string, unknown>): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "docker-compose.yml"), `name: ${name}\nservices:\n  redis:\n    image: redis:7\n`);
  writeFileSync(join(dir, ".env"), "REDIS_PASSWORD=x\n");
  writeFileSync(join(dir, "stackgen.json"), JSON.stringify({ projectName: name, services: ["redis"], ...config }));
  return dir;
}

describe("stackgen.json configVersion on load (SPEC §9.5, §9.9)", () => {
  test("an unknown version is refused by every command that loads the stack, before Docker", async () => {
    const dir = stackDir("future", { configVersion: 9, deploymentType: "docker" });
    writeFileSync(join(tmp, "any.tar.gz"), "not an archive");
    for (const args of [
      ["status"],
      ["update"],
      ["backup", "create"],
      ["backup", "list"],
      ["backup", "prune", "--keep", "1", "--yes"],
      ["backup", "restore", join(tmp, "any.tar.gz"), "--yes"],
      ["deploy", "--provider", "coolify", "--url", "http://127.0.0.1:9", "--api-key", "k"],
    ]) {
      const r = await cli([...args, "--dir", dir, "--json"], { env });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(jsonError(r.stdout).message, args.join(" ")).toStartWith("No migration path from config version 9");
    }
    const text = await cli(["status", "--dir", dir], { env });
    expect(text.code).toBe(2);
    expect(text.stdout).toBe("");
    expect(text.stderr).toContain("No migration path from config version 9");
  });

  test("an older version is migrated and the command goes on", async () => {
    const dir = stackDir("older", { configVersion: 1 });
    const list = await cli(["backup", "list", "--dir", dir, "--json"], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).backups).toEqual([]);
    // Past the config: it is the missing engine that stops status.
    const status = await cli(["status", "--dir", dir, "--json"], { env });
    expect(status.code).toBe(1);
    expect(jsonError(status.stdout).code).toBe("DOCKER_UNAVAILABLE");
  });
});

describe("a --dir that does not exist", () => {
  test("is exit 2 for every command that reads the stack, backup list included (not an empty list)", async () => {
    const missing = join(tmp, "typo");
    for (const args of [["status"], ["update"], ["backup", "create"], ["backup", "list"]]) {
      const r = await cli([...args, "--dir", missing, "--json"], { env });
      expect(r.code, `${args.join(" ")}: ${r.stdout}`).toBe(2);
      expect(jsonError(r.stdout), args.join(" ")).toEqual({ code: "STACK_NOT_FOUND", message: `${missing} does not exist.` });
    }
    expect(existsSync(missing)).toBe(false);
    // An empty directory is a new machine: no stack yet and no backups, not an error.
    mkdirSync(join(tmp, "new-machine"));
    const list = await cli(["backup", "list", "--dir", join(tmp, "new-machine"), "--json"], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).backups).toEqual([]);
  });
});

describe("backup restore checks its own arguments before connecting to Docker", () => {
  const dir = stackDir("shop", { configVersion: 2, deploymentType: "docker" });
  const archive = async (name: string, project: string) => {
    const file = join(tmp, name);
    await writeArchive(file, { project, hot: false, services: [{ name: "redis", image: "redis:7" }], files: [{ path: "stackgen.json", data: new TextEncoder().encode("{}"), mode: 0o644 }], volumes: [] });
    return file;
  };
  const restore = (...args: string[]) => cli(["backup", "restore", ...args, "--dir", dir, "--json"], { env });

  test("a missing file, a directory or a file that is not a backup: exit 2, nothing changed", async () => {
    const config = readFileSync(join(dir, "stackgen.json"), "utf8");
    writeFileSync(join(tmp, "notes.txt"), "just text\n");
    const cases: [string, string][] = [
      [join(tmp, "missing.tar.gz"), "USAGE_ERROR"],
      [tmp, "USAGE_ERROR"],
      [join(tmp, "notes.txt"), "BACKUP_INVALID"],
      [await archive("other.tar.gz", "other"), "BACKUP_FOREIGN"],
    ];
    for (const [file, code] of cases) {
      const r = await restore(file, "--yes");
      expect(r.code, `${file}: ${r.stderr}`).toBe(2);
      expect(jsonError(r.stdout).code, file).toBe(code);
    }
    expect(readFileSync(join(dir, "stackgen.json"), "utf8")).toBe(config);
    // No restore work folder is left behind, nor an empty backups folder made for it.
    expect(existsSync(join(dir, "backups"))).toBe(false);
  });

  test("without a terminal and without --yes it refuses (exit 2); with --yes it gets as far as the engine", async () => {
    const file = await archive("shop.tar.gz", "shop");
    const refused = await restore(file);
    expect(refused.code, refused.stderr).toBe(2);
    expect(jsonError(refused.stdout)).toMatchObject({ code: "CONFIRMATION_REQUIRED", message: expect.stringContaining("--yes") });
    const unreachable = await restore(file, "--yes");
    expect(unreachable.code).toBe(1);
    expect(jsonError(unreachable.stdout).code).toBe("DOCKER_UNAVAILABLE");
    expect(existsSync(join(dir, "backups"))).toBe(false);
    // A backups folder the user already had stays, with what it holds.
    mkdirSync(join(dir, "backups"));
    writeFileSync(join(dir, "backups", "keep.txt"), "mine\n");
    expect((await restore(file)).code).toBe(2);
    expect(readdirSync(join(dir, "backups"))).toEqual(["keep.txt"]);
    rmSync(join(dir, "backups"), { recursive: true });
  });
});

describe("backup prune keeps the newest --keep backups of this stack, and nothing else is touched", () => {
  const dir = stackDir("daily", { configVersion: 2, deploymentType: "docker" });
  const backups = join(dir, "backups");
  const day = (d: number) => new Date(Date.UTC(2026, 10, d, 3));
  const ours = [20, 21, 22, 23].map((d) => `daily-${day(d).toISOString().replace(/[-:.]/g, "")}.tar.gz`);
  const prune = (...args: string[]) => cli(["backup", "prune", ...args, "--dir", dir, "--json"], { env });
  const present = () => readdirSync(backups).sort();

  test("dry run, refusal without a terminal, then the real prune", async () => {
    mkdirSync(backups);
    for (const [i, name] of ours.entries()) {
      await writeArchive(join(backups, name), { project: "daily", hot: false, createdAt: day(20 + i), services: [{ name: "redis", image: "redis:7" }], files: [{ path: "stackgen.json", data: new TextEncoder().encode("{}"), mode: 0o644 }], volumes: [] });
    }
    // Older than all of ours, yet never counted nor deleted: another project's and a damaged one.
    await writeArchive(join(backups, "shop-old.tar.gz"), { project: "shop", hot: false, createdAt: day(1), services: [], files: [], volumes: [] });
    writeFileSync(join(backups, "damaged.tar.gz"), "not gzip");
    writeFileSync(join(backups, "notes.txt"), "mine\n");
    const everything = present();

    const dry = await prune("--keep", "2", "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    const planned = JSON.parse(dry.stdout);
    expect(planned).toMatchObject({ keep: 2, dryRun: true, freedBytes: 0 });
    expect(planned.removed.map((b: { name: string }) => b.name)).toEqual([ours[1], ours[0]]);
    expect(planned.kept.map((b: { name: string }) => b.name)).toEqual([ours[3], ours[2]]);
    expect(planned.untouched.map((b: { name: string }) => b.name).sort()).toEqual(["damaged.tar.gz", "shop-old.tar.gz"]);
    expect(present()).toEqual(everything);

    const refused = await prune("--keep", "2");
    expect(refused.code).toBe(2);
    expect(jsonError(refused.stdout)).toMatchObject({ code: "CONFIRMATION_REQUIRED", message: expect.stringContaining("--yes") });
    expect(present()).toEqual(everything);

    // Not while another command works on the stack (a restore may still read an archive): its lock stands.
    writeFileSync(join(dir, ".stackgen.lock"), JSON.stringify({ pid: process.pid, command: "backup restore", startedAt: "now" }));
    const busy = await prune("--keep", "2", "--yes");
    expect([busy.code, jsonError(busy.stdout).code]).toEqual([1, "STACK_BUSY"]);
    expect(present()).toEqual(everything);
    rmSync(join(dir, ".stackgen.lock"));

    const done = await prune("--keep", "2", "--yes");
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout).freedBytes).toBeGreaterThan(0);
    expect(present()).toEqual(everything.filter((f) => f !== ours[0] && f !== ours[1]));

    // Nothing left over the limit: nothing to ask, nothing deleted.
    const again = await prune("--keep", "2");
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).removed).toEqual([]);
    const text = await cli(["backup", "prune", "--keep", "5", "--dir", dir], { env });
    expect(text.stdout).toContain("Nothing to delete: 2 backups");
    expect(text.stdout).toContain("damaged.tar.gz");
  });

  test("calendar rules: the newest of each of the last days (or weeks, months) that have one, each kept backup with the rules that keep it", async () => {
    const calendar = stackDir("cal", { configVersion: 2, deploymentType: "docker" });
    const folder = join(calendar, "backups");
    mkdirSync(folder);
    // Two a day on 20 and 21 November, one on 23 November (a Monday), one in October.
    const times = ["2026-10-30T03:00:00Z", "2026-11-20T03:00:00Z", "2026-11-20T15:00:00Z", "2026-11-21T03:00:00Z", "2026-11-21T15:00:00Z", "2026-11-23T03:00:00Z"].map((t) => new Date(t));
    const names = times.map((t) => `cal-${t.toISOString().replace(/[-:.]/g, "")}.tar.gz`);
    for (const [i, name] of names.entries()) {
      await writeArchive(join(folder, name), { project: "cal", hot: false, createdAt: times[i]!, services: [], files: [{ path: "stackgen.json", data: new TextEncoder().encode("{}"), mode: 0o644 }], volumes: [] });
    }
    const run = (...args: string[]) => cli(["backup", "prune", ...args, "--dir", calendar], { env });
    const dry = await run("--keep-daily", "2", "--keep-monthly", "2", "--dry-run", "--json");
    expect(dry.code, dry.stderr).toBe(0);
    const plan = JSON.parse(dry.stdout);
    expect(plan).toMatchObject({ keep: null, retention: { daily: 2, monthly: 2 }, dryRun: true });
    expect(plan.kept.map((b: { name: string; keptBy: string[] }) => [b.name, b.keptBy])).toEqual([[names[5], ["daily", "monthly"]], [names[4], ["daily"]], [names[0], ["monthly"]]]);
    expect(plan.removed.map((b: { name: string }) => b.name)).toEqual([names[3], names[2], names[1]]);
    const text = await run("--keep-daily", "2", "--keep-monthly", "2", "--yes");
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("Deleted 3 backups");
    expect(text.stdout).toContain("Kept the newest of each of the last 2 days and 2 months that have one:");
    expect(text.stdout).toContain(`${names[5]}  [daily, monthly]`);
    expect(readdirSync(folder).sort()).toEqual([names[0], names[4], names[5]]);
    for (const bad of [["--keep-daily", "0"], ["--keep-weekly", "x"], ["--keep-monthly", "1.5"], ["--keep", "2", "--keep-daily", "-1"]]) {
      const r = await run(...bad, "--yes", "--json");
      expect(r.code, bad.join(" ")).toBe(2);
      expect(jsonError(r.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining(`${bad.at(-2)} must be a whole number`) });
    }
    expect(readdirSync(folder)).toHaveLength(3);
  });

  test("--keep must be a whole number of 1 or more: exit 2, nothing deleted", async () => {
    mkdirSync(backups, { recursive: true });
    const before = present();
    for (const keep of [[], ["--keep", "0"], ["--keep", "-1"], ["--keep", "1.5"], ["--keep", "all"]]) {
      const r = await prune(...keep, "--yes");
      expect(r.code, keep.join(" ")).toBe(2);
      expect(jsonError(r.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("--keep") });
    }
    expect(present()).toEqual(before);
  });

  test("archives written elsewhere (create --output) are listed and pruned with --output; safety backups are counted apart", async () => {
    const offsite = mkdtempSync(join(tmpdir(), "stackgen-offsite-"));
    try {
      const write = (name: string, d: number, kind?: string) =>
        writeArchive(join(offsite, name), { project: "daily", hot: false, ...(kind ? { kind } : {}), createdAt: day(d), services: [], files: [{ path: "stackgen.json", data: new TextEncoder().encode("{}"), mode: 0o644 }], volumes: [] });
      await write("daily-a.tar.gz", 10);
      await write("daily-b.tar.gz", 11);
      await write("daily-pre-restore-c.tar.gz", 12, "pre-restore");
      await write("daily-pre-restore-d.tar.gz", 13, "pre-restore");
      const listed = await cli(["backup", "list", "--dir", dir, "--output", offsite, "--json"], { env });
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).directory).toBe(offsite);
      expect(JSON.parse(listed.stdout).backups.map((b: { name: string }) => b.name)).toEqual(["daily-pre-restore-d.tar.gz", "daily-pre-restore-c.tar.gz", "daily-b.tar.gz", "daily-a.tar.gz"]);
      // --keep 1: the newest scheduled backup stays, though two restores were made since.
      const done = await prune("--keep", "1", "--output", offsite, "--yes");
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout).kept.map((b: { name: string }) => b.name)).toEqual(["daily-pre-restore-d.tar.gz", "daily-b.tar.gz"]);
      expect(readdirSync(offsite).sort()).toEqual(["daily-b.tar.gz", "daily-pre-restore-d.tar.gz"]);
      expect(JSON.parse(done.stdout).kept[0].kind).toBe("pre-restore");
      const text = await cli(["backup", "prune", "--keep", "1", "--output", offsite, "--dir", dir], { env });
      expect(text.stdout).toContain("keeping the newest 1 of each kind (backups, and each kind of safety backup)");
      expect(text.stdout).not.toContain("keeping up to");
      // A mistyped --output is bad input, not a folder without backups (which prune would report as nothing to do).
      writeFileSync(join(offsite, "a-file"), "");
      for (const [output, message] of [[join(offsite, "typo"), "does not exist"], [join(offsite, "a-file"), "is not a folder"]]) {
        for (const args of [["backup", "list", "--dir", dir, "--output", output!, "--json"], ["backup", "prune", "--keep", "1", "--yes", "--dir", dir, "--output", output!, "--json"]]) {
          const r = await cli(args, { env });
          expect([r.code, JSON.parse(r.stdout).error.message]).toEqual([2, `--output ${output} ${message}.`]);
        }
      }
    } finally {
      rmSync(offsite, { recursive: true, force: true });
    }
  });
});

describe("hostile stack files", () => {
  test("a compose file's unknown tag prints no library warning, and its escape sequences never reach the terminal", async () => {
    const dir = join(tmp, "tagged");
    mkdirSync(dir);
    writeFileSync(join(dir, "docker-compose.yml"), 'name: tagged\nservices:\n  a:\n    image: !evil "\x1b]0;PWNED\x07\x1b[2J\x1b[31mred"\n');
    for (const args of [["status"], ["deploy", "--provider", "coolify", "--url", "http://127.0.0.1:9", "--api-key", "k"]]) {
      const r = await cli([...args, "--dir", dir], { env });
      expect(r.stderr, args[0]).not.toContain("\x1b");
      expect(r.stderr, args[0]).not.toContain("YAMLWarning");
    }
  });

  test("a FIFO in place of stackgen.json or the compose file is refused at once, never waited on", async () => {
    if (!hasTool("mkfifo")) return;
    for (const name of ["stackgen.json", "docker-compose.yml"]) {
      const dir = join(tmp, `fifo-${name.split(".")[0]}`);
      mkdirSync(dir);
      if (name === "stackgen.json") writeFileSync(join(dir, "docker-compose.yml"), "name: fifo\nservices:\n  a:\n    image: x\n");
      const made = Bun.spawnSync(["mkfifo", join(dir, name)]);
      expect(made.exitCode).toBe(0);
      const r = await cli(["status", "--dir", dir, "--json"], { env });
      expect(r.code, name).toBe(2);
      expect(jsonError(r.stdout)).toEqual({ code: "STACK_INVALID", message: `${join(dir, name)} is not a regular file.` });
    }
  });

  test("deploy names a missing or broken stack file with the codes status gives (exit 2), and never waits on a FIFO", async () => {
    const deploy = (dir: string) => cli(["deploy", "--provider", "coolify", "--url", "http://127.0.0.1:9", "--api-key", "k", "--dir", dir, "--json"], { env });
    const empty = join(tmp, "deploy-empty");
    mkdirSync(empty);
    const missing = await deploy(empty);
    expect([missing.code, jsonError(missing.stdout).code]).toEqual([2, "STACK_NOT_FOUND"]);
    const broken = stackDir("deploy-broken", {});
    writeFileSync(join(broken, "stackgen.json"), "{not json");
    const invalid = await deploy(broken);
    expect([invalid.code, jsonError(invalid.stdout).code]).toEqual([2, "STACK_INVALID"]);
    if (!hasTool("mkfifo")) return;
    const piped = stackDir("deploy-fifo", {});
    rmSync(join(piped, ".env"));
    expect(Bun.spawnSync(["mkfifo", join(piped, ".env")]).exitCode).toBe(0);
    const fifo = await deploy(piped);
    expect(fifo.code).toBe(2);
    expect(jsonError(fifo.stdout)).toEqual({ code: "STACK_INVALID", message: `${join(piped, ".env")} is not a regular file.` });
  });

  test("a project name with a line break is named on one line", async () => {
    const dir = join(tmp, "newline");
    mkdirSync(dir);
    writeFileSync(join(dir, "docker-compose.yml"), 'name: "a\\nb"\nservices: {}\n');
    const r = await cli(["status", "--dir", dir], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"a\\nb" is not a valid compose project name.');
  });
});
