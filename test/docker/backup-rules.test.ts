// Pure rules of backup create and restore that must agree: what create writes as config is what
// restore accepts, and what a restore removes as stale is what a backup holds.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleFiles, readFileBytes, verifyBackupFile, writeArchive } from "../../src/docker/backup.ts";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "stackgen-rules-"));
  made.push(dir);
  return dir;
};

/** Archive the files bundleFiles finds in `dir` (as create does) and verify it (as restore does). */
async function archiveAndVerify(dir: string, paths: string[]) {
  const file = join(tempDir(), "b.tar.gz");
  await writeArchive(file, { project: "demo", hot: false, services: [], volumes: [], files: paths.map((path) => ({ path, data: readFileBytes(join(dir, path)), mode: 0o644 })) });
  return verifyBackupFile(file);
}

describe("config members", () => {
  test("a stack-directory file whose name restore refuses is named as left out, and the archive restores", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "docker-compose.yml"), "services: {}\n");
    writeFileSync(join(dir, "data", "win\\path.txt"), "x");
    writeFileSync(join(dir, "data", "ok.txt"), "y");
    const skipped: string[] = [];
    const paths = bundleFiles(dir, [], skipped);
    expect(paths).toEqual(["data/ok.txt", "docker-compose.yml"]);
    expect(skipped).toEqual(["data/win\\path.txt (a name a restore refuses: it contains a backslash)"]);
    expect((await archiveAndVerify(dir, paths)).files.map((f) => f.path)).toEqual(paths);
  });

  test("an archive whose config holds a stack lock is refused: restored, it would block every later command", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "docker-compose.yml"), "services: {}\n");
    writeFileSync(join(dir, ".stackgen.lock"), JSON.stringify({ pid: 1, command: "update" }));
    await expect(archiveAndVerify(dir, ["docker-compose.yml", ".stackgen.lock"])).rejects.toThrow('config member "config/.stackgen.lock" has a forbidden path');
  });
});
