import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { StackgenError, usageError } from "../errors.ts";
import { scorePacks, unknownServicesMessage } from "../core/listings.ts";
import { printJson, printText } from "./output.ts";

export default defineCommand({
  meta: { name: "skills", description: "List skill packs, or those compatible with some services" },
  args: {
    services: { type: "string", description: "Comma-separated service ids; adds a compatibility score" },
    json: { type: "boolean", description: "Print JSON" },
  },
  run({ args }) {
    const catalog = getCatalog();
    let packs: (ReturnType<typeof scorePacks>[number] | (typeof catalog.packs)[number])[] = catalog.packs;
    if (args.services !== undefined) {
      const ids = args.services.split(",").map((s) => s.trim()).filter(Boolean);
      // `--services ,` names no service: not a question with the answer "no pack".
      if (ids.length === 0) throw usageError("--services needs at least one service id (comma-separated); without --services every pack is listed.");
      const unknown = ids.filter((id) => !catalog.servicesById.has(id));
      // The API's code for the same query (GET /v1/skills?services=...), still bad input (exit 2).
      if (unknown.length) throw new StackgenError("INVALID_SERVICE_ID", `${unknownServicesMessage(catalog, unknown)}; stackgen services lists them`, 400);
      packs = scorePacks(catalog.packs, ids);
    }
    if (args.json) return printJson({ packs, total: packs.length });
    printText(packs.map((p) => `${p.id.padEnd(22)} ${"compatibilityScore" in p ? `${p.compatibilityScore.toFixed(2)}  ` : ""}${p.services.join(", ")}`).join("\n"));
  },
});
