// State of every container of a compose project, read from the engine (SPEC §2.8, §3).
import type { ContainerInspect, ContainerSummary, Engine } from "./engine.ts";
import { formatPorts, uptimeOf } from "./format.ts";
import { awaitedJobs } from "./layers.ts";

export type Health = "healthy" | "unhealthy" | "starting" | "none";

/** Container states as SPEC §3 names them. */
export type State = "running" | "exited" | "restarting" | "paused" | "dead";

export interface ServiceStatus {
  name: string;
  container: string;
  state: State;
  /** The health check's verdict (SPEC §3's health status values). */
  status: Health;
  uptime: string;
  image: string;
  ports: string[];
  exitCode?: number;
  /** A one-shot job (another service waits for it to complete) that ended with code 0: done,
   *  not down (a volume-owner job). */
  finished?: true;
  /** Docker's own words for it ("Up 5 minutes (healthy)", "Exited (3) 2 minutes ago"). */
  statusText: string;
}

export interface StatusReport {
  services: ServiceStatus[];
  summary: { total: number; running: number; stopped: number; healthy: number; unhealthy: number; finished?: number };
}

export function healthOf(inspect: Pick<ContainerInspect, "State">): Health {
  // A paused container keeps its health check's last verdict; a stopped one has none.
  if (inspect.State.Status !== "running" && inspect.State.Status !== "paused") return "none";
  const h = inspect.State.Health?.Status;
  return h === "healthy" || h === "unhealthy" || h === "starting" ? h : "none";
}

const ENDED = new Set(["exited", "dead", "restarting"]);

/** Docker's state in SPEC §3's terms: a container created but never started, or being removed, is
 *  not running, which is what "exited" says (Docker's words stay in `statusText`). */
export function stateOf(dockerState: string): State {
  return dockerState === "running" || dockerState === "restarting" || dockerState === "paused" || dockerState === "dead" ? dockerState : "exited";
}

export function serviceStatus(summary: ContainerSummary, inspect: ContainerInspect, now = Date.now(), jobs: ReadonlySet<string> = new Set()): ServiceStatus {
  const running = inspect.State.Status === "running";
  const service = summary.Labels["com.docker.compose.service"] ?? summary.Names[0]?.replace(/^\//, "") ?? summary.Id.slice(0, 12);
  return {
    name: service,
    container: (summary.Names[0] ?? inspect.Name).replace(/^\//, ""),
    state: stateOf(inspect.State.Status),
    status: healthOf(inspect),
    uptime: uptimeOf(running, inspect.State.StartedAt, now),
    image: inspect.Config.Image,
    ports: formatPorts(summary.Ports ?? []),
    // Only a container that has ended (or is between restarts) has an exit code worth showing.
    ...(ENDED.has(inspect.State.Status) ? { exitCode: inspect.State.ExitCode } : {}),
    ...(jobs.has(service) && inspect.State.Status === "exited" && inspect.State.ExitCode === 0 ? { finished: true as const } : {}),
    statusText: summary.Status,
  };
}

export function summarise(services: ServiceStatus[]): StatusReport["summary"] {
  const running = services.filter((s) => s.state === "running").length;
  const finished = services.filter((s) => s.finished).length;
  return {
    total: services.length,
    running,
    stopped: services.length - running,
    healthy: services.filter((s) => s.status === "healthy").length,
    unhealthy: services.filter((s) => s.status === "unhealthy").length,
    // Of the stopped, the jobs that did their work: a monitor can tell them from services down.
    ...(finished ? { finished } : {}),
  };
}

export async function collectStatus(engine: Engine, project: string): Promise<StatusReport> {
  // A stack that never ran, or was taken down, has no containers: an answer, not a failure (a
  // monitoring script reads exit 1 as the command broken). The text output says how to start it.
  const containers = await engine.listProjectContainers(project);
  const now = Date.now();
  const jobs = awaitedJobs(containers);
  const services = await Promise.all(containers.map(async (c) => serviceStatus(c, await engine.inspectContainer(c.Id), now, jobs)));
  services.sort((a, b) => a.name.localeCompare(b.name) || a.container.localeCompare(b.container));
  return { services, summary: summarise(services) };
}
