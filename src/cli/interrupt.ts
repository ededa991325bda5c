// Ctrl-C (or SIGTERM, SIGHUP) while update, backup create or restore has the stack stopped must
// not end the process between the stop and the start that follows: the stack would stay down,
// with half-written work files. The first signal asks the operation to stop at its next safe
// point, where it puts the stack back as it was; a second one quits at once.
import { INTERRUPTED_EXIT, interruptedError } from "../errors.ts";
import { log } from "./output.ts";

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

let deferring = 0;

/** A reader that stops early (`stackgen services --json | head`) closes the pipe under us: that
 *  ends a command quietly, as it does for other Unix tools, instead of with a stack trace, and
 *  with the exit code of a failure already decided (the error being printed). A
 *  server that lost its log pipe exits 1, so that whatever supervises it notices. But while a
 *  command has the stack stopped, a terminal that went away (SIGHUP, then EIO on every write)
 *  must not end it before it has put the stack back: its messages are lost instead. */
export function endOnLostOutput(serving: boolean): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (deferring > 0) return;
      if (error.code !== "EPIPE" && stream === process.stdout) process.stderr.write(`[error] cannot write the output: ${error.message}\n`);
      // A failure already decided keeps its code (a script with pipefail must see it).
      process.exit(error.code === "EPIPE" && !serving ? (typeof process.exitCode === "number" ? process.exitCode : 0) : 1);
    });
  }
}

/** Until `off()`, a signal ends the command at once, after `cleanup` (for work before anything
 *  changes, such as checking an archive: its unpacked copy would stay on disk otherwise, since the
 *  default action ends the process without any `finally`). */
export function quitOnSignal(what: string, cleanup: () => void): { off(): void } {
  const onSignal = (name: string) => {
    try {
      cleanup();
    } catch {
      // quitting anyway
    }
    log.error(`${name}: stopped while ${what}; nothing was changed.`);
    process.exit(INTERRUPTED_EXIT);
  };
  for (const name of SIGNALS) process.on(name, onSignal);
  return { off: () => { for (const name of SIGNALS) process.off(name, onSignal); } };
}

/** Runs `work` with the signals deferred; `work` gets a signal that is aborted on the first one.
 *  `onQuit` runs when a second Ctrl-C quits at once: it cleans up what it can and says how to
 *  recover, where "start it again" would be wrong (a half-done restore). */
export async function withDeferredInterrupts<T>(
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
  onQuit?: () => string | undefined,
  /** What stopping at the next safe point promises (work that does not stop a stack says its own). */
  promise = "the stack is not left stopped",
): Promise<T> {
  const controller = new AbortController();
  const onSignal = (name: string) => {
    // Only a person pressing Ctrl-C again quits at once: a closing terminal sends SIGHUP twice
    // (the kernel and the shell), and a supervisor may repeat SIGTERM before it kills.
    if (controller.signal.aborted) {
      if (name !== "SIGINT") return;
      let note: string | undefined;
      try {
        note = onQuit?.();
      } catch {
        // quitting anyway
      }
      log.error(`SIGINT again: quitting now; ${note ?? "the stack may be left stopped (docker compose up -d starts it)."}`);
      process.exit(INTERRUPTED_EXIT);
    }
    log.warn(`${name}: stopping ${what} at the next safe point; ${promise}. Press Ctrl-C again to quit at once.`);
    controller.abort(interruptedError(`Interrupted (${name}) during ${what}`));
  };
  for (const name of SIGNALS) process.on(name, onSignal);
  deferring++;
  try {
    return await work(controller.signal);
  } finally {
    deferring--;
    for (const name of SIGNALS) process.off(name, onSignal);
  }
}
