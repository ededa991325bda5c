// On an update the platform already holds the stack's variables. What goes over them:
// - variables only the platform has (added there by the user) stay;
// - for variables both have, the bundle's value wins: the user's bundle is the source of truth;
// - except when the bundle was generated just now (the API relay): its secrets are new, and
//   pushing them would lock services out of the data their old passwords protect. Then every
//   value the platform has set stays, and only variables it lacks (or holds empty) are pushed.
//   A signed API key pushed beside the secret it is signed with, which the platform keeps, is
//   signed again with the platform's value (or not sent when that value is hidden): a key that
//   does not match the running stack's secret is refused by it.
import type { EnvVar } from "./types.ts";
import { parseEnvText } from "../core/parse-env.ts";
import { dokployEntries, dokployEnvText } from "./dokploy-env.ts";
import type { DerivedSecret } from "../core/generate/secrets.ts";

/** A platform's variable: its value, or undefined when the platform does not show it (a token
 *  without the right to read secrets). A hidden value counts as set. */
export type PlatformEnv = Map<string, string | undefined>;

const isSet = (platform: PlatformEnv, key: string) => platform.has(key) && platform.get(key) !== "";

/** The bundle's variables to push, and the names whose platform value stays. */
export function variablesToPush(ours: EnvVar[], platform: PlatformEnv, keepPlatformValues: boolean, derived: readonly DerivedSecret[] = []): { push: EnvVar[]; kept: string[] } {
  if (!keepPlatformValues) return { push: ours, kept: [] };
  const kept = ours.filter((v) => isSet(platform, v.key)).map((v) => v.key);
  const signed = signedWithKept(derived, new Set(kept), (key) => platform.get(key));
  const push = ours.filter((v) => !isSet(platform, v.key) && signed.get(v.key) !== null).map((v) => (signed.has(v.key) ? { key: v.key, value: signed.get(v.key)! } : v));
  return { push, kept };
}

/** The derived secrets that are pushed while their source secret stays on the platform: their
 *  value signed with the platform's, or null when the platform hides it (then not sent). */
function signedWithKept(derived: readonly DerivedSecret[], kept: ReadonlySet<string>, platformValue: (key: string) => string | undefined): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const d of derived) {
    if (kept.has(d.name) || !kept.has(d.from)) continue;
    const value = platformValue(d.from);
    out.set(d.name, value ? d.derive(value) : null);
  }
  return out;
}

/** The whole env text for a platform that replaces it in one go (Dokploy): the bundle's text,
 *  with the platform's own lines for the values it keeps, then the platform-only variables.
 *  Platform lines are copied as written, never parsed and re-escaped: a value must reach the
 *  platform's parser exactly as before. */
export function envTextForUpdate(ourText: string, platformText: string, keepPlatformValues: boolean, derived: readonly DerivedSecret[] = []): { text: string; kept: string[]; carried: string[] } {
  const platform = dokployEntries(platformText);
  const ours = new Set(parseEnvText(ourText).map((v) => v.key));
  const kept = keepPlatformValues ? [...ours].filter((k) => platform.has(k) && platform.get(k)!.value.trim() !== "") : [];
  const keep = new Set(kept);
  const signed = signedWithKept(derived, keep, (key) => platform.get(key)?.value);
  // Statement by statement (a user's bundle may hold more than one on a line): a kept value
  // takes the platform's line as written, a re-signed key its new value.
  let text = dokployEnvText(ourText, (s) => (keep.has(s.key) ? { line: platform.get(s.key)!.source } : signed.get(s.key) ? { value: signed.get(s.key)! } : undefined));
  const carried = [...platform.keys()].filter((k) => !ours.has(k));
  if (carried.length) {
    text = `${text.replace(/\n*$/, "\n")}\n# Kept from the platform (not in the bundle)\n${carried.map((k) => platform.get(k)!.source).join("\n")}\n`;
  }
  return { text, kept, carried };
}
