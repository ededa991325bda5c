// Shared CLI output rules (CONTRACT §5): with --json exactly one JSON document on stdout;
// progress and logs always on stderr; NO_COLOR honoured.
import { createConsola } from "consola";

export const log = createConsola({
  // Info level always: consola would otherwise silence progress under NODE_ENV=test.
  level: 3,
  stdout: process.stderr,
  stderr: process.stderr,
  formatOptions: { colors: !process.env.NO_COLOR && process.stderr.isTTY === true, date: false },
});

/** Print the one JSON document of a --json run. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** Plain text result on stdout (what a user or a pipe reads). */
export function printText(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : text + "\n");
}

/** A step of a long operation, on stderr. */
export function progress(message: string): void {
  log.info(message);
}

export const color = (code: number) => (s: string) =>
  process.env.NO_COLOR || !process.stdout.isTTY ? s : `\x1b[${code}m${s}\x1b[0m`;
export const green = color(32);
export const red = color(31);
export const yellow = color(33);
export const dim = color(2);
