// Start order from compose depends_on: layer 0 has no dependencies, layer n depends only on
// earlier layers. Services inside a layer can start together.
import { StackgenError } from "../errors.ts";
import type { ComposeModel } from "./compose.ts";
import type { ContainerSummary } from "./engine.ts";

export function dependencyLayers(deps: Record<string, string[]>): string[][] {
  const names = Object.keys(deps).sort();
  const remaining = new Set(names);
  const placed = new Set<string>();
  const layers: string[][] = [];
  while (remaining.size > 0) {
    // Dependencies outside the given set (e.g. inactive profiles) do not hold anything back.
    const ready = [...remaining].filter((n) => (deps[n] ?? []).every((d) => placed.has(d) || !(d in deps)));
    if (ready.length === 0) {
      throw new StackgenError("DEPENDENCY_CYCLE", `depends_on has a cycle among: ${[...remaining].join(", ")}`, 400, undefined, 2);
    }
    layers.push(ready);
    for (const n of ready) {
      remaining.delete(n);
      placed.add(n);
    }
  }
  return layers;
}

/** Every service the `running` ones depend on, directly or not. */
export function dependenciesOf(running: Iterable<string>, dependsOn: Readonly<Record<string, readonly string[]>>): Set<string> {
  const out = new Set<string>();
  const visit = (name: string) => {
    for (const dep of dependsOn[name] ?? []) if (!out.has(dep)) { out.add(dep); visit(dep); }
  };
  for (const name of running) visit(name);
  return out;
}

/** The exit code of a container that has exited, as the engine's list gives it ("Exited (3) 2
 *  minutes ago"); none for one that has not. */
export const exitCodeOf = (c: ContainerSummary): number | undefined => {
  const code = c.State === "exited" ? /^Exited \((\d+)\)/.exec(c.Status)?.[1] : undefined;
  return code === undefined ? undefined : Number(code);
};

/** A container that ended as a job does: exited with code 0 (an init or migration job). */
export const ranToCompletion = (c: ContainerSummary) => exitCodeOf(c) === 0;

/** The services another container waits for to complete (`service_completed_successfully`):
 *  one-shot jobs, as compose records them on each dependent in its depends_on label
 *  (`name:condition:restart`, comma-separated). A service stopped with exit 0 is not one. */
export function awaitedJobs(containers: readonly ContainerSummary[]): Set<string> {
  const jobs = new Set<string>();
  for (const c of containers) {
    for (const entry of (c.Labels["com.docker.compose.depends_on"] ?? "").split(",")) {
      const [name, condition] = entry.split(":");
      if (name && condition === "service_completed_successfully") jobs.add(name);
    }
  }
  return jobs;
}

/** Each service's dependencies, as the compose files give them. */
export const dependenciesByService = (model: ComposeModel): Record<string, string[]> => Object.fromEntries(model.services.map((s) => [s.name, s.dependsOn]));

/** The services of `start`, layer by layer: a service after everything it depends on. */
export const startLayers = (dependsOn: Record<string, string[]>, start: ReadonlySet<string>) =>
  dependencyLayers(dependsOn)
    .map((layer) => layer.filter((name) => start.has(name)))
    .filter((layer) => layer.length > 0);

/** What a `compose up` stopped at its time limit was still waiting on, as the containers show it:
 *  jobs still running and services whose health check has not passed (`init (a one-shot job,
 *  still running)`, `db (health: starting)`). */
export function stillStarting(containers: readonly ContainerSummary[]): string[] {
  const jobs = awaitedJobs(containers);
  const out = new Set<string>();
  for (const c of containers) {
    const service = c.Labels["com.docker.compose.service"];
    if (!service || c.State !== "running") continue;
    if (jobs.has(service)) out.add(`${service} (a one-shot job, still running)`);
    else if (/\((health: starting|unhealthy)\)/.test(c.Status)) out.add(`${service} (${/\(unhealthy\)/.test(c.Status) ? "unhealthy" : "health: starting"})`);
  }
  return [...out].sort();
}
