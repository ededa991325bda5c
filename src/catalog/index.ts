// The catalog embedded in this build, parsed once on first use.
import { catalogFiles } from "./embedded.ts";
import { loadCatalog, type Catalog } from "./load.ts";

let cached: Catalog | undefined;
export function getCatalog(): Catalog {
  return (cached ??= loadCatalog(catalogFiles));
}
export type { Catalog, Skill } from "./load.ts";
