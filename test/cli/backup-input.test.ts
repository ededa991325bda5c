// What `backup restore|list|prune` are given is the user's (an archive from anywhere, the stack
// directory as it is): a crafted manifest, an odd backups folder, a symlinked folder in the stack
// or an escape sequence in a file name is refused or shown for what it is, with a coded error and
// exit 2, and nothing is written outside the stack. No engine is needed: DOCKER_HOST points at a
// socket that does not exist, and each case stops before the engine is asked.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createHash, randomBytes } from "node:crypto";
import { FORMAT_VERSION, verifyBackupFile, writeArchive } from "../../src/docker/backup.ts";
import { configTargetProblems, writeConfigFiles } from "../../src/docker/backup-restore.ts";
import { fileEntry, writeTar } from "../../src/docker/tar.ts";
import { BUN, cli, MAIN } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-backup-input-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1", DOCKER_HOST: "unix:///nonexistent.sock" };
const jsonError = (stdout: string) => JSON.parse(stdout).error as { code: string; message: string };
const data = new TextEncoder().encode("x");

/** A stack directory as generate leaves it. */
function stackDir(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "docker-compose.yml"), `name: ${name}\nservices:\n  redis:\n    image: redis:7\n`);
  writeFileSync(join(dir, "stackgen.json"), JSON.stringify({ configVersion: 2, projectName: name, services: ["redis"], deploymentType: "docker" }));
  return dir;
}

/** A manifest as create writes it, for `project`, with no members. */
const manifestOf = (project: string, over: Record<string, unknown> = {}) => ({
  formatVersion: FORMAT_VERSION,
  tool: "stackgen",
  toolVersion: "0.0.0",
  project,
  createdAt: "2026-01-01T00:00:00.000Z",
  hot: false,
  services: [],
  volumes: [],
  files: [],
  members: [],
  ...over,
});

/** A .tar.gz holding only a manifest.json with this text. */
function craftedArchive(file: string, manifest: string): string {
  writeFileSync(file, gzipSync(writeTar([fileEntry("manifest.json", manifest)])));
  return file;
}

describe("restoring config files writes nothing outside the stack directory", () => {
  test("a folder of the stack that is a symbolic link leading outside: refused before any folder is made there", () => {
    const dir = stackDir("linked");
    const outside = mkdtempSync(join(tmp, "outside-"));
    symlinkSync(outside, join(dir, "skills"));
    const files = [{ path: "skills/a/b/SKILL.md", data, mode: 0o644 }];
    expect(configTargetProblems(dir, files)).toEqual([`skills leads outside ${dir}`]);
    // The last guard, should the stack change after that check: refused, and nothing made outside.
    expect(() => writeConfigFiles(dir, files)).toThrow(expect.objectContaining({ code: "RESTORE_FAILED" }));
    expect(readdirSync(outside)).toEqual([]);
  });

  test("a symbolic link to a folder inside the stack is refused too (no file is written through a link), found before the restore changes anything", () => {
    const dir = stackDir("inner-link");
    mkdirSync(join(dir, "real"));
    symlinkSync("real", join(dir, "skills"));
    const files = [{ path: "skills/a/SKILL.md", data, mode: 0o644 }];
    expect(configTargetProblems(dir, files)).toEqual(["skills is a symbolic link (replace it with the folder itself)"]);
    expect(() => writeConfigFiles(dir, files)).toThrow(expect.objectContaining({ code: "RESTORE_FAILED" }));
    expect(readdirSync(join(dir, "real"))).toEqual([]);
  });

  test("a file where the backup needs a folder is refused without touching it; new folders are made as before", () => {
    const dir = stackDir("plain");
    writeFileSync(join(dir, "prometheus"), "a file");
    expect(() => writeConfigFiles(dir, [{ path: "prometheus/prometheus.yml", data, mode: 0o644 }])).toThrow(/prometheus is not a folder/);
    expect(readFileSync(join(dir, "prometheus"), "utf8")).toBe("a file");
    const created: string[] = [];
    writeConfigFiles(dir, [{ path: "skills/a/b/SKILL.md", data, mode: 0o644 }, { path: "docker-compose.yml", data, mode: 0o644 }], created);
    expect(created).toEqual(["skills/a/b/SKILL.md"]);
    expect(readFileSync(join(dir, "skills/a/b/SKILL.md"), "utf8")).toBe("x");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toBe("x");
  });
});

describe("a crafted manifest is an invalid backup (exit 2) naming what is wrong, never an unexpected failure", () => {
  const cases: [string, string, RegExp][] = [
    ["null", "null", /manifest\.json is null, not an object/],
    ["array", "[]", /manifest\.json is an array, not an object/],
    ["string", '"x"', /manifest\.json is a string, not an object/],
    ["no version", "{}", /manifest\.json has no formatVersion/],
    ["object version", JSON.stringify(manifestOf("shop", { formatVersion: { a: 1 } })), /unsupported backup format version \{"a":1\}/],
    ["future version", JSON.stringify(manifestOf("shop", { formatVersion: 2 })), /unsupported backup format version 2 /],
    ["null member", JSON.stringify(manifestOf("shop", { members: [null] })), /manifest\.json field "members\.0": Expected object, received null/],
    ["null volume", JSON.stringify(manifestOf("shop", { volumes: [null] })), /manifest\.json field "volumes\.0": Expected object, received null/],
    ["null service", JSON.stringify(manifestOf("shop", { services: [null] })), /manifest\.json field "services\.0": Expected object, received null/],
    ["members not a list", JSON.stringify(manifestOf("shop", { members: "all" })), /manifest\.json field "members": Expected array, received string/],
    ["no project", JSON.stringify({ ...manifestOf("shop"), project: undefined }), /manifest\.json has no project name/],
    ["member without size", JSON.stringify(manifestOf("shop", { members: [{ path: "config/x", sha256: "0" }] })), /manifest\.json field "members\.0\.size": Required/],
  ];

  test("verifyBackupFile refuses each as invalid, with the reason", async () => {
    for (const [name, manifest, reason] of cases) {
      const file = craftedArchive(join(tmp, `verify-${name.replace(/ /g, "-")}.tar.gz`), manifest);
      const error = await verifyBackupFile(file).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(error?.constructor.name, name).toBe("BackupInvalid");
      expect(error?.message, name).toMatch(reason);
      expect(error?.message, name).not.toContain("[object Object]");
    }
  });

  test("backup restore: BACKUP_INVALID, exit 2, nothing changed; backup list shows the reason as the problem", async () => {
    const dir = stackDir("shop");
    const config = readFileSync(join(dir, "stackgen.json"), "utf8");
    const incoming = mkdtempSync(join(tmp, "incoming-"));
    for (const [name, manifest] of cases) craftedArchive(join(incoming, `shop-${name.replace(/ /g, "-")}.tar.gz`), manifest);
    // The cases of the audit (each CLI run takes a while): the others differ only inside verifyBackupFile.
    for (const [name, , reason] of cases.filter(([name]) => ["null", "object version", "null member", "null volume"].includes(name))) {
      const file = join(incoming, `shop-${name.replace(/ /g, "-")}.tar.gz`);
      const r = await cli(["backup", "restore", file, "--dir", dir, "--yes", "--json"], { env });
      expect(r.code, `${name}: ${r.stdout}`).toBe(2);
      expect(jsonError(r.stdout).code, name).toBe("BACKUP_INVALID");
      expect(jsonError(r.stdout).message, name).toMatch(reason);
    }
    expect(readFileSync(join(dir, "stackgen.json"), "utf8")).toBe(config);
    expect(existsSync(join(dir, "backups"))).toBe(false);

    const listed = await cli(["backup", "list", "--dir", dir, "--output", incoming, "--json"], { env });
    expect(listed.code, listed.stderr).toBe(0);
    const backups = JSON.parse(listed.stdout).backups as { name: string; verified: boolean; problem: string }[];
    expect(backups).toHaveLength(cases.length);
    for (const [name, , reason] of cases) {
      const b = backups.find((x) => x.name === `shop-${name.replace(/ /g, "-")}.tar.gz`);
      expect(b?.verified, name).toBe(false);
      expect(b?.problem, name).toMatch(reason);
    }
  });

  test("a manifest create writes still verifies", async () => {
    const file = join(tmp, "good.tar.gz");
    await writeArchive(file, { project: "shop", hot: false, kind: "pre-restore", services: [{ name: "redis", image: "redis:7", imageId: "sha256:1" }], files: [{ path: "stackgen.json", data, mode: 0o644 }], volumes: [] });
    expect((await verifyBackupFile(file)).manifest.project).toBe("shop");
  });
});

describe("a backups folder that cannot be read or made: a coded error naming it, exit 2", () => {
  test("a file named backups: list, prune and restore say so", async () => {
    const dir = stackDir("filed");
    const backups = join(dir, "backups");
    writeFileSync(backups, "not a folder\n");
    const file = join(tmp, "filed.tar.gz");
    await writeArchive(file, { project: "filed", hot: false, services: [], files: [{ path: "stackgen.json", data, mode: 0o644 }], volumes: [] });
    const expected: [string[], string][] = [
      [["backup", "list"], `Cannot read backups in ${backups}: ENOTDIR`],
      [["backup", "prune", "--keep", "1", "--yes"], `Cannot read backups in ${backups}: ENOTDIR`],
      [["backup", "restore", file, "--yes"], `Cannot unpack the backup for checking in ${backups}: EEXIST`],
    ];
    for (const [args, message] of expected) {
      const r = await cli([...args, "--dir", dir, "--json"], { env });
      expect(r.code, `${args.join(" ")}: ${r.stdout}`).toBe(2);
      expect(jsonError(r.stdout), args.join(" ")).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining(message) });
    }
    const text = await cli(["backup", "list", "--dir", dir], { env });
    expect(text.code).toBe(2);
    expect(text.stderr).toContain(`Cannot read backups in ${backups}: ENOTDIR`);
    expect(readFileSync(backups, "utf8")).toBe("not a folder\n");
  });

  test("restore into a place no folder can be made (a virtual file system): exit 2 naming it, nothing made", async () => {
    const file = join(tmp, "virtual.tar.gz");
    await writeArchive(file, { project: "virtual", hot: false, services: [], files: [{ path: "stackgen.json", data, mode: 0o644 }], volumes: [] });
    const dir = `/proc/stackgen-${process.pid}-virtual`;
    const r = await cli(["backup", "restore", file, "--dir", dir, "--yes", "--json"], { env });
    expect(r.code, r.stdout).toBe(2);
    expect(jsonError(r.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining(`Cannot unpack the backup for checking in ${dir}/backups: E`) });
    expect(existsSync(dir)).toBe(false);
  });
});

describe("backup list and prune show archive names as text, never as terminal control", () => {
  test("an escape sequence in a file name is shown as \\x1b", async () => {
    const dir = stackDir("escapes");
    const backups = join(dir, "backups");
    mkdirSync(backups);
    writeFileSync(join(backups, "\x1b]0;owned\x07\x1b[2J.tar.gz"), "not an archive");
    const list = await cli(["backup", "list", "--dir", dir], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("\\x1b]0;owned\\x07\\x1b[2J.tar.gz");
    expect(list.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    const prune = await cli(["backup", "prune", "--keep", "1", "--dir", dir], { env });
    expect(prune.code, prune.stderr).toBe(0);
    expect(prune.stdout).toContain("\\x1b]0;owned\\x07\\x1b[2J.tar.gz");
    expect(prune.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });

  test("a line break in a file name is shown as \\n, not printed as a line of its own", async () => {
    const dir = stackDir("line-breaks");
    const backups = join(dir, "backups");
    mkdirSync(backups);
    writeFileSync(join(backups, "x\n2026-01-01T00:00:00Z  1 KiB  verified  good.tar.gz"), "not an archive");
    for (const args of [["backup", "list", "--dir", dir], ["backup", "prune", "--keep", "1", "--dir", dir]]) {
      const r = await cli(args, { env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("x\\n2026-01-01T00:00:00Z");
      expect(r.stdout.split("\n").some((line) => line.startsWith("2026-01-01T00:00:00Z"))).toBe(false);
    }
    const verify = await cli(["backup", "verify", join(backups, "x\n2026-01-01T00:00:00Z  1 KiB  verified  good.tar.gz")], { env });
    expect(verify.code).toBe(1);
    expect(verify.stdout.split("\n").some((line) => line.startsWith("2026-01-01T00:00:00Z"))).toBe(false);
  });
});

describe("Ctrl-C while restore checks the archive", () => {
  test("quits with 130 and leaves nothing behind: not the unpacked copy, not the folders it made", async () => {
    // Large enough that the check takes a moment: its unpacked copy is as large as the volumes.
    const tar = writeTar([fileEntry("shop_data/big.bin", randomBytes(48 * 1024 * 1024))]);
    const tarFile = join(tmp, "big-volume.tar");
    writeFileSync(tarFile, tar);
    const file = join(tmp, "big.tar.gz");
    const volume = { name: "shop_data", key: "data", path: tarFile, size: tar.length, sha256: createHash("sha256").update(tar).digest("hex") };
    await writeArchive(file, { project: "shop", hot: false, services: [], files: [{ path: "stackgen.json", data, mode: 0o644 }], volumes: [volume] });
    const dir = join(tmp, "restored-here");
    const child = Bun.spawn([BUN, MAIN, "backup", "restore", file, "--dir", dir, "--yes"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const backups = join(dir, "backups");
    const unpacking = () => existsSync(backups) && readdirSync(backups).some((name) => name.startsWith(".restore-"));
    for (let i = 0; i < 2000 && !unpacking(); i++) await Bun.sleep(5);
    expect(unpacking()).toBe(true);
    child.kill("SIGINT");
    const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    expect(code).toBe(130);
    expect(stderr).toContain("SIGINT: stopped while checking the backup; nothing was changed.");
    // The unpacked copy stayed (200 MB for a 200 MB backup), found by no later command.
    expect(existsSync(dir)).toBe(false);
  });
});

describe("backup verify checks one archive whole, with no stack and no engine", () => {
  /** An archive as create writes it: a config file and one volume holding one file. */
  async function madeArchive(file: string, hot: boolean) {
    const tar = writeTar([fileEntry("shop_data/orders.db", "rows")]);
    const tarFile = join(tmp, `${hot ? "hot" : "cold"}-volume.tar`);
    writeFileSync(tarFile, tar);
    const volume = { name: "shop_data", key: "data", path: tarFile, size: tar.length, sha256: createHash("sha256").update(tar).digest("hex") };
    await writeArchive(file, { project: "shop", hot, services: [{ name: "db", image: "registry.local/db:2", imageId: "sha256:abc" }], files: [{ path: "stackgen.json", data, mode: 0o644 }], volumes: [volume] });
    return file;
  }

  test("a sound archive: exit 0, with what a restore would bring back (project, images, volumes, config)", async () => {
    const file = await madeArchive(join(tmp, "verify-sound.tar.gz"), true);
    const r = await cli(["backup", "verify", file, "--json"], { env });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      file,
      name: "verify-sound.tar.gz",
      verified: true,
      project: "shop",
      hot: true,
      services: [{ name: "db", image: "registry.local/db:2", imageId: "sha256:abc" }],
      volumes: [{ name: "shop_data", size: expect.any(Number) }],
      files: ["stackgen.json"],
    });
    const text = await cli(["backup", "verify", file], { env });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("verify-sound.tar.gz: verified");
    expect(text.stdout).toContain("Services: db (registry.local/db:2)");
    expect(text.stdout).toMatch(/Volumes: +shop_data \(/);
    // A hot copy says what that means for its databases.
    expect(text.stdout).toContain("copied while the services ran");
  });

  test("an archive that does not verify: exit 1 with every problem, in JSON and as text", async () => {
    // A config member that differs from its manifest entry, and another the manifest does not list.
    const manifest = manifestOf("shop", { members: [{ path: "config/stackgen.json", size: 1, sha256: "0".repeat(64) }] });
    const file = join(tmp, "verify-tampered.tar.gz");
    writeFileSync(file, gzipSync(writeTar([fileEntry("manifest.json", JSON.stringify(manifest)), fileEntry("config/stackgen.json", "y"), fileEntry("config/extra.sh", "rm -rf /")])));
    const r = await cli(["backup", "verify", file, "--json"], { env });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ file, verified: false });
    expect(out.problems).toEqual(['member "config/stackgen.json" fails its sha256 check', 'member "config/extra.sh" is not listed in the manifest']);
    expect(out.project).toBeUndefined();
    const text = await cli(["backup", "verify", file], { env });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("verify-tampered.tar.gz: INVALID");
    expect(text.stdout).toContain('  member "config/extra.sh" is not listed in the manifest');
  });

  test("no such file, or a folder: exit 2, USAGE_ERROR", async () => {
    for (const [file, message] of [[join(tmp, "missing.tar.gz"), "does not exist"], [tmp, "is not a regular file"]]) {
      const r = await cli(["backup", "verify", file, "--json"], { env });
      expect(r.code, r.stdout).toBe(2);
      expect(jsonError(r.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining(message) });
    }
  });
});

describe("backup create flags", () => {
  test("--no-pause without --hot does nothing, so it is a usage error (exit 2) before the stack is opened", async () => {
    const dir = stackDir("nopause");
    for (const flag of ["--no-pause", "--pause=false"]) {
      const r = await cli(["backup", "create", "--dir", dir, flag, "--json"], { env });
      expect(r.code, r.stdout + r.stderr).toBe(2);
      expect(jsonError(r.stdout)).toEqual({ code: "USAGE_ERROR", message: "--no-pause goes with --hot: without --hot the stack is stopped for the copy, and nothing is paused" });
    }
    expect(existsSync(join(dir, "backups"))).toBe(false);
  });
});
