// One day-2 command at a time per stack: an update, a backup and a restore of the same stack
// running together stop and start each other's services, and a backup taken during a restore
// holds half of each state. A lock file in the stack directory says who is at work; one left by
// a process that is gone (killed, a second Ctrl-C) does not block the next command.
import { closeSync, linkSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
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

/** Some process has this id (EPERM: another user's). */
export function pidTaken(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

const alive = (holder: Holder) => {
  if (!pidTaken(holder.pid)) return false;
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

/** The lock, or a file of its making beside it (`.new-…` while it is written, `.break` while a
 *  stale one is taken away): never part of a backup. */
export const isLockFile = (name: string) => name === LOCK_FILE || name.startsWith(`${LOCK_FILE}.`);

/** Creates the lock holding `text`, or returns false when there is one. Written aside in full and
 *  linked into place: a lock is never seen empty or half written, so one that is can only be a
 *  crashed writer's (the fallback below, where the file system has no hard links). */
function create(path: string, text: string): boolean {
  const written = `${path}.new-${process.pid}-${crypto.randomUUID()}`;
  writeFileSync(written, text, { mode: 0o600, flag: "wx" });
  try {
    linkSync(written, path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP") throw e;
    const fd = openSync(path, "wx", 0o600); // EEXIST: thrown, and read as taken by the caller
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    return true;
  } finally {
    rmSync(written, { force: true });
  }
}

/** Takes away a lock judged left behind, only while it is still the one judged (`text`). Only the
 *  command holding the `.break` guard does: two that found the same stale lock cannot both take it
 *  away, the second removing the lock the first has made since. A guard left by a command that
 *  died in these few lines goes once it is old. */
export function removeStale(path: string, text: string | undefined): void {
  const guard = `${path}.break`;
  try {
    closeSync(openSync(guard, "wx", 0o600));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    const since = statSync(guard, { throwIfNoEntry: false })?.mtimeMs;
    if (since !== undefined && Date.now() - since > FRESH_MS) rmSync(guard, { force: true });
    return; // another command is at it: the next attempt sees what it left
  }
  try {
    if (holderOf(path).text === text) rmSync(path, { force: true });
  } finally {
    rmSync(guard, { force: true });
  }
}

/** What a lock left by a process that is gone says of the stack, when that command changes
 *  running services or their data (killed midway: an OOM kill, a lost SSH session, a power cut). */
function unfinishedNote(holder: Holder): string | undefined {
  const what = holder.command === "backup restore"
    ? "its services may be stopped and its volumes half replaced: run the restore again, or restore the pre-restore safety backup that `stackgen backup list` shows, before starting them"
    : holder.command === "update" || holder.command === "backup create"
      ? `its services may be left stopped${holder.command === "update" ? " or on new images: `stackgen update` again finishes or rolls back" : " or its databases paused: `stackgen status` shows which; `docker compose unpause` and `docker compose restart --no-deps <service>` bring them back without running finished jobs again"}`
      : undefined;
  return what && `The last \`${holder.command}\` of this stack (process ${holder.pid}, started ${holder.startedAt}) did not finish (the process is gone): ${what}.`;
}

/** The note of an unfinished command (see unfinishedNote) the stack's lock holds, if it holds
 *  one of a process that is gone: `status` says it rather than advise starting the stack. */
export function unfinishedCommand(dir: string): string | undefined {
  const { holder } = holderOf(join(dir, LOCK_FILE));
  return typeof holder === "object" && !alive(holder) ? unfinishedNote(holder) : undefined;
}

/** Run `work` holding the stack's lock; STACK_BUSY (exit 1) while another live process holds it.
 *  A lock of an unfinished command taken over is said through `say`. */
export async function withStackLock<T>(dir: string, command: string, work: () => Promise<T>, say: (message: string) => void = () => {}): Promise<T> {
  const path = join(dir, LOCK_FILE);
  const start = startOf(process.pid);
  const mine: Holder = { pid: process.pid, ...(start ? { start } : {}), command, startedAt: new Date().toISOString() };
  const text = JSON.stringify(mine);
  for (let attempt = 0; ; attempt++) {
    try {
      if (create(path, text)) break;
    } catch (e) {
      if (unwritable(e)) return work();
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const found = holderOf(path);
    const { holder } = found;
    const young = holder === "unreadable" && Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0) < FRESH_MS;
    if (young || (typeof holder === "object" && alive(holder)) || attempt >= 5) {
      const who = typeof holder === "object" ? `${holder.command} (process ${holder.pid}, since ${holder.startedAt})` : "another stackgen command";
      throw failure("STACK_BUSY", `${who} is working on this stack; run this when it is done. Nothing was changed. If no such process runs any more, remove ${path}.`);
    }
    const note = typeof holder === "object" ? unfinishedNote(holder) : undefined;
    if (note) say(note);
    removeStale(path, found.text); // left by a process that is gone
    if (attempt > 0) await Bun.sleep(20); // another command is taking it over: let it finish
  }
  try {
    return await work();
  } finally {
    // Only our own: a lock someone removed and took over in the meantime stays theirs.
    const { holder } = holderOf(path);
    if (typeof holder === "object" && holder.pid === mine.pid && holder.startedAt === mine.startedAt) rmSync(path, { force: true });
  }
}
