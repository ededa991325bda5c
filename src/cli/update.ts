// stackgen update: pull all images, restart in dependency order, roll back when health fails.
import { shellWord } from "../core/paths.ts";
import { defineCommand } from "citty";
import { withStackLock } from "../docker/stack-lock.ts";
import { dirArg, ensureStackRunning, jsonArg, openCompose, openStack, timeoutMs } from "../docker/cli-support.ts";
import { dryRunUpdate, notRunningNote, quitUpdateNote, runUpdate, stillNamedNote, type UpdateResult } from "../docker/update.ts";
import { INTERRUPTED_EXIT } from "../errors.ts";
import { withDeferredInterrupts } from "./interrupt.ts";
import { log, printJson, printText, progress } from "./output.ts";

const short = (digest: string) => (digest.startsWith("sha256:") ? digest.slice(7, 19) : digest || "(none)");

export function renderUpdate(r: UpdateResult): string {
  const lines: string[] = [];
  // Rolled back: the new images ran and failed, the services are on the old ones again.
  const verb = r.dryRun ? "Would update" : r.rolledBack ? "Tried" : "Updated";
  for (const u of r.updated) lines.push(`${verb} ${u.service} (${u.oldImage ? `${u.oldImage} -> ${u.image}` : u.image}): ${short(u.oldDigest)} -> ${short(u.newDigest)}`);
  for (const f of r.failed ?? []) lines.push(`Could not check ${f.service} (${f.image}): ${f.error}`);
  for (const u of r.unknown ?? []) lines.push(`Cannot tell without pulling whether ${u.service} (${u.image}) changed: ${u.reason}`);
  if (r.unchanged.length > 0) lines.push(`Unchanged: ${r.unchanged.join(", ")}`);
  lines.push(r.restarted.length > 0 ? `${r.dryRun ? "Would restart" : "Restarted"}: ${r.restarted.join(", ")}` : "Nothing to restart");
  if (r.unhealthyBefore) lines.push(`Unhealthy before the update, same image: ${r.unhealthyBefore.join(", ")} (${r.dryRun ? "would be started" : "started"} again, not waited for)`);
  if (r.unpaused) lines.push(`Paused before, running now (the stop ended the pause): ${r.unpaused.join(", ")}`);
  if (r.notInCompose) lines.push(`Not in the compose files as compose reads them now (a profile not enabled?), not updated: ${r.notInCompose.join(", ")}`);
  if (r.backup) lines.push(`Backup of the stack before the update: ${r.backup}`);
  if (r.rolledBack) lines.push(`Rolled back ${r.rolledBack.services.join(", ")}: ${r.rolledBack.reason}`);
  return lines.join("\n");
}

/** After a rollback: why, where the data stands, and what is left for the user to do. */
export function rollbackMessage(r: NonNullable<UpdateResult["rolledBack"]>, backup?: { file: string; dir: string }): string {
  const data = !r.newImagesStarted
    ? " The new images never started, so the data is as it was."
    : backup
      // With --dir: pasted in another folder, the command would look for the stack there.
      ? ` If the new version changed the data, \`stackgen backup restore ${shellWord(backup.file)} --dir ${shellWord(backup.dir)}\` brings back the data from before the update${r.stillNamed?.length ? " (its config files were copied after your change, so they name the new version too)" : ""}.`
      : " The new version may have changed its data before it failed (a database migration), and this update made no backup: if the old version misbehaves on it, restore the newest backup from before the update (`stackgen backup list`). `stackgen update --backup` makes one first.";
  return `Update failed: ${r.reason}. Rolled back ${r.services.join(", ")} to the previous images${r.recovered ? "" : ", but the stack is still not healthy"}.${data}${stillNamedNote(r.stillNamed)}${notRunningNote(r.notRunning, r.stillNamed)}`;
}

export default defineCommand({
  meta: { name: "update", description: "Pull new images and restart the stack in dependency order, rolling back on failure" },
  args: {
    dir: dirArg,
    "dry-run": { type: "boolean", description: "Ask the registries for new digests and change nothing", default: false },
    backup: { type: "boolean", description: "Back up volumes and config (stack stopped) before the new images start", default: false },
    json: jsonArg,
    timeout: { type: "string", description: "Seconds each layer may take to start (compose waits for the one-shot jobs it runs) and again to become healthy", default: "300" },
  },
  async run({ args }) {
    const wait = timeoutMs(args.timeout);
    const { stack, engine } = await openStack(args.dir);
    ensureStackRunning((await engine.listProjectContainers(stack.project)).length, stack.project);
    const compose = await openCompose(stack);
    const model = await compose.config();
    const options = { timeoutMs: wait, progress, backup: args.backup };
    if (args["dry-run"] && args.backup) log.warn("--backup has no effect with --dry-run: a dry run changes nothing, so it takes no backup.");
    let interrupted = false;
    const result = args["dry-run"]
      ? await dryRunUpdate(engine, stack, compose, model, options)
      : await withDeferredInterrupts(
          "the update",
          async (signal) => {
            const r = await withStackLock(stack.dir, "update", () => runUpdate(engine, stack, compose, model, { ...options, signal }), (note) => log.warn(note));
            interrupted = signal.aborted;
            return r;
          },
          () => quitUpdateNote(stack.project, model.services.map((s) => s.name)),
        );
    if (args.json) printJson(result);
    else printText(renderUpdate(result));
    if (result.rolledBack) {
      log.error(rollbackMessage(result.rolledBack, result.backup ? { file: result.backup, dir: stack.dir } : undefined));
      process.exitCode = interrupted ? INTERRUPTED_EXIT : 1;
    } else if (result.failed && result.failed.length > 0) {
      log.error(`Could not ask the registry about ${result.failed.map((f) => f.image).join(", ")}.`);
      process.exitCode = 1;
    }
    // The plan cannot be carried out as things stand: a script's `update --dry-run && update` stops.
    if (result.wouldRefuse) {
      log.error(`The update would refuse (${result.wouldRefuse.code}): ${result.wouldRefuse.message}`);
      process.exitCode = 1;
    }
  },
});

