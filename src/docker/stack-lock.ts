// One day-2 command at a time per stack: an update, a backup and a restore of the same stack
// running together stop and start each other's services, and a backup taken during a restore
// holds half of each state. A lock file in the stack directory says who is at work; one left by
// a process that is gone (killed, a second Ctrl-C) does not block the next command.
import { closeSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { failure } from "../errors.ts";

/** Never part of a backup (bundleFiles skips it) nor of a generated bundle. */
export const LOCK_FILE = ".stackgen.lock";
/** A lock this young with nothing readable in it is being written by its owner right now. */
const FRESH_MS = 10_000;

interface Holder {
  pid: number;
  /** When that process started (clock ticks since boot, with the boot's id): a pid alone may
   *  name another process after a reboot or in a container, where stackgen may be pid 1 again. */
  start?: string;
  command: string;
  startedAt: string;
}

/** A process's start as Linux tells it, or undefined where /proc does not. */
function startOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ticks = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    return ticks ? `${boot}:${ticks}` : undefined;
  } catch {
    return undefined;
  }
}

const alive = (holder: Holder) => {
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false; // EPERM: another user's process
  }
  // The pid is taken: by the holder, unless its start differs.
  const start = holder.start === undefined ? undefined : startOf(holder.pid);
  return start === undefined || start === holder.start;
};

/** A stack directory this user may not write (a read-only mount, another user's bundle) cannot
 *  hold a lock, nor be changed by a second command of this user: the work goes on without one. */
const unwritable = (e: unknown) => ["EACCES", "EPERM", "EROFS"].includes((e as NodeJS.ErrnoException)?.code ?? "");

/** The lock's text as read, and who it names. */
function holderOf(path: string): { text?: string; holder: Holder | "unreadable" | undefined } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    return { holder: (e as NodeJS.ErrnoException).code === "ENOENT" ? undefined : "unreadable" };
  }
  try {
    const holder = JSON.parse(text);
    return { text, holder: Number.isInteger(holder?.pid) ? holder : "unreadable" };
  } catch {
    return { text, holder: "unreadable" };
  }
}

/** Removes a lock judged left behind, only if it is still the one judged (`text`). Removed by
 *  path, it could be the lock another command made a moment ago after taking the same stale one
 *  away: both would then work on the stack at once. Moved aside first, which only one command
 *  can do to one file, then compared; another's lock goes back where it was. */
export function removeStale(path: string, text: string | undefined): void {
  const aside = `${path}.stale-${process.pid}-${crypto.randomUUID()}`;
  try {
    renameSync(path, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return; // taken away by another already
    throw e;
  }
  try {
    if (holderOf(aside).text !== text) linkSync(aside, path);
  } catch (e) {
    // A third command locked in the moment between: the stack is busy, as the next attempt says.
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  } finally {
    rmSync(aside, { force: true });
  }
}

/** Run `work` holding the stack's lock; STACK_BUSY (exit 1) while another live process holds it. */
export async function withStackLock<T>(dir: string, command: string, work: () => Promise<T>): Promise<T> {
  const path = join(dir, LOCK_FILE);
  const start = startOf(process.pid);
  const mine: Holder = { pid: process.pid, ...(start ? { start } : {}), command, startedAt: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, JSON.stringify(mine));
      } finally {
        closeSync(fd);
      }
      break;
    } catch (e) {
      if (unwritable(e)) return work();
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 2) throw e;
      const { text, holder } = holderOf(path);
      const young = holder === "unreadable" && Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0) < FRESH_MS;
      if (young || (typeof holder === "object" && alive(holder))) {
        const who = typeof holder === "object" ? `${holder.command} (process ${holder.pid}, since ${holder.startedAt})` : "another stackgen command";
        throw failure("STACK_BUSY", `${who} is working on this stack; run this when it is done. Nothing was changed. If no such process runs any more, remove ${path}.`);
      }
      removeStale(path, text); // left by a process that is gone
    }
  }
  try {
    return await work();
  } finally {
    // Only our own: a lock someone removed and took over in the meantime stays theirs.
    const { holder } = holderOf(path);
    if (typeof holder === "object" && holder.pid === mine.pid && holder.startedAt === mine.startedAt) rmSync(path, { force: true });
  }
}
