import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { validateSelection } from "../core/validate.ts";
import { includesProxy } from "../core/generate/context.ts";
import { log, printJson, printText, green, red, yellow } from "./output.ts";
import { domainWithoutProxy, readInputFile, selectionArgs, selectionFromArgs } from "./selection-args.ts";

export default defineCommand({
  meta: { name: "validate", description: "Check a selection: dependencies, conflicts, ports, platform, memory" },
  args: { ...selectionArgs, file: { type: "string", description: "JSON file with the request body (or a stackgen.json; -: read it from standard input)" } },
  async run({ args }) {
    const body = { ...(args.file ? await readInputFile(args.file) : {}), ...selectionFromArgs(args) };
    const catalog = getCatalog();
    const result = validateSelection(body, catalog);
    // As generate says it: the API's answer has no field for it, so it goes to stderr.
    const domain = typeof body.domain === "string" ? body.domain : undefined;
    if (domain && !includesProxy(result.resolvedServices.flatMap((id) => catalog.servicesById.get(id) ?? []))) log.warn(domainWithoutProxy(domain));
    if (args.json) printJson(result);
    else {
      const lines = [
        result.valid ? green("Valid selection") : red("Invalid selection"),
        `Services (${result.resolvedServices.length}): ${result.resolvedServices.join(", ") || "none"}`,
        ...result.addedDependencies.map((d) => `  + ${d.service} (required by ${d.requiredBy}: ${d.reason})`),
        ...result.warnings.map((w) => yellow(`  warning ${w.code}: ${w.message}`)),
        ...result.conflicts.map((c) => red(`  conflict ${c.code}: ${c.message}`)),
        `Estimated memory: ${result.estimatedMemoryMB} MB`,
      ];
      printText(lines.join("\n"));
    }
    if (!result.valid) process.exitCode = 1;
  },
});
