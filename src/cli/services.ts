import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { CATEGORY_IDS, MATURITY_IDS } from "../schema/catalog.ts";
import { usageError, validationError } from "../errors.ts";
import { unknownCatalogId } from "../core/suggest.ts";
import type { CatalogService } from "../schema/catalog.ts";
import { categorySummary, serviceVolumes } from "../core/listings.ts";
import { plural, printJson, printText, dim } from "./output.ts";

export default defineCommand({
  meta: { name: "services", description: "List catalog services, or show one: ports, dependencies, variables, volumes" },
  args: {
    id: { type: "positional", required: false, description: "Service id" },
    category: { type: "string", description: `Only this category (${CATEGORY_IDS.join(", ")})` },
    maturity: { type: "string", description: "Only stable, beta or experimental" },
    json: { type: "boolean", description: "Print JSON" },
  },
  run({ args }) {
    const catalog = getCatalog();
    if (args.id) {
      // The filters choose among many: with one id they would be ignored without a word.
      const filters = [args.category !== undefined ? "--category" : "", args.maturity !== undefined ? "--maturity" : ""].filter(Boolean);
      if (filters.length) throw usageError(`${filters.join(" and ")} ${filters.length === 1 ? "filters" : "filter"} the list of services, and stackgen services ${args.id} shows that one service: leave ${filters.length === 1 ? "it" : "them"} out.`);
      const service = catalog.servicesById.get(args.id);
      // GET /v1/services/{id}'s answer; an unknown id is the user's input (exit 2).
      if (!service) throw unknownCatalogId("Service", args.id, catalog.servicesById.keys());
      return args.json ? printJson({ service }) : printText(describeService(service));
    }
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

/** One service as a person reads it before choosing it: what it needs, publishes and keeps. */
function describeService(s: CatalogService): string {
  const line = (label: string, value: string) => `${`${label}:`.padEnd(14)}${value}`;
  const ports = s.ports.map((p) => `${p.host}->${p.container}${p.protocol === "udp" ? "/udp" : ""}${p.local ? " (127.0.0.1)" : ""}${p.web ? " (web)" : ""} ${p.description}`);
  const needs = s.dependencies.map((d) => `${d}${s.dependencyReasons?.[d] ? `: ${s.dependencyReasons[d]}` : ""}`);
  const variables = (s.variables ?? []).map((v) => `${v.name}${v.secret ? " (generated secret)" : v.beforeStart ? " (you fill it in before the first start)" : v.default === undefined ? " (optional, yours to fill in)" : ""}: ${v.description}`);
  const list = (label: string, items: string[]) => (items.length ? [line(label, items[0]!), ...items.slice(1).map((i) => " ".repeat(14) + i)] : [line(label, "none")]);
  return [
    `${s.name} (${s.id}): ${s.description}`,
    "",
    line("Category", `${s.category}, ${s.maturity}`),
    line("Image", s.image),
    line("Platforms", s.platforms.join(", ") + (s.gpuRequired ? "; needs an NVIDIA GPU" : s.gpu ? "; can use an NVIDIA GPU" : "")),
    line("Memory", `~${s.estimatedMemoryMB} MB`),
    ...list("Ports", ports),
    ...list("Needs", needs),
    ...list("Conflicts", s.conflicts),
    ...list("Containers", [s.id, ...(s.sidecars ?? []).map((sc) => `${s.id}-${sc.name} (${sc.image}${sc.runsOnce ? ", runs once before it starts" : ""})`)]),
    ...list("Volumes", serviceVolumes(s).map((v) => `${v.source} -> ${v.target}`)),
    ...list("Variables", variables),
    ...(s.firstStart ? [line("First start", s.firstStart)] : []),
    ...(s.knownLimits ? [line("Known limits", s.knownLimits)] : []),
    line("Docs", s.docsUrl),
  ].join("\n");
}
