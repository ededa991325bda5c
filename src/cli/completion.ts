// `stackgen completion bash|zsh|fish`: completion scripts for commands, flags and catalog ids.
import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { usageError } from "../errors.ts";
import { printText } from "./output.ts";

const COMMANDS: Record<string, string[]> = {
  serve: ["--port", "--ui-port", "--host"],
  validate: ["--preset", "--services", "--skill-packs", "--proxy", "--domain", "--gpu", "--platform", "--file", "--json"],
  generate: ["--name", "--preset", "--services", "--skill-packs", "--proxy", "--domain", "--gpu", "--platform", "--deployment", "--core-version", "--no-secrets", "--dir", "--from", "--dry-run", "--force", "--json"],
  services: ["--category", "--maturity", "--json"],
  presets: ["--json"],
  skills: ["--services", "--json"],
  deploy: ["--provider", "--url", "--api-key", "--dir", "--update", "--json"],
  status: ["--dir", "--json"],
  update: ["--dir", "--dry-run", "--timeout", "--json"],
  backup: ["create", "list", "restore", "--dir", "--output", "--hot", "--yes", "--json"],
  completion: ["bash", "zsh", "fish"],
  healthcheck: ["--port", "--host", "--timeout"],
};

export function completionScript(shell: string): string {
  const c = getCatalog();
  const words = {
    commands: Object.keys(COMMANDS).join(" "),
    services: c.services.map((s) => s.id).join(" "),
    presets: c.presets.map((p) => p.id).join(" "),
    packs: c.packs.map((p) => p.id).join(" "),
  };
  if (shell === "bash") {
    const cases = Object.entries(COMMANDS).map(([cmd, flags]) => `    ${cmd}) opts="${flags.join(" ")}" ;;`).join("\n");
    return `# bash completion for stackgen; load with: source <(stackgen completion bash)
_stackgen() {
  local cur prev opts
  cur="\${COMP_WORDS[COMP_CWORD]}"; prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=( $(compgen -W "${words.commands} --help --version" -- "$cur") ); return; fi
  case "$prev" in
    --preset|presets) COMPREPLY=( $(compgen -W "${words.presets}" -- "$cur") ); return ;;
    --services) COMPREPLY=( $(compgen -W "${words.services}" -- "\${cur##*,}") ); return ;;
    --skill-packs) COMPREPLY=( $(compgen -W "${words.packs}" -- "\${cur##*,}") ); return ;;
    --proxy) COMPREPLY=( $(compgen -W "caddy traefik none" -- "$cur") ); return ;;
    --platform) COMPREPLY=( $(compgen -W "linux/amd64 linux/arm64" -- "$cur") ); return ;;
    --deployment) COMPREPLY=( $(compgen -W "docker bare-metal" -- "$cur") ); return ;;
    --provider) COMPREPLY=( $(compgen -W "coolify dokploy" -- "$cur") ); return ;;
    --dir|--output|--from|--file) COMPREPLY=( $(compgen -d -- "$cur") ); return ;;
  esac
  case "\${COMP_WORDS[1]}" in
${cases}
    *) opts="" ;;
  esac
  COMPREPLY=( $(compgen -W "$opts --help" -- "$cur") )
}
complete -F _stackgen stackgen
`;
  }
  if (shell === "zsh") {
    const subs = Object.keys(COMMANDS).map((k) => `'${k}'`).join(" ");
    const cases = Object.entries(COMMANDS).map(([cmd, flags]) => `    ${cmd}) _values 'option' ${flags.map((f) => `'${f}'`).join(" ")} ;;`).join("\n");
    return `#compdef stackgen
# zsh completion for stackgen; load with: source <(stackgen completion zsh)
_stackgen() {
  if (( CURRENT == 2 )); then _values 'command' ${subs}; return; fi
  case "$words[CURRENT-1]" in
    --preset) _values 'preset' ${words.presets}; return ;;
    --services) _values -s , 'service' ${words.services}; return ;;
    --skill-packs) _values -s , 'pack' ${words.packs}; return ;;
    --proxy) _values 'proxy' caddy traefik none; return ;;
    --platform) _values 'platform' linux/amd64 linux/arm64; return ;;
    --provider) _values 'provider' coolify dokploy; return ;;
    --dir|--output|--from|--file) _files; return ;;
  esac
  case "$words[2]" in
${cases}
  esac
}
compdef _stackgen stackgen
`;
  }
  if (shell === "fish") {
    const lines = [
      "# fish completion for stackgen; load with: stackgen completion fish | source",
      "complete -c stackgen -f",
      ...Object.keys(COMMANDS).map((cmd) => `complete -c stackgen -n __fish_use_subcommand -a ${cmd}`),
      ...Object.entries(COMMANDS).flatMap(([cmd, flags]) => flags.filter((f) => f.startsWith("--")).map((f) => `complete -c stackgen -n '__fish_seen_subcommand_from ${cmd}' -l ${f.slice(2)}`)),
      `complete -c stackgen -l preset -xa '${words.presets}'`,
      `complete -c stackgen -l services -xa '${words.services}'`,
      `complete -c stackgen -l skill-packs -xa '${words.packs}'`,
      "complete -c stackgen -l proxy -xa 'caddy traefik none'",
      "complete -c stackgen -l platform -xa 'linux/amd64 linux/arm64'",
      "complete -c stackgen -l provider -xa 'coolify dokploy'",
    ];
    return lines.join("\n") + "\n";
  }
  throw usageError(`Unknown shell "${shell}": use bash, zsh or fish`);
}

export default defineCommand({
  meta: { name: "completion", description: "Print a shell completion script (bash, zsh or fish)" },
  args: { shell: { type: "positional", required: true, description: "bash, zsh or fish" } },
  run({ args }) {
    printText(completionScript(args.shell));
  },
});
