// The command tree. Each command lives in its own file and is loaded only when it runs, so
// `stackgen --version` and `stackgen serve` start without parsing the others.
import { defineCommand, renderUsage, runCommand, type ArgsDef, type CommandDef } from "citty";
import { failure, StackgenError, usageError } from "../errors.ts";
import { didYouMean } from "../core/suggest.ts";
import { checkArgs } from "./strict-args.ts";
import { VERSION, COMMIT } from "../version.ts";
import { errorDocument, log, printJson, printText, stdoutStyled } from "./output.ts";

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
  doctor: lazy(() => import("./doctor.ts")),
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

type Subcommands = Record<string, CommandDef<any> | (() => Promise<CommandDef<any>>)>;
/** A command's subcommands (citty allows them lazy), or undefined for a leaf command. */
export const subcommandsOf = async (cmd: CommandDef<any>) =>
  (typeof cmd.subCommands === "function" ? await cmd.subCommands() : cmd.subCommands) as Subcommands | undefined;
/** One subcommand, loaded if it is lazy. */
export const loadCommand = async (entry: Subcommands[string]) => (typeof entry === "function" ? entry() : entry);

/** Find the deepest command named by argv and the words that name it. */
async function resolveCommand(argv: string[]): Promise<[CommandDef<any>, string[]]> {
  let cmd: CommandDef<any> = main;
  const path: string[] = [];
  for (const a of argv) {
    if (a.startsWith("-")) break;
    const next = (await subcommandsOf(cmd))?.[a];
    if (!next) break;
    cmd = await loadCommand(next);
    path.push(a);
  }
  return [cmd, path];
}

/** Whether argv asks for JSON, decided as citty's parser decides `args.json`: the last
 *  `--json[=value]` wins (only `=false` turns it off), a `--no-json` anywhere overrides it, and
 *  words after `--` are arguments. Errors thrown before or outside that parser use this. */
export function jsonRequested(argv: string[]): boolean {
  let json = false;
  for (const word of argv) {
    if (word === "--") break;
    if (word === "--no-json") return false;
    if (word === "--json") json = true;
    else if (word.startsWith("--json=")) json = word !== "--json=false";
  }
  return json;
}

/** Examples under a command's --help, by its path: what a first run of each looks like. */
export const EXAMPLES: Record<string, string[]> = {
  "": [
    "stackgen generate --preset researcher --dir ./lab   # write a bundle",
    "stackgen doctor --dir ./lab                          # will it start on this host?",
    "stackgen serve                                       # API on :3456, web UI on :3654",
  ],
  generate: [
    "stackgen generate --services n8n,postgresql --proxy caddy --domain example.com --dir ./automation",
    "stackgen generate --dir ./automation --services n8n,postgresql,redis --diff --dry-run   # see a change first",
    "stackgen generate --from export.json --dir ./restored   # an export from the UI or the API",
  ],
  validate: ["stackgen validate --preset devops", "stackgen validate --services supabase,redis --json"],
  deploy: ["STACKGEN_DEPLOY_API_KEY=… stackgen deploy --provider coolify --url https://coolify.example.com --dir ./lab"],
  status: ["stackgen status --dir ./lab", "stackgen status --dir ./lab --json | jq '.summary'"],
  update: ["stackgen update --dir ./lab --dry-run   # which images moved", "stackgen update --dir ./lab --backup"],
  doctor: ["stackgen doctor --dir ./lab"],
  "backup create": ["stackgen backup create --dir ./lab", "stackgen backup create --dir ./lab --hot --output /mnt/backups"],
  "backup restore": ["stackgen backup restore ./lab/backups/lab-20261128T100000000Z.tar.gz --dir ./lab   # names from: stackgen backup list"],
  "backup list": ["stackgen backup list --dir ./lab", "stackgen backup list --dir ./lab --output /mnt/backups --json"],
  "backup verify": ["stackgen backup verify ./lab/backups/lab-20261128T100000000Z.tar.gz   # needs no stack and no Docker"],
  "backup prune": ["stackgen backup prune --dir ./lab --keep 3 --keep-daily 7 --dry-run   # what would go", "stackgen backup prune --dir ./lab --keep 5 --yes"],
  backup: ["stackgen backup create --dir ./lab", "stackgen backup list --dir ./lab", "stackgen backup restore <archive> --dir ./lab"],
  services: ["stackgen services --category database", "stackgen services n8n   # ports, dependencies, variables, volumes"],
  presets: ["stackgen presets", "stackgen presets researcher --json"],
  skills: ["stackgen skills", "stackgen skills --services n8n,qdrant   # packs that fit, with a score"],
  healthcheck: ["stackgen healthcheck --port 3456   # in a container's HEALTHCHECK"],
  serve: ["stackgen serve --port 8080 --ui-port 8081", "API_KEYS=secret-key REDIS_URL=redis://127.0.0.1:6379 stackgen serve"],
  completion: ["stackgen completion bash > /etc/bash_completion.d/stackgen", "stackgen completion fish | source"],
};

/** Below every command's options: what every command takes, and its examples. */
function helpFooter(path: string[]): string {
  const examples = EXAMPLES[path.join(" ")] ?? [];
  return [
    "",
    "Every command also takes --no-color (as NO_COLOR=1 does); those that print results take --json.",
    ...(examples.length ? ["", "EXAMPLES", "", ...examples.map((e) => `  ${e}`)] : []),
  ].join("\n");
}

/** `help [command] [words]` as `[command] [words] --help`. */
function asHelp(given: string[]): string[] {
  let start = 0;
  while (given[start] === "help") start++;
  const rest = given.slice(start);
  const end = rest.indexOf("--");
  const head = end < 0 ? rest : rest.slice(0, end);
  return [...head.filter((w) => !JSON_SWITCH.test(w)), ...head.filter((w) => JSON_SWITCH.test(w)), "--help", ...(end < 0 ? [] : rest.slice(end))];
}

/** `--json`, `--no-json`, `--json=<bool>`: taken by every command, anywhere before `--`. */
const JSON_SWITCH = /^--(no-)?json(=.*)?$/;

/** Options that belong to every command, given before it (`stackgen --json services`): moved
 *  after the command's words, where its parser reads them. */
function globalsAfterCommand(argv: string[]): string[] {
  let i = 0;
  while (i < argv.length && JSON_SWITCH.test(argv[i]!)) i++;
  if (i === 0 || i === argv.length || argv[i]!.startsWith("-")) return argv;
  const end = argv.indexOf("--");
  const head = end < 0 ? argv.slice(i) : argv.slice(i, end);
  return [...head, ...argv.slice(0, i), ...(end < 0 ? [] : argv.slice(end))];
}

/** `argv` without `--no-color` (before `--`), which every command takes as NO_COLOR=1 does. */
export function withoutNoColor(argv: string[]): string[] {
  const end = argv.indexOf("--");
  const head = end < 0 ? argv : argv.slice(0, end);
  if (!head.includes("--no-color")) return argv;
  process.env.NO_COLOR = "1";
  return [...head.filter((w) => w !== "--no-color"), ...(end < 0 ? [] : argv.slice(end))];
}

export async function run(sent: string[]): Promise<number> {
  const given = globalsAfterCommand(withoutNoColor(sent));
  // `stackgen help [command]` is `stackgen [command] --help`: the JSON switches (`help --json
  // generate`) go after the command's words, and --help before any `--`.
  const argv = given[0] === "help" ? asHelp(given) : given;
  const json = jsonRequested(argv);
  // `--version` alone, in any order with the JSON switches (`--json --version` too).
  const words = argv.filter((w) => !JSON_SWITCH.test(w));
  // Options end at `--`: a `--help` after it is a value (`services -- --help` looks up that id).
  const options = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  if (words.length === 1 && (words[0] === "--version" || words[0] === "-v")) {
    if (json) printJson({ name: "stackgen", version: VERSION, commit: COMMIT });
    else printText(`stackgen ${VERSION} (${COMMIT})`);
    return 0;
  }
  try {
    // Nothing but the JSON switches (`stackgen --json`) asks for the help, as nothing at all does.
    if (words.length === 0 || options.includes("--help") || options.includes("-h")) {
      const words = argv.filter((a) => a !== "--help" && a !== "-h");
      const [cmd, path] = await resolveCommand(words);
      // `stackgen bogus --help` names no command: the same refusal as without --help.
      const word = words[path.length];
      const subcommands = await subcommandsOf(cmd);
      if (word !== undefined && !word.startsWith("-") && subcommands) {
        throw usageError(path.length === 0 ? `Unknown command "${word}"${didYouMean(word, Object.keys(subcommands))}. Run stackgen --help.` : `Unknown command "${word}" for stackgen ${path.join(" ")}${didYouMean(word, Object.keys(subcommands))}; expected one of ${Object.keys(subcommands).join(", ")}.`);
      }
      // citty names a command after its parent only (`backup create`): give it the whole path.
      const parent = path.length > 0 ? defineCommand({ meta: { name: ["stackgen", ...path.slice(0, -1)].join(" "), version: VERSION } }) : undefined;
      // citty pads its table rows to the terminal's width; trailing blanks only clutter a pipe or a file.
      const usage = `${(await renderUsage(cmd, parent)).replace(/[ \t]+$/gm, "").trimEnd()}\n${helpFooter(path)}\n`;
      if (json) printJson({ command: ["stackgen", ...path].join(" "), usage: Bun.stripANSI(usage) });
      // citty colours its help unless NO_COLOR is exactly "1", even into a pipe or a file.
      else printText(stdoutStyled() ? usage : Bun.stripANSI(usage));
      return 0;
    }
    const [cmd, path] = await resolveCommand(argv);
    if (cmd === main) {
      // The word that is wrong, not a --version or JSON switch before it (`--version --bogus`).
      const first = words.find((w) => w !== "--version" && w !== "-v") ?? words[0]!;
      // An option before any command: only --help, --version, --no-color and --json go there.
      if (first.startsWith("-")) throw usageError(`Unknown option "${first}"${didYouMean(first, ["--help", "--version", "--no-color", "--json"])}. Run stackgen --help.`);
      throw new StackgenError("USAGE_ERROR", `Unknown command "${first}"${didYouMean(first, Object.keys((await subcommandsOf(main)) ?? {}))}. Run stackgen --help.`, 400);
    }
    const name = path.join(" ");
    const subcommands = await subcommandsOf(cmd);
    if (subcommands && !cmd.run) {
      const word = argv[path.length];
      const choices = Object.keys(subcommands).join(", ");
      throw usageError(word === undefined || word.startsWith("-")
        ? `stackgen ${name} needs a subcommand: ${choices}.`
        : `Unknown command "${word}" for stackgen ${name}${didYouMean(word, Object.keys(subcommands))}; expected one of ${choices}.`);
    }
    checkArgs(name, cmd.args as ArgsDef | undefined, argv.slice(path.length));
    checkCurrentDirectory();
    await runCommand(main, { rawArgs: argv });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (e) {
    const err = e instanceof StackgenError ? e : citty2error(e);
    // Set before the error is printed: a reader gone by then (EPIPE) ends the process with it.
    process.exitCode = err.exitCode;
    if (json) printJson(errorDocument(err));
    log.error(err.message);
    for (const d of err.details ?? []) log.error(`  ${d.field}: ${d.message}`);
    if (!(e instanceof StackgenError) && process.env.STACKGEN_DEBUG) console.error(e);
    return err.exitCode;
  }
}

/** A current directory removed under the shell: Bun's path.resolve then falls back to the
 *  executable's folder, so `generate --name x` wrote its bundle beside the binary (or inside
 *  node_modules). Refused for every command alike: most resolve a path given or implied (--dir,
 *  an output folder, the files of a bundle). */
function checkCurrentDirectory(): void {
  try {
    process.cwd();
  } catch (e) {
    throw failure("NO_CURRENT_DIRECTORY", `The current directory no longer exists (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): cd into an existing one and run the command again. Nothing was done.`);
  }
}

/** citty throws plain errors for bad usage (missing required args...); anything else is a failure. */
function citty2error(e: unknown): StackgenError {
  const err = e as { code?: string; message?: string };
  // citty colours the names in its messages; they end up in --json output and logs otherwise.
  const message = Bun.stripANSI(err?.message ?? String(e));
  if (err?.code === "EARG" || /argument|Unknown command/i.test(message)) return new StackgenError("USAGE_ERROR", message, 400);
  return new StackgenError("INTERNAL_ERROR", `Unexpected failure: ${message}`, 500, undefined, 1);
}
