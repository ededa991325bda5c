// The commit the binary reports is read from .git's files (no git binary in a container build):
// a clone's folder, a worktree's `gitdir:` file (an absolute path) and a packed ref.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { headCommit } from "../../build.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-head-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const git = (cwd: string, ...args: string[]) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", ...args], { cwd, stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
};

test("HEAD's commit of a clone, of a worktree of it and after its refs are packed", () => {
  const repo = join(tmp, "repo");
  git(tmp, "init", "-q", repo);
  writeFileSync(join(repo, "a.txt"), "a\n");
  git(repo, "add", "a.txt");
  git(repo, "commit", "-q", "-m", "one");
  const first = git(repo, "rev-parse", "HEAD");
  expect(headCommit(repo)).toBe(first);
  // A worktree on a branch of its own: its .git is a file naming an absolute folder.
  const tree = join(tmp, "tree");
  git(repo, "worktree", "add", "-q", "-b", "side", tree);
  writeFileSync(join(tree, "b.txt"), "b\n");
  git(tree, "add", "b.txt");
  git(tree, "commit", "-q", "-m", "two");
  const second = git(tree, "rev-parse", "HEAD");
  expect(second).not.toBe(first);
  expect(headCommit(tree)).toBe(second);
  git(repo, "pack-refs", "--all");
  expect(headCommit(tree)).toBe(second);
  expect(headCommit(repo)).toBe(first);
});
