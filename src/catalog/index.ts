// The catalog embedded in this build, indexed once on first use (already checked at build time).
import { catalogJson } from "./embedded.ts";
import { loadCatalog, type Catalog } from "./load.ts";

let cached: Catalog | undefined;
export function getCatalog(): Catalog {
  return (cached ??= loadCatalog(JSON.parse(catalogJson), { check: false }));
}
export type { Catalog, Skill } from "./load.ts";
