// Talking to the Docker engine for the bundle start-up test. Compose runs with a minimal
// environment so that nothing in the caller's shell (COMPOSE_FILE, a stray REDIS_PASSWORD, ...)
// overrides what the bundle's .env says.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { OVERRIDE_FILE } from "./standin.ts";

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

const PASS_THROUGH = ["PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "TMPDIR"];

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const key of PASS_THROUGH) if (process.env[key]) env[key] = process.env[key] as string;
  return env;
}

/** Run a command; killed after timeoutMs so a hung engine cannot hang the suite. */
export async function runCommand(argv: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  const proc = Bun.spawn(argv, { cwd: opts.cwd, env: cleanEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill(), opts.timeoutMs ?? 60_000);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

export async function dockerOk(args: string[], timeoutMs?: number): Promise<string> {
  const r = await runCommand(["docker", ...args], { timeoutMs });
  if (r.code !== 0) throw new Error(`docker ${args.slice(0, 3).join(" ")} ... failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/** `docker compose -f docker-compose.yml -f docker-compose.standin.yml ...` in the bundle directory. */
export function composeWithStandins(dir: string, args: string[], timeoutMs?: number): Promise<Ran> {
  return runCommand(["docker", "compose", "--ansi", "never", "-f", "docker-compose.yml", "-f", OVERRIDE_FILE, ...args], { cwd: dir, timeoutMs });
}

export interface PsRow {
  ID: string;
  Service: string;
  State: string;
  Health: string;
  Project: string;
}

/** `compose ps --format json` prints an array in some versions and one object per line in others. */
export function parsePs(text: string): PsRow[] {
  const trimmed = text.trim();
  if (!trimmed) return [];
  if (trimmed.startsWith("[")) return JSON.parse(trimmed);
  return trimmed.split("\n").map((line) => JSON.parse(line));
}

export interface EngineEvent {
  Action: string;
  /** Read from the raw text: the number is too large for a double to keep nanoseconds. */
  nanos: bigint;
  Actor: { ID: string; Attributes: Record<string, string> };
}

/** Container events of a compose project from now until `stop()`, read as they happen. Asking
 *  afterwards (`--since/--until`) reads the engine's short in-memory log instead, which a larger
 *  stack's health-check executions overrun within seconds. */
export function watchProjectEvents(project: string): { stop(): Promise<EngineEvent[]> } {
  const proc = Bun.spawn(
    ["docker", "events", "--filter", "type=container", "--filter", `label=com.docker.compose.project=${project}`, "--format", "{{json .}}"],
    { stdin: "ignore", stdout: "pipe", stderr: "ignore" },
  );
  const text = new Response(proc.stdout).text();
  return {
    async stop() {
      if (proc.exitCode === null && !proc.killed) {
        await Bun.sleep(500); // the last events reach the stream slightly after the actions return
        proc.kill();
      }
      const lines = (await text).split("\n").filter((line) => line.startsWith("{") && line.endsWith("}"));
      return lines.map((line) => {
        const nanos = /"timeNano":(\d+)/.exec(line)?.[1];
        if (!nanos) throw new Error(`event without timeNano: ${line}`);
        return { ...JSON.parse(line), nanos: BigInt(nanos) };
      });
    },
  };
}

/** The stand-in image: the busybox base plus standin.sh, labelled so TestStack.cleanup finds leftovers. */
export function standinDockerfileLines(): string[] {
  const script = readFileSync(join(import.meta.dir, "standin.sh")).toString("base64");
  return [`RUN mkdir -p /tmp && chmod 1777 /tmp && echo ${script} | base64 -d > /standin.sh && chmod 755 /standin.sh`];
}
