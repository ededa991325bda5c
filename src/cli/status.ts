// stackgen status: every container of the stack with state, uptime and health (SPEC §2.8, §4.1).
import { defineCommand } from "citty";
import { collectStatus, type StatusReport } from "../docker/status.ts";
import { dirArg, jsonArg, openStack } from "../docker/cli-support.ts";
import { dim, green, log, printJson, printText, red, yellow } from "./output.ts";
import { unfinishedCommand } from "../docker/stack-lock.ts";
import { unfinishedUpdateNote } from "../docker/update.ts";

function stateColour(state: string, finished = false): string {
  return state === "running" || finished ? green(state) : state === "restarting" || state === "paused" ? yellow(state) : red(state);
}

function healthColour(health: string): string {
  return health === "healthy" ? green(health) : health === "unhealthy" ? red(health) : health === "starting" ? yellow(health) : dim(health);
}

export function renderStatus(report: StatusReport, project: string): string {
  if (report.services.length === 0) return `Stack "${project}" has no containers: it is not started (\`docker compose up -d\` starts it).\n\nServices: 0/0 running`;
  const rows = report.services.map((s) => [
    s.name,
    s.finished ? "finished (0)" : s.state + (s.exitCode !== undefined ? ` (${s.exitCode})` : ""),
    s.uptime || "-",
    s.status,
    s.image,
    s.ports.join(", "),
  ]);
  const header = ["SERVICE", "STATE", "UPTIME", "HEALTH", "IMAGE", "PORTS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const pad = (text: string, width: number, shown = text) => shown + " ".repeat(Math.max(0, width - text.length));
  const lines = [header.map((h, i) => pad(h, widths[i])).join("  ").trimEnd()];
  for (const [i, r] of rows.entries()) {
    lines.push(
      [pad(r[0], widths[0]), pad(r[1], widths[1], stateColour(r[1], report.services[i]!.finished)), pad(r[2], widths[2]), pad(r[3], widths[3], healthColour(r[3])), pad(r[4], widths[4]), r[5]]
        .join("  ")
        .trimEnd(),
    );
  }
  const finished = report.services.filter((s) => s.finished).map((s) => s.name);
  // A job that did its work (handing a volume to the app's user) is not a service that is down.
  if (finished.length) lines.push("", `Finished one-shot ${finished.length === 1 ? "job" : "jobs"}, not down: ${finished.join(", ")}`);
  lines.push("", `Services: ${report.summary.running}/${report.summary.total} running`);
  return lines.join("\n");
}

export default defineCommand({
  meta: { name: "status", description: "Show every container of the stack with state, uptime and health" },
  args: { dir: dirArg, json: jsonArg },
  async run({ args }) {
    const { stack, engine } = await openStack(args.dir);
    const report = await collectStatus(engine, stack.project);
    // Said first: the table alone (or "not started") would invite a plain start.
    const unfinished = unfinishedCommand(stack.dir) ?? unfinishedUpdateNote(stack.dir);
    if (unfinished) log.warn(unfinished);
    if (args.json) printJson(report);
    else printText(renderStatus(report, stack.project));
  },
});
