// Read-only catalog routes: services, presets, skill packs.
import { Elysia } from "elysia";
import type { Catalog } from "../../catalog/index.ts";
import { categorySummary, scorePacks, unknownServicesMessage } from "../../core/listings.ts";
import {
  ServicesQuery, ServicesResponse, ServiceResponse, PresetsResponse, PresetResponse, SkillsQuery, SkillsResponse,
  ErrorBody, FlatErrorBody, MAX_IDS, routeSchema,
} from "../../schema/api.ts";
import { notFound } from "../../errors.ts";
import { pathOf } from "../guard/request-log.ts";
import { GIVEN_MORE_THAN_ONCE, singleValued } from "../single-query.ts";

/** The id a request named, for a 404 message: the decoded path parameter, or the raw path segment
 *  when it is not valid percent-encoding (Elysia then gives null); long ids are shortened. */
function namedId(id: string | null, request: Request): string {
  const named = id ?? pathOf(request.url).split("/").pop()!;
  return named.length > 100 ? `${named.slice(0, 100)}…` : named;
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
      transform: singleValued(["category", "maturity"]),
      query: routeSchema(ServicesQuery),
      response: { 200: ServicesResponse, 400: ErrorBody },
      detail: { summary: "List services", description: "All 94 catalog services, optionally filtered by category and maturity.", tags: ["catalog"] },
    })
    .get("/services/:id", ({ params, request }) => {
      const service = catalog.servicesById.get(params.id);
      if (!service) throw notFound(`Service ${JSON.stringify(namedId(params.id, request))} not found`);
      return { service };
    }, {
      response: { 200: ServiceResponse, 404: ErrorBody },
      detail: { summary: "Get a service", tags: ["catalog"] },
    })
    .get("/presets", () => ({ presets: catalog.presets, total: catalog.presets.length }), {
      response: { 200: PresetsResponse },
      detail: { summary: "List presets", tags: ["catalog"] },
    })
    .get("/presets/:id", ({ params, request }) => {
      const preset = catalog.presetsById.get(params.id);
      if (!preset) throw notFound(`Preset ${JSON.stringify(namedId(params.id, request))} not found`);
      return { preset, services: preset.services.map((id) => catalog.servicesById.get(id)!) };
    }, {
      response: { 200: PresetResponse, 404: ErrorBody },
      detail: { summary: "Get a preset with its services' definitions", tags: ["catalog"] },
    })
    .get("/skills", ({ query, set }) => {
      if (query.services === undefined) return { packs: catalog.packs, total: catalog.packs.length };
      const ids = query.services.split(",").map((s) => s.trim()).filter(Boolean);
      if (ids.length > MAX_IDS) {
        // The same limit as an id array in a body (CONTRACT §3), in the route's flat shape.
        set.status = 400;
        return { error: `Query parameter services: at most ${MAX_IDS} ids, ${ids.length} given`, code: "INVALID_SERVICE_ID" };
      }
      const unknown = ids.filter((id) => !catalog.servicesById.has(id));
      if (unknown.length) {
        set.status = 400;
        return { error: unknownServicesMessage(catalog, unknown).slice(0, 500), code: "INVALID_SERVICE_ID" };
      }
      const packs = scorePacks(catalog.packs, ids);
      return { packs, total: packs.length };
    }, {
      // The flat error body (SPEC §7) has no details: its message names the parameter.
      transform: singleValued(["services"], ([name]) => `Query parameter ${name}: ${GIVEN_MORE_THAN_ONCE.toLowerCase()} (give the ids comma-separated in one)`),
      query: routeSchema(SkillsQuery),
      response: { 200: SkillsResponse, 400: FlatErrorBody },
      detail: { summary: "List skill packs", description: "With `services`, only compatible packs with a compatibilityScore.", tags: ["catalog"] },
    });
