// Collects every `.env` variable of the bundle and gives it a value: generated secrets from the
// injected source, defaults as declared, user-supplied values empty.
import type { CatalogService } from "../../schema/catalog.ts";
import type { EnvVariable, GenOptions } from "./context.ts";
import type { SecretSource } from "./secrets.ts";

export const CORE_VERSION_VAR = "CORE_VERSION";
export const CORE_IMAGE_VAR = "CORE_IMAGE";

export function collectVariables(services: CatalogService[], core: CatalogService, options: GenOptions, secrets: SecretSource): EnvVariable[] {
  const out: EnvVariable[] = [
    { owner: "core", name: CORE_VERSION_VAR, description: "Image tag of the core gateway; change it and run `stackgen update`", default: options.coreVersion, value: options.coreVersion },
    { owner: "core", name: CORE_IMAGE_VAR, description: "Image repository of the core gateway (empty: ghcr.io/openclaw/openclaw)", default: "", value: "" },
  ];
  for (const s of [core, ...services]) {
    for (const v of s.variables ?? []) {
      const value = v.secret
        ? (options.generateSecrets ? secrets(v.name, v.format ?? "alnum", v.length ?? 32) : "")
        : (v.default ?? "");
      out.push({ ...v, owner: s.id, value });
    }
  }
  return out;
}
