// What a new preview changes against the one on screen before it: the files that are new, changed
// or gone, so adding a service or a proxy shows where it lands. `.env` is compared without its
// generated secrets: every generation makes new ones, which is no change of the stack.
import { envValues } from "../core/parse-env.ts";
import { generatedSecretNames } from "../core/generate/env.ts";
import { isEnvFile } from "./secrets.ts";

export type FileChange = "new" | "changed";

export interface PreviewChanges {
  byPath: Map<string, FileChange>;
  /** Files the previous preview had and this one does not, sorted. */
  removed: string[];
}

/** The variables of a .env text with the generated secrets' values left out. */
function settingsOf(text: string): string {
  const secrets = generatedSecretNames(text);
  return JSON.stringify([...envValues(text)].map(([key, value]) => [key, secrets.has(key) ? "" : value]).sort());
}

export function previewChanges(before: Record<string, string>, after: Record<string, string>): PreviewChanges {
  const byPath = new Map<string, FileChange>();
  for (const [path, text] of Object.entries(after)) {
    const old = before[path];
    if (old === undefined) byPath.set(path, "new");
    else if (isEnvFile(path) ? settingsOf(old) !== settingsOf(text) : old !== text) byPath.set(path, "changed");
  }
  return { byPath, removed: Object.keys(before).filter((path) => !(path in after)).sort() };
}

/** "2 changed, 1 new, 1 removed (skills/n8n/SKILL.md)", or that nothing changed. */
export function describeChanges({ byPath, removed }: PreviewChanges): string {
  const count = (kind: FileChange) => [...byPath.values()].filter((c) => c === kind).length;
  const parts = [count("changed") ? `${count("changed")} changed` : "", count("new") ? `${count("new")} new` : "", removed.length ? `${removed.length} removed (${removed.join(", ")})` : ""].filter(Boolean);
  return parts.length ? `Since the previous preview: ${parts.join(", ")}.` : "Since the previous preview: no file changed (only new secrets).";
}
