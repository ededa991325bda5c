// `stackgen backup restore`: the checks made before anything changes (the archive, its project,
// the volumes and folders it writes), then the safety backup, the replaced volumes and config,
// and the stack started again and waited for.
import { accessSync, chmodSync, closeSync, constants, existsSync, fchmodSync, openSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { failure, interruptedError, StackgenError } from "../errors.ts";
import { isWithin, shellWord } from "../core/paths.ts";
import { isPrivate } from "../core/file-modes.ts";
import {
  backupFileName,
  BackupInvalid,
  bundleFiles,
  diskFull,
  readFileBytes,
  verifyBackupFile,
  writeArchive,
  writeVolumes,
  type BackupManifest,
  type VerifiedBackup,
} from "./backup.ts";
import { asSentence, createBackup, notInComposeNote, outsideTheBackup, oversizedConfig, runningServices, startAgain, type CreateResult } from "./backup-create.ts";
import { lastLine, pulledFromRegistry, restartsForGood, type Compose, type ComposeModel } from "./compose.ts";
import { dependenciesByService, dependencyLayers, stillStarting } from "./layers.ts";
import { isOneOff, isVolumeHelper, type ContainerSummary, type Engine, type VolumeInspect } from "./engine.ts";
import { byteProgress, formatBytes } from "./format.ts";
import { waitReady, type ServiceReadiness } from "./health.ts";
import { loadStack, OVERRIDE_FILE_NAMES, readStackConfig, type Stack } from "./stack.ts";

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

/** Pulls the images the stack runs that the engine lacks (a restore on a new machine), and only
 *  those compose would pull itself: never a `pull_policy: never` or built one, whose name may mean
 *  an unrelated image on a registry. One the engine has is kept, `pull_policy: always`
 *  notwithstanding: the data goes back under the image that ran it, with no registry needed. */
async function pullAbsent(engine: Engine, compose: Compose, model: ComposeModel, say: (message: string) => void): Promise<void> {
  for (const svc of model.services) {
    if (!pulledFromRegistry(svc) || (await engine.inspectImage(svc.image!))) continue;
    say(`Pulling ${svc.image} for ${svc.name} (not on this engine)`);
    const pulled = await compose.pull(svc.name);
    if (pulled.code !== 0) throw failure("COMPOSE_FAILED", `docker compose pull ${svc.name} failed: ${lastLine(pulled.stderr) || `exit code ${pulled.code}`}`);
  }
}

/** Refuses when the project has containers on this engine that run from another directory, which
 *  the restore would take over: a new directory, or a copy of the bundle in a second folder
 *  (its volumes, without containers, are only replaced, and the safety backup keeps what they
 *  held). Folders are compared as the file system resolves them (a path through a link is the
 *  same folder). */
export async function refuseProjectElsewhere(engine: Engine, project: string, dir: string): Promise<void> {
  const containers = await engine.listProjectContainers(project);
  const real = (path: string) => {
    try {
      return realpathSync(path);
    } catch {
      return resolve(path);
    }
  };
  const here = real(dir);
  // A folder that no longer exists is the bundle moved or renamed: restoring there is the move.
  const homes = [...new Set(containers.map((c) => c.Labels["com.docker.compose.project.working_dir"]).filter((home) => home && existsSync(home) && real(home) !== here))];
  if (homes.length > 0) {
    throw new StackgenError(
      "BACKUP_FOREIGN",
      `Project "${project}" already has containers on this engine, running from ${homes.join(", ")}: restoring it into ${dir} would take them over. Restore with --dir ${shellWord(homes[0]!)}, or remove that stack first. Nothing was changed.`,
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
      // 0755 whatever the umask, as generate makes them: other users' containers read the files.
      if (!st) {
        mkdirSync(target);
        chmodSync(target, 0o755);
      } else if (st.isSymbolicLink()) throw failure("RESTORE_FAILED", `Refusing to write ${f.path}: its folder ${parts.slice(0, i + 1).join("/")} is a symbolic link.`);
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
  const { running, sick, outside: runningOutside, all, anonymous } = await runningServices(engine, stack.project, model);
  if (runningOutside.length) say(notInComposeNote(runningOutside, "for the restore"));
  if (running.length > 0) {
    say(`Stopping ${running.join(", ")}`);
    // The services named: the ones said, also those of a profile (see composeAsItRuns).
    try {
      await compose.stop(running);
    } catch (e) {
      // Refused halfway, some may be stopped: nothing is replaced, and all run again as before.
      const left = await startAgain(engine, compose, running, say, model, sick);
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
    const left = running.length > 0 ? await startAgain(engine, compose, running, say, model, sick) : undefined;
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
  /** What compose makes of the config files last put in place (read once per putInPlace). */
  let placedModel: ComposeModel | undefined;
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
    // writeVolumes looks at the signal before each volume: a Ctrl-C during the last one is seen
    // here, before the stack starts on the restored data, and puts the previous state back.
    if (!rollingBack) opts.signal?.throwIfAborted();
    // The restored config may bring (or drop) an override file: compose runs with the files now there.
    current = compose.reloaded(loadStack(stack.dir));
    placedModel = await current.config();
    await pullAbsent(engine, current, placedModel, say);
    if (only === undefined) {
      say("Starting the stack");
      // Made first, without a limit (an image pulled may take long), then started within
      // --timeout: compose waits for the one-shot jobs it runs first with no limit of its own.
      await current.create();
      // --timeout per layer of dependencies, as update waits: compose waits for each layer's
      // health checks in turn before the next starts (a large database replaying its log).
      const layers = dependencyLayers(dependenciesByService(placedModel)).length;
      await namingWhatStarts(current.up(opts.timeoutMs * Math.max(1, layers)));
    } else {
      await current.create();
      if (only.length > 0) {
        say(`Starting ${only.join(", ")}`);
        await namingWhatStarts(current.start(only, opts.timeoutMs));
      }
    }
  };
  /** A start stopped at its limit names what compose was still waiting on. */
  const namingWhatStarts = async (starting: Promise<unknown>): Promise<void> => {
    try {
      await starting;
    } catch (e) {
      if (!(e as { overran?: boolean }).overran) throw e;
      const pending = stillStarting(await engine.listProjectContainers(stack.project).catch(() => []));
      throw pending.length ? failure("COMPOSE_FAILED", `${(e as Error).message}; still waiting on ${pending.join(", ")}`) : e;
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
        `${what}, and putting the previous state back failed too (${(e as Error).message}). That state is in ${safety.file}: stackgen backup restore ${shellWord(safety.file)} --dir ${shellWord(stack.dir)} --yes`,
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
  // The config the restore put in place, as compose read it before starting the stack.
  const restoredModel = placedModel!;
  // A server that ran before the restore, or one compose restarts for good, that exits after it
  // (even with 0: a server that finds its data unreadable and quits) is down, not a finished job.
  const mustStayUp = new Set([...running, ...restoredModel.services.filter(restartsForGood).map((s) => s.name)]);
  if (unique.length > 0) say(`Waiting for ${unique.join(", ")} to be healthy`);
  // A restore after which nothing runs did not bring the stack back.
  const problems: ServiceReadiness[] = unique.length === 0
    ? [{ service: stack.project, ok: false, reason: "no service of the restored stack started", final: true }]
    : await waitReady(engine, stack.project, unique, { timeoutMs: opts.timeoutMs, onProgress: (p) => say(`Still waiting for ${p.map((x) => x.service).join(", ")}`), signal: opts.signal, mustStayUp });
  const imageChanges = await imageChangesSince(engine, backup.manifest, started);
  // Only a note: a restore that worked is not turned into a failure by it.
  const outside = outsideTheBackup(current.stack, restoredModel);
  // A volume of the stack the backup does not hold kept its data: a later time than the rest.
  const lacking = restoredModel.volumes.filter((v) => !v.external && !backup.volumes.some((b) => b.name === v.name)).map((v) => `volume ${v.name} (not in the backup: left as it was, so it may hold newer data than the rest)`);
  // The containers were made again: an anonymous volume's data stays in the old, now unused, volume.
  const notRestored = [...outside, ...lacking, ...anonymous.map((a) => `${a} (the new container has a new, empty one; the old one is kept unused: docker volume ls -f dangling=true)`)];
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
