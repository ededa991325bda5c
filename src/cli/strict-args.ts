// citty takes any flag and gives a string flag the next word as its value, even another flag:
// a mistyped `--dryrun` used to write the bundle, and `--dir --json` made a folder named
// `--json`. The words after the command are checked against its declared args before it runs.
import type { ArgsDef, ArgDef } from "citty";
import { usageError } from "../errors.ts";
import { didYouMean } from "../core/suggest.ts";

const BOOLEAN_VALUES = new Set(["true", "false"]);

/** Throws USAGE_ERROR (exit 2) for an unknown option, a missing value, an option given twice
 *  with two values, or a surplus argument. */
export function checkArgs(command: string, args: ArgsDef | undefined, words: string[]): void {
  const defs = Object.entries(args ?? {}) as [string, ArgDef][];
  // Every command takes --json, even one with nothing to print as JSON (it is then a no-op).
  const options = new Map<string, [string, ArgDef]>([["--json", ["json", { type: "boolean" }]]]);
  for (const [name, def] of defs) {
    if (def.type === "positional") continue;
    options.set(`--${name}`, [name, def]);
    if (def.type === "boolean") options.set(`--no-${name}`, [name, def]);
    const aliases = "alias" in def && def.alias !== undefined ? [def.alias].flat() : [];
    for (const alias of aliases) options.set(alias.length === 1 ? `-${alias}` : `--${alias}`, [name, def]);
  }
  const positionals = defs.filter(([, def]) => def.type === "positional").length;
  const help = `Run stackgen ${command} --help.`;
  const given: string[] = [];
  // citty lets `--no-gpu` win over `--gpu` whatever their order: a contradiction is refused instead.
  const switches = new Map<string, [flag: string, on: boolean]>();
  const values = new Map<string, string>();
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (word === "--") {
      given.push(...words.slice(i + 1));
      break;
    }
    if (!word.startsWith("-") || word === "-") {
      given.push(word);
      continue;
    }
    const eq = word.indexOf("=");
    const flag = eq < 0 ? word : word.slice(0, eq);
    const known = options.get(flag);
    if (!known) throw usageError(`Unknown option ${flag} for stackgen ${command}${didYouMean(flag, options.keys(), false)}. ${help}`);
    const [name, def] = known;
    if (def.type === "boolean") {
      const negated = flag.startsWith("--no-") && flag !== `--${name}`;
      // citty reads `--no-gpu=false` as off, like `--no-gpu`: the value would silently mean its opposite.
      if (negated && eq >= 0) throw usageError(`${flag} takes no value: give ${flag}, or --${name}=true|false.`);
      if (eq >= 0 && !BOOLEAN_VALUES.has(word.slice(eq + 1))) throw usageError(`${flag} takes no value (or true/false), got "${word.slice(eq + 1)}".`);
      const on = negated ? false : eq < 0 || word.slice(eq + 1) === "true";
      const earlier = switches.get(name);
      // --json keeps citty's rule (it already decided how this very error is printed).
      if (earlier && earlier[1] !== on && name !== "json") throw usageError(`${earlier[0]} and ${word} contradict each other: give one. ${help}`);
      switches.set(name, [word, on]);
      continue;
    }
    // A string or enum option: its value is after `=` or the next word, never another option.
    const value = eq >= 0 ? word.slice(eq + 1) : words[i + 1];
    if (value === undefined || value === "" || (eq < 0 && value.startsWith("--"))) throw usageError(`--${name} needs a value. ${help}`);
    if (eq < 0) i++;
    // citty keeps the last of two: `--services redis --services qdrant` dropped redis unseen, and
    // two --dir picked the stack to act on by their order.
    const before = values.get(name);
    if (before !== undefined && before !== value) {
      throw usageError(`--${name} is given twice ("${before}" and "${value}"): give it once${name === "services" || name === "skill-packs" ? `, the ids comma-separated (--${name} ${before},${value})` : ""}. ${help}`);
    }
    values.set(name, value);
  }
  if (given.length > positionals) throw usageError(`Unexpected argument "${given[positionals]}" for stackgen ${command}. ${help}`);
}
