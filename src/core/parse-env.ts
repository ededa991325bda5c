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
      // Gather lines until the closing quote (multi-line values).
      let body = rest.slice(1);
      let end = findClosingQuote(body, quote);
      while (end < 0 && i + 1 < lines.length) {
        body += "\n" + lines[++i]!;
        end = findClosingQuote(body, quote);
      }
      const raw = end < 0 ? body : body.slice(0, end);
      rest = quote === '"' ? raw.replace(/\\n/g, "\n").replace(/\\(["\\$])/g, "$1") : raw;
    } else {
      rest = rest.replace(/\s+#.*$/, "").trim();
    }
    vars.set(key, rest);
  }
  return [...vars].map(([key, value]) => ({ key, value }));
}
