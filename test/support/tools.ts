// Real tools the tests use. Missing locally: the test is skipped with a visible reason.
// Missing under CI=true: the test fails, so CI can never pass by skipping.
import { expect } from "bun:test";

export const IN_CI = process.env.CI === "true";

export function hasTool(name: string): boolean {
  const found = Bun.which(name) !== null;
  if (!found) {
    if (IN_CI) throw new Error(`${name} is required in CI but is not installed`);
    console.warn(`[skip] ${name} is not installed: install it (see .ci/run) to run these checks`);
  }
  return found;
}

export async function run(cmd: string[], options: { cwd?: string; env?: Record<string, string | undefined>; stdin?: string } = {}) {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

/** Run the CLI from source as a user would (`stackgen ...`). */
export const BUN = process.execPath;
export const MAIN = new URL("../../src/main.ts", import.meta.url).pathname;
export const cli = (args: string[], options: Parameters<typeof run>[1] = {}) => run([BUN, MAIN, ...args], options);

export function expectOk(r: { code: number; stderr: string }) {
  if (r.code !== 0) console.error(r.stderr);
  expect(r.code).toBe(0);
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

/** Deterministic pseudo-random numbers for seeded property tests. */
export function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
