// Asking before a destructive step (restore, prune): on a terminal only; without one the command
// refuses unless --yes was given, so a script never hangs on a question nobody sees.
import { createInterface } from "node:readline/promises";
import { StackgenError } from "../errors.ts";

async function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** Throws CONFIRMATION_REQUIRED (no terminal, no --yes) or ABORTED (the user said no). */
export function requireYesWithoutTerminal(yes: boolean, what: string): void {
  if (!yes && !process.stdin.isTTY) throw new StackgenError("CONFIRMATION_REQUIRED", `${what}; pass --yes to run it without a terminal.`, 400);
}

export async function confirmOrAbort(yes: boolean, question: string, cancelled: string): Promise<void> {
  if (yes) return;
  if (!(await ask(question))) throw new StackgenError("ABORTED", cancelled, 400);
}
