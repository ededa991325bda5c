// stackgen status: every container of the stack with state, uptime and health (SPEC §2.8, §4.1).
import { defineCommand } from "citty";
import { collectStatus, type StatusReport } from "../docker/status.ts";
import { dirArg, jsonArg, openStack } from "../docker/cli-support.ts";
import { dim, green, printJson, printText, red, yellow } from "./output.ts";

function stateColour(state: string): string {
  return state === "running" ? green(state) : state === "restarting" || state === "paused" ? yellow(state) : red(state);
}

function healthColour(health: string): string {
  return health === "healthy" ? green(health) : health === "unhealthy" ? red(health) : health === "starting" ? yellow(health) : dim(health);
}

export function renderStatus(report: StatusReport, project: string): string {
  if (report.services.length === 0) return `Stack "${project}" has no containers: it is not started (\`docker compose up -d\` starts it).\n\nServices: 0/0 running`;
  const rows = report.services.map((s) => [
    s.name,
    s.state + (s.exitCode !== undefined ? ` (${s.exitCode})` : ""),
    s.uptime || "-",
    s.status,
    s.image,
    s.ports.join(", "),
  ]);
  const header = ["SERVICE", "STATE", "UPTIME", "HEALTH", "IMAGE", "PORTS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const pad = (text: string, width: number, shown = text) => shown + " ".repeat(Math.max(0, width - text.length));
  const lines = [header.map((h, i) => pad(h, widths[i])).join("  ").trimEnd()];
  for (const r of rows) {
    lines.push(
      [pad(r[0], widths[0]), pad(r[1], widths[1], stateColour(r[1])), pad(r[2], widths[2]), pad(r[3], widths[3], healthColour(r[3])), pad(r[4], widths[4]), r[5]]
        .join("  ")
        .trimEnd(),
    );
  }
  lines.push("", `Services: ${report.summary.running}/${report.summary.total} running`);
  return lines.join("\n");
}

export default defineCommand({
  meta: { name: "status", description: "Show every container of the stack with state, uptime and health" },
  args: { dir: dirArg, json: jsonArg },
  async run({ args }) {
    const { stack, engine } = await openStack(args.dir);
    const report = await collectStatus(engine, stack.project);
    if (args.json) printJson(report);
    else printText(renderStatus(report, stack.project));
  },
});
