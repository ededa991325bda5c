import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { unknownCatalogId } from "../core/suggest.ts";
import { printJson, printText } from "./output.ts";

export default defineCommand({
  meta: { name: "presets", description: "List presets, or show one with its services" },
  args: {
    id: { type: "positional", required: false, description: "Preset id" },
    json: { type: "boolean", description: "Print JSON" },
  },
  run({ args }) {
    const catalog = getCatalog();
    if (args.id) {
      const preset = catalog.presetsById.get(args.id);
      if (!preset) throw unknownCatalogId("Preset", args.id, catalog.presetsById.keys());
      const services = preset.services.map((id) => catalog.servicesById.get(id)!);
      if (args.json) return printJson({ preset, services });
      return printText([
        `${preset.name} (${preset.id}): ${preset.description}`,
        `Services: ${preset.services.join(", ")}`,
        `Skill packs: ${preset.skillPacks.join(", ") || "none"}`,
        `Proxy: ${preset.proxy ?? "none"}  GPU: ${preset.gpu ? "yes" : "no"}  Memory to plan for: ${preset.estimatedMemoryMB} MB (the preset's guide; validate sums the services it resolves to)`,
      ].join("\n"));
    }
    if (args.json) return printJson({ presets: catalog.presets, total: catalog.presets.length });
    printText(catalog.presets.map((p) => `${p.id.padEnd(16)} ${String(p.estimatedMemoryMB).padStart(5)} MB  ${p.services.join(", ")}`).join("\n"));
  },
});
