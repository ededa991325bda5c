// Ctrl-C (or SIGTERM, SIGHUP) while update, backup create or restore has the stack stopped must
// not end the process between the stop and the start that follows: the stack would stay down,
// with half-written work files. The first signal asks the operation to stop at its next safe
// point, where it puts the stack back as it was; a second one quits at once.
import { INTERRUPTED_EXIT, interruptedError } from "../errors.ts";
import { log } from "./output.ts";

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** Runs `work` with the signals deferred; `work` gets a signal that is aborted on the first one. */
export async function withDeferredInterrupts<T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onSignal = (name: string) => {
    if (controller.signal.aborted) {
      log.error(`${name} again: quitting now; the stack may be left stopped (docker compose up -d starts it).`);
      process.exit(INTERRUPTED_EXIT);
    }
    log.warn(`${name}: stopping ${what} at the next safe point and putting the stack back as it was. Press Ctrl-C again to quit at once.`);
    controller.abort(interruptedError(`Interrupted (${name}) during ${what}`));
  };
  for (const name of SIGNALS) process.on(name, onSignal);
  try {
    return await work(controller.signal);
  } finally {
    for (const name of SIGNALS) process.off(name, onSignal);
  }
}
