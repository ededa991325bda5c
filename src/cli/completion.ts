// `stackgen completion bash|zsh|fish`: completion scripts for commands, flags and catalog ids.
import { defineCommand, type ArgsDef, type CommandDef } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { CATEGORY_IDS } from "../schema/catalog.ts";
import { usageError } from "../errors.ts";
import { didYouMean } from "../core/suggest.ts";
import { printJson, printText } from "./output.ts";

/** Flags whose value is a file (directories offered to descend into), or a directory. */
const FILE_FLAGS = ["--from", "--file"];
const DIR_FLAGS = ["--dir", "--output"];
/** Commands whose argument is a file (a backup archive). */
const FILE_COMMANDS = ["backup restore", "backup verify"];

interface CommandFlags {
  /** Every flag the command takes, as typed (a boolean that defaults to true both ways: `--secrets`, `--no-secrets`). */
  flags: string[];
  /** Flags that take a value of the user's own (a URL, a name, a number): nothing to offer. */
  free: string[];
}

/** The flags of every command and subcommand (`backup create`), read from their definitions, so
 *  the scripts offer exactly what each command accepts. */
export async function commandFlags(): Promise<Record<string, CommandFlags>> {
  const { main, subcommandsOf, loadCommand } = await import("./index.ts");
  const out: Record<string, CommandFlags> = {};
  const walk = async (cmd: CommandDef<any>, path: string): Promise<void> => {
    const subs = await subcommandsOf(cmd);
    if (subs) {
      for (const [name, entry] of Object.entries(subs)) await walk(await loadCommand(entry), path ? `${path} ${name}` : name);
      return;
    }
    const args = Object.entries((cmd.args ?? {}) as ArgsDef).filter(([, def]) => def.type !== "positional");
    // --secrets next to --from turns secrets back on over a file made without them: both are
    // offered, and so is a negation the help names (--no-gpu, over a preset's GPU support).
    const negated = (name: string, def: ArgsDef[string]) => def.type === "boolean" && (def.default === true || (def.description ?? "").includes(`--no-${name}`));
    const flags = args.flatMap(([name, def]) => (negated(name, def) ? [`--${name}`, `--no-${name}`] : [`--${name}`]));
    if (!flags.includes("--json")) flags.push("--json"); // every command takes it (strict-args.ts)
    flags.push("--no-color"); // and this one (cli/index.ts)
    out[path] = { flags, free: args.filter(([, def]) => def.type === "string").map(([name]) => `--${name}`) };
  };
  await walk(main, "");
  return out;
}

const SHELLS = ["bash", "zsh", "fish"];

export async function completionScript(shell: string): Promise<string> {
  if (!SHELLS.includes(shell)) throw usageError(`Unknown shell "${shell}"${didYouMean(shell, SHELLS)}: use bash, zsh or fish`);
  const commandsFlags = await commandFlags();
  const c = getCatalog();
  const presets = c.presets.map((p) => p.id).join(" ");
  /** Flags taking one value from a fixed set. */
  const values: Record<string, string> = {
    "--preset": presets,
    "--proxy": "caddy traefik none",
    "--platform": "linux/amd64 linux/arm64",
    "--deployment": "docker bare-metal local",
    "--provider": "coolify dokploy",
    "--category": CATEGORY_IDS.join(" "),
    "--maturity": "stable beta experimental",
  };
  /** Flags taking a comma-separated list of ids. */
  const lists: Record<string, string> = {
    "--services": c.services.map((s) => s.id).join(" "),
    "--skill-packs": c.packs.map((p) => p.id).join(" "),
  };
  /** A command's first positional argument. */
  const backupSubcommands = Object.keys(commandsFlags).filter((k) => k.startsWith("backup ")).map((k) => k.slice(7)).join(" ");
  const named = [...new Set(Object.keys(commandsFlags).map((k) => k.split(" ")[0]!))].join(" ");
  // `stackgen help <command>` is that command's --help.
  const commands = `${named} help`;
  const positional: Record<string, string> = { backup: backupSubcommands, completion: "bash zsh fish", help: named, presets, services: lists["--services"]! };
  const rows = (f: (key: string, words: string) => string, table: Record<string, string>) => Object.entries(table).map(([k, w]) => f(k, w)).join("\n");
  const offered = new Set([...FILE_FLAGS, ...DIR_FLAGS, ...Object.keys(values), ...Object.keys(lists)]);
  /** Flags whose value is the user's own text: nothing is offered after them (not flags, not files). */
  const free = [...new Set(Object.values(commandsFlags).flatMap((c) => c.free))].filter((f) => !offered.has(f)).sort();
  const nested = Object.entries(commandsFlags).filter(([path]) => path.includes(" "));
  const single = Object.entries(commandsFlags).filter(([path]) => !path.includes(" "));

  if (shell === "bash") {
    return `# bash completion for stackgen; load with: source <(stackgen completion bash)
_stackgen_paths() { # -f: files and directories, -d: directories
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen "$1" -- "$cur")
}
_stackgen_list() { # complete the last item of a comma-separated list, keeping the ones before it
  local done=""; [[ $cur == *,* ]] && done="\${cur%,*},"
  COMPREPLY=( $(compgen -P "$done" -W "$1" -- "\${cur##*,}") )
  compopt -o nospace 2>/dev/null # so that a comma can follow for the next item
}
_stackgen() {
  local -a words=("\${COMP_WORDS[@]}"); local cword=$COMP_CWORD
  # Options every command takes, given before it (stackgen --json services): the command follows.
  while (( cword > 1 )); do
    case "\${words[1]}" in --json|--no-json|--no-color) words=("\${words[0]}" "\${words[@]:2}"); ((cword--)) ;; *) break ;; esac
  done
  local cur="\${words[cword]}" prev="\${words[cword-1]}" opts=""
  # --flag=value: bash splits at "=", so the flag is one word further back.
  if [[ $cur == "=" ]]; then cur=""; elif [[ $prev == "=" ]]; then prev="\${words[cword-2]}"; fi
  if [ "$cword" -eq 1 ]; then COMPREPLY=( $(compgen -W "${commands} --help --version" -- "$cur") ); return; fi
  case "$prev" in
    ${FILE_FLAGS.join("|")}) _stackgen_paths -f; return ;;
    ${DIR_FLAGS.join("|")}) _stackgen_paths -d; return ;;
    ${free.join("|")}) COMPREPLY=(); return ;;
${rows((flag, ids) => `    ${flag}) _stackgen_list "${ids}"; return ;;`, lists)}
${rows((flag, v) => `    ${flag}) COMPREPLY=( $(compgen -W "${v}" -- "$cur") ); return ;;`, values)}
  esac
  if [[ $cur != -* ]]; then
    case "\${words[*]:1:cword-1}" in
${FILE_COMMANDS.map((cmd) => `      "${cmd}"*) _stackgen_paths -f; return ;;`).join("\n")}
${rows((cmd, w) => `      ${cmd}|${cmd}\\ -*) opts="${w}" ;;`, positional)}
    esac
  fi
  [ -z "$opts" ] && case "\${words[1]} \${words[2]}" in
${nested.map(([path, c]) => `    "${path}") opts="${[...c.flags, "--help"].join(" ")}" ;;`).join("\n")}
  esac
  [ -z "$opts" ] && case "\${words[1]}" in
${single.map(([path, c]) => `    ${path}) opts="${[...c.flags, "--help"].join(" ")}" ;;`).join("\n")}
  esac
  COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -F _stackgen stackgen
`;
  }
  if (shell === "zsh") {
    return `#compdef stackgen
# zsh completion for stackgen; load with: source <(stackgen completion zsh)
# (compinit must have run first, as in any zsh set up for completion: autoload -U compinit && compinit)
_stackgen() {
  # Options every command takes, given before it (stackgen --json services): the command follows.
  while (( CURRENT > 2 )) && [[ $words[2] == (--json|--no-json|--no-color) ]]; do words[2]=(); (( CURRENT-- )); done
  if (( CURRENT == 2 )); then _values 'command' ${commands} --help --version; return; fi
  local prev=$words[CURRENT-1]
  # --flag=value: the flag is in the word itself; complete what follows the "=".
  if [[ $PREFIX == --*=* ]]; then prev=\${PREFIX%%=*}; compset -P '*='; fi
  case "$prev" in
    ${FILE_FLAGS.join("|")}) _files; return ;;
    ${DIR_FLAGS.join("|")}) _files -/; return ;;
    ${free.join("|")}) _message 'value'; return ;;
${rows((flag, ids) => `    ${flag}) _values -s , '${flag.slice(2)}' ${ids}; return ;;`, lists)}
${rows((flag, v) => `    ${flag}) _values '${flag.slice(2)}' ${v}; return ;;`, values)}
  esac
  if [[ $PREFIX != -* ]]; then
    case "$words[2,CURRENT-1]" in
${FILE_COMMANDS.map((cmd) => `      "${cmd}"*) _files; return ;;`).join("\n")}
${rows((cmd, w) => `      ${cmd}|${cmd}\\ -*) _values '${cmd}' ${w}; return ;;`, positional)}
    esac
  fi
  case "$words[2] $words[3]" in
${nested.map(([path, c]) => `    "${path}") _values 'option' ${c.flags.map((f) => `'${f}'`).join(" ")}; return ;;`).join("\n")}
  esac
  case "$words[2]" in
${single.map(([path, c]) => `    ${path}) _values 'option' ${c.flags.map((f) => `'${f}'`).join(" ")} ;;`).join("\n")}
  esac
}
# Sourced, it registers itself; autoloaded from a file named _stackgen on $fpath (as #compdef
# invites), this body runs for the first completion and must answer it as well.
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _stackgen "$@"; else compdef _stackgen stackgen; fi
`;
  }
  const flagValue = (flag: string) =>
    FILE_FLAGS.includes(flag) ? " -rF"
    // Given the token without its `--dir=`: fish puts the option back in front of each answer.
    : DIR_FLAGS.includes(flag) ? ` -xa '(__fish_complete_directories (commandline -ct | string replace -r -- "^--[^=]*=" ""))'`
    : lists[flag] ? ` -xa '(__fish_append , ${lists[flag]})'`
    : values[flag] ? ` -xa '${values[flag]}'`
    : free.includes(flag) ? " -x"
    : "";
  // fish's __fish_seen_subcommand_from matches any earlier word, an option's value too
  // (`generate --project-name backup` is not the backup command), so the command is read here:
  // the words that are neither options nor the value of one.
  const taking = [...new Set([...FILE_FLAGS, ...DIR_FLAGS, ...Object.keys(values), ...Object.keys(lists), ...free])].sort();
  const at = (path: string) => `__stackgen_at ${path}`;
  const lines = [
    "# fish completion for stackgen; load with: stackgen completion fish | source",
    "function __stackgen_words --description 'stackgen words so far that are neither options nor their values'",
    "    set -l skip",
    "    for w in (commandline -opc)[2..-1]",
    "        if set -q skip[1]",
    "            set -e skip",
    "            continue",
    "        end",
    "        switch $w",
    `            case ${taking.join(" ")}`,
    "                set skip 1",
    "            case '-*'",
    "            case '*'",
    "                echo $w",
    "        end",
    "    end",
    "end",
    "function __stackgen_at --description 'the stackgen command so far begins with these words'",
    "    set -l words (__stackgen_words)",
    "    set -l n (count $argv)",
    "    test (count $words) -ge $n; and test \"$words[1..$n]\" = \"$argv\"",
    "end",
    "function __stackgen_is --description 'the stackgen words so far are exactly these'",
    "    set -l words (string join ' ' (__stackgen_words))",
    "    test \"$words\" = \"$argv\"",
    "end",
    "complete -c stackgen -f",
    `complete -c stackgen -n '__stackgen_is' -a '${commands}'`,
    "complete -c stackgen -n '__stackgen_is' -l help -l version",
    ...Object.entries(positional).map(([cmd, w]) => `complete -c stackgen -n '__stackgen_is ${cmd}' -a '${w}'`),
    ...FILE_COMMANDS.map((cmd) => `complete -c stackgen -n '__stackgen_at ${cmd}' -F`),
    ...Object.entries(commandsFlags).flatMap(([path, c]) => c.flags.map((f) => `complete -c stackgen -n '${at(path)}' -l ${f.slice(2)}${flagValue(f)}`)),
  ];
  return lines.join("\n") + "\n";
}

export default defineCommand({
  meta: { name: "completion", description: "Print a shell completion script (bash, zsh or fish)" },
  args: {
    shell: { type: "positional", required: true, description: "bash, zsh or fish" },
    json: { type: "boolean", description: "Print one JSON document ({shell, script}) on stdout" },
  },
  async run({ args }) {
    const script = await completionScript(args.shell);
    if (args.json) printJson({ shell: args.shell, script });
    else printText(script);
  },
});
