// `stackgen completion bash|zsh|fish`: completion scripts for commands, flags and catalog ids.
import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { CATEGORY_IDS } from "../schema/catalog.ts";
import { usageError } from "../errors.ts";
import { printJson, printText } from "./output.ts";

const COMMANDS: Record<string, string[]> = {
  serve: ["--port", "--ui-port", "--host"],
  validate: ["--preset", "--services", "--skill-packs", "--proxy", "--domain", "--gpu", "--platform", "--file", "--json"],
  generate: ["--name", "--preset", "--services", "--skill-packs", "--proxy", "--domain", "--gpu", "--platform", "--deployment", "--core-version", "--no-secrets", "--dir", "--from", "--dry-run", "--force", "--json"],
  services: ["--category", "--maturity", "--json"],
  presets: ["--json"],
  skills: ["--services", "--json"],
  deploy: ["--provider", "--url", "--api-key", "--dir", "--update", "--json"],
  status: ["--dir", "--json"],
  doctor: ["--dir", "--json"],
  update: ["--dir", "--dry-run", "--backup", "--timeout", "--json"],
  backup: ["--dir", "--output", "--hot", "--yes", "--timeout", "--keep", "--dry-run", "--json"],
  completion: ["--json"],
  healthcheck: ["--port", "--host", "--timeout"],
};
/** Flags whose value is a file (directories offered to descend into), or a directory. */
const FILE_FLAGS = ["--from", "--file"];
const DIR_FLAGS = ["--dir", "--output"];

export function completionScript(shell: string): string {
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
  const positional: Record<string, string> = { backup: "create list restore prune", completion: "bash zsh fish", presets };
  const commands = Object.keys(COMMANDS).join(" ");
  const rows = (f: (key: string, words: string) => string, table: Record<string, string>) => Object.entries(table).map(([k, w]) => f(k, w)).join("\n");

  if (shell === "bash") {
    return `# bash completion for stackgen; load with: source <(stackgen completion bash)
_stackgen_paths() { # -f: files and directories, -d: directories
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen "$1" -- "$cur")
}
_stackgen_list() { # complete the last item of a comma-separated list, keeping the ones before it
  local done=""; [[ $cur == *,* ]] && done="\${cur%,*},"
  COMPREPLY=( $(compgen -P "$done" -W "$1" -- "\${cur##*,}") )
}
_stackgen() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" opts=""
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=( $(compgen -W "${commands} --help --version" -- "$cur") ); return; fi
  case "$prev" in
    ${FILE_FLAGS.join("|")}) _stackgen_paths -f; return ;;
    ${DIR_FLAGS.join("|")}) _stackgen_paths -d; return ;;
${rows((flag, ids) => `    ${flag}) _stackgen_list "${ids}"; return ;;`, lists)}
${rows((flag, v) => `    ${flag}) COMPREPLY=( $(compgen -W "${v}" -- "$cur") ); return ;;`, values)}
  esac
  if [[ $cur != -* ]]; then
    case "\${COMP_WORDS[*]:1:COMP_CWORD-1}" in
      "backup restore"*) _stackgen_paths -f; return ;;
${rows((cmd, w) => `      ${cmd}) opts="${w}" ;;`, positional)}
    esac
  fi
  [ -z "$opts" ] && case "\${COMP_WORDS[1]}" in
${Object.entries(COMMANDS).map(([cmd, flags]) => `    ${cmd}) opts="${[...flags, "--help"].join(" ")}" ;;`).join("\n")}
  esac
  COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -F _stackgen stackgen
`;
  }
  if (shell === "zsh") {
    return `#compdef stackgen
# zsh completion for stackgen; load with: source <(stackgen completion zsh)
_stackgen() {
  if (( CURRENT == 2 )); then _values 'command' ${commands}; return; fi
  case "$words[CURRENT-1]" in
    ${FILE_FLAGS.join("|")}) _files; return ;;
    ${DIR_FLAGS.join("|")}) _files -/; return ;;
${rows((flag, ids) => `    ${flag}) _values -s , '${flag.slice(2)}' ${ids}; return ;;`, lists)}
${rows((flag, v) => `    ${flag}) _values '${flag.slice(2)}' ${v}; return ;;`, values)}
  esac
  if [[ $PREFIX != -* ]]; then
    case "$words[2,CURRENT-1]" in
      "backup restore"*) _files; return ;;
${rows((cmd, w) => `      ${cmd}) _values '${cmd}' ${w}; return ;;`, positional)}
    esac
  fi
  case "$words[2]" in
${Object.entries(COMMANDS).filter(([, f]) => f.length).map(([cmd, flags]) => `    ${cmd}) _values 'option' ${flags.map((f) => `'${f}'`).join(" ")} ;;`).join("\n")}
  esac
}
compdef _stackgen stackgen
`;
  }
  if (shell === "fish") {
    const flagValue = (flag: string) =>
      FILE_FLAGS.includes(flag) ? " -rF"
      : DIR_FLAGS.includes(flag) ? " -xa '(__fish_complete_directories)'"
      : lists[flag] ? ` -xa '(__fish_append , ${lists[flag]})'`
      : values[flag] ? ` -xa '${values[flag]}'`
      : "";
    const flags = [...new Set(Object.values(COMMANDS).flat())];
    const lines = [
      "# fish completion for stackgen; load with: stackgen completion fish | source",
      "complete -c stackgen -f",
      `complete -c stackgen -n __fish_use_subcommand -a '${commands}'`,
      ...Object.entries(positional).map(([cmd, w]) => `complete -c stackgen -n '__fish_seen_subcommand_from ${cmd}; and not __fish_seen_subcommand_from ${w}' -a '${w}'`),
      "complete -c stackgen -n '__fish_seen_subcommand_from backup; and __fish_seen_subcommand_from restore' -F",
      ...flags.map((f) => `complete -c stackgen -n '__fish_seen_subcommand_from ${Object.keys(COMMANDS).filter((cmd) => COMMANDS[cmd]!.includes(f)).join(" ")}' -l ${f.slice(2)}${flagValue(f)}`),
    ];
    return lines.join("\n") + "\n";
  }
  throw usageError(`Unknown shell "${shell}": use bash, zsh or fish`);
}

export default defineCommand({
  meta: { name: "completion", description: "Print a shell completion script (bash, zsh or fish)" },
  args: {
    shell: { type: "positional", required: true, description: "bash, zsh or fish" },
    json: { type: "boolean", description: "Print one JSON document ({shell, script}) on stdout" },
  },
  run({ args }) {
    const script = completionScript(args.shell);
    if (args.json) printJson({ shell: args.shell, script });
    else printText(script);
  },
});
