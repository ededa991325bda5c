// stackgen backup create: config files + every named volume in one .tar.gz with a manifest.
import { defineCommand } from "citty";
import { backupInFlight, composeAsItRuns, createBackup, quitBackupNote, type CreateResult } from "../../docker/backup-create.ts";
import { dirArg, jsonArg, openCompose, openStack } from "../../docker/cli-support.ts";
import { formatBytes } from "../../docker/format.ts";
import { usageError } from "../../errors.ts";
import { withStackLock } from "../../docker/stack-lock.ts";
import { withDeferredInterrupts } from "../interrupt.ts";
import { log, printJson, printText, progress } from "../output.ts";

export function renderCreated(r: CreateResult): string {
  const volumes = r.volumes.length > 0 ? r.volumes.map((v) => `${v.name} (${formatBytes(v.size)})`).join(", ") : "none";
  const lines = [`Backup written: ${r.file} (${formatBytes(r.size)})`, `Volumes: ${volumes}`, `Config files: ${r.files.length}`];
  if (r.paused.length) lines.push(`Paused for the copy of their volumes: ${r.paused.join(", ")}`);
  if (r.writers.length) lines.push("Copied while these containers outside the stack ran with its volumes (a hot copy; stop them for a consistent one):", ...r.writers.map((x) => `  ${x}`));
  if (r.notIncluded.length) lines.push("Not in this backup (copy what you need yourself):", ...r.notIncluded.map((x) => `  ${x}`));
  return lines.join("\n");
}

export default defineCommand({
  meta: { name: "create", description: "Back up the stack's config files and named volumes" },
  args: {
    dir: dirArg,
    output: { type: "string", description: "Folder for the archive (default <dir>/backups)" },
    hot: { type: "boolean", description: "Copy while the services keep running; the databases are paused (frozen, not stopped) while their own volumes are copied", default: false },
    pause: { type: "boolean", description: "With --hot: pause the running databases for the copy of their volumes (--no-pause: copy them while they write, which may not restore cleanly)", default: true },
    json: jsonArg,
  },
  async run({ args }) {
    // Said before anything is opened: a flag that would do nothing is a user expecting something else.
    if (!args.pause && !args.hot) throw usageError("--no-pause goes with --hot: without --hot the stack is stopped for the copy, and nothing is paused");
    const { stack, engine } = await openStack(args.dir);
    const { compose, model } = await composeAsItRuns(engine, await openCompose(stack));
    const inFlight = backupInFlight();
    const result = await withDeferredInterrupts(
      "the backup",
      (signal) =>
        withStackLock(stack.dir, "backup create", () =>
          createBackup(stack, engine, compose, model, { outputDir: args.output, hot: args.hot, pauseDatabases: args.pause, inFlight, progress, signal }),
        (note) => log.warn(note)),
      () => quitBackupNote(compose, inFlight, model),
    );
    if (args.json) printJson(result);
    else printText(renderCreated(result));
  },
});
