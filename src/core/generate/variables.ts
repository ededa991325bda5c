// Collects every `.env` variable of the bundle and gives it a value: generated secrets from the
// injected source, defaults as declared, user-supplied values empty.
import type { CatalogService } from "../../schema/catalog.ts";
import type { ResolvedStack } from "../resolve.ts";
import type { EnvVariable, GenOptions } from "./context.ts";
import type { SecretSource } from "./secrets.ts";

/** Where a service is published: what a `publicUrl` variable is rewritten from. */
export interface Publication {
  proxy: GenOptions["proxy"];
  domain?: string;
  ports: ResolvedStack["ports"];
  /** Services run natively (bare-metal): the proxy does not serve them. */
  nativeIds: ReadonlySet<string>;
}

const HOST_URL = /^(https?):\/\/(localhost|127\.0\.0\.1):(\d+)(.*)$/;

/** A service's URL: `https://<id>.<domain>` (or `http://<id>.localhost`) when the proxy serves
 *  the port `declared` names, else `declared` with the host port the service really got. */
export function publicUrl(serviceId: string, declared: string, at: Publication): string {
  const m = HOST_URL.exec(declared);
  if (!m) return declared;
  const [, scheme, host, port, rest] = m;
  const published = at.ports.get(serviceId)?.find((p) => p.declaredHost === Number(port));
  if (!published) return declared;
  if (at.proxy && published.web && !at.nativeIds.has(serviceId)) {
    return at.domain ? `https://${serviceId}.${at.domain}${rest}` : `http://${serviceId}.localhost${rest}`;
  }
  return `${scheme}://${host}:${published.host}${rest}`;
}

export const CORE_VERSION_VAR = "CORE_VERSION";
export const CORE_IMAGE_VAR = "CORE_IMAGE";

export function collectVariables(services: CatalogService[], core: CatalogService, options: GenOptions, secrets: SecretSource, published?: Publication): EnvVariable[] {
  const out: EnvVariable[] = [
    { owner: "core", name: CORE_VERSION_VAR, description: "Image tag of the core gateway; change it and run `stackgen update`", default: options.coreVersion, value: options.coreVersion },
    { owner: "core", name: CORE_IMAGE_VAR, description: "Image repository of the core gateway (empty: ghcr.io/openclaw/openclaw)", default: "", value: "" },
  ];
  for (const s of [core, ...services]) {
    for (const v of s.variables ?? []) {
      const declared = v.publicUrl && v.default !== undefined && published ? publicUrl(s.id, v.default, published) : v.default;
      const value = v.secret
        ? (options.generateSecrets ? secrets(v.name, v.format ?? "alnum", v.length ?? 32) : "")
        : (declared ?? "");
      out.push({ ...v, ...(declared !== undefined ? { default: declared } : {}), owner: s.id, value });
    }
  }
  return out;
}
