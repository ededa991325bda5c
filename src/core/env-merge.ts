// Regenerating into an existing bundle must keep the user's .env values (database passwords are
// baked into volumes). Pure: takes the old and new file texts, returns the merged text.

const LINE = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;
/** A user's line: `KEY=value`, also in the `export KEY=value` form Compose accepts. */
const USER_LINE = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

/** KEY -> raw value text (as written, quotes included) of a dotenv file. */
export function parseEnvValues(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = USER_LINE.exec(line.trim());
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

export interface EnvMerge {
  text: string;
  kept: string[];
  added: string[];
  /** Secrets the old file left empty (a `--no-secrets` bundle) that now get generated values. */
  filled: string[];
  /** Keys only the old file has (kept at the end, reported). */
  extra: string[];
}

const KEPT_HEADER = "# --- Kept from the previous .env (not used by the generated stack) ---";

/** KEY -> the comment lines directly above it (no blank line between), our own header excluded. */
function commentsAbove(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let pending: string[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("#")) {
      if (trimmed !== KEPT_HEADER) pending.push(trimmed);
      continue;
    }
    const m = USER_LINE.exec(trimmed);
    if (m) out.set(m[1], pending);
    pending = [];
  }
  return out;
}

/** Empty as written: `KEY=`, `KEY=""` or `KEY=''`. */
const isEmptyValue = (raw: string) => /^\s*(""|'')?\s*$/.test(raw);

/** `secrets` names the generated secret variables: an empty old value of one is replaced by the
 *  new value (a stack must not start with an empty password); every other old value is kept. */
export function mergeEnv(existing: string, generated: string, secrets: ReadonlySet<string> = new Set()): EnvMerge {
  const old = parseEnvValues(existing);
  const kept: string[] = [];
  const added: string[] = [];
  const filled: string[] = [];
  const seen = new Set<string>();
  const lines = generated.split("\n").map((line) => {
    const m = LINE.exec(line);
    if (!m) return line;
    seen.add(m[1]);
    if (secrets.has(m[1]) && old.has(m[1]) && isEmptyValue(old.get(m[1])!) && !isEmptyValue(m[2])) {
      filled.push(m[1]);
      return line;
    }
    if (old.has(m[1])) {
      kept.push(m[1]);
      return `${m[1]}=${old.get(m[1])}`;
    }
    added.push(m[1]);
    return line;
  });
  const extra = [...old.keys()].filter((k) => !seen.has(k));
  if (extra.length) {
    // The user's own variables keep the comments written right above them.
    const notes = commentsAbove(existing);
    lines.push(KEPT_HEADER, ...extra.flatMap((k) => [...(notes.get(k) ?? []), `${k}=${old.get(k)}`]), "");
  }
  return { text: lines.join("\n").replace(/\n+$/, "\n"), kept, added, filled, extra };
}
