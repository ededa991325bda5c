// Turns a request body (already shape-checked) into a normalized selection: config migration,
// preset expansion, pack aliases, and every unknown id reported with the field that holds it.
import type { Catalog } from "../catalog/index.ts";
import type { GenerateRequest, ValidateRequest } from "../schema/api.ts";
import type { Platform } from "../schema/catalog.ts";
import { validationError, type FieldIssue } from "../errors.ts";

/** The message of a validate request's VALIDATION_ERROR (SPEC §7). */
export const VALIDATE_MESSAGE = "Invalid request body";

/** Request ids accepted for listing ids (CONTRACT §2). */
export const PACK_ALIASES: Record<string, string> = { research: "research-agent", "dev-ops": "devops" };

export interface Selection {
  services: string[];
  skillPacks: string[];
  proxy: "caddy" | "traefik" | null;
  gpu: boolean;
  platform: Platform;
  domain?: string;
  preset?: string;
}

export function hostPlatform(): Platform {
  return process.arch === "arm64" ? "linux/arm64" : "linux/amd64";
}

/** Validate ids and merge preset + explicit fields. Throws VALIDATION_ERROR naming each unknown id. */
export function toSelection(body: ValidateRequest | GenerateRequest, catalog: Catalog, message = VALIDATE_MESSAGE): Selection {
  const issues: FieldIssue[] = [];
  const preset = body.preset === undefined ? undefined : catalog.presetsById.get(body.preset);
  if (body.preset !== undefined && !preset) issues.push({ field: "preset", message: `Unknown preset id "${body.preset}"` });
  (body.services ?? []).forEach((id, i) => {
    if (!catalog.servicesById.has(id)) issues.push({ field: `services.${i}`, message: `Unknown service id "${id}"` });
  });
  const packs = (body.skillPacks ?? []).map((id, i) => {
    const real = PACK_ALIASES[id] ?? id;
    if (!catalog.packsById.has(real)) issues.push({ field: `skillPacks.${i}`, message: `Unknown skill pack id "${id}"` });
    return real;
  });
  if (issues.length) throw validationError(message, issues);
  const proxy = body.proxy === undefined ? (preset?.proxy ?? null) : body.proxy === "none" ? null : body.proxy;
  // A request's proxy replaces the preset's, and the preset's proxy service (which `full-stack`
  // lists among its services) goes with it; asked for by name in `services`, it stays.
  const replaced = preset?.proxy && preset.proxy !== proxy ? preset.proxy : undefined;
  const base = replaced ? preset!.services.filter((id) => id !== replaced) : preset?.services;
  return {
    services: unique(base, body.services),
    skillPacks: unique(preset?.skillPacks, packs),
    proxy,
    gpu: body.gpu ?? preset?.gpu ?? false,
    platform: body.platform ?? hostPlatform(),
    domain: body.domain?.toLowerCase(),
    preset: preset?.id,
  };
}

/** `first` then `second` without repeats, in order. A scan rather than a Set: lists are short
 *  (at most MAX_IDS), and a Set per call was a tenth of a cached generation. */
function unique(first: readonly string[] = [], second: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const list of [first, second]) for (const id of list) if (!out.includes(id)) out.push(id);
  return out;
}
