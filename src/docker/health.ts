// Waiting for services to come up: running and, when they have a health check, healthy.
import type { Engine } from "./engine.ts";

export interface ServiceReadiness {
  service: string;
  ok: boolean;
  /** Why it is not (yet) ready. */
  reason: string;
  /** True when waiting longer cannot help (unhealthy, exited with an error, dead). */
  final: boolean;
}

/** Judge one service from its containers' inspected state. */
export function readiness(
  service: string,
  states: { Status: string; ExitCode: number; Health?: { Status: string } }[],
): ServiceReadiness {
  if (states.length === 0) return { service, ok: false, reason: "no container", final: false };
  for (const s of states) {
    if (s.Status === "running") {
      const health = s.Health?.Status;
      if (health === "unhealthy") return { service, ok: false, reason: "unhealthy", final: true };
      if (health === "starting") return { service, ok: false, reason: "health check still starting", final: false };
      continue;
    }
    // A one-shot job that finished cleanly counts as done.
    if (s.Status === "exited" && s.ExitCode === 0) continue;
    if (s.Status === "exited" || s.Status === "dead") return { service, ok: false, reason: `${s.Status} with code ${s.ExitCode}`, final: true };
    return { service, ok: false, reason: s.Status, final: false };
  }
  return { service, ok: true, reason: "", final: false };
}

async function probe(engine: Engine, project: string, service: string): Promise<ServiceReadiness> {
  const containers = (await engine.listProjectContainers(project)).filter((c) => c.Labels["com.docker.compose.service"] === service);
  const states = await Promise.all(containers.map(async (c) => (await engine.inspectContainer(c.Id)).State));
  return readiness(service, states);
}

/**
 * Wait until every service is ready, one fails for good, or the timeout passes.
 * Returns the services that did not make it (empty on success).
 */
export async function waitReady(
  engine: Engine,
  project: string,
  services: string[],
  timeoutMs: number,
  onProgress?: (pending: ServiceReadiness[]) => void,
): Promise<ServiceReadiness[]> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = 0;
  for (;;) {
    const results = await Promise.all(services.map((s) => probe(engine, project, s)));
    const failed = results.filter((r) => r.final);
    if (failed.length > 0) return failed;
    const pending = results.filter((r) => !r.ok);
    if (pending.length === 0) return [];
    if (Date.now() >= deadline) return pending.map((r) => ({ ...r, reason: `not ready after ${Math.round(timeoutMs / 1000)}s (${r.reason})` }));
    if (onProgress && Date.now() - lastReport > 5000) {
      onProgress(pending);
      lastReport = Date.now();
    }
    await Bun.sleep(500);
  }
}
