// Dotenv text as Compose v2 reads it: the variables a deploy pushes, the values a regeneration
// keeps, and the COMPOSE_* settings in a stack's .env that day-2 commands honour as compose does.
// Compose reads statements, not lines: after a closing quote the same line may hold another
// assignment, and in both kinds of quotes a backslash keeps the next character (a quote too)
// from closing the value. Reading it any other way lets a value hide an assignment from us that
// compose then obeys (a COMPOSE_PROJECT_NAME smuggled into an export's .env).

export interface EnvVar {
  key: string;
  value: string;
}

/** One assignment as compose reads it. */
export interface DotenvStatement {
  key: string;
  /** The value as written: quotes included, one quoted value may span lines; an unquoted one
   *  is the rest of its line (an inline comment included, which compose drops). `KEY=<raw>` on
   *  a line of its own reads back to the same value. */
  raw: string;
  /** The value compose sees: escapes and `$$` read as Compose reads them; `${VAR}` references
   *  are left as written (Compose would fill them from its environment). */
  value: string;
  /** What Compose interpolates (unquoted and double-quoted values): escapes read, `$$` and `\$`
   *  kept as `$$`; absent for single-quoted values, which Compose takes as written. */
  template?: string;
  /** The comment lines directly above the assignment (no blank line between). */
  comments: string[];
  /** False for a quote that never closes: Compose refuses the whole file. */
  closed: boolean;
  /** The line the assignment starts on (1-based). */
  line: number;
  /** Written `export KEY=...` (a file also sourced by a shell): kept so when it is written back. */
  exported?: boolean;
}

/** Spaces that are not line breaks, as compose's dotenv parser counts them. */
const SPACE = /[\t\v\f\r \u0085\u00a0]/;
/** `export`, a key (letters, digits, `_.-[]`), and its separator: `=`, `:` or a line break. */
const KEY = /(export[\t ]+)?([\p{L}\p{N}_.\-[\]]+)[\t\v\f\r ]*([=:\n])/uy;
/** Escapes compose expands in a double-quoted value, and `$$`, its literal `$`. */
const ESCAPE = /\\(?:[abfnrtv$"\\]|0\d{0,3})|\$\$/g;
/** `$$` in an unquoted value. */
const DOLLARS = /\$\$/g;
const ESCAPED: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", $: "$", '"': '"', "\\": "\\" };

/** The characters of a quoted value that starts at `open` (the quote) and the index of its
 *  closing quote (-1: never closed). A backslash keeps the next character from closing it; a
 *  backslash before the quote itself is dropped, any other one stays (as compose does). */
function quotedValue(src: string, open: number): { chars: string; close: number } {
  const quote = src[open];
  let chars = "";
  let escaped = false;
  for (let i = open + 1; i < src.length; i++) {
    const c = src[i]!;
    if (c === quote) {
      if (!escaped) return { chars, close: i };
      chars += c;
      escaped = false;
    } else if (c === "\\" && !escaped) escaped = true;
    else {
      if (escaped) chars += "\\";
      chars += c;
      escaped = false;
    }
  }
  return { chars: escaped ? `${chars}\\` : chars, close: -1 };
}

// One pass, as Compose's two (escapes make `\\$` a `$$`, then every `$$` is one `$`) come to.
/** Compose's first pass alone: escapes read, `\\$` made `$$`, every `$$` kept for interpolation. */
const readEscapes = (text: string) => text.replace(ESCAPE, (m) => (m === "$$" || m === "\\$" ? "$$" : m[1] === "0" ? octal(m.slice(2)) : ESCAPED[m[1]!]!));
const expandEscapes = (text: string) => text.replace(ESCAPE, (m) => (m === "$$" ? "$" : m[1] === "0" ? octal(m.slice(2)) : ESCAPED[m[1]!]!));
/** `\\0` and up to three digits, as Compose reads them: a byte when they are three octal digits
 *  up to 377, else the digits after a backslash (the 0 dropped). */
const octal = (digits: string) => (/^[0-7]{3}$/.test(digits) && parseInt(digits, 8) <= 0o377 ? String.fromCharCode(parseInt(digits, 8)) : `\\${digits}`);

/**
 * Every assignment of a dotenv text in order (a key set twice appears twice). Comments, blank
 * lines and `KEY` lines without a value (compose takes those from its own environment) are
 * skipped; so is a line compose would refuse (a bad key), where compose fails as a whole.
 */
export function scanDotenv(text: string): DotenvStatement[] {
  // Compose drops a byte-order mark (an editor's) before reading.
  const unmarked = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const src = unmarked.includes("\r\n") ? unmarked.replace(/\r\n/g, "\n") : unmarked;
  let line = 1;
  let counted = 0;
  /** The line of index `at` (counted forward only: statements come in order). */
  const lineOf = (at: number) => {
    for (; counted < at; counted++) if (src[counted] === "\n") line++;
    return line;
  };
  const out: DotenvStatement[] = [];
  let comments: string[] = [];
  let lineStart = true;
  let lineEmpty = true;
  let i = 0;
  const skipLine = () => {
    const end = src.indexOf("\n", i);
    i = end < 0 ? src.length : end;
  };
  while (i < src.length) {
    const c = src[i]!;
    if (c === "\n") {
      if (lineEmpty) comments = [];
      lineStart = lineEmpty = true;
      i++;
      continue;
    }
    if (SPACE.test(c)) {
      i++;
      continue;
    }
    if (c === "#") {
      const start = i;
      skipLine();
      // A comment after an assignment on the same line belongs to no one.
      if (lineStart) comments.push(src.slice(start, i).trim());
      else comments = [];
      lineEmpty = false;
      continue;
    }
    lineEmpty = false;
    KEY.lastIndex = i;
    const key = KEY.exec(src);
    if (!key || key[3] === "\n") {
      skipLine();
      comments = [];
      continue;
    }
    i = KEY.lastIndex;
    while (i < src.length && src[i] !== "\n" && SPACE.test(src[i]!)) i++;
    const above = lineStart ? comments : [];
    const at = lineOf(key.index);
    comments = [];
    lineStart = false;
    const quote = src[i];
    if (quote === '"' || quote === "'") {
      const { chars, close } = quotedValue(src, i);
      // Never closed: Compose stops there and refuses the file; so does the scan.
      const end = close < 0 ? src.length : close + 1;
      out.push({ key: key[2]!, raw: src.slice(i, end).trimEnd(), value: quote === '"' ? expandEscapes(chars) : chars, ...(quote === '"' ? { template: readEscapes(chars) } : {}), comments: above, closed: close >= 0, line: at, ...(key[1] ? { exported: true } : {}) });
      i = end;
    } else {
      const start = i;
      skipLine();
      const raw = src.slice(start, i).trim();
      const comment = raw.indexOf(" #");
      const text = (comment < 0 ? raw : raw.slice(0, comment)).trimEnd();
      out.push({ key: key[2]!, raw, value: text.replace(DOLLARS, "$"), template: text, comments: above, closed: true, line: at, ...(key[1] ? { exported: true } : {}) });
    }
  }
  return out;
}

/** The values of a dotenv text by name, as compose reads it; a later assignment of a key wins. A
 *  value whose quote never closes (Compose refuses the file) is left out. */
export function envValues(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const s of scanDotenv(text)) if (s.closed) vars.set(s.key, s.value);
  return vars;
}

/** The same variables as a list, in the order they are first set. */
export const parseEnvText = (text: string): EnvVar[] => [...envValues(text)].map(([key, value]) => ({ key, value }));

/** Dotenv text of the statements: each one's comments, then its assignment on a line of its own,
 *  by default `KEY=<raw>` (which every dotenv reader reads as the statement was read). */
export const dotenvText = (statements: readonly DotenvStatement[], assignment = (s: DotenvStatement) => `${s.key}=${s.raw}`): string =>
  statements.map((s) => [...s.comments, assignment(s)].join("\n")).join("\n") + "\n";

/** `$NAME`, `${NAME}` and `${NAME<op>word}` (`:-`, `-`, `:+`, `+`, `:?`, `?`), or `$$`. */
const REFERENCE = /\$\$|\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+?])((?:[^{}]|\{[^{}]*\})*))?\}/g;

/**
 * A statement's value with its references filled in as Compose does from the variables set above
 * it in the same file (`lookup`), and the names it refers to that are not set there (Compose would
 * take those from the environment of the machine it runs on; they stay as written).
 */
export function interpolate(template: string, lookup: (name: string) => string | undefined): { value: string; unset: string[] } {
  const unset: string[] = [];
  const fill = (text: string): string =>
    text.replace(REFERENCE, (whole, bare: string | undefined, name: string | undefined, op: string | undefined, word: string | undefined) => {
      if (whole === "$$") return "$";
      const key = (bare ?? name)!;
      const value = lookup(key);
      if (!op) {
        if (value !== undefined) return value;
        unset.push(key);
        return whole;
      }
      const empty = op.startsWith(":") ? !value : value === undefined;
      if (op.endsWith("-")) return empty ? fill(word ?? "") : value!;
      if (op.endsWith("+")) return empty ? "" : fill(word ?? "");
      // `?`: Compose stops with an error when unset; here it stays as written, for the platform to judge.
      if (empty) {
        unset.push(key);
        return whole;
      }
      return value!;
    });
  return { value: fill(template), unset };
}
