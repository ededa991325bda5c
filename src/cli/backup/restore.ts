// stackgen backup restore: verify, take a safety backup, replace volumes and config, start, wait.
import { existsSync, mkdirSync, rmdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { defineCommand } from "citty";
import { defaultBackupDir, diskFull, makeWorkDir, unusableBackupFolder } from "../../docker/backup.ts";
import { composeAsItRuns } from "../../docker/backup-create.ts";
import { checkBackupFile } from "../../docker/backup-list.ts";
import { backupConfigProject, replaceBrokenConfig, checkBackupProject, checkRestoreTargets, loadVerifiedBackup, refuseProjectElsewhere, restoreBackup, tooFullToCheck, unpackConfigInto, type ImageChange } from "../../docker/backup-restore.ts";
import { connectEngine, dirArg, jsonArg, openCompose, timeoutMs } from "../../docker/cli-support.ts";
import { isEmptyStackDir, loadStack, type Stack } from "../../docker/stack.ts";
import { withStackLock } from "../../docker/stack-lock.ts";
import { confirmOrAbort, requireYesWithoutTerminal } from "../confirm.ts";
import { INTERRUPTED_EXIT, StackgenError } from "../../errors.ts";
import { quitOnSignal, withDeferredInterrupts } from "../interrupt.ts";
import { log, printJson, printText, progress } from "../output.ts";
import { shellWord } from "../../core/paths.ts";

function rmEmptyDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty (or gone): kept as it is
  }
}

export default defineCommand({
  meta: { name: "restore", description: "Restore a backup into the stack (volumes and config), then start it; into an empty --dir (a new machine) the archive brings the whole stack back" },
  args: {
    file: { type: "positional", description: "Backup archive (.tar.gz)", required: true },
    dir: dirArg,
    yes: { type: "boolean", description: "Do not ask for confirmation", default: false },
    json: jsonArg,
    timeout: { type: "string", description: "Seconds the stack may take to start (compose waits for its one-shot jobs) and again to become healthy", default: "300" },
  },
  async run({ args }) {
    const wait = timeoutMs(args.timeout);
    const file = resolve(String(args.file));
    const dir = resolve(args.dir || ".");
    // An empty (or new) directory is a new machine: the stack comes out of the backup itself.
    const fresh = isEmptyStackDir(dir);
    // The user's input (stack, file, --yes) is checked before the engine is asked: a wrong
    // file is exit 2 whether Docker runs or not.
    // A stack whose own config is refused is restored config first (see replaceBrokenConfig).
    let broken: StackgenError | undefined;
    const refused = (e: unknown) => {
      if (!(e instanceof StackgenError) || e.code !== "STACK_INVALID") throw e;
      broken = e;
      return undefined;
    };
    let stack: Stack | undefined;
    try {
      if (!fresh) stack = loadStack(dir);
    } catch (e) {
      refused(e);
    }
    checkBackupFile(file);
    // Verify everything before asking or touching anything.
    // The backup's volume tars are extracted (and checked) here first, beside the stack's
    // backups, and streamed into the volumes from there.
    const backupsDir = defaultBackupDir(dir);
    const madeDir = fresh && !existsSync(dir);
    let madeBackupsDir = false;
    let work: string;
    try {
      madeBackupsDir = mkdirSync(backupsDir, { recursive: true }) !== undefined;
      work = makeWorkDir(backupsDir, "restore");
    } catch (e) {
      // A file named backups, a read-only or virtual file system: said with the path, and what
      // this run made is gone again.
      if (madeBackupsDir) rmEmptyDir(backupsDir);
      if (madeDir) rmEmptyDir(dir);
      if (diskFull(e)) throw tooFullToCheck(backupsDir, e);
      throw unusableBackupFolder("unpack the backup for checking in", backupsDir, e);
    }
    let result;
    let interrupted = false;
    // Ctrl-C while the archive is checked, or the question waits: the unpacked copy (as large as
    // the backup's volumes) goes with what this run made, as a refusal would leave it.
    const leaveNoTrace = () => {
      rmSync(work, { recursive: true, force: true });
      if (madeBackupsDir) rmEmptyDir(backupsDir);
      if (madeDir) rmEmptyDir(dir);
    };
    const early = quitOnSignal("checking the backup", leaveNoTrace);
    try {
      const backup = await loadVerifiedBackup(file, stack?.project, work, progress);
      requireYesWithoutTerminal(args.yes, "Restore replaces the stack's volumes and config");
      const engine = await connectEngine();
      // What the backup's own config makes of the stack, checked against the engine before anything
      // changes: the same project, and volumes that are that project's (not another stack's).
      checkBackupProject(backup, backupConfigProject(backup, dir, work));
      const opened = stack ? await composeAsItRuns(engine, await openCompose(stack)).catch(refused) : undefined;
      if (broken) stack = undefined;
      await refuseProjectElsewhere(engine, backup.manifest.project, dir);
      const current = opened?.model;
      await checkRestoreTargets(engine, backup, current);
      // Asked only once the restore can run.
      const question = stack
        ? `Replace the volumes and config of "${stack.project}" with the backup from ${backup.manifest.createdAt}?`
        : broken
          ? `The stack's config in ${dir} is refused (${broken.message}). Replace it and the volumes of "${backup.manifest.project}" with the backup from ${backup.manifest.createdAt}? The files there now are kept in an archive first.`
          : `Restore "${backup.manifest.project}" from the backup of ${backup.manifest.createdAt} into the empty directory ${dir}?`;
      await confirmOrAbort(args.yes, question, "Restore cancelled; nothing was changed.");
      // From here on the restore changes things: its own handling of signals takes over below.
      early.off();
      const openAsItRuns = async (s: Stack) => ({ stack: s, ...(await composeAsItRuns(engine, await openCompose(s))) });
      let ready;
      if (stack) ready = { stack, ...opened! };
      else if (broken) {
        progress(`The stack's config is refused (${broken.message}); writing the backup's ${backup.files.length} config file(s) first`);
        const replaced = await replaceBrokenConfig(dir, backup, backupsDir, openAsItRuns);
        progress(`The files that were there are kept in ${replaced.kept}`);
        ready = replaced.opened;
      } else {
        progress(`Writing the backup's ${backup.files.length} config file(s) into ${dir}`);
        ready = await openAsItRuns(unpackConfigInto(dir, backup));
      }
      const { compose, model } = ready;
      stack = ready.stack;
      const target = stack;
      let safetyBackup: string | undefined;
      // A second Ctrl-C may leave the volumes half replaced: `docker compose up -d` would start
      // the apps on that, so the way back is the safety backup. The unpacked tars go at once.
      const onQuit = () => {
        rmSync(work, { recursive: true, force: true });
        return safetyBackup
          ? `the volumes may be half restored and the stack stopped. Do not start it as it is: the state before the restore is in ${safetyBackup}, and \`stackgen backup restore ${shellWord(safetyBackup)} --dir ${shellWord(target.dir)} --yes\` puts it back.`
          : undefined;
      };
      result = await withDeferredInterrupts("the restore", async (signal) => {
        const onSafetyBackup = (f: string) => void (safetyBackup = f);
        const restored = await withStackLock(target.dir, "backup restore", () => restoreBackup(target, engine, compose, model, file, backup, { timeoutMs: wait, progress, signal, onSafetyBackup }), (note) => log.warn(note));
        // Restored, then Ctrl-C while it waited for health: done, but not known to be healthy.
        interrupted = signal.aborted;
        return restored;
      }, onQuit);
      if (args.json) printJson(result);
      else {
        printText(
          [
            `Restored ${result.volumes.length} volume(s) and ${result.files.length} config file(s) from ${file}`,
            ...(result.removedFiles.length ? [`Removed, as the backup does not have them: ${result.removedFiles.join(", ")}`] : []),
            `Safety backup of the previous state: ${result.safetyBackup}`,
            result.healthy ? `Services up: ${result.services.join(", ")}` : `Not healthy: ${result.problems.join("; ")}`,
          ].join("\n"),
        );
      }
    } finally {
      early.off();
      // A refused restore leaves no trace: the folder goes if it was made for this run and holds
      // nothing (a restore that ran keeps its safety backup there).
      leaveNoTrace();
    }
    for (const change of result.imageChanges) log.warn(imageChangeMessage(change));
    if (result.notRestored.length) log.warn(`Not restored (no backup holds them): ${result.notRestored.join("; ")}`);
    if (!result.healthy) {
      log.error(`The restored stack is not healthy: ${result.problems.join("; ")}`);
      process.exitCode = interrupted ? INTERRUPTED_EXIT : 1;
    }
  },
});

const shortId = (id: string) => id.replace(/^sha256:/, "").slice(0, 12);

/** One warning per service whose restored data now runs under another image than the one that wrote it. */
export function imageChangeMessage(c: ImageChange): string {
  const what = `${c.service}: the backup's data was written by image ${shortId(c.backupImageId)}, but ${c.image ?? "the service"} is now ${shortId(c.runningImageId)}; a newer version may migrate that data again as it starts.`;
  if (!c.backupImagePresent || !c.image) return `${what} The older image is no longer on this host.`;
  return `${what} To run the version the backup was taken with: docker tag ${shortId(c.backupImageId)} ${c.image} && docker compose up -d ${c.service}`;
}
