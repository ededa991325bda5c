// `stackgen backup create`, and the safety backups restore and update take: the stack's config
// files and named volumes in one archive, the services stopped for the copy (or, hot, the
// databases paused), and how a backup cut short by Ctrl-C is said.
import { lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { failure, interruptedError } from "../errors.ts";
import { isWithin } from "../core/paths.ts";
import { getCatalog } from "../catalog/index.ts";
import { isDatabase } from "../core/databases.ts";
import {
  backupFileName,
  bundleFiles,
  defaultBackupDir,
  diskFull,
  makeWorkDir,
  MAX_CONFIG_BYTES,
  removeLeftHelpers,
  readFileBytes,
  readVolumes,
  stackVolumes,
  unusableBackupFolder,
  VOLUME_COPY_ATTEMPTS,
  VolumeCopyFailed,
  writeArchive,
  type VolumeFile,
} from "./backup.ts";
import type { Compose, ComposeModel } from "./compose.ts";
import { isVolumeHelper, type ContainerSummary, type Engine } from "./engine.ts";
import { byteProgress } from "./format.ts";
import { servicesNotRunning, waitReady } from "./health.ts";
import { awaitedJobs, dependenciesByService, dependenciesOf, ranToCompletion, startLayers } from "./layers.ts";
import type { Stack } from "./stack.ts";

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
  /** Containers outside the stack's services (a one-off `docker compose run`, a `docker run -v`)
   *  that kept running with its volumes mounted while they were copied: the copy is then hot. */
  writers: string[];
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


/** The project's containers by service. `running`: the services of `model` that run, which compose
 *  can stop and start; `outside`: those that run but are not in the model (taken out of the compose
 *  files since they started), which compose refuses to stop or start by name. */
export async function runningServices(engine: Engine, project: string, model?: ComposeModel): Promise<{ running: string[]; sick: Set<string>; outside: string[]; all: Map<string, string>; anonymous: string[]; containers: ContainerSummary[] }> {
  const containers = await engine.listProjectContainers(project);
  const all = new Map<string, string>();
  const running: string[] = [];
  /** Of the running, those unhealthy or crash-looping already: started again, not waited for. */
  const sick = new Set<string>();
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
    if (up && named && (c.State === "restarting" || /\(unhealthy\)/.test(c.Status ?? ""))) sick.add(service);
    if (up && !named && !outside.includes(service)) outside.push(service);
    anonymous.push(...anonymousVolumes(service, c.Mounts ?? []));
  }
  return { running, sick, outside, all, anonymous, containers };
}

/** The note for running containers of services the compose files do not have ("" for none). */
export const notInComposeNote = (outside: string[], what: string) =>
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

export const asSentence = (message: string) => (/[.!?]$/.test(message) ? message : `${message}.`);

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
export const composeCommand = (compose: Compose, verb: string, services: string[]) => [...compose.cli.argv, ...compose.profiles.flatMap((p) => ["--profile", p]), verb, ...services].join(" ");

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
export function quitBackupNote(compose: Compose, inFlight: BackupInFlight, model?: ComposeModel): string {
  for (const path of inFlight.unfinished) rmSync(path, { recursive: true, force: true });
  const { stopped, paused } = inFlight;
  if (paused.length > 0) return `no backup was written; ${leftPausedNote(compose, paused)}`;
  if (stopped.length === 0) return "no backup was written; nothing was left stopped or paused.";
  const one = stopped.length === 1;
  // As startAgain: `start` would also start (or, pruned, refuse over) what was not running before,
  // a finished job among them; `restart --no-deps` starts the stopped ones alone, in dependency order.
  const alone = [...dependenciesOf(stopped, model ? dependenciesByService(model) : {})].some((name) => !stopped.includes(name));
  return `no backup was written; ${stopped.join(", ")} may be left stopped; \`${composeCommand(compose, alone ? "restart --no-deps" : "start", stopped)}\` in ${compose.stack.dir} starts ${one ? "it" : "them"}.`;
}

/** Starts again the services a backup or restore stopped. When that fails, returns (never
 *  throws, so the error that led here stays the one reported) which are left stopped, as the
 *  engine shows them (a failed start may have started some), and the command that starts them. */
export async function startAgain(engine: Engine, compose: Compose, services: string[], say: (message: string) => void, model?: ComposeModel, sick: ReadonlySet<string> = new Set()): Promise<string | undefined> {
  const dependsOn = model ? dependenciesByService(model) : {};
  // Only what the backup stopped starts again. `compose start` starts what the services depend
  // on too: a finished job (init, migration, volume owner) would run again after every backup,
  // a failed one fail the start, one whose container was pruned make it refuse ("missing
  // dependency"), and a service the user had stopped would come back. Those are left as they were.
  const notRunning = [...dependenciesOf(services, dependsOn)].filter((name) => !services.includes(name));
  const jobs = await finishedJobs(engine, compose.stack.project, notRunning).catch((): string[] => []);
  const others = notRunning.filter((name) => !jobs.includes(name));
  const left = [
    jobs.length ? `the finished ${jobs.length === 1 ? "job" : "jobs"} ${jobs.join(", ")} not run again` : "",
    others.length ? `${others.join(", ")}, not running before, left so` : "",
  ].filter(Boolean).join("; ");
  say(`Starting ${services.join(", ")} again${left ? ` (${left})` : ""}`);
  try {
    // `compose start` waits for a service_healthy dependency: one sick before would hold the
    // rest down, so then the stopped ones are started alone, layer by layer, as below.
    if (notRunning.length === 0 && sick.size === 0) await compose.start(services);
    else await startLeaving(engine, compose, services, dependsOn, sick);
    return undefined;
  } catch (e) {
    // Not knowing (the engine gone too), every one is named.
    const stopped = await servicesNotRunning(engine, compose.stack.project, services).catch(() => services);
    if (stopped.length === 0) return undefined;
    const one = stopped.length === 1;
    // `start` would refuse the same way; `restart --no-deps` starts them alone.
    const command = composeCommand(compose, notRunning.length || sick.size ? "restart --no-deps" : "start", stopped);
    return `Starting ${services.length === 1 ? "it" : "them"} again failed too (${(e as Error).message}): ${stopped.join(", ")} ${one ? "is" : "are"} left stopped; \`${command}\` in ${compose.stack.dir} starts ${one ? "it" : "them"}.`;
  }
}

/** The one-shot jobs among `names` that ran to completion: awaited by another service
 *  (service_completed_successfully) and every container exited 0. */
async function finishedJobs(engine: Engine, project: string, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const containers = await engine.listProjectContainers(project);
  const jobs = awaitedJobs(containers);
  return names.filter((name) => {
    const own = containers.filter((c) => c.Labels["com.docker.compose.service"] === name);
    return jobs.has(name) && own.length > 0 && own.every(ranToCompletion);
  });
}

/** Start `services` layer by layer with `restart --no-deps` (which starts none of their
 *  dependencies), each layer once the one before is ready, as compose start would wait. A compose
 *  without `restart --no-deps` (v1, early v2) gets `compose start`, which runs the jobs again.
 *  `sick` (unhealthy or crash-looping before they were stopped) are started, not waited for: they
 *  would hold back the rest of the stack, which ran beside them before. */
async function startLeaving(engine: Engine, compose: Compose, services: string[], dependsOn: Record<string, string[]>, sick: ReadonlySet<string>): Promise<void> {
  const layers = startLayers(dependsOn, new Set(services));
  for (const [i, layer] of layers.entries()) {
    const started = await compose.run(["restart", "--no-deps", ...layer]);
    if (started.code !== 0) {
      await compose.start(layers.slice(i).flat());
      return;
    }
    if (i === layers.length - 1) return;
    const failed = await waitReady(engine, compose.stack.project, layer.filter((name) => !sick.has(name)), { timeoutMs: START_WAIT_MS });
    if (failed.length) throw new Error(failed.map((f) => `${f.service} ${f.reason}`).join("; "));
  }
}

/** How long a layer may take to be ready before the next one starts (compose start waits as long). */
const START_WAIT_MS = 300_000;

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
  const { running, sick, outside: runningOutside, all, anonymous, containers } = await runningServices(engine, stack.project, model);
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
  // A declared volume the engine does not have (the stack never started here, or `down -v` took
  // it): a backup without it looks whole, and `prune` would count it as the newest.
  const missing = model.volumes.filter((v) => !v.external && !volumes.some((x) => x.name === v.name)).map((v) => v.name);
  if (missing.length && !volumes.length && opts.kind === undefined) {
    throw failure("BACKUP_FAILED", `None of the stack's volumes exists on this engine (${missing.join(", ")}): the stack never ran here, or \`docker compose down -v\` removed them. A backup now would hold no data and would count as the newest for backup prune. No backup was written.`);
  }
  const absent = missing.map((name) => `volume ${name} (does not exist on this engine: not created yet, or removed; nothing of it is in this backup)`);
  if (absent.length) say(`Not in the backup: ${absent.join("; ")}`);
  // The project's volumes that no service compose runs now uses (one of a profile not started,
  // of a service taken out of the compose files): compose does not name them, so neither is
  // the copy; said, so that a user does not take the backup for the whole of the data.
  const unnamed = (await engine.listProjectVolumes(stack.project))
    .map((v) => v.Name)
    .filter((name) => !volumes.some((v) => v.name === name) && !model.volumes.some((v) => v.name === name) && !/^[0-9a-f]{64}$/.test(name))
    .sort()
    .map((name) => `volume ${name} (the project's on this engine, but no service of the compose files as they run now uses it: of a profile not started, or of a service taken out; not in this backup)`);
  if (unnamed.length) say(`Not in the backup: ${unnamed.join("; ")}`);
  const notIncluded = [...outside, ...external, ...absent, ...unnamed, ...anonymous.map((a) => `${a} (${NAME_IT})`)];
  // A hot copy pauses the running databases (frozen, not stopped) while their volumes are copied:
  // their files are then read as of one moment, as after a power cut, which a database recovers
  // from; read while it writes, a database's files may be torn. Their clients wait meanwhile.
  const databases = opts.hot && !stop ? liveDatabases(model, running) : [];
  const pausing = opts.pauseDatabases !== false ? databaseContainers(containers, databases, volumes) : [];
  const writing = databases.filter((name) => !pausing.some((c) => c.service === name));
  if (writing.length) say(`Warning: a hot copy of ${writing.join(", ")} is taken while they write, and may not restore to a consistent state; ${opts.pauseDatabases === false ? "without --no-pause they are paused for the copy, " : ""}without --hot they are stopped for it.`);
  let work: string;
  /** The first folder this run made on the way to outputDir: taken away again if no backup lands. */
  let madeFrom: string | undefined;
  try {
    // Made private: every archive holds the stack's .env. An existing folder is left as the user set it.
    madeFrom = mkdirSync(outputDir, { recursive: true, mode: 0o700 });
    // Volume tars wait in a work folder beside the backups (the bundle's files never include it);
    // the archive is written under a temporary name and renamed, so a listed backup is complete.
    // The first write there: an existing folder this user may not write (or a read-only disk) shows here.
    work = makeWorkDir(outputDir, "work");
  } catch (e) {
    removeEmptyMade(outputDir, madeFrom);
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
    let writers: string[] = [];
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
      if (!opts.hot) {
        writers = await runningWriters(engine, volumes);
        if (writers.length) say(`Warning: not stopped for the copy, these containers outside the stack's services run with its volumes mounted, so the copy is taken while they may write (a hot copy): ${writers.join("; ")}. Stop them first for a consistent copy.`);
      }
      await removeLeftHelpers(engine, volumes);
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
    const left = stop ? await startAgain(engine, compose, running, say, model, sick) : leftPaused;
    if (!left) inFlight.stopped = [];
    // A cold copy taken whole is written even when the stack does not start again (below); a
    // database a failed unpause left frozen is said at once, as it answers nothing meanwhile.
    if (left && (ended || opts.signal?.aborted || !stop)) {
      // Said with what ended the copy: a failed start must not hide why no backup was written.
      const why = ended?.by === "stop" ? `${ended.error.message}. No backup was written.` : ended ? asSentence(ended.error.message) : "The copy was taken, but no backup was written.";
      throw opts.signal?.aborted ? interruptedError(`${why} ${left}`) : failure(stop ? "COMPOSE_FAILED" : "DOCKER_ERROR", `${why} ${left}`);
    }
    if (ended?.by === "stop") throw failure("COMPOSE_FAILED", `${ended.error.message}. No backup was written (started again: ${running.join(", ")}).`);
    if (ended) throw ended.error;
    opts.signal?.throwIfAborted();
    say("Writing the archive");
    // Written with the stack left stopped: a write that fails (a full disk, Ctrl-C) must still say so.
    const archiving = writeArchive(partial, {
      project: stack.project,
      hot: (!stop && running.length > 0) || writers.length > 0,
      kind: opts.kind,
      services: model.services.map((s) => ({ name: s.name, ...(s.image ? { image: s.image } : {}), ...(all.get(s.name) ? { imageId: all.get(s.name) } : {}) })),
      files: files!,
      volumes: volumeFiles!,
      createdAt,
    }, opts.signal, byteProgress(say, "Writing the archive", volumeFiles!.reduce((sum, v) => sum + v.size, 0), opts.progressEveryMs));
    const { manifest, size, sha256 } = left
      ? await archiving.catch((e: Error) => {
        const why = `${asSentence(e.message)} No backup was written. ${left}`;
        throw opts.signal?.aborted ? interruptedError(why) : failure("COMPOSE_FAILED", why);
      })
      : await archiving;
    renameSync(partial, file);
    say(`Wrote ${file}`);
    if (left) throw failure("COMPOSE_FAILED", `The backup was written (${file}), but the stack is not as it was. ${left}`);
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
      writers,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(partial, { force: true });
    inFlight.unfinished = [];
    // A failed first backup leaves no empty backups folder behind.
    removeEmptyMade(outputDir, madeFrom);
  }
}

/** Running containers that mount one of `volumes` once the stack's services are stopped: what
 *  compose does not stop (one-offs of `compose run`, containers of `docker run -v`, another
 *  project's), said as "volume: name (state)". stackgen's own volume helpers never run. */
async function runningWriters(engine: Engine, volumes: readonly { name: string }[]): Promise<string[]> {
  const found: string[] = [];
  for (const v of volumes) {
    const users = (await engine.containersUsingVolume(v.name)).filter((c) => (c.State === "running" || c.State === "restarting") && !isVolumeHelper(c));
    if (users.length) found.push(`${v.name}: ${users.map((c) => (c.Names?.[0] ?? c.Id.slice(0, 12)).replace(/^\//, "")).join(", ")}`);
  }
  return found;
}

/** Remove the folders from `dir` up to `madeFrom` (the first one mkdir made) while they are empty. */
function removeEmptyMade(dir: string, madeFrom: string | undefined): void {
  if (madeFrom === undefined) return;
  for (let at = dir; ; at = dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return;
    }
    if (at === madeFrom || dirname(at) === at) return;
  }
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
