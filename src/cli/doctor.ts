// stackgen doctor: check that this host can run the stack before starting it.
import { defineCommand } from "citty";
import { dirArg, jsonArg } from "../docker/cli-support.ts";
import { runDoctor, type CheckStatus } from "../docker/doctor.ts";
import { Engine } from "../docker/engine.ts";
import { loadStack } from "../docker/stack.ts";
import { green, log, printJson, printText, red, yellow } from "./output.ts";

const MARK: Record<CheckStatus, (s: string) => string> = { ok: green, warn: yellow, fail: red };

export default defineCommand({
  meta: {
    name: "doctor",
    description: "Check this host before starting the stack: engine, compose, free host ports, memory, disk space, platform, GPU runtime, .env (exit 1 when a check fails)",
  },
  args: { dir: dirArg, json: jsonArg },
  async run({ args }) {
    const stack = loadStack(args.dir);
    // The engine is one of the checks: an unreachable one is reported, not thrown.
    const report = await runDoctor(stack, new Engine());
    const failed = report.checks.filter((c) => c.status === "fail");
    if (args.json) printJson(report);
    else {
      const width = Math.max(...report.checks.map((c) => c.id.length));
      const lines = report.checks.map((c) => `${MARK[c.status](c.status.padEnd(4))}  ${c.id.padEnd(width)}  ${c.message}`);
      const warned = report.checks.filter((c) => c.status === "warn").length;
      lines.push("", failed.length ? `${failed.length} check(s) failed: fix them before \`docker compose up -d\`.` : warned ? `Ready to start, with ${warned} warning(s).` : "Ready to start.");
      printText(lines.join("\n"));
    }
    if (!report.ok) {
      if (!args.json) log.error(`${report.project}: ${failed.map((c) => c.id).join(", ")} failed`);
      process.exitCode = 1;
    }
  },
});
