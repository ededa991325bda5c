// The command tree. Each command lives in its own file and is loaded only when it runs, so
// `stackgen --version` and `stackgen serve` start without parsing the others.
import { defineCommand, renderUsage, runCommand, type CommandDef } from "citty";
import { StackgenError } from "../errors.ts";
import { VERSION, COMMIT } from "../version.ts";
import { log, printJson, printText, stdoutStyled } from "./output.ts";

const lazy = (load: () => Promise<{ default: CommandDef<any> }>) => () => load().then((m) => m.default);

export const subCommands = {
  serve: lazy(() => import("./serve.ts")),
  validate: lazy(() => import("./validate.ts")),
  generate: lazy(() => import("./generate.ts")),
  services: lazy(() => import("./services.ts")),
  presets: lazy(() => import("./presets.ts")),
  skills: lazy(() => import("./skills.ts")),
  deploy: lazy(() => import("./deploy.ts")),
  status: lazy(() => import("./status.ts")),
  update: lazy(() => import("./update.ts")),
  backup: lazy(() => import("./backup/index.ts")),
  completion: lazy(() => import("./completion.ts")),
  healthcheck: lazy(() => import("./healthcheck.ts")),
};

export const main = defineCommand({
  meta: {
    name: "stackgen",
    version: VERSION,
    description: "Generate, deploy, update and back up self-hosted container stacks.",
  },
  subCommands,
});

/** Find the deepest command named by argv (for --help on subcommands). */
async function resolveCommand(argv: string[]): Promise<[CommandDef<any>, CommandDef<any> | undefined]> {
  let cmd: CommandDef<any> = main;
  let parent: CommandDef<any> | undefined;
  for (const a of argv) {
    if (a.startsWith("-")) break;
    const subs = (typeof cmd.subCommands === "function" ? await cmd.subCommands() : cmd.subCommands) as Record<string, () => Promise<CommandDef<any>>> | undefined;
    const next = subs?.[a];
    if (!next) break;
    parent = cmd;
    cmd = await (typeof next === "function" ? next() : next);
  }
  return [cmd, parent];
}

export async function run(argv: string[]): Promise<number> {
  if (argv[0] === "--version" || argv[0] === "-v") {
    process.stdout.write(`stackgen ${VERSION} (${COMMIT})\n`);
    return 0;
  }
  if (argv.length === 0 || argv.includes("--help") || argv.includes("-h")) {
    const [cmd, parent] = await resolveCommand(argv.filter((a) => a !== "--help" && a !== "-h"));
    const usage = await renderUsage(cmd, parent);
    // citty colours its help unless NO_COLOR is exactly "1", even into a pipe or a file.
    printText(stdoutStyled() ? usage : Bun.stripANSI(usage));
    return 0;
  }
  const json = argv.includes("--json");
  try {
    const [cmd] = await resolveCommand(argv);
    if (cmd === main) throw new StackgenError("USAGE_ERROR", `Unknown command "${argv[0]}". Run stackgen --help.`, 400);
    await runCommand(main, { rawArgs: argv });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (e) {
    const err = e instanceof StackgenError ? e : citty2error(e);
    if (json) printJson({ error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } });
    log.error(err.message);
    for (const d of err.details ?? []) log.error(`  ${d.field}: ${d.message}`);
    if (!(e instanceof StackgenError) && process.env.STACKGEN_DEBUG) console.error(e);
    return err.exitCode;
  }
}

/** citty throws plain errors for bad usage (missing required args...); anything else is a failure. */
function citty2error(e: unknown): StackgenError {
  const err = e as { code?: string; message?: string };
  if (err?.code === "EARG" || /argument|Unknown command/i.test(err?.message ?? "")) {
    return new StackgenError("USAGE_ERROR", err.message ?? "Bad usage", 400);
  }
  return new StackgenError("INTERNAL_ERROR", `Unexpected failure: ${err?.message ?? String(e)}`, 500, undefined, 1);
}
