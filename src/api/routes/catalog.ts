// Read-only catalog routes: services, presets, skill packs.
import { Elysia } from "elysia";
import type { Catalog } from "../../catalog/index.ts";
import { CATEGORY_IDS, type CatalogService, type SkillPack } from "../../schema/catalog.ts";
import {
  ServicesQuery, ServicesResponse, ServiceResponse, PresetsResponse, PresetResponse, SkillsQuery, SkillsResponse,
  ErrorBody, FlatErrorBody,
} from "../../schema/api.ts";
import { notFound } from "../../errors.ts";

export function categorySummary(catalog: Catalog, services: CatalogService[], all: boolean) {
  const counts = new Map<string, number>();
  for (const s of services) counts.set(s.category, (counts.get(s.category) ?? 0) + 1);
  return CATEGORY_IDS.filter((id) => all || counts.has(id)).map((id) => ({ id, name: catalog.categoryNames.get(id)!, count: counts.get(id) ?? 0 }));
}

/** Packs compatible with `ids` (at least one shared service), best score first (CONTRACT §3). */
export function scorePacks(packs: SkillPack[], ids: string[]) {
  const wanted = new Set(ids);
  return packs
    .map((p) => ({ ...p, compatibilityScore: Math.round((p.services.filter((s) => wanted.has(s)).length / p.services.length) * 100) / 100 }))
    .filter((p) => p.compatibilityScore > 0)
    .sort((a, b) => b.compatibilityScore - a.compatibilityScore || a.id.localeCompare(b.id));
}

export const catalogRoutes = (catalog: Catalog) =>
  new Elysia({ name: "catalog-routes" })
    .get("/services", ({ query }) => {
      const services = catalog.services.filter(
        (s) => (!query.category || s.category === query.category) && (!query.maturity || s.maturity === query.maturity),
      );
      const filtered = query.category !== undefined || query.maturity !== undefined;
      return { services, categories: categorySummary(catalog, services, !filtered), total: services.length };
    }, {
      query: ServicesQuery,
      response: { 200: ServicesResponse, 400: ErrorBody },
      detail: { summary: "List services", description: "All 94 catalog services, optionally filtered by category and maturity.", tags: ["catalog"] },
    })
    .get("/services/:id", ({ params }) => {
      const service = catalog.servicesById.get(params.id);
      if (!service) throw notFound(`Service "${params.id}" not found`);
      return { service };
    }, {
      response: { 200: ServiceResponse, 404: ErrorBody },
      detail: { summary: "Get a service", tags: ["catalog"] },
    })
    .get("/presets", () => ({ presets: catalog.presets, total: catalog.presets.length }), {
      response: { 200: PresetsResponse },
      detail: { summary: "List presets", tags: ["catalog"] },
    })
    .get("/presets/:id", ({ params }) => {
      const preset = catalog.presetsById.get(params.id);
      if (!preset) throw notFound(`Preset "${params.id}" not found`);
      return { preset, services: preset.services.map((id) => catalog.servicesById.get(id)!) };
    }, {
      response: { 200: PresetResponse, 404: ErrorBody },
      detail: { summary: "Get a preset with its services' definitions", tags: ["catalog"] },
    })
    .get("/skills", ({ query, set }) => {
      if (query.services === undefined) return { packs: catalog.packs, total: catalog.packs.length };
      const ids = query.services.split(",").map((s) => s.trim()).filter(Boolean);
      const unknown = ids.filter((id) => !catalog.servicesById.has(id));
      if (unknown.length) {
        set.status = 400;
        return { error: `Unknown service id${unknown.length > 1 ? "s" : ""}: ${unknown.slice(0, 20).join(", ")}`.slice(0, 500), code: "INVALID_SERVICE_ID" };
      }
      const packs = scorePacks(catalog.packs, ids);
      return { packs, total: packs.length };
    }, {
      query: SkillsQuery,
      response: { 200: SkillsResponse, 400: FlatErrorBody },
      detail: { summary: "List skill packs", description: "With `services`, only compatible packs with a compatibilityScore.", tags: ["catalog"] },
    });
