// Every stackgen command a generated bundle's README (and this repository's synopsis) tells its
// user to run names a real command with options it takes: a README that drifts from the CLI sends
// users to an "Unknown option".
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { loadCommand, main, subcommandsOf } from "../../src/cli/index.ts";
import { checkArgs } from "../../src/cli/strict-args.ts";
import type { CommandDef } from "citty";

/** The stackgen command lines of a README: lines of its code blocks, and inline code in its prose. */
function commandLines(readme: string): string[] {
  const inBlocks = [...readme.matchAll(/^stackgen .*$/gm)].map((m) => m[0].replace(/\s+#.*$/, ""));
  const inline = [...readme.matchAll(/`(stackgen [^`]+)`/g)].map((m) => m[1]!);
  return [...new Set([...inBlocks, ...inline])];
}

/** Checks one line as the CLI would before running it; throws its usage error if it would refuse. */
async function checkLine(line: string): Promise<string> {
  const words = line.split(/\s+/).slice(1);
  let command: CommandDef<any> = main;
  const path: string[] = [];
  while (words.length > 0) {
    const next = (await subcommandsOf(command))?.[words[0]!];
    if (!next) break;
    command = await loadCommand(next);
    path.push(words.shift()!);
  }
  // Prose may name a group ("`stackgen backup` does not include them"); a command line may not.
  if (await subcommandsOf(command)) {
    expect(words, `${line}: options after a command group`).toEqual([]);
    return path.join(" ");
  }
  const args = typeof command.args === "function" ? await command.args() : command.args;
  checkArgs(path.join(" "), args, words);
  return path.join(" ");
}

describe("the bundle README's stackgen commands", () => {
  const selections = [
    { projectName: "plain", services: ["postgresql", "n8n", "redis"] },
    { projectName: "routed", services: ["postgresql", "grafana", "prometheus"], proxy: "caddy", domain: "example.com" },
    { projectName: "native", preset: "researcher", proxy: "traefik", deployment: "bare-metal" },
  ];
  for (const selection of selections) {
    test(`${selection.projectName}: each names a command and options it takes`, async () => {
      const readme = generateBundle(selection, getCatalog()).files["README.md"]!;
      const lines = commandLines(readme);
      const commands = new Set<string>();
      for (const line of lines) commands.add(await checkLine(line));
      // The day-2 block at least: status, update, every backup verb, regeneration.
      for (const name of ["status", "update", "backup create", "backup list", "backup verify", "backup restore", "backup prune", "generate"]) expect(commands).toContain(name);
    });
  }

  test("the repository README's synopsis: every line with its optional parts given", async () => {
    const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
    // "stackgen generate ... --proxy" and "stackgen --version | --help" stand for several commands.
    const blocks = [...readme.matchAll(/^```[a-z]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!).join("");
    const synopsis = [...blocks.matchAll(/^stackgen (?!--).*$/gm)].map((m) => m[0]).filter((line) => !line.includes("..."));
    const commands = new Set<string>();
    for (const line of synopsis) commands.add(await checkLine(line.replace(/\s+#.*$/, "").replace(/[[\]]/g, "")));
    for (const name of ["services", "presets", "skills", "validate", "generate", "doctor", "status", "update", "backup create", "backup list", "backup verify", "backup restore", "backup prune", "deploy", "serve", "healthcheck", "completion"]) {
      expect(commands).toContain(name);
    }
  });

  test("the check refuses what the CLI refuses", async () => {
    await expect(checkLine("stackgen backup prune --keep-yearly 2")).rejects.toThrow("Unknown option --keep-yearly for stackgen backup prune");
    await expect(checkLine("stackgen status --dir")).rejects.toThrow();
  });
});
