// Dokploy's env text. Dokploy does not hand the text to compose: it reads it with the `dotenv`
// package, fills in its own `${{…}}` references, and writes every value back as `KEY="…"` (with
// `\`, `"` and `$` escaped) into the .env compose reads. The bundle's .env is written for
// compose, and the two readers differ: the dotenv package takes quoted text literally (compose
// reads `\\`, `\"` and `\$` in double quotes, `$$` unquoted), expands `\n` only in double quotes,
// and reads `A='x' B=2` as one value. So the text goes as written only when the dotenv package
// reads every variable as compose does; otherwise each value is quoted for it.
import { dotenvText, parseEnvText, scanDotenv, type DotenvStatement } from "../core/parse-env.ts";
import { usageError } from "../errors.ts";
import type { EnvVar } from "./types.ts";

/** One assignment as the dotenv package reads it: the line as written, and its value. */
export interface DotenvEntry {
  source: string;
  value: string;
}

// The dotenv package's line pattern: `export`, keys of `\w.-`, `=` or `: `, a value in ', " or `
// quotes (a quote after a backslash does not close it) or the rest of the line up to a `#`.
const DOTENV_LINE = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?$/gm;

/** The variables of an env text as Dokploy reads it (the dotenv package); a later one wins. */
export function dokployEntries(text: string): Map<string, DotenvEntry> {
  const entries = new Map<string, DotenvEntry>();
  for (const m of text.replace(/\r\n?/g, "\n").matchAll(DOTENV_LINE)) {
    const written = (m[2] ?? "").trim();
    let value = written.replace(/^(['"`])([\s\S]*)\1$/gm, "$2");
    if (written.startsWith('"')) value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
    entries.set(m[1]!, { source: m[0].trim(), value });
  }
  return entries;
}

/** `value` written so the dotenv package reads it back exactly: bare when it can be, else in the
 *  first quote it does not contain (double quotes last: there `\n` would become a line break);
 *  null when no form reads back. Never quoted when it ends in a backslash: read alone that works,
 *  but in a text the backslash and the closing quote run on to the next quote that ends a line. */
export function dokployValue(value: string): string | null {
  const forms = value.endsWith("\\") ? [value] : [value, `'${value}'`, `\`${value}\``, `"${value}"`];
  return forms.find((form) => dokployEntries(`K=${form}\n`).get("K")?.value === value) ?? null;
}

/** What Dokploy would fail the deployment over, or read differently from compose, each a line
 *  naming the variables: a `${{` (its own references; an unknown one is an error), a value no
 *  quoting carries through its dotenv reader, a text that reads differently as a whole. */
export function dokployEnvProblems(composeText: string, vars: readonly EnvVar[]): string[] {
  const refs = vars.filter((v) => v.value.includes("${{")).map((v) => v.key);
  const unquotable = vars.filter((v) => !v.value.includes("${{") && dokployValue(v.value) === null).map((v) => v.key);
  const problems = [
    ...(refs.length ? [`Dokploy reads \${{…}} in a value as a reference to its own variables and fails the deployment on one it does not know: ${refs.join(", ")}`] : []),
    ...(unquotable.length ? [`Dokploy's env reader cannot take these values in any quoting (all of ', " and \`, or a # or spaces with a backslash at the end): ${unquotable.join(", ")}`] : []),
  ];
  if (problems.length) return problems;
  try {
    dokployEnvText(composeText);
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
}

/** Whether Dokploy reads every variable of `text` as compose does (the text can go as written). */
function readAlike(text: string): boolean {
  const theirs = dokployEntries(text);
  const ours = parseEnvText(text);
  return theirs.size === ours.length && ours.every((v) => theirs.get(v.key)?.value === v.value);
}

/** A statement's line for Dokploy: as written when Dokploy reads it alike, else requoted. */
function dokployLine(s: DotenvStatement, value = s.value): string {
  if (value === s.value && dokployEntries(`${s.key}=${s.raw}\n`).get(s.key)?.value === value) return `${s.key}=${s.raw}`;
  return `${s.key}=${dokployValue(value) ?? s.raw}`;
}

/**
 * The bundle's (compose) env text for Dokploy. `replace` may give a statement the platform's own
 * line (kept as written) or a new value. The text goes unchanged when nothing is replaced and
 * Dokploy reads it as compose does; otherwise one statement per line, comments kept.
 */
export function dokployEnvText(composeText: string, replace?: (s: DotenvStatement) => { line: string } | { value: string } | undefined): string {
  const statements = scanDotenv(composeText).filter((s) => s.closed);
  const replaced = new Map(statements.map((s) => [s, replace?.(s)]));
  if ([...replaced.values()].every((r) => r === undefined) && readAlike(composeText)) return composeText;
  const text = dotenvText(statements, (s) => {
    const r = replaced.get(s);
    return r && "line" in r ? r.line : dokployLine(s, r?.value);
  });
  // Each line reads back alone; this holds the whole text to it (a line must not run into the next).
  const read = dokployEntries(text);
  const misread = statements.filter((s) => {
    const r = replaced.get(s);
    return !(r && "line" in r) && read.get(s.key)?.value !== (r?.value ?? s.value);
  });
  const last = new Map(statements.map((s) => [s.key, s]));
  const wrong = [...new Set(misread.filter((s) => last.get(s.key) === s).map((s) => s.key))];
  if (wrong.length) throw usageError(`Dokploy would read these .env values differently from compose: ${wrong.join(", ")}`);
  return text;
}
