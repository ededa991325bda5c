// Shared CLI output rules (CONTRACT §5): with --json exactly one JSON document on stdout;
// progress and logs always on stderr; NO_COLOR honoured.
// consola's core with a small reporter of our own: its default entry (fancy and basic reporters,
// environment detection) costs about 10 ms to load in the compiled binary, paid by every command
// before it runs, and picked its output style from CI/NODE_ENV rather than from the terminal.
import { createConsola, type ConsolaReporter, type LogObject } from "consola/core";
import type { StackgenError } from "../errors.ts";

/** Whether a stream may carry colours: never with NO_COLOR set and non-empty (no-color.org, or
 *  --no-color); as FORCE_COLOR says when it is set (as Node reads it: "0" or "false" off, anything
 *  else, empty included, on), or CLICOLOR_FORCE other than "0" (a CI log that shows colours); else
 *  on a terminal only. */
const styledOn = (stream: NodeJS.WriteStream) => {
  const { NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE } = process.env;
  if (NO_COLOR) return false;
  if (FORCE_COLOR !== undefined) return FORCE_COLOR !== "0" && FORCE_COLOR.toLowerCase() !== "false";
  if (CLICOLOR_FORCE !== undefined && CLICOLOR_FORCE !== "" && CLICOLOR_FORCE !== "0") return true;
  return stream.isTTY === true;
};

/** Marks of a terminal with colours; the word in brackets otherwise (logs, pipes, NO_COLOR). */
const MARKS: Partial<Record<LogObject["type"], [mark: string, color: number]>> = {
  info: ["ℹ", 36],
  start: ["◐", 35],
  success: ["✔", 32],
  warn: ["⚠", 33],
  error: ["✖", 31],
  fail: ["✖", 31],
  fatal: ["✖", 31],
};

/** Control characters shown as `\x1b`: messages quote what the user typed (an id, a path), and
 *  an escape sequence in it must not colour, move or retitle the terminal it is printed on. */
export const visible = (text: string) => text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** visible() for one value taken from a file or archive (a name, a version): a line break in it
 *  is shown too, so it cannot print lines of its own into a report. */
export const visibleValue = (text: string) => visible(text).replace(/[\t\n]/g, (c) => (c === "\n" ? "\\n" : "\\t"));

const stderrReporter: ConsolaReporter = {
  log(entry) {
    const message = visible(entry.args.map((a) => (a instanceof Error ? a.message : typeof a === "string" ? a : Bun.inspect(a))).join(" "));
    const [mark, code] = MARKS[entry.type] ?? ["•", 0];
    process.stderr.write(`${styledOn(process.stderr) ? `\x1b[${code}m${mark}\x1b[0m` : `[${entry.type}]`} ${message}\n`);
  },
};

// Info level always, whatever NODE_ENV says: progress is part of the output.
export const log = createConsola({ level: 3, reporters: [stderrReporter] });

/** Print the one JSON document of a --json run. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** A failure as `--json` prints it (the API's error body). */
export const errorDocument = (err: StackgenError) => ({ error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } });

/** Plain text result on stdout (what a user or a pipe reads). */
export function printText(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : text + "\n");
}

/** "1 service", "2 services": a count with its noun. */
import { plural } from "../core/words.ts";
export { plural };

/** A step of a long operation, on stderr. */
export function progress(message: string): void {
  log.info(message);
}

export const stdoutStyled = () => styledOn(process.stdout);

export const color = (code: number) => (s: string) => (stdoutStyled() ? `\x1b[${code}m${s}\x1b[0m` : s);
export const green = color(32);
export const red = color(31);
export const yellow = color(33);
export const dim = color(2);
export const bold = color(1);
