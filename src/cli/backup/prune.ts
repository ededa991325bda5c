// stackgen backup prune: keep the newest N backups of the stack, delete the older ones.
// Scheduled `backup create` runs fill a disk; this is their retention. It deletes only archives
// that verify and belong to this stack, shows what it would do with --dry-run, and asks first.
import { rmSync } from "node:fs";
import { defineCommand } from "citty";
import { usageError } from "../../errors.ts";
import { defaultBackupDir } from "../../docker/backup.ts";
import { listBackups, planPrune, type ListedBackup } from "../../docker/backup-list.ts";
import { backupFolder, backupFolderArg, dirArg, jsonArg } from "../../docker/cli-support.ts";
import { formatBytes } from "../../docker/format.ts";
import { loadStack } from "../../docker/stack.ts";
import { confirmOrAbort, requireYesWithoutTerminal } from "../confirm.ts";
import { plural, printJson, printText, progress, visible } from "../output.ts";

/** --keep: a whole number of backups, at least 1 (pruning everything is never a retention). */
function keepCount(value: unknown): number {
  if (value === undefined || value === "") throw usageError("--keep is required: how many of the newest backups to keep (1 or more).");
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw usageError(`--keep must be a whole number of backups, 1 or more, got "${value}".`);
  return n;
}

const brief = (b: ListedBackup) => ({ name: b.name, file: b.file, createdAt: b.createdAt, size: b.size, ...(b.kind ? { kind: b.kind } : {}) });
/** A file name is anyone's to choose: an escape sequence in it is shown as \x1b (see visible). */
const line = (b: ListedBackup) => `  ${b.createdAt}  ${formatBytes(b.size).padStart(9)}  ${visible(b.name)}${b.kind ? `  (${b.kind} safety backup)` : ""}`;
/** "the newest 2", or "the newest 2 of each kind" when safety backups are among them. */
const newest = (keep: number, backups: ListedBackup[]) => `the newest ${keep}${backups.some((b) => b.kind) ? " of each kind (backups, and each kind of safety backup)" : ""}`;

export default defineCommand({
  meta: { name: "prune", description: "Delete all but the newest --keep backups of the stack (only archives that verify and are this stack's)" },
  args: {
    keep: { type: "string", valueHint: "n", description: "Required: how many of the newest backups to keep (1 or more; safety backups of restore and update --backup are counted apart, per kind)" },
    dir: dirArg,
    output: backupFolderArg,
    "dry-run": { type: "boolean", description: "Show what would be deleted, delete nothing", default: false },
    yes: { type: "boolean", description: "Do not ask for confirmation", default: false },
    json: jsonArg,
  },
  async run({ args }) {
    const keep = keepCount(args.keep);
    const stack = loadStack(args.dir);
    const directory = backupFolder(args.output, defaultBackupDir(stack.dir));
    const plan = planPrune(await listBackups(directory, progress), stack.project, keep);
    const dryRun = args["dry-run"];
    if (!dryRun && plan.removed.length > 0) {
      requireYesWithoutTerminal(args.yes, `Prune deletes ${plural(plan.removed.length, "backup")}`);
      await confirmOrAbort(args.yes, `Delete ${plural(plan.removed.length, "backup")} of "${stack.project}" older than ${newest(keep, [...plan.kept, ...plan.removed])}?`, "Prune cancelled; nothing was deleted.");
      for (const b of plan.removed) rmSync(b.file, { force: true });
    }
    const freed = plan.removed.reduce((sum, b) => sum + b.size, 0);
    if (args.json) {
      printJson({
        directory,
        keep,
        dryRun,
        removed: plan.removed.map(brief),
        kept: plan.kept.map(brief),
        untouched: plan.untouched.map((b) => ({ ...brief(b), reason: b.problem ?? `belongs to project ${b.project}` })),
        freedBytes: dryRun ? 0 : freed,
      });
      return;
    }
    const text: string[] = [];
    if (plan.removed.length === 0) text.push(`Nothing to delete: ${plural(plan.kept.length, "backup")} of "${stack.project}" in ${visible(directory)}, keeping ${newest(keep, plan.kept)}.`);
    else text.push(`${dryRun ? "Would delete" : "Deleted"} ${plural(plan.removed.length, "backup")} (${formatBytes(freed)}):`, ...plan.removed.map(line), `Kept ${newest(keep, [...plan.kept, ...plan.removed])}:`, ...plan.kept.map(line));
    if (plan.untouched.length > 0) {
      text.push(`Left alone (not this stack's, or not verifiable):`, ...plan.untouched.map((b) => `${line(b)}  (${visible(b.problem ?? `project ${b.project}`)})`));
    }
    printText(text.join("\n"));
  },
});
