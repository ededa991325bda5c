// One day-2 command at a time per stack: an update, a backup and a restore of the same stack
// running together stop and start each other's services, and a backup taken during a restore
// holds half of each state. A lock file in the stack directory says who is at work; one left by
// a process that is gone (killed, a second Ctrl-C) does not block the next command.
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { failure } from "../errors.ts";

/** Never part of a backup (bundleFiles skips it) nor of a generated bundle. */
export const LOCK_FILE = ".stackgen.lock";
/** A lock this young with nothing readable in it is being written by its owner right now. */
const FRESH_MS = 10_000;

interface Holder {
  pid: number;
  command: string;
  startedAt: string;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // another user's process
  }
};

function holderOf(path: string): Holder | "unreadable" | undefined {
  try {
    const holder = JSON.parse(readFileSync(path, "utf8"));
    return Number.isInteger(holder?.pid) ? holder : "unreadable";
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" ? undefined : "unreadable";
  }
}

/** Run `work` holding the stack's lock; STACK_BUSY (exit 1) while another live process holds it. */
export async function withStackLock<T>(dir: string, command: string, work: () => Promise<T>): Promise<T> {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, JSON.stringify({ pid: process.pid, command, startedAt: new Date().toISOString() } satisfies Holder));
      } finally {
        closeSync(fd);
      }
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 2) throw e;
      const holder = holderOf(path);
      const young = holder === "unreadable" && Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0) < FRESH_MS;
      if (young || (typeof holder === "object" && alive(holder.pid))) {
        const who = typeof holder === "object" ? `${holder.command} (process ${holder.pid}, since ${holder.startedAt})` : "another stackgen command";
        throw failure("STACK_BUSY", `${who} is working on this stack; run this when it is done. Nothing was changed. If no such process runs any more, remove ${path}.`);
      }
      rmSync(path, { force: true }); // left by a process that is gone
    }
  }
  try {
    return await work();
  } finally {
    rmSync(path, { force: true });
  }
}
