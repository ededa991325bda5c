// Writing a bundle is all or nothing: a folder the user may not write is refused before the first
// write, and a write that fails halfway puts back what was written before it.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writePlan } from "../../src/cli/write-bundle.ts";
import { StackgenError } from "../../src/errors.ts";
import { BUN, cli, expectOk, MAIN, run } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-write-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1" };

/** Every file and folder under `dir`, `dir` included. */
const tree = (dir: string): string[] => [dir, ...readdirSync(dir, { recursive: true }).map((p) => join(dir, String(p)))];
/** Every file under `dir` with its text: what a refused write must leave as it was. */
const fileContents = (dir: string) => Object.fromEntries(tree(dir).filter((p) => statSync(p).isFile()).map((p) => [p, readFileSync(p, "utf8")]));

describe("writing a bundle", () => {
  test("folders it makes are 0755 whatever the umask, as its files are 0644; folders that exist keep their mode", async () => {
    const dir = join(tmp, "umask", "bundle");
    mkdirSync(join(tmp, "umask"), { mode: 0o711 });
    chmodSync(join(tmp, "umask"), 0o711);
    // Under umask 077 postgres/init was 0700: the postgres user could not read its init scripts.
    const r = await run(["sh", "-c", 'umask 077 && exec "$@"', "sh", BUN, MAIN, "generate", "--name", "um", "--services", "n8n", "--dir", dir], { env });
    expectOk(r);
    const folders = tree(dir).filter((p) => statSync(p).isDirectory());
    expect(folders).toContain(join(dir, "postgres", "init"));
    for (const folder of folders) expect([folder, statSync(folder).mode & 0o777]).toEqual([folder, 0o755]);
    expect(statSync(join(dir, "docker-compose.yml")).mode & 0o777).toBe(0o644);
    expect(statSync(join(tmp, "umask")).mode & 0o777).toBe(0o711);
    // Folders made above --dir are the user's: they keep what the umask gives them.
    const deep = join(tmp, "umask-above", "private", "bundle");
    expectOk(await run(["sh", "-c", 'umask 077 && exec "$@"', "sh", BUN, MAIN, "generate", "--name", "um2", "--services", "redis", "--dir", deep], { env }));
    expect([join(tmp, "umask-above"), join(tmp, "umask-above", "private"), deep].map((p) => statSync(p).mode & 0o777)).toEqual([0o700, 0o700, 0o755]);
  });
  test("a write that fails halfway puts back the files written before it", async () => {
    const dir = join(tmp, "halfway");
    mkdirSync(dir);
    writeFileSync(join(dir, "docker-compose.yml"), "old compose\n", { mode: 0o644 });
    writeFileSync(join(dir, "old-skill.md"), "gone?\n", { mode: 0o644 });
    // A file where a folder must go: the third write fails.
    writeFileSync(join(dir, "skills"), "not a folder\n");
    const plan = [
      { path: "docker-compose.yml", action: "update" as const, content: "new compose\n" },
      { path: "README.md", action: "create" as const, content: "new readme\n" },
      { path: "old-skill.md", action: "remove" as const, content: "" },
      { path: "skills/redis/SKILL.md", action: "create" as const, content: "skill\n" },
    ];
    const error = await writePlan(dir, plan).then(() => undefined, (e) => e);
    expect(error).toBeInstanceOf(StackgenError);
    expect(error).toMatchObject({ code: "WRITE_FAILED", exitCode: 1 });
    expect(error.message).toStartWith(`Could not write skills/redis/SKILL.md in ${dir} (`);
    expect(error.message).toEndWith("The files written before it were put back: the bundle is as it was.");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toBe("old compose\n");
    expect(readFileSync(join(dir, "old-skill.md"), "utf8")).toBe("gone?\n");
    expect(existsSync(join(dir, "README.md"))).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(["docker-compose.yml", "old-skill.md", "skills"]);
  });

  test("a Ctrl-C while the files are written puts back those written before it (exit 130)", async () => {
    const dir = join(tmp, "interrupted");
    mkdirSync(dir);
    writeFileSync(join(dir, "docker-compose.yml"), "old compose\n", { mode: 0o644 });
    const plan = [
      { path: "docker-compose.yml", action: "update" as const, content: "new compose\n" },
      { path: "README.md", action: "create" as const, content: "new readme\n" },
      { path: "skills/redis/SKILL.md", action: "create" as const, content: "skill\n" },
    ];
    // The signal comes after two files are written (it is read once before each).
    let reads = 0;
    const signal = { get aborted() { return ++reads > 2; } } as AbortSignal;
    const error = await writePlan(dir, plan, signal).then(() => undefined, (e) => e);
    expect(error).toMatchObject({ code: "INTERRUPTED", exitCode: 130, message: `Interrupted while writing the bundle in ${dir}: the files written before were put back, the bundle is as it was.` });
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toBe("old compose\n");
    expect(readdirSync(dir)).toEqual(["docker-compose.yml"]);
  });

  test("a stack on a read-only file system: generate refuses before writing and says why (exit 2), backup list still reads it", async () => {
    if (process.getuid?.() !== 0) return; // mounting needs root
    const mountPoint = mkdtempSync(join(tmpdir(), "stackgen-rofs-"));
    const mounted = await run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mountPoint]);
    if (mounted.code !== 0) {
      rmSync(mountPoint, { recursive: true, force: true });
      if (process.env.CI) throw new Error(`mount failed: ${mounted.stderr}`);
      return; // a root without the right to mount (a container): nothing to test with
    }
    try {
      const dir = join(mountPoint, "stack");
      expectOk(await cli(["generate", "--name", "ro", "--preset", "minimal", "--dir", dir], { env }));
      expect((await run(["mount", "-o", "remount,ro", mountPoint])).code).toBe(0);
      const before = fileContents(dir);
      const again = await cli(["generate", "--name", "ro", "--preset", "minimal", "--services", "qdrant", "--dir", dir, "--json"], { env });
      expect(again.code).toBe(2);
      expect(JSON.parse(again.stdout).error).toMatchObject({ code: "USAGE_ERROR", message: expect.stringMatching(/^Cannot write \S+ in .* \(EROFS: .* is on a read-only file system\)\. Nothing was written: choose another --dir, or mount it writable\.$/) });
      const fresh = await cli(["generate", "--name", "ro", "--preset", "minimal", "--dir", join(mountPoint, "new"), "--json"], { env });
      expect(fresh.code).toBe(2);
      expect(JSON.parse(fresh.stdout).error.message).toMatch(/^Cannot make the folder .*new \(EROFS\); choose another --dir\. Nothing was written\.$/);
      // Reading needs no write: the list of backups works on a read-only stack.
      const listed = await cli(["backup", "list", "--dir", dir, "--json"], { env });
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).backups).toEqual([]);
      const after = fileContents(dir);
      expect(after).toEqual(before);
    } finally {
      await run(["umount", mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });

  test("a file the user may not write is refused before anything is written (exit 2, not an internal error)", async () => {
    if (process.getuid?.() !== 0 || !Bun.which("setpriv")) return; // needs root to act as another user
    const dir = join(tmp, "owned");
    expectOk(await cli(["generate", "--name", "owned", "--preset", "minimal", "--dir", dir], { env }));
    // The bundle belongs to `nobody`, except its skills folder, which another user owns.
    chmodSync(tmp, 0o755);
    for (const path of tree(dir)) chownSync(path, 65534, 65534);
    chownSync(join(dir, "skills"), 0, 0);
    chmodSync(join(dir, "skills"), 0o755);
    const before = fileContents(dir);
    const r = await run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BUN, MAIN, "generate", "--preset", "minimal", "--services", "qdrant", "--dir", dir, "--json"], { env: { PATH: process.env.PATH!, HOME: "/tmp", NO_COLOR: "1" } });
    expect(r.code).toBe(2);
    const error = JSON.parse(r.stdout).error;
    expect(error.code).toBe("USAGE_ERROR");
    expect(error.message).toMatch(/^Cannot write skills\/\S+ in .* \(EACCES: .*skills is not writable\)\. Nothing was written/);
    const after = fileContents(dir);
    expect(after).toEqual(before);
  });
});
