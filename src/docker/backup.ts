// Backup archives: one .tar.gz holding manifest.json, the bundle's config files under config/
// and one tar per named volume under volumes/<volume>.tar (as the engine's archive endpoint
// produced it, so owners, modes and links inside the volume survive; extended attributes other
// than security.capability and sparse files' holes do not, as the README says).
// Volume contents are streamed, never held in memory: engine -> work file -> archive when
// creating; archive -> checks (and a work file for a restore) -> engine when restoring. Only
// config files and tar headers are kept in memory.
import { closeSync, createReadStream, createWriteStream, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, writeSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { Readable, Transform } from "node:stream";
import { isUtf8 } from "node:buffer";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { usageError } from "../errors.ts";
import { isWithin } from "../core/paths.ts";
import { BackupManifest } from "../schema/backup.ts";
import { toFieldIssues } from "../schema/issues.ts";
import { VERSION } from "../version.ts";
import { checkMembers, MemberChecker, safeComponents } from "./archive-safety.ts";
import type { ComposeModel } from "./compose.ts";
import { HELPER_ROOT, helperImage, isVolumeHelper, type Engine } from "./engine.ts";
import { pidTaken } from "./stack-lock.ts";
import { isLockFile } from "./stack-lock.ts";
import { PROJECT_NAME } from "./stack.ts";
import { endOfArchive, fileEntry, headerBlocks, paddingFor, TarParser, type TarEntry, type TarHeader } from "./tar.ts";

export const FORMAT_VERSION = 1;
export const MANIFEST = "manifest.json";

export type { BackupManifest };

export const sha256 = (data: Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");

/** Directories of the bundle that are never part of a backup. */
const SKIP_DIRS = new Set(["backups", ".git", "node_modules"]);

/** A path of the stack directory as a config member holds it (normalised), or why it can be
 *  none (a restore refuses it). One rule for both sides: create leaves such a file out (and names
 *  it), so it never writes an archive that restore, or a restore's rollback from its safety
 *  backup, refuses. */
export function configMemberPath(path: string): { path: string } | { problem: string } {
  const comps = safeComponents(path);
  if ("error" in comps) return { problem: comps.error };
  const [first] = comps.parts;
  if (first === undefined) return { problem: "is empty" };
  if (SKIP_DIRS.has(first)) return { problem: `lies in ${first}/, which no backup holds` };
  // Restored, it would block every later update, backup and restore of the stack.
  if (comps.parts.length === 1 && isLockFile(first)) return { problem: "is the lock of a stackgen command, which no backup holds" };
  return { path: comps.parts.join("/") };
}

/** Backup archives, by the name create gives them (backupFileName), of any project, also while
 *  written. They are never the stack's config or data: a backup does not hold older backups
 *  (wherever --output put them), and a restore never removes one as stale data. */
export const isBackupArchiveName = (name: string) => /^[a-z0-9][a-z0-9_-]*-\d{8}T\d{9}Z\.tar\.gz(\.partial)?$/.test(name);

/** The bundle's own files (relative paths), without backups or symlinks. With `skipped`, what
 *  else the stack directory holds that a backup does not keep (links, FIFOs, sockets, empty
 *  folders, names a restore refuses or that are not UTF-8, backup archives) is added to it: data
 *  bind-mounted from there may hold such entries. */
export function bundleFiles(dir: string, exclude: string[] = [], skipped?: string[]): string[] {
  const excluded = exclude.map((p) => resolve(p));
  const out: string[] = [];
  const walk = (abs: string): boolean => {
    let any = false;
    // Read as bytes: a name that is not UTF-8 would come back as another name, which lstat cannot find.
    const raws = readdirSync(abs, { encoding: "buffer" });
    const notUtf8 = new Set(raws.filter((raw) => !isUtf8(raw)).map(String));
    for (const name of raws.map(String).sort()) {
      const path = join(abs, name);
      // What is left out on purpose (the backups, the work folder) does not make a folder empty.
      any = true;
      const rel = relative(dir, path).split(sep).join("/");
      if (notUtf8.has(name)) {
        skipped?.push(`${rel} (a name that is not valid UTF-8)`);
        continue;
      }
      if (excluded.some((e) => isWithin(e, path))) continue;
      // Removed since the folder was read (a running service's temporary file): not there to copy.
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) {
        if (abs === dir && SKIP_DIRS.has(name)) continue;
        const member = configMemberPath(rel);
        if ("problem" in member) skipped?.push(`${rel}/ (a name a restore refuses: it ${member.problem})`);
        else if (!walk(path)) skipped?.push(`${rel}/ (an empty folder)`);
      } else if (st.isFile()) {
        // Nor is the lock of the command at work (stack-lock.ts), nor its files beside it.
        if (abs === dir && isLockFile(name)) continue;
        const member = configMemberPath(rel);
        if (isBackupArchiveName(name)) skipped?.push(`${rel} (a backup archive: backups never hold other backups)`);
        else if ("problem" in member) skipped?.push(`${rel} (a name a restore refuses: it ${member.problem})`);
        else out.push(rel);
      } else skipped?.push(`${rel} (${st.isSymbolicLink() ? "a symbolic link" : st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device node"})`);
    }
    return any;
  };
  walk(dir);
  return out;
}

/** A volume's contents as a tar in a work file. */
export interface VolumeFile {
  name: string;
  key: string;
  path: string;
  size: number;
  sha256: string;
}

/** The chunks of a web stream, as an async iterable. */
async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** Write every chunk of `source` to a new file `path` (owner-only), hashing on the way. */
async function streamToFile(source: ReadableStream<Uint8Array>, path: string, signal?: AbortSignal, tap?: (chunk: Uint8Array) => void): Promise<{ size: number; sha256: string }> {
  const fd = openSync(path, "wx", 0o600);
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  try {
    for await (const chunk of chunksOf(source)) {
      signal?.throwIfAborted();
      writeAll(fd, chunk);
      hasher.update(chunk);
      tap?.(chunk);
      size += chunk.length;
    }
  } finally {
    closeSync(fd);
  }
  return { size, sha256: hasher.digest("hex") };
}

/**
 * Reads a volume's tar as the engine sends it, with the checks a restore makes, so that a backup
 * is never written that restore would refuse. The engine ends its stream early, without the
 * end-of-archive marker, when a file changes size while it is read (a service still writing,
 * as with --hot): such a copy lacks every file after that one.
 */
class VolumeTarCheck {
  private readonly checker: MemberChecker;
  private readonly parser: TarParser;
  private error: string | undefined;

  constructor(volume: string) {
    const checker = (this.checker = new MemberChecker({ volume: true, root: volume }));
    this.parser = new TarParser((h) => {
      checker.add(h);
      return undefined;
    });
  }

  push(chunk: Uint8Array): void {
    if (this.error !== undefined) return;
    try {
      this.parser.push(chunk);
    } catch (e) {
      this.error = (e as Error).message;
    }
  }

  /** After the last chunk: "cut" for a copy that ended early, or what restore would refuse. */
  result(): { cut: true } | { cut: false; problems: string[] } {
    if (this.error === undefined) {
      try {
        this.parser.end();
      } catch (e) {
        this.error = (e as Error).message;
      }
    }
    if (this.error === undefined && !this.parser.complete) return { cut: true };
    if (this.error === "Truncated tar archive") return { cut: true };
    return { cut: false, problems: this.error !== undefined ? [`not a readable tar (${this.error})`] : this.checker.problems };
  }
}

/** Copies of a volume that ended early are made again this many times in all. */
export const VOLUME_COPY_ATTEMPTS = 3;

export class VolumeCopyFailed extends Error {
  /** The copy ended early (a file changed size while it was read), rather than holding what restore refuses. */
  constructor(message: string, readonly cut: boolean) {
    super(message);
  }
}

function writeAll(fd: number, chunk: Uint8Array): void {
  for (let at = 0; at < chunk.length; ) at += writeSync(fd, chunk, at, chunk.length - at);
}

/** Copy named volumes into `workDir` (one tar each) through a helper container that is created but
 *  never started. `copied` is told of each volume's bytes as they arrive, with the attempt they
 *  belong to (a copy cut short is made again from the start). */
export async function readVolumes(engine: Engine, volumes: { name: string; key: string }[], preferredImages: string[], workDir: string, signal?: AbortSignal, copied?: (volume: string, bytes: number, attempt: number) => void): Promise<VolumeFile[]> {
  if (volumes.length === 0) return [];
  return withVolumeHelper(engine, volumes, preferredImages, async (helper) => {
    const out: VolumeFile[] = [];
    for (const [i, v] of volumes.entries()) {
      const path = join(workDir, `volume-${i}.tar`);
      for (let attempt = 1; ; attempt++) {
        signal?.throwIfAborted();
        const check = new VolumeTarCheck(v.name);
        const written = await streamToFile(await engine.getArchive(helper, `${HELPER_ROOT}/${v.name}`), path, signal, (chunk) => {
          check.push(chunk);
          copied?.(v.name, chunk.length, attempt);
        });
        const result = check.result();
        if (!result.cut && result.problems.length === 0) {
          out.push({ ...v, path, ...written });
          break;
        }
        rmSync(path, { force: true });
        if (!result.cut) throw new VolumeCopyFailed(`volume ${v.name} holds what a restore could not put back: ${result.problems.slice(0, 3).join("; ")}${result.problems.length > 3 ? ` (and ${result.problems.length - 3} more)` : ""}`, false);
        if (attempt === VOLUME_COPY_ATTEMPTS) throw new VolumeCopyFailed(`the engine's copy of volume ${v.name} ended early ${VOLUME_COPY_ATTEMPTS} times (a file changed size while it was read: a service is still writing there)`, true);
      }
    }
    return out;
  });
}

/** Replace volume contents: the caller recreated the volumes empty; each tar streams from its work
 *  file into its mount. `starting` is told each volume before it is written; when it gives back a
 *  counter, the bytes are counted on their way to the engine (a large volume takes minutes). */
export async function writeVolumes(engine: Engine, volumes: { name: string; path: string }[], preferredImages: string[], signal?: AbortSignal, starting?: (volume: { name: string; path: string }) => ((bytes: number) => void) | void): Promise<void> {
  if (volumes.length === 0) return;
  await withVolumeHelper(engine, volumes, preferredImages, async (helper) => {
    for (const v of volumes) {
      signal?.throwIfAborted();
      const sent = starting?.(v);
      await engine.putArchive(helper, HELPER_ROOT, sent ? countedStream(Bun.file(v.path), sent) : Bun.file(v.path));
    }
  });
}

/** The file's bytes as a stream that reports each chunk as it is read. */
function countedStream(file: Blob, counted: (bytes: number) => void): ReadableStream<Uint8Array> {
  return file.stream().pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        counted(chunk.byteLength);
        out.enqueue(chunk);
      },
    }),
  );
}

/** Run `work` with a helper container (created, never started) that mounts `volumes`, removed
 *  afterwards. When `work` failed, its error is the one told: a failed removal (the engine gone
 *  meanwhile) would hide why the copy failed, and restore removes a helper left behind. */
async function withVolumeHelper<T>(engine: Engine, volumes: { name: string }[], preferredImages: string[], work: (helper: string) => Promise<T>): Promise<T> {
  const helper = await engine.createVolumeHelper(
    await helperImage(engine, preferredImages),
    volumes.map((v) => v.name),
  );
  let result: T;
  try {
    result = await work(helper);
  } catch (e) {
    await engine.removeContainer(helper).catch(() => undefined);
    throw e;
  }
  await engine.removeContainer(helper);
  return result;
}

export interface ArchiveInput {
  project: string;
  hot: boolean;
  kind?: string;
  services: BackupManifest["services"];
  files: { path: string; data: Uint8Array; mode: number }[];
  volumes: VolumeFile[];
  createdAt?: Date;
}

export interface WrittenArchive {
  manifest: BackupManifest;
  /** Size and sha256 of the .tar.gz file. */
  size: number;
  sha256: string;
}

/** Write the gzipped archive to `file` (a new, owner-only file: it holds .env secrets).
 *  `signal` stops the writing (Ctrl-C): the caller removes the partial file. `archived` is told
 *  of the volume bytes as they go in (the part that takes long). */
export async function writeArchive(file: string, input: ArchiveInput, signal?: AbortSignal, archived?: (bytes: number) => void): Promise<WrittenArchive> {
  const createdAt = input.createdAt ?? new Date();
  const mtime = Math.floor(createdAt.getTime() / 1000);
  const config = input.files.map((f) => fileEntry(`config/${f.path}`, f.data, f.mode & 0o777, mtime));
  const volumeMember = (v: VolumeFile) => `volumes/${v.name}.tar`;
  const manifest: BackupManifest = {
    formatVersion: FORMAT_VERSION,
    tool: "stackgen",
    toolVersion: VERSION,
    project: input.project,
    createdAt: createdAt.toISOString(),
    hot: input.hot,
    ...(input.kind ? { kind: input.kind } : {}),
    services: input.services,
    volumes: input.volumes.map((v) => ({ name: v.name, key: v.key, member: volumeMember(v), size: v.size, sha256: v.sha256 })),
    files: input.files.map((f) => f.path),
    members: [
      ...config.map((e) => ({ path: e.name, size: e.data.length, sha256: sha256(e.data) })),
      ...input.volumes.map((v) => ({ path: volumeMember(v), size: v.size, sha256: v.sha256 })),
    ],
  };
  async function* tar(): AsyncGenerator<Uint8Array> {
    for (const entry of [fileEntry(MANIFEST, JSON.stringify(manifest, null, 2) + "\n", 0o644, mtime), ...config]) {
      yield* headerBlocks(entry, entry.data.length);
      yield entry.data;
      yield paddingFor(entry.data.length);
    }
    for (const v of input.volumes) {
      yield* headerBlocks({ ...fileEntry(volumeMember(v), "", 0o600, mtime) }, v.size);
      let copied = 0;
      for await (const chunk of chunksOf(Bun.file(v.path).stream())) {
        copied += chunk.length;
        archived?.(chunk.length);
        yield chunk;
      }
      // The manifest already promised this size: anything else would make a broken archive.
      if (copied !== v.size) throw new Error(`volume ${v.name} changed while it was archived (${copied} bytes, expected ${v.size})`);
      yield paddingFor(v.size);
    }
    yield endOfArchive();
  }
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  const measure = new Transform({
    transform(chunk: Uint8Array, _encoding, done) {
      hasher.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.from(tar()), createGzip(), measure, createWriteStream(file, { flags: "wx", mode: 0o600 }), ...(signal ? [{ signal }] : []));
  } catch (error) {
    signal?.throwIfAborted(); // the reason the caller gave, not the stream's AbortError
    throw error;
  }
  return { manifest, size, sha256: hasher.digest("hex") };
}

export interface VerifiedBackup {
  manifest: BackupManifest;
  files: { path: string; data: Uint8Array; mode: number }[];
  /** With an extraction folder, `path` is each volume's tar there. */
  volumes: { name: string; key: string; path?: string }[];
}

export class BackupInvalid extends Error {
  constructor(readonly problems: string[]) {
    super(problems[0] + (problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : ""));
  }
}

/** Config files (and the manifest) are kept in memory while reading; a bundle's are far smaller. */
export const MAX_CONFIG_BYTES = 64 * 1024 * 1024;

interface ReadMember {
  size: number;
  sha256: string;
  mode: number;
  /** Contents of the manifest and config members. */
  data?: Uint8Array;
  /** Volume members: where the tar was extracted, and the headers inside it (or why it is unreadable). */
  path?: string;
  inner?: MemberChecker;
  innerError?: string;
}

/** The volume a `volumes/<name>.tar` member holds: its tar's members must all lie under `<name>/`
 *  (the manifest's volume names its member so, or the archive is refused). */
const volumeNameOf = (member: string) => member.slice("volumes/".length).replace(/\.tar$/, "");

/** The volumes a manifest promises must fit on the disk they are unpacked to: a manifest may
 *  promise anything, and a few KiB of gzip unpack into whatever it promised. Refused up front
 *  rather than when the disk is full (as the archive's fault: it asks more than there is). */
function checkRoomFor(promised: Map<string, number>, extractDir: string): void {
  let volumes = 0;
  for (const [path, size] of promised) if (path.startsWith("volumes/")) volumes += size;
  const { bavail, bsize } = statfsSync(extractDir);
  if (volumes > bavail * bsize) {
    const gib = (n: number) => `${(n / 1024 ** 3).toFixed(1)} GiB`;
    const error = new Error(`unpacking its volumes needs ${gib(volumes)}, and ${extractDir} has ${gib(bavail * bsize)} free`) as NodeJS.ErrnoException;
    error.code = "ENOSPC";
    throw error;
  }
}

/** The members' sizes a manifest lists (empty when it is unreadable: verification says why). */
function promisedSizes(data: Uint8Array): Map<string, number> {
  try {
    const members: unknown = JSON.parse(new TextDecoder().decode(data)).members;
    if (!Array.isArray(members)) return new Map();
    return new Map(members.filter((m) => typeof m?.path === "string" && Number.isSafeInteger(m?.size)).map((m) => [m.path, m.size]));
  } catch {
    return new Map();
  }
}

/** Stream the archive once: hash every member, keep config in memory, check volume tars' headers, extract them if asked. */
async function readArchive(file: string, extractDir: string | undefined, read?: (bytes: number) => void) {
  const outer: TarEntry[] = [];
  const members = new Map<string, ReadMember>();
  const problems: string[] = [];
  const open = new Set<number>();
  let kept = 0;
  let extracted = 0;
  /** Member sizes the manifest (the first member) promises, once it has been read. */
  let promised: Map<string, number> | undefined;
  const parser = new TarParser((header: TarHeader) => {
    // A volume's tar is written to disk: one the manifest does not promise, or larger than it
    // says, is refused at its header, before a few KiB of gzip unpack into gigabytes on disk.
    if (header.name.startsWith("volumes/")) {
      const size = promised?.get(header.name);
      if (size === undefined) throw new BackupInvalid([`member "${header.name}" is not listed in ${promised ? "the manifest" : "a manifest.json before it"}`]);
      if (size !== header.size) throw new BackupInvalid([`member "${header.name}" has size ${header.size}, manifest says ${size}`]);
    }
    const { size: _size, ...rest } = header;
    outer.push({ ...rest, data: new Uint8Array(0) });
    if (members.has(header.name)) problems.push(`member "${header.name}" appears twice`);
    const member: ReadMember = { size: 0, sha256: "", mode: header.mode };
    members.set(header.name, member);
    const hasher = new Bun.CryptoHasher("sha256");
    const isConfig = header.name === MANIFEST || header.name.startsWith("config/");
    if (isConfig) kept += header.size;
    // Past the limit nothing more is kept; the archive is refused below.
    const parts: Uint8Array[] | undefined = isConfig && kept <= MAX_CONFIG_BYTES ? [] : undefined;
    let inner: TarParser | undefined;
    let fd: number | undefined;
    if (header.name.startsWith("volumes/")) {
      const checker = new MemberChecker({ volume: true, root: volumeNameOf(header.name) });
      member.inner = checker;
      inner = new TarParser((h) => {
        checker.add(h);
        return undefined;
      });
      if (extractDir) {
        member.path = join(extractDir, `volume-${extracted++}.tar`);
        fd = openSync(member.path, "wx", 0o600);
        open.add(fd);
      }
    }
    const feedInner = (run: () => void) => {
      if (!inner || member.innerError !== undefined) return;
      try {
        run();
      } catch (e) {
        member.innerError = (e as Error).message;
      }
    };
    return {
      write(chunk) {
        hasher.update(chunk);
        member.size += chunk.length;
        parts?.push(chunk.slice());
        feedInner(() => inner!.push(chunk));
        if (fd !== undefined) writeAll(fd, chunk);
      },
      end() {
        member.sha256 = hasher.digest("hex");
        if (parts) member.data = Buffer.concat(parts);
        // The first manifest only (a second is refused below, but must not move the limits now).
        if (header.name === MANIFEST && member.data && promised === undefined) {
          promised = promisedSizes(member.data);
          if (extractDir) checkRoomFor(promised, extractDir);
        }
        feedInner(() => inner!.end());
        if (fd !== undefined) {
          closeSync(fd);
          open.delete(fd);
        }
      },
    };
  });
  try {
    const counted = new Transform({
      transform(chunk: Uint8Array, _encoding, done) {
        read?.(chunk.length);
        done(null, chunk);
      },
    });
    await pipeline(createReadStream(file), counted, createGunzip(), async (source: AsyncIterable<Uint8Array>) => {
      for await (const chunk of source) parser.push(chunk);
      parser.end();
    });
  } catch (e) {
    // A full disk while unpacking says nothing about the archive.
    if (diskFull(e) || e instanceof BackupInvalid) throw e;
    throw new BackupInvalid([`not a readable .tar.gz archive (${(e as Error).message})`]);
  } finally {
    for (const fd of open) closeSync(fd);
  }
  if (kept > MAX_CONFIG_BYTES) problems.push(`config members are larger than ${MAX_CONFIG_BYTES} bytes together`);
  return { outer, members, problems };
}

/** A write refused for want of space (or of the user's disk quota). */
export const diskFull = (e: unknown) => ["ENOSPC", "EDQUOT"].includes((e as NodeJS.ErrnoException)?.code ?? "");

/**
 * Read and verify a backup file completely: gzip and tar structure, safe member names, a manifest
 * that lists every member with matching size and sha256, and safe members inside every volume
 * tar. With `extractDir`, each volume's tar is kept there for a restore. Throws BackupInvalid
 * listing what is wrong; nothing is written outside `extractDir`. `read` is told of the file's
 * bytes as they are read.
 */
export async function verifyBackupFile(file: string, extractDir?: string, read?: (bytes: number) => void): Promise<VerifiedBackup> {
  const { outer, members, problems } = await readArchive(file, extractDir, read);
  problems.push(...checkMembers(outer, { volume: false }));
  for (const e of outer) if (e.type !== "file" && e.type !== "dir") problems.push(`member "${e.name}" is not a regular file`);
  if (problems.length > 0) throw new BackupInvalid(problems);

  const manifestData = members.get(MANIFEST)?.data;
  if (!manifestData) throw new BackupInvalid(["manifest.json is missing"]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(manifestData));
  } catch {
    throw new BackupInvalid(["manifest.json is not valid JSON"]);
  }
  const manifest = checkManifest(parsed);
  const listed = new Set<string>();
  for (const m of manifest.members) {
    listed.add(m.path);
    const member = members.get(m.path);
    if (!member) problems.push(`member "${m.path}" is listed in the manifest but missing`);
    else if (member.size !== m.size) problems.push(`member "${m.path}" has size ${member.size}, manifest says ${m.size}`);
    else if (member.sha256 !== m.sha256) problems.push(`member "${m.path}" fails its sha256 check`);
  }
  for (const name of members.keys()) if (name !== MANIFEST && !listed.has(name)) problems.push(`member "${name}" is not listed in the manifest`);

  const config: VerifiedBackup["files"] = [];
  const volumes: VerifiedBackup["volumes"] = [];
  for (const [name, member] of members) {
    if (name === MANIFEST) continue;
    if (name.startsWith("config/")) {
      const rel = name.slice("config/".length);
      const checked = configMemberPath(rel);
      if ("problem" in checked) problems.push(`config member "${name}" has a forbidden path (it ${checked.problem})`);
      else if (member.data) config.push({ path: checked.path, data: member.data, mode: member.mode & 0o777 });
    } else if (!name.startsWith("volumes/")) problems.push(`member "${name}" is neither config nor a volume`);
  }
  // Two members that name one file (config/./x and config/x), or a file where another needs a
  // folder: the restore would fail halfway, after stopping the stack.
  const paths = new Set<string>();
  for (const f of config) {
    if (paths.has(f.path)) problems.push(`config file "${f.path}" appears twice`);
    paths.add(f.path);
  }
  for (const f of config) {
    const parts = f.path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const folder = parts.slice(0, i).join("/");
      if (paths.has(folder)) problems.push(`config file "${folder}" is also the folder of "${f.path}"`);
    }
  }
  for (const v of manifest.volumes) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(v.name ?? "") || v.member !== `volumes/${v.name}.tar`) {
      problems.push(`manifest volume "${v.name}" has a bad name or member`);
      continue;
    }
    const member = members.get(v.member);
    if (!member) continue; // reported above
    // What verify and list show of the volume: it must be what was checked, the member's own.
    if (v.size !== member.size || v.sha256 !== member.sha256) problems.push(`manifest volume "${v.name}" gives a size or sha256 other than its member's`);
    if (member.innerError !== undefined) problems.push(`volume ${v.name}: not a readable tar (${member.innerError})`);
    else for (const p of member.inner?.problems ?? []) problems.push(`volume ${v.name}: ${p}`);
    volumes.push({ name: v.name, key: v.key, ...(member.path ? { path: member.path } : {}) });
  }
  for (const name of members.keys()) {
    if (name.startsWith("volumes/") && !manifest.volumes.some((v) => v.member === name)) problems.push(`member "${name}" is no volume of the manifest`);
  }
  if (problems.length > 0) throw new BackupInvalid(problems);
  return { manifest, files: config, volumes };
}

const manifestShape = TypeCompiler.Compile(BackupManifest);

/** Fields a manifest's schema only types: their values are checked (and named) on their own. */
const CHECKED_APART = new Set(["project", "createdAt", "kind"]);

/** A manifest's shape, checked before any of its fields is read: the archive is the user's input,
 *  and a crafted one (`null`, `"members": [null]`) is refused naming what is wrong, never an
 *  unexpected failure. A format version other than ours is said first: its shape may differ. */
function checkManifest(parsed: unknown): BackupManifest {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new BackupInvalid([`manifest.json is ${parsed === null ? "null" : Array.isArray(parsed) ? "an array" : `a ${typeof parsed}`}, not an object`]);
  }
  const m = parsed as Record<string, unknown>;
  if (m.formatVersion !== FORMAT_VERSION) {
    throw new BackupInvalid([m.formatVersion === undefined ? "manifest.json has no formatVersion" : `unsupported backup format version ${shownValue(m.formatVersion)} (this stackgen reads version ${FORMAT_VERSION})`]);
  }
  const problems: string[] = [];
  // Shown by list, compared by restore and prune, ordered by time: each must be what create
  // writes, or a crafted archive could list itself as the newest, or print escape sequences.
  if (typeof m.project !== "string") problems.push("manifest.json has no project name");
  else if (!PROJECT_NAME.test(m.project)) problems.push("manifest.json names a project that is not a Compose project name");
  if (typeof m.createdAt !== "string" || !MANIFEST_TIME.test(m.createdAt) || Number.isNaN(Date.parse(m.createdAt))) problems.push("manifest.json has no valid creation time");
  if (m.kind !== undefined && (typeof m.kind !== "string" || !MANIFEST_KIND.test(m.kind))) problems.push("manifest.json has an unknown kind");
  if (!manifestShape.Check(parsed)) {
    for (const issue of toFieldIssues(manifestShape.Errors(parsed), "manifest")) {
      if (!CHECKED_APART.has(issue.field)) problems.push(`manifest.json field "${issue.field}": ${issue.message}`);
    }
  }
  if (problems.length > 0) throw new BackupInvalid(problems);
  return parsed as BackupManifest;
}

/** A value of the archive's, quoted as JSON (control characters escaped) and kept short. */
function shownValue(value: unknown): string {
  const text = JSON.stringify(value) ?? typeof value;
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** What create writes into a manifest besides the project name: an ISO time, a kind of ours. */
const MANIFEST_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
const MANIFEST_KIND = /^[a-z][a-z-]{0,31}$/;

/** Backup file name: <project>-<kind->20240101T120000123Z.tar.gz (sorts by time). */
export function backupFileName(project: string, date: Date, kind?: string): string {
  const stamp = date.toISOString().replace(/[-:]/g, "").replace(".", "");
  return `${project}-${kind ? `${kind}-` : ""}${stamp}.tar.gz`;
}

/** Volumes a backup covers: the compose file's named, non-external volumes that exist in the engine. */
export async function stackVolumes(engine: Engine, model: ComposeModel): Promise<{ name: string; key: string }[]> {
  const out: { name: string; key: string }[] = [];
  for (const v of model.volumes) {
    if (v.external) continue;
    if (await engine.inspectVolume(v.name)) out.push({ name: v.name, key: v.key });
  }
  return out;
}

export function readFileBytes(path: string): Uint8Array {
  return new Uint8Array(readFileSync(path));
}

/** A work folder in `dir` for a backup's volume tars (`work`) or a restore's unpacked archive
 *  (`restore`), named with this process's id. Those of a process that is gone (killed: an OOM
 *  kill, a lost SSH session), which it would have removed, are removed first: each may hold as
 *  much as the stack's volumes. Only once untouched for an hour: a process of another PID
 *  namespace (stackgen in a container) or host (a shared folder) looks gone from here. */
export function makeWorkDir(dir: string, kind: "work" | "restore", now = Date.now()): string {
  const ours = new RegExp(`^\\.${kind}-(\\d+)-`);
  for (const name of readdirSync(dir)) {
    const pid = Number(ours.exec(name)?.[1] ?? Number.NaN);
    if (!Number.isInteger(pid) || pid === process.pid || pidTaken(pid)) continue;
    const path = join(dir, name);
    if (now - lastWritten(path) > WORK_LEFT_MS) rmSync(path, { recursive: true, force: true });
  }
  return mkdtempSync(join(dir, `.${kind}-${process.pid}-`));
}

const WORK_LEFT_MS = 60 * 60 * 1000;

/** Volume helpers (created, never started) that a killed backup or restore left on `volumes`: they
 *  keep `docker compose down -v` from removing the volumes. Removed once an hour old, as the work
 *  folders are: a younger one may be a live stackgen's of another PID namespace or host. */
export async function removeLeftHelpers(engine: Engine, volumes: { name: string }[], now = Date.now()): Promise<void> {
  for (const v of volumes) {
    for (const c of await engine.containersUsingVolume(v.name)) {
      if (isVolumeHelper(c) && c.State === "created" && now - (c.Created ?? now / 1000) * 1000 > WORK_LEFT_MS) await engine.removeContainer(c.Id);
    }
  }
}

/** When a work folder or a file in it was last written (a volume's tar grows while it is copied). */
function lastWritten(path: string): number {
  let newest = lstatSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, lstatSync(join(path, name), { throwIfNoEntry: false })?.mtimeMs ?? 0);
  return newest;
}

/** Where a stack directory keeps its backups (also a new machine's, before any stack is there). */
export const defaultBackupDir = (stackDir: string) => join(stackDir, "backups");

/** A backups folder that cannot be read or made: a file where the folder should be, a place the
 *  user may not write, a read-only or virtual file system. Their input, not our failure (exit 2),
 *  named with the path and the system's reason. `action` says what was tried ("read backups in"). */
export const unusableBackupFolder = (action: string, dir: string, e: unknown) =>
  usageError(`Cannot ${action} ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}. Nothing was done.`);
