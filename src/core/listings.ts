// Listing views shared by the API and the CLI.
import type { Catalog } from "../catalog/index.ts";
import { CATEGORY_IDS, type CatalogService, type SkillPack, type Volume } from "../schema/catalog.ts";
import { didYouMean } from "./suggest.ts";

/** Category counts of `services`; all 20 categories when `all`, else only those present. */
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

/** The skills query's answer to ids the catalog lacks (the API's INVALID_SERVICE_ID, the CLI's
 *  too): each with its near match, the first 20 at most. */
export function unknownServicesMessage(catalog: Catalog, unknown: string[]): string {
  const named = unknown.slice(0, 20).map((id) => `${id}${didYouMean(id, catalog.servicesById.keys())}`);
  return `Unknown service id${unknown.length > 1 ? "s" : ""}: ${named.join(", ")}${unknown.length > 20 ? ` and ${unknown.length - 20} more` : ""}`;
}

/** Every volume an entry mounts, its sidecars' included, each source once (a job and its app
 *  share theirs). */
export function serviceVolumes(s: CatalogService): Volume[] {
  const all = [...s.volumes, ...(s.sidecars ?? []).flatMap((sc) => sc.volumes ?? [])];
  return all.filter((v, i) => all.findIndex((w) => w.source === v.source) === i);
}
