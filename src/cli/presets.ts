import { defineCommand } from "citty";
import { getCatalog } from "../catalog/index.ts";
import { unknownCatalogId } from "../core/suggest.ts";
import { validateSelection } from "../core/validate.ts";
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
      const resolved = validateSelection({ preset: preset.id }, catalog);
      return printText([
        `${preset.name} (${preset.id}): ${preset.description}`,
        `Services: ${preset.services.join(", ")}`,
        `Skill packs: ${preset.skillPacks.join(", ") || "none"}`,
        `Proxy: ${preset.proxy ?? "none"}  GPU: ${preset.gpu ? "yes" : "no"}`,
        // The declared figure is the catalog's (CONTRACT §2 fixes it); what the stack needs is the
        // sum over the services it resolves to, proxy included, which can be well above it.
        `Memory: ${preset.estimatedMemoryMB} MB as the preset declares; its ${resolved.resolvedServices.length === 1 ? "service estimates" : `${resolved.resolvedServices.length} services estimate`} ${resolved.estimatedMemoryMB} MB (the gateway's own not counted)`,
      ].join("\n"));
    }
    if (args.json) return printJson({ presets: catalog.presets, total: catalog.presets.length });
    printText(catalog.presets.map((p) => `${p.id.padEnd(16)} ${String(p.estimatedMemoryMB).padStart(5)} MB  ${p.services.join(", ")}`).join("\n"));
  },
});
