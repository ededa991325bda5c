// stackgen backup prune: keep the newest N backups of the stack, and/or the newest of each of the
// last days, weeks and months; delete the others. Scheduled `backup create` runs fill a disk;
// this is their retention. It deletes only archives that verify and belong to this stack, shows
// what it would do with --dry-run, and asks first.
import { rmSync } from "node:fs";
import { defineCommand } from "citty";
import { withStackLock } from "../../docker/stack-lock.ts";
import { usageError } from "../../errors.ts";
import { defaultBackupDir } from "../../docker/backup.ts";
import { listBackups, planPrune, type ListedBackup, type Retention, type RetentionRule } from "../../docker/backup-list.ts";
import { backupFolder, backupFolderArg, dirArg, jsonArg } from "../../docker/cli-support.ts";
import { formatBytes } from "../../docker/format.ts";
import { loadStack } from "../../docker/stack.ts";
import { confirmOrAbort, requireYesWithoutTerminal } from "../confirm.ts";
import { log, plural, printJson, printText, progress, visible, visibleValue } from "../output.ts";

const RULE_FLAGS = { last: "keep", daily: "keep-daily", weekly: "keep-weekly", monthly: "keep-monthly" } as const;
const UNIT = { daily: "day", weekly: "week", monthly: "month" } as const;

/** The retention the flags ask for: each a whole number, 1 or more, and at least one given
 *  (pruning everything is never a retention). */
function retentionOf(args: Record<string, unknown>): Retention {
  const retention: Retention = {};
  for (const [rule, flag] of Object.entries(RULE_FLAGS) as [keyof Retention, string][]) {
    const value = args[flag];
    if (value === undefined) continue;
    const n = Number(value);
    if (value === "" || !Number.isInteger(n) || n < 1) throw usageError(`--${flag} must be a whole number, 1 or more, got "${value}".`);
    retention[rule] = n;
  }
  if (Object.keys(retention).length === 0) {
    throw usageError("--keep, --keep-daily, --keep-weekly or --keep-monthly is required: how many of the newest backups to keep, or for how many days, weeks or months to keep the newest of each (1 or more).");
  }
  return retention;
}

/** "the newest 3, and the newest of each of the last 7 days and 4 weeks that have one". */
function describe(retention: Retention): string {
  const periods = (["daily", "weekly", "monthly"] as const).filter((rule) => retention[rule]).map((rule) => plural(retention[rule]!, UNIT[rule]));
  const list = periods.length > 1 ? `${periods.slice(0, -1).join(", ")} and ${periods.at(-1)}` : periods[0];
  return [retention.last ? `the newest ${retention.last}` : "", list ? `the newest of each of the last ${list} that have one` : ""].filter(Boolean).join(", and ");
}

const brief = (b: ListedBackup) => ({ name: b.name, file: b.file, createdAt: b.createdAt, size: b.size, ...(b.kind ? { kind: b.kind } : {}) });
/** A file name is anyone's to choose: an escape sequence in it is shown as \x1b (see visible). */
const line = (b: ListedBackup, why?: RetentionRule[]) =>
  `  ${b.createdAt}  ${formatBytes(b.size).padStart(9)}  ${visibleValue(b.name)}${b.kind ? `  (${b.kind} safety backup)` : ""}${why ? `  [${why.join(", ")}]` : ""}`;
/** The retention said, "of each kind" when safety backups are among them. */
const newest = (retention: Retention, backups: ListedBackup[]) => {
  if (!backups.some((b) => b.kind)) return describe(retention);
  return `${describe(retention)}${Object.keys(retention).length === 1 && retention.last ? "" : ","} of each kind (backups, and each kind of safety backup)`;
};

export default defineCommand({
  meta: { name: "prune", description: "Delete the stack's backups no --keep rule keeps (only archives that verify and are this stack's)" },
  args: {
    keep: { type: "string", valueHint: "n", description: "How many of the newest backups to keep (1 or more; safety backups of restore and update --backup are counted apart, per kind, for every rule)" },
    "keep-daily": { type: "string", valueHint: "days", description: "Keep the newest backup of each of the last <days> days that have one (UTC)" },
    "keep-weekly": { type: "string", valueHint: "weeks", description: "Keep the newest backup of each of the last <weeks> ISO weeks that have one" },
    "keep-monthly": { type: "string", valueHint: "months", description: "Keep the newest backup of each of the last <months> months that have one; at least one --keep rule is required" },
    dir: dirArg,
    output: backupFolderArg,
    "dry-run": { type: "boolean", description: "Show what would be deleted, delete nothing", default: false },
    yes: { type: "boolean", description: "Do not ask for confirmation", default: false },
    json: jsonArg,
  },
  async run({ args }) {
    const retention = retentionOf(args);
    const stack = loadStack(args.dir);
    const directory = backupFolder(args.output, defaultBackupDir(stack.dir));
    const dryRun = args["dry-run"];
    const plan = planPrune(await listBackups(directory, progress), stack.project, retention);
    if (!dryRun && plan.removed.length > 0) {
      requireYesWithoutTerminal(args.yes, `Prune deletes ${plural(plan.removed.length, "backup")}`);
      await confirmOrAbort(args.yes, `Delete ${plural(plan.removed.length, "backup")} of "${stack.project}" not kept by the rules (${newest(retention, [...plan.kept, ...plan.removed])})?`, "Prune cancelled; nothing was deleted.");
      // Deleted only while no backup, restore or update of the stack runs (a restore may still
      // read the archive it restores); the archives are checked before, without holding anyone up.
      await withStackLock(stack.dir, "backup prune", async () => {
        for (const b of plan.removed) rmSync(b.file, { force: true });
      }, (note) => log.warn(note));
    }
    const freed = plan.removed.reduce((sum, b) => sum + b.size, 0);
    if (args.json) {
      printJson({
        directory,
        keep: retention.last ?? null,
        retention,
        dryRun,
        removed: plan.removed.map(brief),
        kept: plan.kept.map((b) => ({ ...brief(b), keptBy: plan.keptBy.get(b) })),
        untouched: plan.untouched.map((b) => ({ ...brief(b), reason: b.problem ?? `belongs to project ${b.project}` })),
        freedBytes: dryRun ? 0 : freed,
      });
      return;
    }
    const text: string[] = [];
    if (plan.removed.length === 0) text.push(`Nothing to delete: ${plural(plan.kept.length, "backup")} of "${stack.project}" in ${visible(directory)}, keeping ${newest(retention, plan.kept)}.`);
    else text.push(`${dryRun ? "Would delete" : "Deleted"} ${plural(plan.removed.length, "backup")} (${formatBytes(freed)}):`, ...plan.removed.map((b) => line(b)), `Kept ${newest(retention, [...plan.kept, ...plan.removed])}:`, ...plan.kept.map((b) => line(b, plan.keptBy.get(b))));
    if (plan.untouched.length > 0) {
      text.push(`Left alone (not this stack's, or not verifiable):`, ...plan.untouched.map((b) => `${line(b)}  (${visibleValue(b.problem ?? `project ${b.project}`)})`));
    }
    printText(text.join("\n"));
  },
});
