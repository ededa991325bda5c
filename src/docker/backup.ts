// Backup archives: one .tar.gz holding manifest.json, the bundle's config files under config/
// and one tar per named volume under volumes/<volume>.tar (as the engine's archive endpoint
// produced it, so owners, modes and links inside the volume survive).
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { VERSION } from "../version.ts";
import { checkMembers, safeComponents } from "./archive-safety.ts";
import type { ComposeModel } from "./compose.ts";
import { HELPER_ROOT, helperImage, type Engine } from "./engine.ts";
import { fileEntry, readTar, writeTar, type TarEntry } from "./tar.ts";

export const FORMAT_VERSION = 1;
export const MANIFEST = "manifest.json";

export interface MemberSum {
  path: string;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  formatVersion: number;
  tool: string;
  toolVersion: string;
  project: string;
  createdAt: string;
  hot: boolean;
  kind?: string;
  services: { name: string; image?: string; imageId?: string }[];
  volumes: { name: string; key: string; member: string; size: number; sha256: string }[];
  files: string[];
  members: MemberSum[];
}

export const sha256 = (data: Uint8Array) => new Bun.CryptoHasher("sha256").update(data).digest("hex");

/** Directories of the bundle that are never part of a backup. */
const SKIP_DIRS = new Set(["backups", ".git", "node_modules"]);

/** The bundle's own files (relative paths), without backups or symlinks. */
export function bundleFiles(dir: string, exclude: string[] = []): string[] {
  const excluded = exclude.map((p) => resolve(p));
  const out: string[] = [];
  const walk = (abs: string) => {
    for (const name of readdirSync(abs).sort()) {
      const path = join(abs, name);
      if (excluded.some((e) => path === e || path.startsWith(e + sep))) continue;
      const st = lstatSync(path);
      if (st.isDirectory()) {
        if (abs === dir && SKIP_DIRS.has(name)) continue;
        walk(path);
      } else if (st.isFile()) out.push(relative(dir, path).split(sep).join("/"));
    }
  };
  walk(dir);
  return out;
}

export interface VolumeData {
  name: string;
  key: string;
  tar: Uint8Array;
}

/** Read the contents of named volumes through a helper container that is created but never started. */
export async function readVolumes(engine: Engine, volumes: { name: string; key: string }[], preferredImages: string[]): Promise<VolumeData[]> {
  if (volumes.length === 0) return [];
  const image = await helperImage(engine, preferredImages);
  const helper = await engine.createVolumeHelper(
    image,
    volumes.map((v) => v.name),
  );
  try {
    const out: VolumeData[] = [];
    for (const v of volumes) out.push({ ...v, tar: await engine.getArchive(helper, `${HELPER_ROOT}/${v.name}`) });
    return out;
  } finally {
    await engine.removeContainer(helper);
  }
}

/** Replace volume contents: the caller recreated the volumes empty; this extracts each tar into its mount. */
export async function writeVolumes(engine: Engine, volumes: VolumeData[], preferredImages: string[]): Promise<void> {
  if (volumes.length === 0) return;
  const image = await helperImage(engine, preferredImages);
  const helper = await engine.createVolumeHelper(
    image,
    volumes.map((v) => v.name),
  );
  try {
    for (const v of volumes) await engine.putArchive(helper, HELPER_ROOT, v.tar);
  } finally {
    await engine.removeContainer(helper);
  }
}

export interface ArchiveInput {
  project: string;
  hot: boolean;
  kind?: string;
  services: BackupManifest["services"];
  files: { path: string; data: Uint8Array; mode: number }[];
  volumes: VolumeData[];
  createdAt?: Date;
}

/** Build the gzipped archive and its manifest. */
export function buildArchive(input: ArchiveInput): { gz: Uint8Array; manifest: BackupManifest } {
  const createdAt = input.createdAt ?? new Date();
  const mtime = Math.floor(createdAt.getTime() / 1000);
  const entries: TarEntry[] = [];
  for (const f of input.files) entries.push(fileEntry(`config/${f.path}`, f.data, f.mode & 0o777, mtime));
  for (const v of input.volumes) entries.push(fileEntry(`volumes/${v.name}.tar`, v.tar, 0o600, mtime));
  const members = entries.map((e) => ({ path: e.name, size: e.data.length, sha256: sha256(e.data) }));
  const manifest: BackupManifest = {
    formatVersion: FORMAT_VERSION,
    tool: "stackgen",
    toolVersion: VERSION,
    project: input.project,
    createdAt: createdAt.toISOString(),
    hot: input.hot,
    ...(input.kind ? { kind: input.kind } : {}),
    services: input.services,
    volumes: input.volumes.map((v) => {
      const m = members.find((x) => x.path === `volumes/${v.name}.tar`)!;
      return { name: v.name, key: v.key, member: m.path, size: m.size, sha256: m.sha256 };
    }),
    files: input.files.map((f) => f.path),
    members,
  };
  const tar = writeTar([fileEntry(MANIFEST, JSON.stringify(manifest, null, 2) + "\n", 0o644, mtime), ...entries]);
  return { gz: Bun.gzipSync(tar as Uint8Array<ArrayBuffer>), manifest };
}

export interface VerifiedBackup {
  manifest: BackupManifest;
  files: { path: string; data: Uint8Array; mode: number }[];
  volumes: VolumeData[];
}

export class BackupInvalid extends Error {
  constructor(readonly problems: string[]) {
    super(problems[0] + (problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : ""));
  }
}

/**
 * Read and verify a backup completely: gzip and tar structure, safe member names, a manifest that
 * lists every member with matching size and sha256, and safe members inside every volume tar.
 * Throws BackupInvalid listing what is wrong; nothing is written anywhere.
 */
export function verifyArchive(gz: Uint8Array): VerifiedBackup {
  let entries: TarEntry[];
  try {
    entries = readTar(Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>));
  } catch (e) {
    throw new BackupInvalid([`not a readable .tar.gz archive (${(e as Error).message})`]);
  }
  const problems = checkMembers(entries, { allowLinks: false });
  for (const e of entries) if (e.type !== "file" && e.type !== "dir") problems.push(`member "${e.name}" is not a regular file`);
  if (problems.length > 0) throw new BackupInvalid(problems);

  const files = entries.filter((e) => e.type === "file");
  const byName = new Map<string, TarEntry>();
  for (const e of files) {
    if (byName.has(e.name)) problems.push(`member "${e.name}" appears twice`);
    byName.set(e.name, e);
  }
  const manifestEntry = byName.get(MANIFEST);
  if (!manifestEntry) throw new BackupInvalid([...problems, "manifest.json is missing"]);
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(new TextDecoder().decode(manifestEntry.data));
  } catch {
    throw new BackupInvalid([...problems, "manifest.json is not valid JSON"]);
  }
  if (manifest.formatVersion !== FORMAT_VERSION) problems.push(`unsupported backup format version ${manifest.formatVersion}`);
  if (typeof manifest.project !== "string" || !Array.isArray(manifest.members) || !Array.isArray(manifest.volumes)) {
    throw new BackupInvalid([...problems, "manifest.json lacks project, members or volumes"]);
  }
  const listed = new Set<string>();
  for (const m of manifest.members) {
    listed.add(m.path);
    const entry = byName.get(m.path);
    if (!entry) problems.push(`member "${m.path}" is listed in the manifest but missing`);
    else if (entry.data.length !== m.size) problems.push(`member "${m.path}" has size ${entry.data.length}, manifest says ${m.size}`);
    else if (sha256(entry.data) !== m.sha256) problems.push(`member "${m.path}" fails its sha256 check`);
  }
  for (const name of byName.keys()) if (name !== MANIFEST && !listed.has(name)) problems.push(`member "${name}" is not listed in the manifest`);

  const config: VerifiedBackup["files"] = [];
  const volumes: VolumeData[] = [];
  for (const e of files) {
    if (e.name === MANIFEST) continue;
    if (e.name.startsWith("config/")) {
      const rel = e.name.slice("config/".length);
      const comps = safeComponents(rel);
      if ("error" in comps || comps.parts.length === 0 || SKIP_DIRS.has(comps.parts[0])) problems.push(`config member "${e.name}" has a forbidden path`);
      else config.push({ path: comps.parts.join("/"), data: e.data, mode: e.mode & 0o777 });
    } else if (!e.name.startsWith("volumes/")) problems.push(`member "${e.name}" is neither config nor a volume`);
  }
  for (const v of manifest.volumes) {
    const entry = byName.get(v.member);
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(v.name ?? "") || v.member !== `volumes/${v.name}.tar`) {
      problems.push(`manifest volume "${v.name}" has a bad name or member`);
      continue;
    }
    if (!entry) continue; // reported above
    try {
      const inner = readTar(entry.data);
      for (const p of checkMembers(inner, { allowLinks: true, root: v.name })) problems.push(`volume ${v.name}: ${p}`);
    } catch (e) {
      problems.push(`volume ${v.name}: not a readable tar (${(e as Error).message})`);
    }
    volumes.push({ name: v.name, key: v.key, tar: entry.data });
  }
  for (const name of byName.keys()) {
    if (name.startsWith("volumes/") && !manifest.volumes.some((v) => v.member === name)) problems.push(`member "${name}" is no volume of the manifest`);
  }
  if (problems.length > 0) throw new BackupInvalid(problems);
  return { manifest, files: config, volumes };
}

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
