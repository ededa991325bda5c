// Dotenv text as Compose and the platforms read it: the variables a deploy pushes, and the
// COMPOSE_* settings in a stack's .env that day-2 commands honour as compose does.

/** Index in `text` (what follows an opening quote) of the quote that closes it, or -1. In double
 *  quotes a backslash escapes the next character. */
export function findClosingQuote(text: string, quote: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\\" && quote === '"') i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/** The lines of a quoted value that opens on line `at` with `first` (what follows its opening
 *  quote), up to the one holding the closing quote. Each line is searched on its own: searching
 *  the whole gathered value again per line made a long unclosed quote cost the square of its lines
 *  (seconds per request for a 300 KB .env). `end` is the closing quote's index in the last part
 *  (-1: never closed), `last` the index of the last line taken. */
export function quotedLines(first: string, quote: string, lines: readonly string[], at: number): { parts: string[]; end: number; last: number } {
  const parts = [first];
  let end = findClosingQuote(first, quote);
  let last = at;
  while (end < 0 && last + 1 < lines.length) {
    parts.push(lines[++last]!);
    end = findClosingQuote(parts.at(-1)!, quote);
  }
  return { parts, end, last };
}

export interface EnvVar {
  key: string;
  value: string;
}

/** One `KEY=value` (or `export KEY=value`) line, trimmed: the key and the raw rest. */
export const ENV_ASSIGNMENT = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$/;

/**
 * Parse dotenv text: `KEY=value`, `export KEY=value`, comments, single quotes (literal),
 * double quotes (with \n escapes, may span lines). Later keys win, like docker compose.
 */
export function parseEnvText(text: string): EnvVar[] {
  const vars = new Map<string, string>();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = ENV_ASSIGNMENT.exec(line);
    if (!m) continue;
    const key = m[1]!;
    let rest = m[2]!;
    const quote = rest[0];
    if (quote === '"' || quote === "'") {
      // Multi-line values: the lines up to the closing quote.
      const { parts, end, last } = quotedLines(rest.slice(1), quote, lines, i);
      i = last;
      if (end >= 0) parts[parts.length - 1] = parts.at(-1)!.slice(0, end);
      const raw = parts.join("\n");
      rest = quote === '"' ? raw.replace(/\\n/g, "\n").replace(/\\(["\\$])/g, "$1") : raw;
    } else {
      // An inline comment starts at a # after whitespace (found in one pass: /\s+#.*$/ retried
      // every start in a run of spaces, the square of its length).
      const comment = rest.search(/\s#/);
      rest = (comment < 0 ? rest : rest.slice(0, comment)).trim();
    }
    vars.set(key, rest);
  }
  return [...vars].map(([key, value]) => ({ key, value }));
}
