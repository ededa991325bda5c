// On an update the platform already holds the stack's variables. What goes over them:
// - variables only the platform has (added there by the user) stay;
// - for variables both have, the bundle's value wins: the user's bundle is the source of truth;
// - except when the bundle was generated just now (the API relay): its secrets are new, and
//   pushing them would lock services out of the data their old passwords protect. Then every
//   value the platform has set stays, and only variables it lacks (or holds empty) are pushed.
import type { EnvVar } from "./types.ts";
import { parseEnvText } from "./parse-env.ts";

/** A platform's variable: its value, or undefined when the platform does not show it (a token
 *  without the right to read secrets). A hidden value counts as set. */
export type PlatformEnv = Map<string, string | undefined>;

const isSet = (platform: PlatformEnv, key: string) => platform.has(key) && platform.get(key) !== "";

/** The bundle's variables to push, and the names whose platform value stays. */
export function variablesToPush(ours: EnvVar[], platform: PlatformEnv, keepPlatformValues: boolean): { push: EnvVar[]; kept: string[] } {
  if (!keepPlatformValues) return { push: ours, kept: [] };
  const kept = ours.filter((v) => isSet(platform, v.key)).map((v) => v.key);
  return { push: ours.filter((v) => !isSet(platform, v.key)), kept };
}

/** A dotenv value written so `parseEnvText` (and dotenv) read it back unchanged. */
function envValue(value: string): string {
  if (/^[A-Za-z0-9_./:@+,=%-]*$/.test(value)) return value;
  if (!/['\n]/.test(value)) return `'${value}'`;
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\$/g, "\\$").replace(/\n/g, "\\n")}"`;
}

/** The whole env text for a platform that replaces it in one go (Dokploy): the bundle's text with
 *  kept values put back, then the platform-only variables. */
export function envTextForUpdate(ourText: string, platformText: string, keepPlatformValues: boolean): { text: string; kept: string[]; carried: string[] } {
  const platform: PlatformEnv = new Map(parseEnvText(platformText).map((v) => [v.key, v.value]));
  const ours = parseEnvText(ourText);
  const { kept } = variablesToPush(ours, platform, keepPlatformValues);
  const keep = new Set(kept);
  let text = ourText;
  if (keep.size) {
    // Our own generated .env has one single-line `KEY=value` per variable.
    text = ourText
      .split("\n")
      .map((line) => {
        const key = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=/.exec(line.trim())?.[1];
        return key !== undefined && keep.has(key) ? `${key}=${envValue(platform.get(key)!)}` : line;
      })
      .join("\n");
  }
  const mine = new Set(ours.map((v) => v.key));
  const carried = [...platform.keys()].filter((k) => !mine.has(k));
  if (carried.length) {
    text = `${text.replace(/\n*$/, "\n")}\n# Kept from the platform (not in the bundle)\n${carried.map((k) => `${k}=${envValue(platform.get(k)!)}`).join("\n")}\n`;
  }
  return { text, kept, carried };
}
