// Small measuring tools for bench/run.ts: statistics, a closed-loop HTTP load generator, process
// helpers. Nothing here asserts a timing; it only measures.
import { readFileSync } from "node:fs";
import os from "node:os";

/** The bench's realistic 7-service selection (database, cache, workflow, vector store, monitoring, storage). */
export const SEVEN = ["redis", "postgresql", "n8n", "qdrant", "grafana", "prometheus", "minio"];

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

export interface LoadResult {
  requests: number;
  errors: number;
  /** Status codes other than the expected one, with counts (first few kinds only). */
  unexpected: Record<string, number>;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export interface LoadSpec {
  url: string;
  method: "GET" | "POST";
  body?: string;
  /** Closed loop: this many requests in flight at all times. */
  concurrency: number;
  requests: number;
  expectStatus?: number;
}

/** Fires `requests` requests with `concurrency` workers, each waiting for the full body before the next. */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  const unexpected: Record<string, number> = {};
  let errors = 0;
  let issued = 0;
  const init: RequestInit = {
    method: spec.method,
    body: spec.body,
    headers: spec.body ? { "content-type": "application/json" } : undefined,
  };
  const worker = async () => {
    while (issued < spec.requests) {
      issued++;
      const started = performance.now();
      try {
        const answer = await fetch(spec.url, init);
        await answer.arrayBuffer();
        if (answer.status !== (spec.expectStatus ?? 200)) {
          errors++;
          unexpected[answer.status] = (unexpected[answer.status] ?? 0) + 1;
        }
      } catch (e) {
        errors++;
        const kind = (e as Error).name || "error";
        unexpected[kind] = (unexpected[kind] ?? 0) + 1;
      }
      latencies.push(performance.now() - started);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    unexpected,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

/** Resident set size, its peak and its two parts for a process, in MiB (Linux /proc). The
 *  file-backed part is mostly the executable's own pages: shared, clean, and larger right after
 *  a build (the kernel maps more of a file whose pages are still cached as they were written). */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number; anonMiB: number; fileMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rssMiB: kib("VmRSS") / 1024, peakMiB: kib("VmHWM") / 1024, anonMiB: kib("RssAnon") / 1024, fileMiB: kib("RssFile") / 1024 };
}

export async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

/** Polls `url` until it answers 200; returns the milliseconds since `since` (performance.now()). */
export async function firstAnswer(url: string, since: number, timeoutMs: number, alive: () => boolean): Promise<number> {
  const deadline = since + timeoutMs;
  while (performance.now() < deadline) {
    if (!alive()) throw new Error(`process exited before ${url} answered`);
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    await Bun.sleep(2);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

export async function run(cmd: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  const started = performance.now();
  const proc = Bun.spawn(cmd, { cwd: options.cwd, env: options.env ?? (process.env as Record<string, string>), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr, ms: performance.now() - started };
}

/** Stops a child process we started: SIGTERM, then SIGKILL after a grace period. */
export async function stop(proc: Bun.Subprocess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill("SIGTERM");
  const ended = await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
  if (!ended) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

/** Reads the child's stdout until a line `READY <port>`. */
export async function readyPort(proc: Bun.Subprocess<"ignore", "pipe", "inherit">, timeoutMs = 20_000): Promise<number> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    const match = /READY (\d+)/.exec(text);
    if (match) {
      reader.releaseLock();
      return Number(match[1]);
    }
  }
  throw new Error(`server did not report READY: ${text}`);
}

/** Server on the last core, load generator (this process, all its threads) on the others: the two
 *  no longer take turns on the same cores, so run-to-run noise drops and the figures describe
 *  the server. Undefined (no pinning) with one core or without `taskset`. */
export function cpuPinning() {
  const cores = os.cpus().length;
  const taskset = Bun.which("taskset");
  if (cores < 2 || !taskset) return undefined;
  const serverCore = String(cores - 1);
  const clientCores = cores === 2 ? "0" : `0-${cores - 2}`;
  const setSelf = (list: string) => Bun.spawnSync([taskset, "-a", "-cp", list, String(process.pid)], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
  return {
    /** Prefix for the server's command line. */
    server: [taskset, "-c", serverCore],
    pinSelf: () => setSelf(clientCores),
    unpinSelf: () => setSelf(`0-${cores - 1}`),
    describe: `server on core ${serverCore}, load generator on core${cores === 2 ? "" : "s"} ${clientCores}`,
  };
}
