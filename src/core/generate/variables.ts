// Collects every `.env` variable of the bundle and gives it a value: generated secrets from the
// injected source, defaults as declared, user-supplied values empty.
import type { CatalogService } from "../../schema/catalog.ts";
import { hasProxy, proxiedUrl, webServices, type EnvVariable, type GenContext, type GenOptions } from "./context.ts";
import { derivedSecrets, type SecretSource } from "./secrets.ts";
import { CORE_VERSION_VALUE_PATTERN, IMAGE_REPOSITORY_PATTERN } from "../../schema/patterns.ts";

const HOST_URL = /^(https?):\/\/(localhost|127\.0\.0\.1):(\d+)(.*)$/;

/** A service's URL from its `publicUrl` variable's `declared` address on the host: the proxy's
 *  URL when the stack's proxy serves that port, else the address with the host port the service
 *  really got. `ctx.variables` is not read (this runs while they are being collected). */
export function publicUrl(ctx: GenContext, serviceId: string, declared: string): string {
  const m = HOST_URL.exec(declared);
  if (!m) return declared;
  const [, scheme, host, port, rest] = m;
  const published = ctx.stack.ports.get(serviceId)?.find((p) => p.declaredHost === Number(port));
  if (!published) return declared;
  const web = webServices(ctx).find((w) => w.id === serviceId);
  if (hasProxy(ctx) && web?.port === published.container) return `${proxiedUrl(ctx, serviceId)}${rest}`;
  return `${scheme}://${host}:${published.host}${rest}`;
}

/** The whole URL, or the part of it a `publicUrlPart` variable holds. */
function urlPart(url: string, part: "host" | "scheme" | undefined): string {
  if (part === undefined) return url;
  const parsed = new URL(url);
  return part === "host" ? parsed.hostname : parsed.protocol.slice(0, -1);
}

export const CORE_VERSION_VAR = "CORE_VERSION";
export const CORE_IMAGE_VAR = "CORE_IMAGE";

/** `urlOf` gives the value of a `publicUrl` variable from its declared default (see publicUrl). */
export function collectVariables(services: CatalogService[], core: CatalogService, options: GenOptions, secrets: SecretSource, urlOf: (serviceId: string, declared: string) => string): EnvVariable[] {
  const out: EnvVariable[] = [
    { owner: "core", name: CORE_VERSION_VAR, description: "Image tag of the core gateway; change it and run `stackgen update`", default: options.coreVersion, value: options.coreVersion, pattern: CORE_VERSION_VALUE_PATTERN },
    { owner: "core", name: CORE_IMAGE_VAR, description: "Image repository of the core gateway (empty: ghcr.io/openclaw/openclaw)", default: "", value: "", pattern: IMAGE_REPOSITORY_PATTERN },
  ];
  for (const s of [core, ...services]) {
    for (const v of s.variables ?? []) {
      const declared = v.publicUrl && v.default !== undefined ? urlPart(urlOf(v.publicUrlOf ?? s.id, v.default), v.publicUrlPart) : v.default;
      const value = v.secret
        ? (options.generateSecrets && !v.jwt ? secrets(v.name, v.format ?? "alnum", v.length ?? 32) : "")
        : (declared ?? "");
      out.push({ ...v, ...(declared !== undefined ? { default: declared } : {}), owner: s.id, value });
    }
  }
  if (options.generateSecrets) {
    const byName = new Map(out.map((v) => [v.name, v]));
    for (const d of derivedSecrets(out)) byName.get(d.name)!.value = d.derive(byName.get(d.from)!.value);
  }
  return out;
}
