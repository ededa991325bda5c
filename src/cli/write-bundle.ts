// Writes a generated FileMap into a directory without losing anything: .env values are kept,
// files the user edited are not overwritten (unless forced), nothing lands outside the directory.
import { access, chmod, constants, lstat, mkdir, readFile, realpath, rmdir, stat, unlink, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { FileMap } from "../core/generate/context.ts";
import type { DerivedSecret } from "../core/generate/secrets.ts";
import { CONFIG_FILE, sha256 } from "../core/generate/config.ts";
import { fileMode } from "../core/file-modes.ts";
import { mergeEnv, type MergeOptions } from "../core/env-merge.ts";
import { isWithin } from "../core/paths.ts";
import { interruptedError, StackgenError, usageError } from "../errors.ts";
import { parseJsonText } from "../core/json-text.ts";

/** Refuses (UNSAFE_PATH, bad input: exit 2) a file whose folder really lies outside the target. */
function refuseOutside(realParent: string, realRoot: string, path: string, root: string): void {
  if (!isWithin(realRoot, realParent)) {
    throw new StackgenError("UNSAFE_PATH", `Refusing to write ${path}: it resolves outside ${root}`, 400, undefined, 2);
  }
}

/** `keep-edited`: a file you edited that this generation makes as the last one did: your edit stays.
 *  `remove`: a file the previous generation wrote (unchanged since) that this one does not make,
 *  such as the skill of a service no longer in the stack (the agent would still read it);
 *  `leave-edited`: the same, but edited since, so left alone. */
export type FileAction = "create" | "update" | "unchanged" | "keep-values" | "skip-edited" | "overwrite-edited" | "keep-edited" | "remove" | "leave-edited";
export interface PlannedFile {
  path: string;
  action: FileAction;
  /** What is written (empty for `keep-edited`, `remove` and `leave-edited`). */
  content: string;
  /** .env only: settings that followed the previous input and now follow the new one, and those
   *  given explicitly (`--core-version`). */
  updatedValues?: string[];
  /** .env only: secrets the old file left empty (`--no-secrets`) that now get generated values. */
  filledSecrets?: string[];
  /** .env only: values of the old file without the shape their variable must have, replaced. */
  refusedValues?: string[];
  /** stackgen.json only: top-level keys the old file has (added by hand) that the new one lacks. */
  droppedKeys?: string[];
  /** A differing file the folder's stackgen.json does not record: there is none (the folder is
   *  not a bundle), or it lacks the file (left from an earlier generation, or the user's). */
  unrecorded?: "no-record" | "not-in-record";
}

/** Keys of the old stackgen.json (as parsed) that the new one lacks: it is rewritten on every run,
 *  so what a user added to it by hand is lost, and said so. Not an object: nothing to name. */
function droppedKeys(before: unknown, newText: string): string[] {
  if (typeof before !== "object" || before === null || Array.isArray(before)) return [];
  const after = JSON.parse(newText) as Record<string, unknown>;
  return Object.keys(before).filter((k) => !(k in after));
}

/** `strict`: text stackgen writes back merged (.env), which must be UTF-8: read leniently, other
 *  bytes (a Latin-1 password) would be written back changed, and a database initialised with the
 *  old bytes would no longer let its service in. */
async function readIfExists(path: string, strict = false): Promise<string | undefined> {
  try {
    const st = await lstat(path);
    if (st.isSymbolicLink()) throw usageError(`Refusing to write through the symbolic link ${path}`);
    if (!st.isFile()) throw usageError(`${path} exists and is not a regular file`);
    if (!strict) return await readFile(path, "utf8");
    const bytes = await readFile(path);
    const line = firstLineNotUtf8(bytes);
    if (line) throw usageError(`${path} is not UTF-8 text: line ${line} holds other bytes, which stackgen would change as it keeps the values. Nothing was written: save the file as UTF-8 (its services read the new bytes; a password set with the old ones must be changed to match), or choose another --dir.`);
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    if ((e as NodeJS.ErrnoException).code === "ENOTDIR") throw usageError(`Cannot write ${path}: a part of that path is a file, not a directory`);
    if (NOT_WRITABLE.includes((e as NodeJS.ErrnoException).code ?? "")) throw usageError(`Cannot read ${path} (${(e as NodeJS.ErrnoException).code}). Nothing was written: fix its owner or permissions, or choose another --dir.`);
    throw e;
  }
}

/** The number of the first line of `bytes` that is not UTF-8, or 0. */
function firstLineNotUtf8(bytes: Uint8Array): number {
  const strict = new TextDecoder("utf-8", { fatal: true });
  try {
    strict.decode(bytes);
    return 0;
  } catch {
    let start = 0;
    for (let line = 1; ; line++) {
      const end = bytes.indexOf(0x0a, start);
      try {
        strict.decode(bytes.subarray(start, end === -1 ? bytes.length : end));
      } catch {
        return line;
      }
      if (end === -1) return 0;
      start = end + 1;
    }
  }
}

/** The real path of the deepest part of `path` that exists. */
async function realExisting(path: string): Promise<string> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return await realpath(p);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(p) === p) throw e;
    }
  }
}

/** `--dir` must be a directory, or not exist yet. */
async function checkRoot(root: string): Promise<void> {
  try {
    if (!(await stat(root)).isDirectory()) throw usageError(`${root} exists and is not a directory`);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR") throw usageError(`Cannot write into ${root}: a part of that path is a file, not a directory`);
    if (code === "ENAMETOOLONG") throw usageError(`Cannot write into ${root}: the path is too long`);
    if (code !== "ENOENT") throw e;
  }
}

/** Resolve `rel` inside `root`, refusing anything that would escape it. */
export function insideDir(root: string, rel: string): string {
  const target = resolve(root, rel);
  if (rel.includes("\0") || !isWithin(root, target)) throw usageError(`Refusing to write outside ${root}: ${rel}`);
  return target;
}

/** The user's own files, whatever a stackgen.json says: never removed. */
const NEVER_REMOVED = new Set([".env", CONFIG_FILE, "docker-compose.override.yml"]);

/** `skills/n8n/SKILL.md`: relative, normalised, no `..` or empty part. */
const isPlainPath = (path: string) =>
  path !== "" && !path.includes("\0") && !path.includes("\\") && !isAbsolute(path) && path.split("/").every((part) => part !== "" && part !== "." && part !== "..");

/** How an existing .env is merged with the new one (see mergeEnv): the generated secrets, those
 *  derived from others, what the bundle's recorded input makes of .env, the values' shapes. */
export interface EnvRules {
  secrets?: ReadonlySet<string>;
  derived?: readonly DerivedSecret[];
  previous?: MergeOptions["previous"];
  patterns?: MergeOptions["patterns"];
  follow?: MergeOptions["follow"];
}

/** Decide what happens to every file; reads the directory, writes nothing. */
export async function planBundle(dir: string, files: FileMap, force: boolean, env: EnvRules = {}): Promise<PlannedFile[]> {
  const root = resolve(dir);
  await checkRoot(root);
  const realRoot = await realExisting(root);
  const oldConfigText = await readIfExists(join(root, CONFIG_FILE)).catch(() => undefined);
  // Parsed once: its file hashes tell edits apart, its keys what a new one drops.
  let oldConfig: unknown;
  try { oldConfig = oldConfigText ? parseJsonText(oldConfigText) : undefined; } catch { oldConfig = undefined; }
  const recorded: Record<string, string> = (oldConfig as { files?: Record<string, string> } | undefined)?.files ?? {};
  const plan: PlannedFile[] = [];
  for (const [path, content] of Object.entries(files)) {
    const target = insideDir(root, path);
    // Refused before anything is written: a directory on the way may be a symlink planted to
    // redirect the write (writePlan checks again as it writes).
    refuseOutside(await realExisting(dirname(target)), realRoot, path, root);
    const existing = await readIfExists(target, path === ".env");
    if (existing === undefined) plan.push({ path, action: "create", content });
    else if (path === ".env") {
      const merged = mergeEnv(existing, content, env.secrets, env.derived, { previous: env.previous, patterns: env.patterns, follow: env.follow });
      if (merged.text === existing) plan.push({ path, action: "unchanged", content: existing });
      else plan.push({ path, action: "keep-values", content: merged.text, ...(merged.updated.length ? { updatedValues: merged.updated } : {}), ...(merged.filled.length ? { filledSecrets: merged.filled } : {}), ...(merged.refused.length ? { refusedValues: merged.refused } : {}) });
    }
    else if (existing === content) plan.push({ path, action: "unchanged", content });
    else if (path === CONFIG_FILE) {
      const dropped = droppedKeys(oldConfig, content);
      plan.push({ path, action: "update", content, ...(dropped.length ? { droppedKeys: dropped } : {}) });
    } else if (recorded[path] === sha256(existing)) plan.push({ path, action: "update", content });
    // Edited, but this generation makes the file as the last one did: nothing of ours to bring
    // in, so the edit simply stays (only a file we would change is refused, or replaced by --force).
    else if (recorded[path] === sha256(content)) plan.push({ path, action: "keep-edited", content: "" });
    else plan.push({ path, action: force ? "overwrite-edited" : "skip-edited", content, ...(recorded[path] === undefined ? { unrecorded: oldConfigText === undefined ? "no-record" : "not-in-record" } : {}) });
  }
  // Files the previous generation wrote that this one does not make. stackgen.json may be edited
  // by hand: only a plain relative path as a generation writes it counts, and anything else in it
  // is ignored (never a reason to fail, never one to delete).
  const written = new Set(Object.keys(files).map((path) => resolve(root, path)));
  for (const [path, hash] of Object.entries(recorded)) {
    if (typeof hash !== "string" || !isPlainPath(path) || NEVER_REMOVED.has(path) || written.has(resolve(root, path))) continue;
    const target = resolve(root, path);
    if (!isWithin(realRoot, await realExisting(dirname(target)))) continue;
    const existing = await readIfExists(target).catch(() => undefined); // a link or a folder now: not ours
    if (existing !== undefined) plan.push({ path, action: sha256(existing) === hash ? "remove" : "leave-edited", content: "" });
  }
  return plan;
}

/** Errors that say the folder or file may not be written: the user's to fix (exit 2). */
const NOT_WRITABLE = ["EACCES", "EPERM", "EROFS"];

/** The nearest part of `path` that exists (a file to be created: its first existing folder). */
async function nearestExisting(path: string): Promise<string> {
  for (let p = path; ; p = dirname(p)) {
    if (await lstat(p).then(() => true, () => false)) return p;
    if (dirname(p) === p) return p;
  }
}

/** Checks that every file the plan writes or removes may be written, before the first write: an
 *  unwritable file halfway through left a bundle half old, half new. */
async function checkWritable(root: string, plan: PlannedFile[]): Promise<void> {
  for (const f of plan) {
    if (!WRITES.has(f.action)) continue;
    const target = insideDir(root, f.path);
    // Removing or replacing a name needs its folder; rewriting in place, the file itself.
    const exists = await lstat(target).then(() => true, () => false);
    const checked = f.action === "remove" ? dirname(target) : exists ? target : await nearestExisting(dirname(target));
    try {
      await access(checked, constants.W_OK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "";
      // Owner and permissions are no help on a file system mounted read-only.
      const fix = code === "EROFS" ? `${checked} is on a read-only file system). Nothing was written: choose another --dir, or mount it writable` : `${checked} is not writable). Nothing was written: fix its owner or permissions, or choose another --dir`;
      if (NOT_WRITABLE.includes(code)) throw usageError(`Cannot write ${f.path} in ${root} (${code}: ${fix}.`);
      throw e;
    }
  }
}

/** Actions that change a file on disk. */
const WRITES = new Set<FileAction>(["create", "update", "keep-values", "overwrite-edited", "remove"]);

/** Write the plan. Directories are created inside root only; .env gets mode 0600, scripts 0755.
 *  All or nothing: a write that fails (a full disk) puts back the files written before it, so
 *  the bundle and its stackgen.json record never disagree (a half-written compose file would
 *  otherwise count as the user's edit at the next run). */
export async function writePlan(dir: string, plan: PlannedFile[], signal?: AbortSignal): Promise<void> {
  const root = resolve(dir);
  await makeFolders(root, root).catch((e: NodeJS.ErrnoException) => {
    // A folder that cannot be made there (a read-only or virtual file system, no permission).
    if (["ENOENT", "EACCES", "EPERM", "EROFS", "ENAMETOOLONG"].includes(e.code ?? "")) throw usageError(`Cannot make the folder ${root} (${e.code}); choose another --dir. Nothing was written.`);
    throw e;
  });
  const realRoot = await realpath(root);
  await checkWritable(root, plan);
  const undo: (() => Promise<void>)[] = [];
  let current = "";
  try {
    for (const f of plan) {
      current = f.path;
      // Ctrl-C: the files written so far are put back (below), as after a failed write.
      if (signal?.aborted) throw interruptedError(`Interrupted while writing the bundle in ${root}`);
      // An unchanged .env still gets back its 0600 (it holds every secret), a script its 0755.
      if (f.action === "unchanged" && fileMode(f.path) !== 0o644) {
        const target = insideDir(root, f.path);
        if (((await stat(target)).mode & 0o777) !== fileMode(f.path)) await chmod(target, fileMode(f.path));
        continue;
      }
      if (!WRITES.has(f.action)) continue;
      const target = insideDir(root, f.path);
      if (f.action === "remove") {
        refuseOutside(await realpath(dirname(target)), realRoot, f.path, root);
        const before = await readFile(target);
        const beforeMode = (await stat(target)).mode & 0o777;
        await unlink(target);
        undo.push(async () => {
          await makeFolders(dirname(target), root);
          await writeFile(target, before, { mode: beforeMode });
        });
        await removeEmptyParents(root, dirname(target));
        continue;
      }
      await makeFolders(dirname(target), root);
      // A directory on the way may be a symlink planted to redirect the write.
      refuseOutside(await realpath(dirname(target)), realRoot, f.path, root);
      const mode = fileMode(f.path);
      const old = await lstat(target).catch(() => undefined);
      const before = old ? await readFile(target) : undefined;
      undo.push(before === undefined
        ? async () => { await unlink(target).catch(() => {}); await removeEmptyParents(root, dirname(target)); }
        : async () => { await writeFile(target, before); await chmod(target, old!.mode & 0o777); });
      // In place, as a rule: the file keeps its owner, and a container that bind-mounts it (the
      // Caddyfile) sees the new text at its next reload. A name hard-linked to another file gets a
      // file of its own instead (as restore does): the secrets are never written into the other one.
      if ((old?.nlink ?? 1) > 1) await unlink(target);
      // --force replaces an edit; the edit is kept beside it, to carry over by hand.
      if (f.action === "overwrite-edited" && before !== undefined) {
        const kept = `${target}${EDIT_KEPT_SUFFIX}`;
        const keptStat = await lstat(kept).catch(() => undefined);
        const keptBefore = keptStat?.isFile() ? await readFile(kept) : undefined;
        undo.push(keptBefore === undefined ? async () => { await unlink(kept).catch(() => {}); } : async () => { await writeFile(kept, keptBefore); });
        // Made anew: never written through a planted link (symbolic or hard), and with the file's mode.
        if (keptStat) await unlink(kept);
        await writeFile(kept, before, { mode: old!.mode & 0o777 });
      }
      await writeFile(target, f.content, { mode });
      await chmod(target, mode);
    }
  } catch (error) {
    const failed = [];
    for (const step of undo.reverse()) await step().catch(() => failed.push(step));
    if (error instanceof StackgenError && error.code === "INTERRUPTED") {
      throw interruptedError(failed.length ? `${error.message}, and ${failed.length} of the files written before could not be put back: compare the folder with its stackgen.json before you use it.` : `${error.message}: the files written before were put back, the bundle is as it was.`);
    }
    if (error instanceof StackgenError) throw error; // refused (a planted link): put back, as said
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StackgenError("WRITE_FAILED", failed.length
      ? `Could not write ${current} in ${root} (${code}), and ${failed.length} of the files written before it could not be put back: compare the folder with its stackgen.json before you use it.`
      : `Could not write ${current} in ${root} (${code}). The files written before it were put back: the bundle is as it was.`, 500, undefined, NOT_WRITABLE.includes(code) ? 2 : 1);
  }
}

/** Makes `dir` and the folders above it that are missing; those of the bundle (`root` and below)
 *  get 0755 whatever the umask, as files get 0644: containers running as other users (postgres,
 *  node, grafana) read the config files bind-mounted from them, and under umask 077 a new folder
 *  (`postgres/init`) was theirs to read no more. Folders that exist keep their mode, and so do
 *  folders made above `root` (`--dir ~/private/x`) or reached through a link out of it. */
async function makeFolders(dir: string, root: string): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined) return;
  const realRoot = await realpath(root);
  for (let d = dir; d.length >= first.length; d = dirname(d)) {
    if (isWithin(realRoot, await realpath(d))) await chmod(d, 0o755);
    if (d === first) break;
  }
}

/** Suffix of the copy of an edited file that --force replaced (`Caddyfile.edited`). */
export const EDIT_KEPT_SUFFIX = ".edited";

/** Folders left empty by a removed file (`skills/n8n/`) go too, up to the bundle's root. */
async function removeEmptyParents(root: string, dir: string): Promise<void> {
  for (let d = dir; d !== root && isWithin(root, d); d = dirname(d)) {
    try {
      await rmdir(d);
    } catch {
      return; // not empty, or gone
    }
  }
}
