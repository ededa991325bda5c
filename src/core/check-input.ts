// Turns a request body (already shape-checked) into a normalized selection: config migration,
// preset expansion, pack aliases, and every unknown id reported with the field that holds it.
import { didYouMean } from "./suggest.ts";
import type { Catalog } from "../catalog/index.ts";
import { MAX_IDS, type GenerateRequest, type ValidateRequest } from "../schema/api.ts";
import type { Platform } from "../schema/catalog.ts";
import type { TSchema } from "@sinclair/typebox";
import { StackgenError, validationError, type FieldIssue } from "../errors.ts";
import { assertValid } from "../schema/issues.ts";

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
  /** Host ports an existing bundle publishes, `<service>/<protocol>/<container port>` -> host
   *  port: regenerating keeps them, so adding a service never moves one that runs. */
  keptPorts?: Record<string, number>;
}

export function hostPlatform(): Platform {
  return process.arch === "arm64" ? "linux/arm64" : "linux/amd64";
}

/** The unknown preset, service and skill pack ids of a body, each with the field that holds it.
 *  Safe on a body that failed its shape check: entries that are not strings are skipped (the
 *  shape check names those). */
export function unknownIdIssues(body: unknown, catalog: Catalog): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (typeof body !== "object" || body === null) return issues;
  const { preset, services, skillPacks } = body as Record<string, unknown>;
  if (typeof preset === "string" && !catalog.presetsById.has(preset)) issues.push({ field: "preset", message: `Unknown preset id "${preset}"${didYouMean(preset, catalog.presetsById.keys())}` });
  const each = (list: unknown, field: string, known: (id: string) => boolean, kind: string, hint: (id: string) => string) => {
    // A longer list is refused by the shape check as a whole; naming each of its ids would make
    // the answer as large as the body.
    if (!Array.isArray(list) || list.length > MAX_IDS) return;
    list.forEach((id, i) => {
      if (typeof id === "string" && !known(id)) issues.push({ field: `${field}.${i}`, message: `Unknown ${kind} id "${id}"${hint(id)}` });
    });
  };
  // A pack's id among the services (or the reverse) is the likeliest mix-up: said as such.
  each(services, "services", (id) => catalog.servicesById.has(id), "service", (id) => (catalog.packsById.has(id) ? ` ("${id}" is a skill pack)` : didYouMean(id, catalog.servicesById.keys())));
  each(skillPacks, "skillPacks", (id) => catalog.packsById.has(PACK_ALIASES[id] ?? id), "skill pack", (id) => (catalog.servicesById.has(id) ? ` ("${id}" is a service)` : didYouMean(id, [...catalog.packsById.keys(), ...Object.keys(PACK_ALIASES)])));
  return issues;
}

/** A shape check's issues plus the body's unknown ids they do not already name: one answer then
 *  lists every offending field. `prefix` places a selection nested in a larger body (`input`). */
export function withUnknownIds(issues: FieldIssue[], body: unknown, catalog: Catalog, prefix = ""): FieldIssue[] {
  const named = new Set(issues.map((i) => i.field));
  const ids = unknownIdIssues(body, catalog).map((i) => (prefix ? { ...i, field: `${prefix}.${i.field}` } : i));
  return [...issues, ...ids.filter((i) => !named.has(i.field))];
}

/** `assertValid` for a request body: a VALIDATION_ERROR also names the body's unknown ids. */
export function checkRequest<T>(schema: TSchema, body: unknown, catalog: Catalog, message: string): T {
  try {
    return assertValid<T>(schema, body, message);
  } catch (error) {
    if (error instanceof StackgenError && error.details) throw validationError(message, withUnknownIds(error.details, body, catalog));
    throw error;
  }
}

/** Validate ids and merge preset + explicit fields. Throws VALIDATION_ERROR naming each unknown id. */
export function toSelection(body: ValidateRequest | GenerateRequest, catalog: Catalog, message = VALIDATE_MESSAGE): Selection {
  const issues = unknownIdIssues(body, catalog);
  if (issues.length) throw validationError(message, issues);
  const preset = body.preset === undefined ? undefined : catalog.presetsById.get(body.preset);
  const packs = (body.skillPacks ?? []).map((id) => PACK_ALIASES[id] ?? id);
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
