// Pieces shared by the day-2 CLI commands (status, update, backup).
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { StackgenError, usageError } from "../errors.ts";
import { Compose } from "./compose.ts";
import { Engine } from "./engine.ts";
import { loadStack, type Stack } from "./stack.ts";

export const dirArg = { type: "string", description: "Stack directory (the one with docker-compose.yml)", default: "." } as const;
export const jsonArg = { type: "boolean", description: "Print one JSON document on stdout", default: false } as const;
/** Where the archives are when `backup create --output` put them elsewhere. */
export const backupFolderArg = { type: "string", description: "Folder of the archives, as given to backup create --output (default <dir>/backups)" } as const;

/** The folder `backup list` and `prune` read: --output must name one that is there (a mistyped
 *  one is bad input, not a folder without backups); the default may not exist yet. */
export function backupFolder(output: string | undefined, fallback: string): string {
  if (!output) return fallback;
  const dir = resolve(output);
  const st = statSync(dir, { throwIfNoEntry: false });
  if (!st) throw usageError(`--output ${dir} does not exist.`);
  if (!st.isDirectory()) throw usageError(`--output ${dir} is not a folder.`);
  return dir;
}

/** The stack and a reachable engine (one-line errors otherwise). */
export async function openStack(dir: string | undefined): Promise<{ stack: Stack; engine: Engine }> {
  const stack = loadStack(dir);
  return { stack, engine: await connectEngine() };
}

/** A reachable engine (DOCKER_UNAVAILABLE, exit 1, otherwise). */
export async function connectEngine(): Promise<Engine> {
  const engine = new Engine();
  await engine.ping();
  return engine;
}

export async function openCompose(stack: Stack): Promise<Compose> {
  return Compose.for(stack);
}

/** --timeout in seconds (positive number) -> milliseconds. */
export function timeoutMs(value: unknown, fallbackSeconds = 300): number {
  if (value === undefined || value === "") return fallbackSeconds * 1000;
  // Decimal seconds only: Number() would also take 0x10, 1e3 and " 5 ".
  const n = /^\d+(\.\d+)?$/.test(String(value)) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0) throw usageError(`--timeout must be a positive number of seconds, got "${value}".`);
  return n * 1000;
}

export function ensureStackRunning(count: number, project: string): void {
  if (count === 0) {
    throw new StackgenError("STACK_NOT_RUNNING", `Stack "${project}" has no containers (not started?). Start it with \`docker compose up -d\`.`, 500, undefined, 1);
  }
}
