// The backup operations behind `stackgen backup create|list|restore|prune`.
import { accessSync, closeSync, constants, existsSync, fchmodSync, openSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { failure, interruptedError, StackgenError, usageError } from "../errors.ts";
import { isWithin } from "../core/paths.ts";
import { getCatalog } from "../catalog/index.ts";
import { isDatabase } from "../core/databases.ts";
import { isPrivate } from "../core/file-modes.ts";
import {
  backupFileName,
  BackupInvalid,
  bundleFiles,
  diskFull,
  MAX_CONFIG_BYTES,
  readFileBytes,
  readVolumes,
  VOLUME_COPY_ATTEMPTS,
  VolumeCopyFailed,
  stackVolumes,
  verifyBackupFile,
  writeArchive,
  writeVolumes,
  type BackupManifest,
  type VerifiedBackup,
  type VolumeFile,
} from "./backup.ts";
import type { Compose, ComposeModel } from "./compose.ts";
import { isOneOff, isVolumeHelper, type ContainerSummary, type Engine, type VolumeInspect } from "./engine.ts";
import { byteProgress, formatBytes } from "./format.ts";
import { servicesNotRunning, waitReady, type ServiceReadiness } from "./health.ts";
import { loadStack, OVERRIDE_FILE_NAMES, readStackConfig, type Stack } from "./stack.ts";

export interface CreateOptions {
  outputDir?: string;
  hot: boolean;
  /** Extra word in the file name (e.g. "pre-restore"). */
  kind?: string;
  /** Stop running services for the copy and start them again (default unless hot). */
  stopServices?: boolean;
  /** Hot: pause (freeze) the running databases while their volumes are copied (default true). */
  pauseDatabases?: boolean;
  /** Kept current while the backup runs, for a second Ctrl-C that quits at once (`quitBackupNote`). */
  inFlight?: BackupInFlight;
  /** Volumes to copy as well when they exist, though the compose files no longer name them (a
   *  restore's safety backup: every volume the restore is about to replace). */
  alsoVolumes?: { name: string; key: string }[];
  progress?: (message: string) => void;
  /** How often a long copy says how far it is (default PROGRESS_EVERY_MS). */
  progressEveryMs?: number;
  /** Aborted on Ctrl-C: the copy stops, the services it stopped start again, its files go. */
  signal?: AbortSignal;
}

export interface CreateResult {
  file: string;
  project: string;
  createdAt: string;
  size: number;
  sha256: string;
  hot: boolean;
  services: string[];
  volumes: { name: string; size: number }[];
  files: string[];
  /** What the stack keeps outside its directory, and so outside this backup: writable bind mounts
   *  of host folders and files, and compose files COMPOSE_FILE names elsewhere. */
  notIncluded: string[];
  /** Hot: the databases paused while their volumes were copied. */
  paused: string[];
}

/** The stack's own data and config outside `stack.dir`, which a backup of the directory and the
 *  named volumes misses: said out loud, since a user restoring on a new machine would lose it.
 *  Read-only mounts (config the stack only reads) and sockets or devices (the Docker socket,
 *  a GPU) are not the stack's data. */
export function outsideTheBackup(stack: Stack, model: ComposeModel): string[] {
  const out: string[] = [];
  for (const file of stack.composeFiles) {
    if (!isWithin(stack.dir, file)) out.push(`compose file ${file}`);
    else if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) out.push(`compose file ${file} (a symbolic link, not followed)`);
  }
  for (const service of model.services) {
    for (const bind of service.binds) {
      if (bind.readOnly || isWithin(stack.dir, bind.source)) continue;
      const st = statSync(bind.source, { throwIfNoEntry: false });
      if (st && (st.isDirectory() || st.isFile())) out.push(`${bind.source} (bind-mounted into ${service.name} at ${bind.target})`);
    }
  }
  // Bare-metal: a service of stackgen.json that compose does not run is installed on the host.
  const inCompose = new Set(model.services.map((s) => s.name));
  const configured = Array.isArray(stack.config?.services) ? (stack.config.services as unknown[]) : [];
  for (const id of configured) {
    const native = typeof id === "string" && !inCompose.has(id) ? getCatalog().servicesById.get(id)?.native : undefined;
    if (native) out.push(`${id}'s data, installed on this host rather than in a container: ${native.dataOnHost}`);
  }
  return [...new Set(out)];
}

/** The stack as it runs: a service of a profile the stack's settings do not enable (`profiles:
 *  [extra]`, started with --profile extra) is missing from plain `compose config`, and so are
 *  its volumes; while it has a container it is part of the stack, to stop, copy and restore. */
export async function composeAsItRuns(engine: Engine, compose: Compose): Promise<{ compose: Compose; model: ComposeModel }> {
  const model = await compose.config();
  const services = new Set((await engine.listProjectContainers(compose.stack.project)).map((c) => c.Labels["com.docker.compose.service"]));
  const unlisted = [...services].filter((name) => name && !model.services.some((s) => s.name === name));
  if (unlisted.length === 0) return { compose, model };
  const everything = await compose.withProfiles(["*"]).config();
  const profiles = [...new Set(everything.services.filter((s) => unlisted.includes(s.name)).flatMap((s) => s.profiles ?? []))];
  if (profiles.length === 0) return { compose, model };
  const live = compose.withProfiles([...compose.profiles, ...profiles]);
  return { compose: live, model: await live.config() };
}

/** Where a stack directory keeps its backups (also a new machine's, before any stack is there). */
export const defaultBackupDir = (stackDir: string) => join(stackDir, "backups");

/** A backups folder that cannot be read or made: a file where the folder should be, a place the
 *  user may not write, a read-only or virtual file system. Their input, not our failure (exit 2),
 *  named with the path and the system's reason. `action` says what was tried ("read backups in"). */
export const unusableBackupFolder = (action: string, dir: string, e: unknown) =>
  usageError(`Cannot ${action} ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}. Nothing was done.`);

/** The project's containers by service. `running`: the services of `model` that run, which compose
 *  can stop and start; `outside`: those that run but are not in the model (taken out of the compose
 *  files since they started), which compose refuses to stop or start by name. */
async function runningServices(engine: Engine, project: string, model?: ComposeModel): Promise<{ running: string[]; outside: string[]; all: Map<string, string>; anonymous: string[]; containers: ContainerSummary[] }> {
  const containers = await engine.listProjectContainers(project);
  const all = new Map<string, string>();
  const running: string[] = [];
  const outside: string[] = [];
  const anonymous: string[] = [];
  for (const c of containers) {
    const service = c.Labels["com.docker.compose.service"];
    if (!service) continue;
    all.set(service, c.ImageID);
    // A crash-looping service ("restarting") writes between its restarts: stopped for a copy as well.
    const up = c.State === "running" || c.State === "restarting";
    const named = !model || model.services.some((s) => s.name === service);
    if (up && named && !running.includes(service)) running.push(service);
    if (up && !named && !outside.includes(service)) outside.push(service);
    anonymous.push(...anonymousVolumes(service, c.Mounts ?? []));
  }
  return { running, outside, all, anonymous, containers };
}

/** The note for running containers of services the compose files do not have ("" for none). */
const notInComposeNote = (outside: string[], what: string) =>
  outside.length === 0 ? "" : `Not stopped ${what}: ${outside.join(", ")} (running, but not in the compose files as compose reads them now, so compose cannot stop ${outside.length === 1 ? "it" : "them"}; \`docker compose up -d --remove-orphans\` removes such containers)`;

/** Volumes without a name in the compose files (`- /data`, or an image's VOLUME no named volume
 *  covers): no backup holds them, and a container made again (restore, `down` + `up`) gets new,
 *  empty ones. Said out loud, with the fix. Docker names them with 64 hex digits. */
function anonymousVolumes(service: string, mounts: NonNullable<ContainerSummary["Mounts"]>): string[] {
  return mounts.filter((m) => m.Type === "volume" && /^[0-9a-f]{64}$/.test(m.Name ?? "")).map((m) => `the anonymous volume at ${m.Destination} in ${service}`);
}

const NAME_IT = "name it in docker-compose.override.yml to have it backed up";

/** Running databases among the stack's services (see isDatabase): a copy of their files taken
 *  while they write may be torn. */
export function liveDatabases(model: ComposeModel, running: string[]): string[] {
  const catalog = getCatalog();
  return model.services.filter((s) => running.includes(s.name) && isDatabase(catalog.servicesById.get(s.name)?.category, s.image)).map((s) => s.name);
}

/** What of the stack directory is not config: a backups folder inside it, or, when the backups go
 *  into the directory itself, the work folder and the archives there. A folder above the stack
 *  holds none of its files, so nothing of the stack is left out for it. */
function leftOutOfConfig(stackDir: string, outputDir: string, work: string): string[] {
  const dir = resolve(stackDir);
  if (outputDir !== dir && isWithin(dir, outputDir)) return [outputDir];
  if (outputDir !== dir) return [];
  const archives = readdirSync(dir).filter((name) => name.endsWith(".tar.gz") || name.endsWith(".tar.gz.partial"));
  return [work, ...archives.map((name) => join(dir, name))];
}

/** The stack directory's files go into the archive as config, which a restore holds in memory up
 *  to MAX_CONFIG_BYTES: a larger backup would be written and then refused by every restore. Found
 *  out before anything stops, by create and by the commands that take a backup after stopping
 *  (restore's safety backup, update --backup). The manifest counts too: ~200 bytes per file. */
export function oversizedConfig(stackDir: string, paths: string[] = bundleFiles(stackDir)): string | undefined {
  // A file removed since it was listed (a running service's temporary file) takes no room.
  const sizes = paths.map((path) => ({ path, size: statSync(join(stackDir, path), { throwIfNoEntry: false })?.size ?? 0 }));
  const total = sizes.reduce((sum, f) => sum + f.size, 64 * 1024 + 200 * paths.length);
  if (total <= MAX_CONFIG_BYTES) return undefined;
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const largest = sizes.sort((a, b) => b.size - a.size).slice(0, 3).map((f) => `${f.path} (${mib(f.size)})`);
  return `The files in ${stackDir} come to ${mib(total)}, more than the ${mib(MAX_CONFIG_BYTES)} a backup keeps beside its volumes (largest: ${largest.join(", ")}). Data belongs in a named volume, which has no such limit: move it into one, or out of the stack directory.`;
}

const asSentence = (message: string) => (/[.!?]$/.test(message) ? message : `${message}.`);

/** A running database container a hot copy pauses, and the named volumes it mounts. */
interface DatabaseContainer {
  id: string;
  service: string;
  volumes: string[];
}

/** The running containers of `databases` that mount one of `volumes`: a database with no volume
 *  in the backup has nothing to keep still for it. */
function databaseContainers(containers: ContainerSummary[], databases: string[], volumes: { name: string }[]): DatabaseContainer[] {
  const copied = new Set(volumes.map((v) => v.name));
  return containers
    .filter((c) => c.State === "running" && databases.includes(c.Labels["com.docker.compose.service"] ?? ""))
    .map((c) => ({ id: c.Id, service: c.Labels["com.docker.compose.service"]!, volumes: (c.Mounts ?? []).flatMap((m) => (m.Type === "volume" && m.Name && copied.has(m.Name) ? [m.Name] : [])) }))
    .filter((c) => c.volumes.length > 0);
}

/** Pauses each container; one the engine will not pause (no cgroup freezer, one that just
 *  exited) is said and copied while it writes, as with --no-pause. Returns those paused. */
async function pauseEach(engine: Engine, containers: DatabaseContainer[], say: (message: string) => void): Promise<DatabaseContainer[]> {
  const paused: DatabaseContainer[] = [];
  for (const c of containers) {
    try {
      await engine.pauseContainer(c.id);
      paused.push(c);
    } catch (e) {
      say(`Warning: ${c.service} could not be paused (${(e as Error).message}); its volumes are copied while it writes, and may not restore to a consistent state.`);
    }
  }
  return paused;
}

/** Unpauses what pauseEach paused. Never throws (the error that led here stays the one reported):
 *  returns the services left paused, and why the first of them is. */
async function unpauseEach(engine: Engine, paused: DatabaseContainer[], say: (message: string) => void): Promise<{ left: string[]; why: string }> {
  const left: string[] = [];
  let why = "";
  if (paused.length > 0) say(`Unpausing ${paused.map((c) => c.service).join(", ")}`);
  for (const c of paused) {
    await engine.unpauseContainer(c.id).catch((e: Error) => {
      left.push(c.service);
      why ||= e.message;
    });
  }
  return { left, why };
}

/** The compose command, as the user runs it in the stack directory, that does `verb` to `services`. */
const composeCommand = (compose: Compose, verb: string, services: string[]) => [...compose.cli.argv, ...compose.profiles.flatMap((p) => ["--profile", p]), verb, ...services].join(" ");

/** "db is left paused, answering nothing; `docker compose unpause db` in <dir> unpauses it." */

export function leftPausedNote(compose: Compose, services: string[]): string {
  const one = services.length === 1;
  return `${services.join(", ")} ${one ? "is" : "are"} left paused, answering nothing; \`${composeCommand(compose, "unpause", services)}\` in ${compose.stack.dir} unpauses ${one ? "it" : "them"}.`;
}

/** Where a backup in progress stands, for a second Ctrl-C, which ends the process at once: what
 *  it leaves stopped or paused, and the unfinished files that would stay in the backups folder. */
export interface BackupInFlight {
  stopped: string[];
  paused: string[];
  unfinished: string[];
}

export const backupInFlight = (): BackupInFlight => ({ stopped: [], paused: [], unfinished: [] });

/** What a second Ctrl-C says when it ends a backup at once: what is left stopped or paused (a hot
 *  backup stops nothing: "may be left stopped" would send the user to fix what is not broken). Its
 *  unfinished files are removed first, as the backup would have. */
export function quitBackupNote(compose: Compose, inFlight: BackupInFlight): string {
  for (const path of inFlight.unfinished) rmSync(path, { recursive: true, force: true });
  const { stopped, paused } = inFlight;
  if (paused.length > 0) return `no backup was written; ${leftPausedNote(compose, paused)}`;
  if (stopped.length === 0) return "no backup was written; nothing was left stopped or paused.";
  const one = stopped.length === 1;
  return `no backup was written; ${stopped.join(", ")} may be left stopped; \`${composeCommand(compose, "start", stopped)}\` in ${compose.stack.dir} starts ${one ? "it" : "them"}.`;
}

/** Starts again the services a backup or restore stopped. When that fails, returns (never
 *  throws, so the error that led here stays the one reported) which are left stopped, as the
 *  engine shows them (a failed start may have started some), and the command that starts them. */
async function startAgain(engine: Engine, compose: Compose, services: string[], say: (message: string) => void): Promise<string | undefined> {
  say(`Starting ${services.join(", ")} again`);
  try {
    await compose.start(services);
    return undefined;
  } catch (e) {
    // Not knowing (the engine gone too), every one is named.
    const stopped = await servicesNotRunning(engine, compose.stack.project, services).catch(() => services);
    if (stopped.length === 0) return undefined;
    const one = stopped.length === 1;
    return `Starting ${services.length === 1 ? "it" : "them"} again failed too (${(e as Error).message}): ${stopped.join(", ")} ${one ? "is" : "are"} left stopped; \`${composeCommand(compose, "start", stopped)}\` in ${compose.stack.dir} starts ${one ? "it" : "them"}.`;
  }
}

export async function createBackup(stack: Stack, engine: Engine, compose: Compose, model: ComposeModel, opts: CreateOptions): Promise<CreateResult> {
  const outputDir = resolve(opts.outputDir ?? defaultBackupDir(stack.dir));
  try {
    return await writeBackup(stack, engine, compose, model, opts, outputDir);
  } catch (e) {
    if (!diskFull(e)) throw e;
    // writeBackup removed what it had written and started the services it stopped again.
    throw failure(
      "BACKUP_FAILED",
      `The disk holding ${outputDir} is full (${(e as NodeJS.ErrnoException).code}): no backup was written and nothing of it was kept. Free some space there${opts.kind ? "" : ", or write the backup to another disk with --output <dir>"}.`,
    );
  }
}

async function writeBackup(stack: Stack, engine: Engine, compose: Compose, model: ComposeModel, opts: CreateOptions, outputDir: string): Promise<CreateResult> {
  const say = opts.progress ?? (() => {});
  const { running, outside: runningOutside, all, anonymous, containers } = await runningServices(engine, stack.project, model);
  const volumes = await stackVolumes(engine, model);
  for (const v of opts.alsoVolumes ?? []) {
    if (!volumes.some((x) => x.name === v.name) && (await engine.inspectVolume(v.name))) volumes.push(v);
  }
  const stop = (opts.stopServices ?? !opts.hot) && running.length > 0;
  if ((opts.stopServices ?? !opts.hot) && runningOutside.length) say(notInComposeNote(runningOutside, "for the copy"));
  const images = model.services.map((s) => s.image).filter((i): i is string => !!i);
  const outside = outsideTheBackup(stack, model);
  if (outside.length) say(`Not in the backup, outside ${stack.dir}: ${outside.join("; ")}`);
  if (anonymous.length) say(`Not in the backup: ${anonymous.join("; ")} (${NAME_IT})`);
  // An external volume is someone else's to keep (restore refuses to replace one): named, not copied.
  const external = model.volumes.filter((v) => v.external).map((v) => `volume ${v.name} (declared external: not the stack's own, so not copied; back it up where it is managed)`);
  if (external.length) say(`Not in the backup: ${external.join("; ")}`);
  const notIncluded = [...outside, ...external, ...anonymous.map((a) => `${a} (${NAME_IT})`)];
  // A hot copy pauses the running databases (frozen, not stopped) while their volumes are copied:
  // their files are then read as of one moment, as after a power cut, which a database recovers
  // from; read while it writes, a database's files may be torn. Their clients wait meanwhile.
  const databases = opts.hot && !stop ? liveDatabases(model, running) : [];
  const pausing = opts.pauseDatabases !== false ? databaseContainers(containers, databases, volumes) : [];
  const writing = databases.filter((name) => !pausing.some((c) => c.service === name));
  if (writing.length) say(`Warning: a hot copy of ${writing.join(", ")} is taken while they write, and may not restore to a consistent state; ${opts.pauseDatabases === false ? "without --no-pause they are paused for the copy, " : ""}without --hot they are stopped for it.`);
  let work: string;
  try {
    // Made private: every archive holds the stack's .env. An existing folder is left as the user set it.
    mkdirSync(outputDir, { recursive: true, mode: 0o700 });
    // Volume tars wait in a work folder beside the backups (the bundle's files never include it);
    // the archive is written under a temporary name and renamed, so a listed backup is complete.
    // The first write there: an existing folder this user may not write (or a read-only disk) shows here.
    work = mkdtempSync(join(outputDir, ".work-"));
  } catch (e) {
    if (diskFull(e)) throw e;
    throw unusableBackupFolder("write backups to", outputDir, e);
  }
  const createdAt = new Date();
  const file = join(outputDir, backupFileName(stack.project, createdAt, opts.kind));
  const partial = `${file}.partial`;
  const inFlight = opts.inFlight ?? backupInFlight();
  inFlight.unfinished = [work, partial];
  try {
    // A backup without the stack's compose files could not bring it back (say on a new machine):
    // found out before anything stops. One that is a link is not the stack's to copy (links are
    // never followed) and is named as left out instead.
    const found: string[] = [];
    const configPaths = bundleFiles(stack.dir, leftOutOfConfig(stack.dir, outputDir, work), found);
    // A compose file that is a link is named above already.
    const skipped = found.filter((entry) => !stack.composeFiles.includes(join(stack.dir, entry.slice(0, entry.lastIndexOf(" (")))));
    // Only regular files of the stack directory are copied (as plain files: data bind-mounted
    // from there keeps contents and modes, not owners or times; the README says so).
    if (skipped.length) {
      const shown = skipped.length > 5 ? [...skipped.slice(0, 5), `and ${skipped.length - 5} more`] : skipped;
      say(`Not in the backup, in ${stack.dir} (only its regular files are copied; data that needs more belongs in a named volume): ${shown.join("; ")}`);
      notIncluded.push(...skipped);
    }
    const missing = stack.composeFiles.filter((f) => isWithin(stack.dir, f) && lstatSync(f, { throwIfNoEntry: false })?.isFile() && !configPaths.some((path) => join(stack.dir, path) === f));
    if (missing.length) throw failure("BACKUP_FAILED", `The stack's ${missing.join(", ")} would not be in the backup. No backup was written.`);
    const oversized = oversizedConfig(stack.dir, configPaths);
    if (oversized) throw failure("BACKUP_FAILED", `${oversized} No backup was written${stop ? " and nothing was stopped" : ""}.`);
    let volumeFiles;
    let files;
    let paused: DatabaseContainer[] = [];
    /** Databases a failed unpause left frozen: said as a stack left stopped is. */
    let leftPaused: string | undefined;
    /** What ended the copy, if anything did: the stop refused, or the copy itself (a volume that could not be read). */
    let ended: { by: "stop" | "copy"; error: Error } | undefined;
    try {
      if (stop) {
        say(`Stopping ${running.length} service(s) for a consistent copy`);
        inFlight.stopped = running;
        // Refused halfway, some may be stopped: they are all started again below.
        await compose.stop(running).catch((error: Error) => {
          ended = { by: "stop", error };
          throw error;
        });
      }
      say(volumes.length > 0 ? `Copying ${volumes.length} volume(s): ${volumes.map((v) => v.name).join(", ")}` : "No named volumes to copy");
      const progress = volumeCopyProgress(say, opts.progressEveryMs);
      const copy = (list: { name: string; key: string }[], into: string) =>
        readVolumes(engine, list, [...all.values(), ...images], into, opts.signal, progress).catch((e) => {
          if (!(e instanceof VolumeCopyFailed)) throw e;
          const retry = !e.cut || stop || running.length === 0 ? "" : opts.kind ? " Stop the stack (docker compose stop), then run the command again." : " Run it again, or without --hot so the services are stopped for the copy.";
          throw failure("BACKUP_FAILED", `No backup was written: ${e.message}.${retry}`);
        });
      // The paused databases' volumes first, so that they are paused for those copies only.
      const held = new Set(pausing.flatMap((c) => c.volumes));
      let first: VolumeFile[] = [];
      if (held.size > 0) {
        say(`Pausing ${pausing.map((c) => c.service).join(", ")} (not stopping) while ${pausing.length === 1 ? "its" : "their"} volumes are copied, so that ${pausing.length === 1 ? "its" : "their"} files are copied as of one moment`);
        const into = join(work, "paused");
        mkdirSync(into);
        paused = await pauseEach(engine, pausing, say);
        inFlight.paused = paused.map((c) => c.service);
        try {
          first = await copy(volumes.filter((v) => held.has(v.name)), into);
        } finally {
          const { left, why } = await unpauseEach(engine, paused, say);
          if (left.length > 0) leftPaused = `Unpausing failed (${why}): ${leftPausedNote(compose, left)}`;
          inFlight.paused = left;
        }
      }
      const copied = [...first, ...(await copy(volumes.filter((v) => !held.has(v.name)), work))];
      volumeFiles = volumes.map((v) => copied.find((f) => f.name === v.name)!);
      // Read while the services are still stopped: data bind-mounted from the stack directory
      // is part of the copy too, and a service writes it again as soon as it starts. One still
      // running (--hot) may have removed a file listed before the volumes were copied: named
      // as not in the backup, not a reason to write none.
      files = configPaths.flatMap((path) => {
        const abs = join(stack.dir, path);
        try {
          return [{ path, data: readFileBytes(abs), mode: statSync(abs).mode }];
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENOENT" || stack.composeFiles.includes(abs)) throw e;
          notIncluded.push(`${path} (removed while the backup was taken)`);
          return [];
        }
      });
    } catch (e) {
      ended ??= { by: "copy", error: e as Error };
    }
    const left = stop ? await startAgain(engine, compose, running, say) : leftPaused;
    if (!left) inFlight.stopped = [];
    if (left) {
      // Said with what ended the copy: a failed start must not hide why no backup was written.
      const why = ended?.by === "stop" ? `${ended.error.message}. No backup was written.` : ended ? asSentence(ended.error.message) : "The copy was taken, but no backup was written.";
      throw opts.signal?.aborted ? interruptedError(`${why} ${left}`) : failure(stop ? "COMPOSE_FAILED" : "DOCKER_ERROR", `${why} ${left}`);
    }
    if (ended?.by === "stop") throw failure("COMPOSE_FAILED", `${ended.error.message}. No backup was written (started again: ${running.join(", ")}).`);
    if (ended) throw ended.error;
    opts.signal?.throwIfAborted();
    say("Writing the archive");
    const { manifest, size, sha256 } = await writeArchive(partial, {
      project: stack.project,
      hot: !stop && running.length > 0,
      kind: opts.kind,
      services: model.services.map((s) => ({ name: s.name, ...(s.image ? { image: s.image } : {}), ...(all.get(s.name) ? { imageId: all.get(s.name) } : {}) })),
      files: files!,
      volumes: volumeFiles!,
      createdAt,
    }, opts.signal, byteProgress(say, "Writing the archive", volumeFiles!.reduce((sum, v) => sum + v.size, 0), opts.progressEveryMs));
    renameSync(partial, file);
    say(`Wrote ${file}`);
    return {
      file,
      project: stack.project,
      createdAt: manifest.createdAt,
      size,
      sha256,
      hot: manifest.hot,
      services: manifest.services.map((s) => s.name),
      volumes: manifest.volumes.map((v) => ({ name: v.name, size: v.size })),
      files: manifest.files,
      notIncluded,
      paused: paused.map((c) => c.service),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(partial, { force: true });
    inFlight.unfinished = [];
  }
}

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

/** How far each volume's copy is, for readVolumes: a copy made again (cut short by a service
 *  writing) is said as such and counted from zero, not added to the bytes of the one it replaces. */
export function volumeCopyProgress(say: (message: string) => void, everyMs?: number): (volume: string, bytes: number, attempt: number) => void {
  const meters = new Map<string, { attempt: number; count: (bytes: number) => void }>();
  return (volume, bytes, attempt) => {
    let meter = meters.get(volume);
    if (meter?.attempt !== attempt) {
      if (meter) say(`Copying volume ${volume} again (attempt ${attempt} of ${VOLUME_COPY_ATTEMPTS}): the copy before ended early, as a file changed size while it was read`);
      meters.set(volume, (meter = { attempt, count: byteProgress(say, `Copying volume ${volume}`, undefined, everyMs) }));
    }
    meter.count(bytes);
  };
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

/** No room to unpack a backup for checking: the disk's fault, not the archive's (RESTORE_FAILED,
 *  before anything was stopped). */
export const tooFullToCheck = (dir: string, e: unknown) =>
  failure("RESTORE_FAILED", `The disk holding ${dir} is too full to unpack the backup to check it (${(e as Error).message}). Nothing was changed; free some space there.`);

/** Read and verify a backup file (checked by checkBackupFile first), keeping its volume tars in
 *  `extractDir`; a one-line error (exit 2) when it is not acceptable. A long check says how far it is. */
export async function loadVerifiedBackup(file: string, project: string | undefined, extractDir: string, say?: (message: string) => void, progressEveryMs?: number): Promise<VerifiedBackup> {
  let backup: VerifiedBackup;
  try {
    const read = say ? byteProgress(say, "Checking the backup", statSync(file).size, progressEveryMs) : undefined;
    backup = await verifyBackupFile(file, extractDir, read);
  } catch (e) {
    if (e instanceof BackupInvalid) throw new StackgenError("BACKUP_INVALID", `Backup ${file} is refused: ${e.message}. Nothing was changed.`, 400);
    if (diskFull(e)) throw tooFullToCheck(dirname(extractDir), e);
    throw e;
  }
  if (project !== undefined && backup.manifest.project !== project) {
    throw new StackgenError(
      "BACKUP_FOREIGN",
      `Backup ${file} belongs to project "${backup.manifest.project}", not "${project}". Nothing was changed.`,
      400,
    );
  }
  return backup;
}

/** Into an empty directory (a new machine): the backup's config files are written first, so the
 *  restore then finds the stack they describe. The stack must be the backup's project; otherwise
 *  what was written is removed again and the directory is as empty as it was. */
export function unpackConfigInto(dir: string, backup: VerifiedBackup): Stack {
  const written: string[] = [];
  try {
    writeConfigFiles(dir, backup.files, written);
    const stack = loadStack(dir);
    if (stack.project !== backup.manifest.project) {
      throw new StackgenError(
        "BACKUP_FOREIGN",
        `The backup is of project "${backup.manifest.project}", but its compose files in ${dir} make the project "${stack.project}" (named after the directory): restore into a directory named ${backup.manifest.project}. Nothing was changed.`,
        400,
      );
    }
    return stack;
  } catch (e) {
    // The directory was empty: every top-level entry the files made is ours to remove.
    for (const top of new Set(written.map((path) => path.split("/")[0]!))) rmSync(join(dir, top), { recursive: true, force: true });
    throw e;
  }
}

/** The stack's own config is refused (a compose file that is not YAML, a `${VAR:?}` whose .env
 *  is gone), so no restore of it can stop, copy or start anything. The backup holds config that
 *  works: it goes in first, as on a new machine, once every file of the directory is kept in an
 *  archive of its own (`<project>-broken-config-…` in `outputDir`, restorable like any backup).
 *  What it replaced is put back when the written config does not make the backup's stack, or
 *  `open` (compose reading it) fails. */
export async function replaceBrokenConfig<T>(dir: string, backup: VerifiedBackup, outputDir: string, open: (stack: Stack) => Promise<T>): Promise<{ opened: T; kept: string }> {
  const project = backup.manifest.project;
  // A stackgen.json still readable names the stack the directory held.
  const configPath = join(dir, "stackgen.json");
  let named: unknown;
  try {
    named = readStackConfig(configPath).projectName;
  } catch {
    // none, or unreadable too: nothing to compare
  }
  if (typeof named === "string" && named !== project) throw new StackgenError("BACKUP_FOREIGN", `The backup is of project "${project}", but ${configPath} names "${named}". Nothing was changed.`, 400);
  const oversized = oversizedConfig(dir);
  if (oversized) throw failure("RESTORE_FAILED", `The files the restore replaces could not be kept: ${oversized} Nothing was changed.`);
  const before = bundleFiles(dir).map((path) => ({ path, data: readFileBytes(join(dir, path)), mode: statSync(join(dir, path)).mode }));
  const kept = join(outputDir, backupFileName(project, new Date(), "broken-config"));
  await writeArchive(kept, { project, hot: false, kind: "broken-config", services: [], files: before, volumes: [] });
  const written: string[] = [];
  try {
    writeConfigFiles(dir, backup.files, written);
    const stack = loadStack(dir);
    if (stack.project !== project) throw foreignConfig(project, stack.project);
    return { opened: await open(stack), kept };
  } catch (e) {
    for (const path of written) rmSync(join(dir, path), { force: true });
    writeConfigFiles(dir, before.filter((f) => backup.files.some((b) => b.path === f.path)));
    rmSync(kept, { force: true });
    throw e;
  }
}

/** The project the backup's own config files make, read from a copy under `workDir` in a folder
 *  named like `targetDir` (compose may name the project after its directory), or undefined when
 *  the copy alone does not make a stack (a COMPOSE_FILE or env_file outside the stack directory,
 *  which only the real one has). An early answer, before anything changes: the restore checks
 *  the real directory again once the files are written (in restoreBackup, before any volume). */
export function backupConfigProject(backup: VerifiedBackup, targetDir: string, workDir: string): string | undefined {
  const copy = join(mkdtempSync(join(workDir, "config-")), basename(targetDir));
  mkdirSync(copy);
  writeConfigFiles(copy, backup.files);
  try {
    return loadStack(copy).project;
  } catch {
    return undefined;
  }
}

const PROJECT_LABEL = "com.docker.compose.project";

/** A volume whose data outlives its removal: a local one bound to a host folder or a network share
 *  (`device`), or one of another driver. A restore replaces contents by recreating the volume. */
const keepsDataElsewhere = (v: VolumeInspect) => v.Driver !== "local" || !!v.Options?.device;

const foreignConfig = (project: string, made: string, after = " Nothing was changed.") =>
  new StackgenError("BACKUP_FOREIGN", `The backup's manifest is of project "${project}", but its config files make the project "${made}".${after}`, 400);

/** Refuses a backup whose config makes another project than its manifest (`up` would then run,
 *  and take over, that project). `made` is backupConfigProject's answer (undefined: unknown yet). */
export function checkBackupProject(backup: VerifiedBackup, made: string | undefined): void {
  if (made !== undefined && made !== backup.manifest.project) throw foreignConfig(backup.manifest.project, made);
}

/**
 * Refuses, before anything changes, a backup that would replace volumes that are not the stack's
 * own. The manifest's volume names, and the backup's compose files, are the archive's word: an
 * existing volume must carry the project's compose label, or (one made outside compose) be
 * declared by the stack already on disk (`current`, none for a new directory); never because the
 * backup declares it. A volume not there yet is only created. And a volume whose data outlives
 * its removal cannot be emptied by recreating it.
 */
export async function checkRestoreTargets(engine: Engine, backup: VerifiedBackup, current: ComposeModel | undefined): Promise<void> {
  const project = backup.manifest.project;
  const refused: string[] = [];
  const busy: string[] = [];
  // `down` removes the containers of the services the compose files name; not one-offs, and not
  // orphans (a service since removed from the files).
  const goesDown = (c: ContainerSummary) =>
    c.Labels?.[PROJECT_LABEL] === project && !isOneOff(c) && (current?.services.some((s) => s.name === c.Labels?.["com.docker.compose.service"]) ?? true);
  for (const v of backup.volumes) {
    const existing = await engine.inspectVolume(v.name);
    if (!existing) continue;
    const owner = existing.Labels?.[PROJECT_LABEL];
    const declared = current?.volumes.find((m) => m.name === v.name);
    if (owner !== undefined && owner !== project) refused.push(`${v.name} belongs to project "${owner}"`);
    else if (declared?.external) refused.push(`${v.name} is declared external (not the stack's own)`);
    else if (owner === undefined && !declared) refused.push(`${v.name} is not a volume of "${project}"`);
    else if (keepsDataElsewhere(existing)) {
      refused.push(`${v.name} keeps its data in ${existing.Options?.device ?? `the "${existing.Driver}" driver's storage`}, which recreating the volume does not empty (the backup would be mixed into what is there): empty it yourself first`);
    } else {
      // The stack's own containers go before the volume is recreated; any other container (a
      // one-off `compose run`, a `docker run -v`) keeps it in use, and the engine refuses to
      // remove it only after the stack was taken down.
      // A volume helper a quit stackgen left is removed by the restore (see putInPlace).
      const others = (await engine.containersUsingVolume(v.name)).filter((c) => !goesDown(c) && !isVolumeHelper(c));
      if (others.length) busy.push(`${v.name} is in use by ${others.map((c) => (c.Names?.[0] ?? c.Id.slice(0, 12)).replace(/^\//, "")).join(", ")}`);
    }
  }
  if (refused.length) {
    throw new StackgenError("BACKUP_FOREIGN", `The backup would replace volumes that are not this stack's: ${refused.join("; ")}. Nothing was changed.`, 400);
  }
  if (busy.length) {
    throw failure("RESTORE_FAILED", `Volumes the restore replaces are used by containers outside the stack: ${busy.join("; ")}. Stop and remove those containers (docker rm -f <name>), then restore again. Nothing was changed.`);
  }
}

/** Into a new directory: refuses when the project has containers on this engine that run from
 *  another directory, which the restore would take over (its volumes, without containers, are
 *  only replaced, and the safety backup keeps what they held). */
export async function refuseProjectElsewhere(engine: Engine, project: string, dir: string): Promise<void> {
  const containers = await engine.listProjectContainers(project);
  const homes = [...new Set(containers.map((c) => c.Labels["com.docker.compose.project.working_dir"]).filter((home) => home && resolve(home) !== resolve(dir)))];
  if (homes.length > 0) {
    throw new StackgenError(
      "BACKUP_FOREIGN",
      `Project "${project}" already has containers on this engine, running from ${homes.join(", ")}: restoring it into ${dir} would take them over. Restore with --dir ${homes[0]}, or remove that stack first. Nothing was changed.`,
      400,
    );
  }
}

/**
 * What would stop the backup's config files from being written into `stackDir`, found before the
 * restore changes anything (a failure halfway would leave the stack stopped for nothing): a file
 * or folder that is a symbolic link (writing through it could change a file outside the stack,
 * and no backup holds links; named apart when it leads outside the stack or to nothing), a folder
 * where the backup has a file or a file where it needs a folder, a file or folder this user may
 * not write.
 */
export function configTargetProblems(stackDir: string, files: VerifiedBackup["files"]): string[] {
  const root = realpathSync(stackDir);
  const problems: string[] = [];
  for (const f of files) {
    const parts = f.path.split("/");
    let at = stackDir;
    let writable = stackDir;
    let problem: string | undefined;
    for (let i = 0; i < parts.length && problem === undefined; i++) {
      at = join(at, parts[i]!);
      const shown = parts.slice(0, i + 1).join("/");
      const last = i === parts.length - 1;
      let st;
      try {
        st = lstatSync(at);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") break;
        throw e;
      }
      writable = at;
      if (st.isSymbolicLink() && last) problem = `${shown} is a symbolic link (replace it with the file itself)`;
      else if (st.isSymbolicLink() && !existsSync(at)) problem = `${shown} is a symbolic link to nothing`;
      else if (st.isSymbolicLink() && !isWithin(root, realpathSync(at))) problem = `${shown} leads outside ${stackDir}`;
      // Even one that stays inside: no file is written through a link (writeConfigFiles refuses it).
      else if (st.isSymbolicLink()) problem = `${shown} is a symbolic link (replace it with the folder itself)`;
      else if (last && !st.isFile()) problem = `${shown} is a folder where the backup has a file`;
      else if (!last && !statSync(at).isDirectory()) problem = `${shown} is a file where the backup has a folder`;
    }
    if (problem === undefined) {
      try {
        accessSync(writable, constants.W_OK);
      } catch (e) {
        problem = `${writable === stackDir ? stackDir : f.path} cannot be written (${(e as NodeJS.ErrnoException).code})`;
      }
    }
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * Files in the stack directory that the backup lacks and that would mix another state into the
 * restored one: an override compose file made since (compose would still load it), and files in
 * folders the services write through bind mounts (data, like a database's files, restored whole as
 * volumes are). The safety backup holds them. Anything else of the user's stays.
 */
export function staleStackFiles(stackDir: string, backupFiles: VerifiedBackup["files"], model: ComposeModel, archives: string[]): string[] {
  // The archives at work (the one restored, whatever its name, and the safety backup) stay too.
  const keep = new Set([...backupFiles.map((f) => f.path), ...archives.map((file) => relative(resolve(stackDir), resolve(file)).split(sep).join("/"))]);
  const root = resolve(stackDir);
  const dataDirs = model.services
    .flatMap((s) => s.binds)
    .filter((b) => !b.readOnly && resolve(b.source) !== root && isWithin(root, b.source) && statSync(b.source, { throwIfNoEntry: false })?.isDirectory())
    .map((b) => relative(root, resolve(b.source)).split(sep).join("/") + "/");
  return bundleFiles(root).filter((path) => !keep.has(path) && (OVERRIDE_FILE_NAMES.includes(path) || dataDirs.some((d) => path.startsWith(d))));
}

/** The mode a restored file gets: its own, but never writable by others (an archive handed over
 *  could make install.sh world-writable, for root to run later), and `.env` owner-only whatever
 *  the archive says. */
const restoredMode = (path: string, archived: number) => (isPrivate(path) ? 0o600 : (archived & 0o755) || 0o644);

/** Write restored config files, never through a symlink (checked by configTargetProblems first;
 *  again here, as the last guard). The path is walked one component at a time without following
 *  links, and a folder is made only once the one above it is known to be a real folder of the
 *  stack's: nothing is created outside `stackDir`, even when the check above is outdated. The
 *  paths of files that did not exist before are added to `created`. */
export function writeConfigFiles(stackDir: string, files: VerifiedBackup["files"], created: string[] = []): void {
  for (const f of files) {
    const parts = f.path.split("/");
    let target = stackDir;
    for (const [i, part] of parts.entries()) {
      target = join(target, part);
      if (i === parts.length - 1) break;
      const st = lstatSync(target, { throwIfNoEntry: false });
      if (!st) mkdirSync(target);
      else if (st.isSymbolicLink()) throw failure("RESTORE_FAILED", `Refusing to write ${f.path}: its folder ${parts.slice(0, i + 1).join("/")} is a symbolic link.`);
      else if (!st.isDirectory()) throw failure("RESTORE_FAILED", `Refusing to write ${f.path}: ${parts.slice(0, i + 1).join("/")} is not a folder.`);
    }
    const existing = lstatSync(target, { throwIfNoEntry: false });
    if (existing?.isSymbolicLink()) throw failure("RESTORE_FAILED", `Refusing to write ${f.path}: it is a symbolic link.`);
    if (!existing) created.push(f.path);
    // A name hard-linked to a file elsewhere gets a file of its own: the backup's secrets never
    // reach the other name.
    else if (existing.nlink > 1) rmSync(target);
    const mode = restoredMode(f.path, f.mode);
    // O_NOFOLLOW: a link put there since the check above is refused, not written through.
    const fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, mode);
    try {
      writeFileSync(fd, f.data);
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
  }
}

export interface RestoreOptions {
  timeoutMs: number;
  progress?: (message: string) => void;
  /** Aborted on Ctrl-C: before the first volume is replaced the stack runs again as it was;
   *  after, the safety backup is put back, as for a failed restore. */
  signal?: AbortSignal;
  /** Told where the safety backup is as soon as it is written. */
  onSafetyBackup?: (file: string) => void;
  /** How often long copies say how far they are (default PROGRESS_EVERY_MS; tests: 0). */
  progressEveryMs?: number;
}

export interface RestoreResult {
  restored: string;
  project: string;
  createdAt: string;
  safetyBackup: string;
  volumes: string[];
  files: string[];
  /** Files the backup does not have that were removed: an override file made since, and files in
   *  folders bind-mounted into services (their data, restored whole). */
  removedFiles: string[];
  services: string[];
  healthy: boolean;
  problems: string[];
  /** Services now running another image than the one whose data the backup holds. */
  imageChanges: ImageChange[];
  /** What the restored stack keeps outside its directory (see outsideTheBackup): no backup holds
   *  it, so it is as it was before the restore, whatever the backup's date. */
  notRestored: string[];
}

export interface ImageChange {
  service: string;
  image?: string;
  /** The image the service ran when the backup was taken. */
  backupImageId: string;
  runningImageId: string;
  /** Whether the backup's image is still on this host (then it can be tagged and run again). */
  backupImagePresent: boolean;
}

/** Services whose data came back under another image than the one that wrote it: an update since
 *  the backup means the newer version starts on older data (and may migrate it again). */
async function imageChangesSince(engine: Engine, manifest: BackupManifest, running: Map<string, string>): Promise<ImageChange[]> {
  const changes: ImageChange[] = [];
  for (const s of manifest.services) {
    const now = running.get(s.name);
    if (!s.imageId || !now || s.imageId === now) continue;
    const present = (await engine.inspectImage(s.imageId)) !== undefined;
    changes.push({ service: s.name, ...(s.image ? { image: s.image } : {}), backupImageId: s.imageId, runningImageId: now, backupImagePresent: present });
  }
  return changes;
}

/** Replace the stack's volumes and config with a verified backup, then start it and wait. */
export async function restoreBackup(
  stack: Stack,
  engine: Engine,
  compose: Compose,
  model: ComposeModel,
  file: string,
  backup: VerifiedBackup,
  opts: RestoreOptions,
): Promise<RestoreResult> {
  const say = opts.progress ?? (() => {});
  // Checked before anything changes: every volume's tar must be on disk, every config file writable.
  const tars = backup.volumes.map((v) => {
    if (!v.path) throw failure("RESTORE_FAILED", `Volume ${v.name} of the backup was not extracted. Nothing was changed.`);
    return { name: v.name, path: v.path };
  });
  const blocked = configTargetProblems(stack.dir, backup.files);
  if (blocked.length) throw failure("RESTORE_FAILED", `The backup's config files cannot be written into ${stack.dir}: ${blocked.join("; ")}. Nothing was changed.`);
  // The safety backup is taken once the stack is stopped: what would refuse it is found now.
  const oversized = oversizedConfig(stack.dir);
  if (oversized) throw failure("RESTORE_FAILED", `The safety backup of the current state could not hold the stack directory: ${oversized} Nothing was changed.`);
  const { running, outside: runningOutside, all, anonymous } = await runningServices(engine, stack.project, model);
  if (runningOutside.length) say(notInComposeNote(runningOutside, "for the restore"));
  if (running.length > 0) {
    say(`Stopping ${running.join(", ")}`);
    // The services named: the ones said, also those of a profile (see composeAsItRuns).
    try {
      await compose.stop(running);
    } catch (e) {
      // Refused halfway, some may be stopped: nothing is replaced, and all run again as before.
      const left = await startAgain(engine, compose, running, say);
      throw failure("COMPOSE_FAILED", `${(e as Error).message}. Nothing was restored${left ? `. ${left}` : ` (started again: ${running.join(", ")}).`}`);
    }
  }
  say("Taking a safety backup of the current state");
  let safety: CreateResult;
  try {
    // Every volume the restore replaces is in it, also one the compose files no longer name (an
    // orphan still holding data): otherwise the restore would destroy what nothing else holds.
    const replaced = backup.volumes.map(({ name, key }) => ({ name, key }));
    safety = await createBackup(stack, engine, compose, model, { hot: true, stopServices: false, kind: "pre-restore", alsoVolumes: replaced, progress: say, progressEveryMs: opts.progressEveryMs, signal: opts.signal });
    opts.onSafetyBackup?.(safety.file);
    opts.signal?.throwIfAborted();
  } catch (e) {
    // Without a safety backup nothing is replaced: the stack goes back to running as it was.
    const left = running.length > 0 ? await startAgain(engine, compose, running, say) : undefined;
    const restarted = running.length > 0 && !left ? ` (started again: ${running.join(", ")})` : "";
    const stillStopped = left ? ` ${left}` : "";
    if (opts.signal?.aborted) throw interruptedError(`Interrupted before anything was restored${restarted}.${stillStopped}`);
    throw failure("RESTORE_FAILED", `The safety backup of the current state failed, so nothing was restored${restarted}. ${left ? `${asSentence((e as Error).message)}${stillStopped}` : (e as Error).message}`);
  }
  const images = [...all.values(), ...backup.manifest.services.map((s) => s.image ?? ""), ...model.services.map((s) => s.image ?? "")].filter(Boolean);
  let current = compose;
  /** Config files the restore wrote that were not there before (a rollback removes them again). */
  const added: string[] = [];
  /** Volumes the restore created that did not exist before (a rollback removes them again). */
  const createdVolumes: string[] = [];
  /** Files the backup lacks that the restore removed (see staleStackFiles). */
  const removedFiles: string[] = [];
  /** Replace config and volumes with `from`'s and start the stack (with `only`, just those services). */
  const putInPlace = async (from: VerifiedBackup, volumeTars: { name: string; path: string }[], only?: string[]) => {
    if ((await engine.listProjectContainers(stack.project)).length > 0) {
      say("Removing the stack's containers (volumes are kept until replaced)");
      await current.down();
    }
    say(`Restoring ${from.files.length} config file(s)`);
    // Files of the stack's own written state that the backup lacks go (the safety backup has them).
    for (const path of staleStackFiles(stack.dir, from.files, model, [file, safety.file])) {
      rmSync(join(stack.dir, path));
      if (!rollingBack) removedFiles.push(path);
    }
    writeConfigFiles(stack.dir, from.files, added);
    // What the written files make, with everything the real directory has (a COMPOSE_FILE in the
    // backup's .env may name any file): another project would have its containers taken over.
    const written = loadStack(stack.dir).project;
    if (written !== stack.project) throw foreignConfig(stack.project, written, "");
    for (const v of from.volumes) {
      // Never extract over old data: the volume is recreated empty with its old labels/driver.
      const existing = await engine.inspectVolume(v.name);
      say(`Recreating volume ${v.name}`);
      // Under the stack's lock no helper of a running stackgen mounts it: one there was left by a
      // stackgen that quit at once (a second Ctrl-C), and would keep the volume from going.
      for (const c of existing ? await engine.containersUsingVolume(v.name) : []) if (isVolumeHelper(c)) await engine.removeContainer(c.Id);
      if (existing) await engine.removeVolume(v.name);
      else createdVolumes.push(v.name);
      await engine.createVolume({
        Name: v.name,
        Driver: existing?.Driver ?? "local",
        DriverOpts: existing?.Options ?? {},
        Labels: existing?.Labels ?? { "com.docker.compose.project": stack.project, "com.docker.compose.volume": v.key },
      });
    }
    say("Writing volume contents");
    // Putting the safety backup back runs to the end, interrupted or not.
    await writeVolumes(engine, volumeTars, images, rollingBack ? undefined : opts.signal, (v) => {
      const size = statSync(v.path).size;
      say(`Writing volume ${v.name} (${formatBytes(size)})`);
      return opts.progress && byteProgress(say, `Writing volume ${v.name}`, size, opts.progressEveryMs);
    });
    // The restored config may bring (or drop) an override file: compose runs with the files now there.
    current = compose.reloaded(loadStack(stack.dir));
    if (only === undefined) {
      say("Starting the stack");
      await current.up();
    } else {
      await current.create();
      if (only.length > 0) {
        say(`Starting ${only.join(", ")}`);
        await current.start(only);
      }
    }
  };
  let rollingBack = false;
  /** After a failed restore, the state the safety backup holds goes back in place and starts. */
  const putBack = async (what: string): Promise<StackgenError> => {
    rollingBack = true;
    say(`${what}; putting the state before the restore back from ${safety.file}`);
    // Made inside the try: a full disk (a likely cause of the failure) must not replace the
    // restore's error and the command that brings the previous state back.
    let unpacked: string | undefined;
    try {
      unpacked = mkdtempSync(join(dirname(safety.file), ".rollback-"));
      const previous = await verifyBackupFile(safety.file, unpacked);
      for (const path of added.splice(0)) rmSync(join(stack.dir, path), { force: true });
      // Volumes that did not exist before the restore go too, before anything starts on them.
      const stale = createdVolumes.splice(0).filter((name) => !previous.volumes.some((v) => v.name === name));
      if (stale.length) {
        if ((await engine.listProjectContainers(stack.project)).length > 0) await current.down();
        for (const name of stale) await engine.removeVolume(name);
      }
      // As it was means running as it was: services the user had stopped stay stopped.
      await putInPlace(previous, previous.volumes.map((v) => ({ name: v.name, path: v.path! })), running);
      const started = running.length > 0 ? " and started again" : " (nothing was running before it, so nothing was started)";
      return failure("RESTORE_FAILED", `${what}. The stack was put back as it was before the restore${started}.`);
    } catch (e) {
      return failure(
        "RESTORE_FAILED",
        `${what}, and putting the previous state back failed too (${(e as Error).message}). That state is in ${safety.file}: stackgen backup restore ${safety.file} --dir ${stack.dir} --yes`,
      );
    } finally {
      if (unpacked) rmSync(unpacked, { recursive: true, force: true });
    }
  };
  try {
    await putInPlace(backup, tars);
  } catch (e) {
    const error = await putBack(`The restore failed (${(e as Error).message})`);
    throw opts.signal?.aborted ? interruptedError(error.message) : error;
  }

  // One listing of the started containers: the services to wait for and the images they run.
  const started = (await runningServices(engine, stack.project)).all;
  const unique = [...started.keys()].sort();
  if (unique.length > 0) say(`Waiting for ${unique.join(", ")} to be healthy`);
  // A restore after which nothing runs did not bring the stack back.
  const problems: ServiceReadiness[] = unique.length === 0
    ? [{ service: stack.project, ok: false, reason: "no service of the restored stack started", final: true }]
    : await waitReady(engine, stack.project, unique, { timeoutMs: opts.timeoutMs, onProgress: (p) => say(`Still waiting for ${p.map((x) => x.service).join(", ")}`), signal: opts.signal });
  const imageChanges = await imageChangesSince(engine, backup.manifest, started);
  // Only a note: a restore that worked is not turned into a failure by it.
  const outside = await current.config().then((restored) => outsideTheBackup(current.stack, restored), () => []);
  // The containers were made again: an anonymous volume's data stays in the old, now unused, volume.
  const notRestored = [...outside, ...anonymous.map((a) => `${a} (the new container has a new, empty one; the old one is kept unused: docker volume ls -f dangling=true)`)];
  return {
    restored: file,
    project: stack.project,
    createdAt: backup.manifest.createdAt,
    safetyBackup: safety.file,
    volumes: backup.volumes.map((v) => v.name),
    files: backup.files.map((f) => f.path),
    removedFiles,
    services: unique,
    healthy: problems.length === 0,
    problems: problems.map((p) => `${p.service}: ${p.reason}`),
    imageChanges,
    notRestored,
  };
}

export type { BackupManifest };
