// Regenerating into an existing bundle must keep the user's .env values (database passwords are
// baked into volumes). Pure: takes the old and new file texts, returns the merged text.

import { parseEnvText, scanDotenv } from "./parse-env.ts";
import { validationError } from "../errors.ts";
import { envValue, isGeneratedEnvComment } from "./generate/env.ts";
import type { DerivedSecret } from "./generate/secrets.ts";

/** An assignment line: its key and value (a kept line may start with the user's `export `, and a
 *  kept quoted value may span lines: `s`). */
const LINE = /^(?:export[\t ]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;

export interface EnvMerge {
  text: string;
  kept: string[];
  added: string[];
  /** Secrets the old file left empty (a `--no-secrets` bundle) that now get generated values. */
  filled: string[];
  /** Keys only the old file has (kept at the end unless left out, reported). */
  extra: string[];
  /** Settings the old file held exactly as the previous input made them, now made differently
   *  (a domain or proxy added, a port moved), and settings given explicitly this time
   *  (`options.follow`): they take the new value. */
  updated: string[];
  /** Values of the old file that do not have the shape their variable must have (catalog
   *  `pattern`): the generated value is used instead. */
  refused: string[];
}

export interface MergeOptions {
  /** false: variables only the old file has (values from someone else's export) are left out
   *  and only listed in `extra`. */
  keepExtra?: boolean;
  /** The .env the bundle's previous input (its stackgen.json) makes today, and the names of the
   *  settings made from the stack's addresses (`publicUrl` variables). Such a value the old file
   *  still holds exactly as that input made it was never the user's choice: it takes the new
   *  value, so adding a domain moves public URLs off localhost. Every other value stays. */
  previous?: { env: string; addressNames: ReadonlySet<string> };
  /** Variables whose value must match a pattern (catalog `pattern`): another value is not kept. */
  patterns?: ReadonlyMap<string, RegExp>;
  /** Settings asked for explicitly on this run (`--core-version`): the newest word on them, so
   *  they take the generated value whatever the old file holds. Never secrets. */
  follow?: ReadonlySet<string>;
}

/** `export ` (as the user wrote it) when the line has it, else "". */
const exportPrefix = (line: string) => /^export[\t ]+/.exec(line)?.[0] ?? "";

/** A derived secret (an API key signed with another secret) must match the secret the stack
 *  keeps: one that is new, or whose secret is the kept old one, is signed again with the value
 *  that secret ends up with. Both kept: left as the user has them. */
function signAgain(lines: string[], derived: readonly DerivedSecret[], kept: ReadonlySet<string>): void {
  const lineOf = (name: string) => lines.findIndex((line) => LINE.exec(line)?.[1] === name);
  for (const d of derived) {
    if (kept.has(d.name) && kept.has(d.from)) continue;
    const at = lineOf(d.name);
    const from = lineOf(d.from);
    if (at < 0 || from < 0) continue;
    // The kept value may be quoted or span lines: read it as compose would.
    const value = parseEnvText(lines[from]!).find((v) => v.key === d.from)?.value ?? "";
    if (value !== "") lines[at] = `${exportPrefix(lines[at]!)}${d.name}=${envValue(d.derive(value))}`;
  }
}

const KEPT_HEADER = "# --- Kept from the previous .env (not used by the generated stack) ---";
const NOTES_HEADER = "# --- Your notes from the previous .env ---";

/** What the user wrote in a .env besides values: comment lines that are not ours (see
 *  isGeneratedEnvComment), by the variable they sit right above, and the lines that sit above
 *  none (a note after a blank line, a bare `KEY` compose takes from its environment, a line
 *  compose cannot read), in order. Lines inside a quoted value are the value's. */
function userNotes(text: string, ours: ReadonlySet<string>): { above: Map<string, string[]>; loose: string[] } {
  const src = (text.startsWith("\uFEFF") ? text.slice(1) : text).replace(/\r\n/g, "\n");
  const lines = src.split("\n");
  const taken = new Array<boolean>(lines.length).fill(false);
  const above = new Map<string, string[]>();
  const isComment = (i: number) => lines[i]!.trim().startsWith("#");
  const mine = (line: string) => !ours.has(line.trim()) && !isGeneratedEnvComment(line);
  for (const s of scanDotenv(src)) {
    const first = s.line - 1;
    const last = first + (s.raw.match(/\n/g)?.length ?? 0);
    for (let i = first; i <= last; i++) taken[i] = true;
    let top = first;
    while (top > 0 && !taken[top - 1] && isComment(top - 1)) taken[--top] = true;
    const notes = lines.slice(top, first).filter(mine);
    if (notes.length) above.set(s.key, [...(above.get(s.key) ?? []), ...notes]);
  }
  const loose = lines.filter((line, i) => !taken[i] && line.trim() !== "" && mine(line));
  return { above, loose };
}

interface EnvEntry {
  /** Raw value text as written, quotes included. */
  value: string;
  /** `export ` as written before the key, or "". */
  prefix: string;
  /** The comment lines directly above the line (no blank line between), our own header excluded. */
  comments: string[];
}

/** KEY -> its entry, read as compose reads the file (see parse-env.ts): a quoted value may span
 *  lines (a key or certificate) and its raw text keeps them; an assignment after a closing quote
 *  on the same line is an entry of its own. */
function readEnvFile(text: string): Map<string, EnvEntry> {
  const out = new Map<string, EnvEntry>();
  for (const s of scanDotenv(text)) {
    // Compose refuses such a file, and a value that swallows the rest of it, written back among
    // other lines, would close on a later quote and make whatever follows an assignment.
    if (!s.closed) throw validationError(`The .env whose values are kept has a quoted value that never closes (${s.key}, line ${s.line}); Docker Compose cannot read that file either. Close the quote, then run this again.`);
    out.set(s.key, { value: s.raw, prefix: s.exported ? "export " : "", comments: s.comments.filter((c) => c !== KEPT_HEADER) });
  }
  return out;
}

/** KEY -> raw value text (as written, quotes included) of a dotenv file. */
export function parseEnvValues(text: string): Map<string, string> {
  return new Map([...readEnvFile(text)].map(([key, entry]) => [key, entry.value]));
}

/** A secret of someone else's file (keepExtra false) is taken only in the characters generated
 *  ones have (letters, digits, `-_.`; JWTs included), read as compose reads it: the compose file puts secrets
 *  into connection URLs (`redis://:${REDIS_PASSWORD}@redis:6379`), where an `@`, `/` or `#` of a
 *  crafted value would send the service's credentials to another host. */
const FOREIGN_SECRET = /^[A-Za-z0-9._-]*$/;

/** A raw value as compose reads it (quotes, an inline comment). */
const valueRead = (key: string, raw: string) => parseEnvText(`${key}=${raw}`).find((v) => v.key === key)?.value ?? raw;

/** Empty as written: `KEY=`, `KEY=""` or `KEY=''`. */
const isEmptyValue = (raw: string) => /^\s*(""|'')?\s*$/.test(raw);

/** `secrets` names the generated secret variables: an empty old value of one is replaced by the
 *  new value (a stack must not start with an empty password); every other old value is kept,
 *  except settings that only followed the previous input (`options.previous`). Variables the
 *  generated file lacks are kept at the end (see `options.keepExtra`). */
export function mergeEnv(existing: string, generated: string, secrets: ReadonlySet<string> = new Set(), derived: readonly DerivedSecret[] = [], options: MergeOptions = {}): EnvMerge {
  const old = readEnvFile(existing);
  const ours = new Set([...generated.split("\n"), ...(options.previous?.env.split("\n") ?? [])].filter((line) => line.startsWith("#")));
  const notes = userNotes(existing, ours);
  const previous = options.previous === undefined ? undefined : readEnvFile(options.previous.env);
  const addressNames = options.previous?.addressNames ?? new Set<string>();
  // Whole values (a quoted one may span lines), to compare with the old ones.
  const made = previous === undefined && !options.follow?.size ? undefined : readEnvFile(generated);
  const kept: string[] = [];
  const added: string[] = [];
  const filled: string[] = [];
  const updated: string[] = [];
  const refused: string[] = [];
  const seen = new Set<string>();
  const lines = generated.split("\n").map((line) => {
    const m = LINE.exec(line);
    if (!m) return line;
    seen.add(m[1]);
    const before = old.get(m[1]);
    if (!before) {
      added.push(m[1]);
      return line;
    }
    // A new value still goes where the user's was, `export ` and all.
    const replaced = `${before.prefix}${line}`;
    if (secrets.has(m[1]) && isEmptyValue(before.value) && !isEmptyValue(m[2])) {
      filled.push(m[1]);
      return replaced;
    }
    if (options.follow?.has(m[1]) && !secrets.has(m[1])) {
      if (before.value !== made?.get(m[1])?.value) updated.push(m[1]);
      return replaced;
    }
    const shape = options.patterns?.get(m[1]);
    const foreignSecret = shape === undefined && options.keepExtra === false && secrets.has(m[1]);
    // Judged as compose reads the value: `KEY="me@example.com"` is the address, quotes aside.
    if ((shape && !shape.test(valueRead(m[1], before.value))) || (foreignSecret && !FOREIGN_SECRET.test(valueRead(m[1], before.value)))) {
      refused.push(m[1]);
      return replaced;
    }
    const was = addressNames.has(m[1]) && !secrets.has(m[1]) ? previous?.get(m[1]) : undefined;
    if (was !== undefined && was.value === before.value && made?.get(m[1])?.value !== before.value) {
      updated.push(m[1]);
      return replaced;
    }
    kept.push(m[1]);
    return `${before.prefix}${m[1]}=${before.value}`;
  });
  signAgain(lines, derived, new Set(kept));
  const extra = [...old.keys()].filter((k) => !seen.has(k));
  // Someone else's export (keepExtra false) brings values only: its notes are not the user's.
  const ownFile = options.keepExtra !== false;
  // The user's notes on a generated variable stay right above it, under its generated comment.
  const withNotes = ownFile ? lines.flatMap((line) => [...(notes.above.get(LINE.exec(line)?.[1] ?? "") ?? []), line]) : lines;
  if (extra.length && ownFile) {
    // The user's own variables keep every comment written right above them.
    withNotes.push(KEPT_HEADER, ...extra.flatMap((k) => [...old.get(k)!.comments, `${old.get(k)!.prefix}${k}=${old.get(k)!.value}`]), "");
  }
  if (notes.loose.length && ownFile) withNotes.push(NOTES_HEADER, ...notes.loose, "");
  return { text: endingInOneNewline(withNotes.join("\n")), kept, added, filled, extra, updated, refused };
}

/** `text` with its trailing newlines made one. Not /\n+$/: on a kept value of many newlines the
 *  regex tries every start in the run, the square of its length. */
function endingInOneNewline(text: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === "\n") end--;
  return `${text.slice(0, end)}\n`;
}

/** The settings (not secrets) a merge kept from the other file with values other than the ones
 *  generated: what an export (perhaps someone else's) changes beyond its secrets, such as the
 *  gateway image or an endpoint the gateway sends credentials to. */
export function settingsTaken(merge: EnvMerge, generated: string, secrets: ReadonlySet<string>): string[] {
  const made = parseEnvValues(generated);
  const taken = parseEnvValues(merge.text);
  return merge.kept.filter((name) => !secrets.has(name) && taken.get(name) !== made.get(name));
}
