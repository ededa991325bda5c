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
  /** This project's verified backups that stay, each with the rules that keep it (`keptBy`). */
  kept: ListedBackup[];
  keptBy: Map<ListedBackup, RetentionRule[]>;
  /** This project's verified backups no rule keeps: the ones prune deletes. */
  removed: ListedBackup[];
  /** Files prune never deletes: archives that do not verify or belong to another project. */
  untouched: ListedBackup[];
}

/** What prune keeps: the newest `last` backups, and the newest backup of each of the last `daily`
 *  days, `weekly` weeks (ISO, from Monday) and `monthly` months that have one, in UTC as the
 *  archives' times are. A backup any rule keeps stays. */
export interface Retention {
  last?: number;
  daily?: number;
  weekly?: number;
  monthly?: number;
}
export type RetentionRule = keyof Retention | "undated";

/** The period a time falls in, for each calendar rule. */
const PERIOD_OF: Record<Exclude<keyof Retention, "last">, (at: Date) => string> = {
  daily: (at) => at.toISOString().slice(0, 10),
  // An ISO week belongs to the year of its Thursday, and its number counts Thursdays from 1 January.
  weekly: (at) => {
    const thursday = new Date(at.getTime() + (3 - ((at.getUTCDay() + 6) % 7)) * 86_400_000);
    const dayOfYear = Math.floor((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / 86_400_000);
    return `${thursday.getUTCFullYear()}-W${Math.floor(dayOfYear / 7) + 1}`;
  },
  monthly: (at) => at.toISOString().slice(0, 7),
};

/** The rules that keep each of `backups` (one kind, newest first). One whose time cannot be read
 *  is kept: what cannot be placed in a period is never deleted for it. */
function keptByRules(backups: ListedBackup[], retention: Retention): Map<ListedBackup, RetentionRule[]> {
  const keptBy = new Map<ListedBackup, RetentionRule[]>();
  const keep = (b: ListedBackup, rule: RetentionRule) => keptBy.set(b, [...(keptBy.get(b) ?? []), rule]);
  for (const b of backups.slice(0, retention.last ?? 0)) keep(b, "last");
  const dated = backups.filter((b) => {
    const readable = !Number.isNaN(Date.parse(b.createdAt));
    if (!readable) keep(b, "undated");
    return readable;
  });
  for (const [rule, periodOf] of Object.entries(PERIOD_OF) as [keyof typeof PERIOD_OF, (at: Date) => string][]) {
    const periods = new Set<string>();
    for (const b of dated) {
      if (periods.size >= (retention[rule] ?? 0)) break;
      const period = periodOf(new Date(b.createdAt));
      if (periods.has(period)) continue;
      periods.add(period);
      keep(b, rule);
    }
  }
  return keptBy;
}

/** Which backups a retention removes. Only archives that verify and name this project are counted
 *  and deleted: a damaged or foreign file may be the only copy of something, so it is left for the
 *  user to judge. Safety backups (restore's, update --backup's) are counted apart, per kind (each
 *  kind keeps as many): otherwise one restore would push the last scheduled backup out. */
export function planPrune(backups: ListedBackup[], project: string, retention: Retention): PrunePlan {
  const ours = backups.filter((b) => b.verified && b.project === project); // newest first, as listed
  const kinds = [...new Set(ours.map((b) => b.kind ?? ""))];
  const keptBy = new Map(kinds.flatMap((kind) => [...keptByRules(ours.filter((b) => (b.kind ?? "") === kind), retention)]));
  return { kept: ours.filter((b) => keptBy.has(b)), keptBy, removed: ours.filter((b) => !keptBy.has(b)), untouched: backups.filter((b) => !ours.includes(b)) };
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
