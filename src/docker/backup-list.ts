// The backups folder as `stackgen backup list|verify|prune` read it: each archive verified, what
// a restore of one would bring back, and which ones a prune keeps.
import { accessSync, constants, lstatSync, readdirSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { usageError } from "../errors.ts";
import { BackupInvalid, unusableBackupFolder, verifyBackupFile, type BackupManifest } from "./backup.ts";
import { byteProgress } from "./format.ts";

export interface ListedBackup {
  file: string;
  name: string;
  size: number;
  createdAt: string;
  project?: string;
  /** What made it, when not `backup create` (restore's safety backups: "pre-restore"). */
  kind?: string;
  verified: boolean;
  problem?: string;
  volumes?: string[];
}

/** The archives in `dir`, each verified; a long check says how far it is (`say`). */
export async function listBackups(dir: string, say?: (message: string) => void, progressEveryMs?: number): Promise<ListedBackup[]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    // Not made yet (no backup so far): nothing to list. A file there, or a folder this user may
    // not read, is said as it is.
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw unusableBackupFolder("read backups in", dir, e);
  }
  const out: ListedBackup[] = [];
  const archives = names.filter((name) => name.endsWith(".tar.gz")).sort();
  for (const [at, name] of archives.entries()) {
    const file = join(dir, name);
    const st = statSync(file, { throwIfNoEntry: false });
    if (!st) {
      // A link to a file that is gone: listed as what it is, not a reason to list nothing.
      const link = lstatSync(file);
      out.push({ file, name, size: 0, createdAt: link.mtime.toISOString(), verified: false, problem: "a symbolic link to a file that does not exist" });
      continue;
    }
    if (!st.isFile()) continue;
    const base = { file, name, size: st.size, createdAt: st.mtime.toISOString() };
    try {
      const label = `Checking ${name}${archives.length > 1 ? ` (${at + 1} of ${archives.length})` : ""}`;
      const { manifest } = await verifyBackupFile(file, undefined, say && byteProgress(say, label, st.size, progressEveryMs));
      out.push({ ...base, createdAt: manifest.createdAt, project: manifest.project, ...(manifest.kind ? { kind: manifest.kind } : {}), verified: true, volumes: manifest.volumes.map((v) => v.name) });
    } catch (e) {
      out.push({ ...base, verified: false, problem: (e as Error).message });
    }
  }
  return out.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.name.localeCompare(a.name));
}

/** What `backup verify` says of one archive: its manifest when every check passes, else each
 *  problem found (all of them, not only the first that list shows). */
export interface BackupReport {
  file: string;
  name: string;
  size: number;
  verified: boolean;
  problems?: string[];
  project?: string;
  createdAt?: string;
  kind?: string;
  /** Copied while the services ran (`create --hot`): databases may not restore consistently. */
  hot?: boolean;
  toolVersion?: string;
  /** Each service with the image (and image id) it ran at the time: what a restore brings back. */
  services?: BackupManifest["services"];
  volumes?: { name: string; size: number }[];
  files?: string[];
}

/** Reads and checks one archive whole, as restore does before it changes anything, but keeps
 *  nothing: an offsite copy can be checked where no stack (and no Docker) is. */
export async function verifyBackup(file: string, say?: (message: string) => void, progressEveryMs?: number): Promise<BackupReport> {
  const size = statSync(file).size;
  const base = { file, name: basename(file), size };
  try {
    const { manifest } = await verifyBackupFile(file, undefined, say && byteProgress(say, `Checking ${basename(file)}`, size, progressEveryMs));
    return {
      ...base,
      verified: true,
      project: manifest.project,
      createdAt: manifest.createdAt,
      ...(manifest.kind ? { kind: manifest.kind } : {}),
      hot: manifest.hot,
      toolVersion: manifest.toolVersion,
      services: manifest.services,
      volumes: manifest.volumes.map((v) => ({ name: v.name, size: v.size })),
      files: manifest.files,
    };
  } catch (e) {
    if (e instanceof BackupInvalid) return { ...base, verified: false, problems: e.problems };
    throw e;
  }
}

export interface PrunePlan {
  /** This project's verified backups that stay (the `keep` newest). */
  kept: ListedBackup[];
  /** This project's verified backups older than those: the ones prune deletes. */
  removed: ListedBackup[];
  /** Files prune never deletes: archives that do not verify or belong to another project. */
  untouched: ListedBackup[];
}

/** Which backups a retention of `keep` removes. Only archives that verify and name this project
 *  are counted and deleted: a damaged or foreign file may be the only copy of something, so it is
 *  left for the user to judge. Safety backups (restore's, update --backup's) are counted apart,
 *  per kind (the newest `keep` of each stay too): otherwise one restore would push the last
 *  scheduled backup out. */
export function planPrune(backups: ListedBackup[], project: string, keep: number): PrunePlan {
  const ours = backups.filter((b) => b.verified && b.project === project); // newest first, as listed
  const kinds = [...new Set(ours.map((b) => b.kind ?? ""))];
  const kept = new Set(kinds.flatMap((kind) => ours.filter((b) => (b.kind ?? "") === kind).slice(0, keep)));
  return { kept: ours.filter((b) => kept.has(b)), removed: ours.filter((b) => !kept.has(b)), untouched: backups.filter((b) => !ours.includes(b)) };
}

/** The backup file must be a readable regular file (exit 2 otherwise). */
export function checkBackupFile(file: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
    accessSync(file, constants.R_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw usageError(code === "ENOENT" || code === "ENOTDIR" ? `Backup file ${file} does not exist.` : `Cannot read backup file ${file}: ${code ?? (e as Error).message}`);
  }
  if (!isFile) throw usageError(`Backup file ${file} is not a regular file.`);
}
