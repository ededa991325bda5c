// What `stackgen generate --diff` shows: each file a run changes, as a unified diff against what is
// in the folder now, so a regeneration (a service added, another proxy) is read before it lands.
// .env is compared by variable, its values never shown: a terminal or a CI log is no place for
// secrets, and a changed value is enough to know.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createTwoFilesPatch } from "diff";
import { envValues } from "../core/parse-env.ts";
import { bold, dim, green, red, yellow } from "./output.ts";
import type { FileAction, PlannedFile } from "./write-bundle.ts";

export interface FileDiff {
  path: string;
  action: FileAction;
  /** Unified diff (`--- a/<path>` / `+++ b/<path>`); for .env, one line per variable added (+),
   *  removed (-) or changed (~), with `***` for every value. */
  diff: string;
}

/** What each action leaves in the file: the planned content, nothing (removed), or the file as it
 *  is (kept). `skip-edited` is shown as what --force would write. */
const DIFFED: Partial<Record<FileAction, true>> = { create: true, update: true, "keep-values": true, "skip-edited": true, "overwrite-edited": true, remove: true };

/** The diffs of the files `plan` changes in `dir`, read before the plan is written. */
export function planDiffs(dir: string, plan: PlannedFile[]): FileDiff[] {
  const diffs: FileDiff[] = [];
  for (const f of plan) {
    if (!DIFFED[f.action]) continue;
    const path = join(dir, f.path);
    const before = existsSync(path) ? readFileSync(path, "utf8") : "";
    const after = f.action === "remove" ? "" : f.content;
    const diff = f.path === ".env" ? envDiff(before, after) : createTwoFilesPatch(`a/${f.path}`, `b/${f.path}`, before, after, undefined, undefined, { context: 3 }).replace(/^=+\n/, "");
    diffs.push({ path: f.path, action: f.action, diff });
  }
  return diffs;
}

/** .env by variable: which were added, removed or changed; values as `***` (empty ones as empty). */
export function envDiff(before: string, after: string): string {
  const [old, now] = [envValues(before), envValues(after)];
  const shown = (value: string) => (value === "" ? "" : "***");
  const lines = ["--- a/.env", "+++ b/.env"];
  for (const [key, value] of now) {
    if (!old.has(key)) lines.push(`+${key}=${shown(value)}`);
    else if (old.get(key) !== value) lines.push(`~${key}=${shown(value)} (value changed)`);
  }
  for (const key of old.keys()) if (!now.has(key)) lines.push(`-${key}`);
  if (lines.length === 2) lines.push(" (no variable added, removed or changed: comments only)");
  return `${lines.join("\n")}\n`;
}

/** The diffs for a terminal: additions green, removals red, changed variables yellow, hunks dim. */
export function renderDiffs(diffs: FileDiff[]): string {
  const paint = (line: string) =>
    line.startsWith("+++") || line.startsWith("---") ? bold(line)
    : line.startsWith("+") ? green(line)
    : line.startsWith("-") ? red(line)
    : line.startsWith("~") ? yellow(line)
    : line.startsWith("@@") ? dim(line)
    : line;
  return diffs.map((d) => d.diff.trimEnd().split("\n").map(paint).join("\n")).join("\n\n");
}
