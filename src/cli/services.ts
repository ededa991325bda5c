import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { CATEGORY_IDS, MATURITY_IDS } from "../schema/catalog.ts";
import { validationError } from "../errors.ts";
import { categorySummary } from "../core/listings.ts";
import { plural, printJson, printText, dim } from "./output.ts";

export default defineCommand({
  meta: { name: "services", description: "List catalog services" },
  args: {
    category: { type: "string", description: `Only this category (${CATEGORY_IDS.join(", ")})` },
    maturity: { type: "string", description: "Only stable, beta or experimental" },
    json: { type: "boolean", description: "Print JSON" },
  },
  run({ args }) {
    const catalog = getCatalog();
    // The API's code for the same query (GET /v1/services?category=...), still bad input (exit 2).
    // Each names the field, as the API does (CONTRACT §3).
    const unknown = (field: string, value: string, allowed: readonly string[]) =>
      validationError(`Unknown ${field} "${value}"`, [{ field, message: `Expected one of ${allowed.map((a) => `"${a}"`).join(", ")}, received "${value}"` }]);
    if (args.category && !(CATEGORY_IDS as readonly string[]).includes(args.category)) throw unknown("category", args.category, CATEGORY_IDS);
    if (args.maturity && !(MATURITY_IDS as readonly string[]).includes(args.maturity)) throw unknown("maturity", args.maturity, MATURITY_IDS);
    const services = catalog.services.filter((s) => (!args.category || s.category === args.category) && (!args.maturity || s.maturity === args.maturity));
    if (args.json) return printJson({ services, categories: categorySummary(catalog, services, !args.category && !args.maturity), total: services.length });
    const width = Math.max(...services.map((s) => s.id.length), 2);
    printText(services.map((s) => `${s.id.padEnd(width)}  ${s.category.padEnd(13)} ${s.maturity.padEnd(12)} ${String(s.estimatedMemoryMB).padStart(5)} MB  ${dim(s.name)}`).join("\n") + `\n${plural(services.length, "service")}`);
  },
});
