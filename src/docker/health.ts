// Waiting for services to come up: running and, when they have a health check, healthy.
import { EngineError, type ContainerSummary, type Engine } from "./engine.ts";
import { awaitedJobs } from "./layers.ts";

export interface ServiceReadiness {
  service: string;
  ok: boolean;
  /** Why it is not (yet) ready. */
  reason: string;
  /** True when waiting longer cannot help (unhealthy, exited with an error, dead). */
  final: boolean;
}

/** Which of `services` have no running container now, in their order. */
export async function servicesNotRunning(engine: Engine, project: string, services: readonly string[]): Promise<string[]> {
  const running = new Set((await engine.listProjectContainers(project)).filter((c) => c.State === "running").map((c) => c.Labels["com.docker.compose.service"]));
  return services.filter((s) => !running.has(s));
}

/** What `readiness` reads of a container. */
export interface ContainerState {
  Status: string;
  ExitCode: number;
  Health?: { Status: string };
  /** When it last started (engine time, RFC 3339). */
  StartedAt?: string;
  /** Restarts by its restart policy since it was created. */
  RestartCount?: number;
}

/** Restarts after which a crash loop is failure, not a slow start. */
const CRASH_LOOP_RESTARTS = 3;

/**
 * Judge one service from its containers' inspected state. A container with a health check is
 * ready when healthy. One without is ready once it has stayed up for `settleMs`: right after a
 * start, "running" says nothing about a process that crashes a second later and is restarted by
 * its policy over and over.
 */
export function readiness(service: string, states: ContainerState[], settleMs = 0, now = Date.now(), mayFinish = true, mustFinish = false): ServiceReadiness {
  if (states.length === 0) return { service, ok: false, reason: "no container", final: false };
  for (const s of states) {
    if ((s.RestartCount ?? 0) >= CRASH_LOOP_RESTARTS) {
      // A container caught running again has its exit code reset to 0: only a stopped one tells.
      const code = s.Status === "running" ? "" : ` (last exit code ${s.ExitCode})`;
      return { service, ok: false, reason: `restarted ${s.RestartCount} times${code}`, final: true };
    }
    if (s.Status === "running") {
      // A one-shot job is ready once it has done its work, not while it runs (a dependent's
      // compose up would otherwise sit on it outside every timeout and progress line).
      if (mustFinish && mayFinish) return { service, ok: false, reason: "running (a one-shot job, ready once it has finished)", final: false };
      const health = s.Health?.Status;
      if (health === "unhealthy") return { service, ok: false, reason: "unhealthy", final: true };
      if (health === "starting") return { service, ok: false, reason: "health check still starting", final: false };
      const up = s.StartedAt ? now - Date.parse(s.StartedAt) : Infinity;
      if (!health && up < settleMs) return { service, ok: false, reason: `running for ${Math.max(0, Math.floor(up / 1000))}s`, final: false };
      continue;
    }
    // A one-shot job that finished cleanly counts as done; a service meant to keep running that
    // stops, even cleanly (a new version that only prints its usage), is down.
    if (s.Status === "exited" && s.ExitCode === 0 && mayFinish) continue;
    if (s.Status === "exited" || s.Status === "dead") return { service, ok: false, reason: `${s.Status} with code ${s.ExitCode}`, final: true };
    return { service, ok: false, reason: s.Status === "restarting" ? `restarting (last exit code ${s.ExitCode})` : s.Status, final: false };
  }
  return { service, ok: true, reason: "", final: false };
}

/** One service's readiness, from the project's containers as listed for this round. */
async function probe(engine: Engine, all: ContainerSummary[], jobs: ReadonlySet<string>, service: string, settleMs: number, mayFinish: boolean): Promise<ServiceReadiness> {
  const containers = all.filter((c) => c.Labels["com.docker.compose.service"] === service);
  const states = await Promise.all(containers.map(async (c) => {
    try {
      const inspected = await engine.inspectContainer(c.Id);
      return { ...inspected.State, RestartCount: inspected.RestartCount };
    } catch (e) {
      // Removed since the list (compose making it again): not a state, and never a reason to
      // give up the wait, and with it the rollback that depends on its answer.
      if (e instanceof EngineError && e.httpStatus === 404) return undefined;
      throw e;
    }
  }));
  return readiness(service, states.filter((state) => state !== undefined), settleMs, Date.now(), mayFinish, jobs.has(service));
}

/** How long a service without a health check must stay up to count as started: long enough for
 *  an app that gives up on its database or config some seconds in. */
export const SETTLE_MS = 10_000;

export interface WaitOptions {
  timeoutMs: number;
  onProgress?: (pending: ServiceReadiness[]) => void;
  /** Aborted (Ctrl-C): the wait ends with every pending service failed as "interrupted". */
  signal?: AbortSignal;
  /** Services that must keep running: for them a clean exit is failure, not a finished job. */
  mustStayUp?: ReadonlySet<string>;
}

/**
 * Wait until every service is ready, one fails for good, or the timeout passes.
 * Returns the services that did not make it (empty on success).
 */
export async function waitReady(engine: Engine, project: string, services: string[], { timeoutMs, onProgress, signal, mustStayUp }: WaitOptions): Promise<ServiceReadiness[]> {
  const deadline = Date.now() + timeoutMs;
  // Long enough to catch a process that dies on start-up, short of the whole timeout.
  const settleMs = Math.min(SETTLE_MS, timeoutMs / 2);
  let lastReport = 0;
  for (;;) {
    // One list per round, for every service and for which of them are jobs.
    const all = await engine.listProjectContainers(project);
    const jobs = awaitedJobs(all);
    const results = await Promise.all(services.map((s) => probe(engine, all, jobs, s, settleMs, !mustStayUp?.has(s))));
    const failed = results.filter((r) => r.final);
    if (failed.length > 0) return failed;
    const pending = results.filter((r) => !r.ok);
    if (pending.length === 0) return [];
    if (Date.now() >= deadline) return pending.map((r) => ({ ...r, reason: `not ready after ${Math.round(timeoutMs / 1000)}s (${r.reason})` }));
    if (signal?.aborted) return pending.map((r) => ({ ...r, final: true, reason: "interrupted while waiting for it" }));
    if (onProgress && Date.now() - lastReport > 5000) {
      onProgress(pending);
      lastReport = Date.now();
    }
    await Bun.sleep(500);
  }
}
