// The form state and the request bodies built from it. Pure functions, unit-tested.
import type { CatalogService, Preset, SkillPack } from "./api.ts";
import { COMPLETE_FORMAT_VERSION, CURRENT_CONFIG_VERSION } from "../schema/versions.ts";
import { MAX_DOMAIN_LENGTH } from "../schema/limits.ts";
import { CORE_VERSION_PATTERN, DOMAIN_PATTERN, PROJECT_NAME_PATTERN } from "../schema/patterns.ts";

export type Proxy = "" | "caddy" | "traefik";
/** "" leaves the platform to the server (its own architecture) and out of the compose file. */
export type Platform = "" | "linux/amd64" | "linux/arm64";
export type Deployment = "docker" | "bare-metal";

export interface FormState {
  /** Services the user picked (packs and dependencies add more on the server). */
  services: string[];
  skillPacks: string[];
  /** The preset last applied; only a label, its contents are already copied into the fields. */
  presetId: string | null;
  projectName: string;
  proxy: Proxy;
  domain: string;
  gpu: boolean;
  platform: Platform;
  deployment: Deployment;
  coreVersion: string;
  generateSecrets: boolean;
  /** Cap each container's memory (the generation input's `memoryLimits`). */
  memoryLimits: boolean;
}

export const initialState = (platform: Platform = ""): FormState => ({
  services: [],
  skillPacks: [],
  presetId: null,
  projectName: "my-stack",
  proxy: "",
  domain: "",
  gpu: false,
  platform,
  deployment: "docker",
  coreVersion: "latest",
  generateSecrets: true,
  memoryLimits: false,
});

const PROJECT_NAME = new RegExp(PROJECT_NAME_PATTERN);
const DOMAIN = new RegExp(DOMAIN_PATTERN);
const CORE_VERSION = new RegExp(CORE_VERSION_PATTERN);

/** The API schema's own test: DNS labels, the last one not all digits (an IP address is no domain). */
export const isDomain = (value: string): boolean => DOMAIN.test(value);

/** Why `value` is not a domain the API takes, in the words that help fix it. */
function domainProblem(value: string): string {
  if (value.length > MAX_DOMAIN_LENGTH) return `At most ${MAX_DOMAIN_LENGTH} characters (this one has ${value.length}), so that <service>.<domain> stays a valid host name.`;
  if (/[^\x00-\x7f]/.test(value)) return "Write an international name in its ASCII form (xn--…), as DNS does.";
  if (/^[^/]*[^:]:\d+$/.test(value) && !/^\[?[0-9a-f]*:[0-9a-f]*:/i.test(value)) return "Leave out the port: the proxy serves <service>.<domain> on 80 and 443.";
  if (/^[0-9.]+$/.test(value) || /^\[?[0-9a-f]*:[0-9a-f]*:[0-9a-f:.]*\]?$/i.test(value)) return "An IP address is not a domain: services are served at <service>.<domain>. Leave it empty to use <service>.localhost.";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) || value.includes("/")) return "Only the name: no https:// in front and no path after it (example.com).";
  if (value.endsWith(".")) return "Leave out the final dot (example.com, not example.com.).";
  if (/\s/.test(value)) return "A domain has no spaces.";
  if (value.includes("_")) return "Use - instead of _: host names cannot hold an underscore.";
  return "Enter a domain name such as example.com: letters, digits and - between the dots.";
}

/** Problems with the free-text fields, keyed by field name; empty when all are fine. */
export function fieldErrors(state: FormState): Partial<Record<"projectName" | "domain" | "coreVersion", string>> {
  const errors: Partial<Record<"projectName" | "domain" | "coreVersion", string>> = {};
  if (!PROJECT_NAME.test(state.projectName)) {
    errors.projectName = "Use 1 to 63 lowercase letters, digits, - or _, starting with a letter or digit.";
  }
  if (state.domain !== "" && !isDomain(state.domain)) errors.domain = domainProblem(state.domain);
  if (!CORE_VERSION.test(state.coreVersion)) errors.coreVersion = "Enter an image tag such as latest or 2026.1.0.";
  return errors;
}

/** The body of POST /v1/validate. An invalid domain is left out (the field shows the problem). */
export function validateBody(state: FormState) {
  return {
    services: state.services,
    skillPacks: state.skillPacks,
    ...(state.proxy ? { proxy: state.proxy } : {}),
    ...(state.domain && isDomain(state.domain) ? { domain: state.domain } : {}),
    gpu: state.gpu,
    ...(state.platform ? { platform: state.platform } : {}),
  };
}

/** The generation input (SPEC §2.4) for generate and deploy. The preset is named while the
 *  selection is still the preset's: the README and stackgen.json then say so, as the API's files
 *  for that preset do (an export of them imports as unedited). */
export function generateBody(state: FormState, presets: ReadonlyMap<string, Preset> = new Map()) {
  const preset = state.presetId === null ? undefined : presets.get(state.presetId);
  return {
    projectName: state.projectName,
    ...(preset && matchesPreset(state, preset) ? { preset: preset.id } : {}),
    services: state.services,
    skillPacks: state.skillPacks,
    ...(state.proxy ? { proxy: state.proxy } : {}),
    ...(state.domain ? { domain: state.domain } : {}),
    gpu: state.gpu,
    ...(state.platform ? { platform: state.platform } : {}),
    deployment: state.deployment,
    generateSecrets: state.generateSecrets,
    coreVersion: state.coreVersion,
    // Sent only when on: an export made without it reads as every earlier one did.
    ...(state.memoryLimits ? { memoryLimits: true } : {}),
  };
}

export const isEmptySelection = (state: FormState): boolean => state.services.length === 0 && state.skillPacks.length === 0;

/** Copies a preset into the selection, replacing what was chosen before. */
export function applyPreset(state: FormState, preset: Preset): FormState {
  return {
    ...state,
    services: [...preset.services],
    skillPacks: [...preset.skillPacks],
    proxy: preset.proxy ?? "",
    gpu: preset.gpu,
    presetId: preset.id,
  };
}

/** Whether the selection is still what `applyPreset` made of `preset` (same services, packs,
 *  proxy and GPU, in any order): once it drifts, the preset no longer shows as chosen. */
export function matchesPreset(state: FormState, preset: Preset): boolean {
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x) => b.includes(x));
  // The proxy option puts its service in the stack, listed or not (as the server resolves it):
  // the preset's caddy, dropped by a switch to Traefik, is back once Caddy is chosen again.
  const stack = (services: readonly string[], proxy: string) => (proxy && !services.includes(proxy) ? [...services, proxy] : services);
  return state.presetId === preset.id && same(stack(state.services, state.proxy), stack(preset.services, preset.proxy ?? "")) && same(state.skillPacks, preset.skillPacks)
    && state.proxy === (preset.proxy ?? "") && state.gpu === preset.gpu;
}

/** What a preset replaces that the user would lose: the selection (services, packs, proxy, GPU
 *  and the preset label), when it has services or packs, is not an untouched preset, and is not
 *  already what `preset` makes. Undefined when applying `preset` loses nothing made by hand. */
export function handMadeSelection(state: FormState, preset: Preset, presetsById: ReadonlyMap<string, Preset>): SelectionFields | undefined {
  if (state.services.length + state.skillPacks.length === 0) return undefined;
  const from = state.presetId === null ? undefined : presetsById.get(state.presetId);
  if (from !== undefined && matchesPreset(state, from)) return undefined;
  if (matchesPreset({ ...state, presetId: preset.id }, preset)) return undefined;
  return { services: [...state.services], skillPacks: [...state.skillPacks], proxy: state.proxy, gpu: state.gpu, presetId: state.presetId };
}

/** The fields a preset sets, all of them: what an undo puts back. */
export type SelectionFields = Pick<FormState, "services" | "skillPacks" | "proxy" | "gpu" | "presetId">;

/** A domain is served only through a reverse proxy: without one it has no effect. */
export const domainWithoutProxy = (form: Pick<FormState, "domain" | "proxy">): boolean => form.domain.trim() !== "" && !form.proxy;

/** A new proxy replaces the old one, together with the old proxy's service when the selection
 *  holds it (the full-stack preset lists caddy), as the API does with a preset's proxy. */
export function chooseProxy(state: FormState, proxy: FormState["proxy"]): Partial<FormState> {
  const old = state.proxy;
  return { proxy, ...(old && old !== proxy && state.services.includes(old) ? { services: state.services.filter((id) => id !== old) } : {}) };
}

/** Ticking or unticking a service. A proxy service and the "Reverse proxy" option are one choice:
 *  ticking Traefik makes it the proxy (dropping Caddy), unticking the proxy's service clears it. */
export function toggleService(state: FormState, id: string, on: boolean): Partial<FormState> {
  if (id !== "caddy" && id !== "traefik") return { services: toggle(state.services, id, on) };
  if (on) {
    const swapped = { ...state, ...chooseProxy(state, id) };
    return { proxy: id, services: toggle(swapped.services, id, true) };
  }
  return { ...(state.proxy === id ? { proxy: "" as const } : {}), services: toggle(state.services, id, false) };
}

export function toggle(list: readonly string[], id: string, on: boolean): string[] {
  const without = list.filter((x) => x !== id);
  return on ? [...without, id] : without;
}

/** Request spellings of pack ids the API accepts (CONTRACT §2). */
const PACK_ALIASES: Record<string, string> = { research: "research-agent", "dev-ops": "devops" };

export interface ImportOutcome {
  state: FormState;
  /** Ids in the document that this catalog does not know; they are dropped. */
  ignored: string[];
}

export interface KnownIds {
  services: ReadonlySet<string>;
  packs: ReadonlySet<string>;
  presets: ReadonlyMap<string, Preset>;
}

/**
 * Fills the form from the `input` of a complete document (or any generation input). A `preset`
 * in it is the base; its own lists add to it and its scalars override, as on the server.
 */
export function stateFromInput(input: Record<string, unknown>, known: KnownIds, base: FormState): ImportOutcome {
  const ignored: string[] = [];
  // Only the project name carries over when the input has none: every other choice is the
  // input's, or the default the API would take for it (an imported export regenerates as exported).
  const fresh = initialState();
  let state: FormState = { ...base, services: [], skillPacks: [], presetId: null, proxy: "", gpu: false, domain: "", deployment: fresh.deployment, generateSecrets: fresh.generateSecrets, coreVersion: fresh.coreVersion, memoryLimits: fresh.memoryLimits };
  const proxy = input.proxy === "caddy" || input.proxy === "traefik" ? input.proxy
    : input.proxy === "none" || input.proxy === null || input.proxy === "" ? "" : undefined;
  const presetId = typeof input.preset === "string" ? input.preset : undefined;
  if (presetId) {
    const preset = known.presets.get(presetId);
    if (preset) {
      state = applyPreset(state, preset);
      // The input's own proxy replaces the preset's, and the preset's proxy service (full-stack
      // lists caddy) goes with it, as the API resolves it; named in the input's services, it stays.
      if (proxy !== undefined && preset.proxy && preset.proxy !== proxy) state.services = state.services.filter((id) => id !== preset.proxy);
    } else ignored.push(`preset ${presetId}`);
  }
  // An entry that is not an id (an object, a number) is named as left out, as an unknown id is.
  const stringList = (value: unknown): string[] => {
    if (!Array.isArray(value)) return [];
    for (const x of value) if (typeof x !== "string") ignored.push(JSON.stringify(x) ?? String(x));
    return value.filter((x): x is string => typeof x === "string");
  };
  for (const id of stringList(input.services)) {
    if (!known.services.has(id)) ignored.push(id);
    else if (!state.services.includes(id)) state.services.push(id);
  }
  for (const raw of stringList(input.skillPacks)) {
    const id = known.packs.has(raw) ? raw : PACK_ALIASES[raw];
    if (!id || !known.packs.has(id)) ignored.push(`pack ${raw}`);
    else if (!state.skillPacks.includes(id)) state.skillPacks.push(id);
  }
  // A value the page has no choice for is named as left out, not dropped in silence.
  const unknown = (name: string, value: unknown) => value !== undefined && ignored.push(`${name} ${typeof value === "string" ? value : JSON.stringify(value)}`);
  // A one-line field drops a line break (and shows no other control character), so it would show
  // one value while the check refuses another: such a value is left out, named in quotes.
  const text = (name: string, value: unknown): string | undefined => {
    if (typeof value !== "string") {
      // Another type (a number for a name) is left out with its value named; null is no value.
      if (value !== null) unknown(name, value);
      return undefined;
    }
    if (!/[\x00-\x1f\x7f]/.test(value)) return value;
    ignored.push(`${name} ${JSON.stringify(value)}`);
    return undefined;
  };
  // A list of the wrong type (a string of ids) is named too: the server refuses it.
  for (const name of ["services", "skillPacks"] as const) if (input[name] !== undefined && !Array.isArray(input[name])) unknown(name, input[name]);
  state.projectName = text("projectName", input.projectName) ?? state.projectName;
  if (proxy !== undefined) state.proxy = proxy;
  else unknown("proxy", input.proxy);
  // A proxy's service in the list is the stack's proxy, as the server takes it: the option shows
  // it, so choosing the other proxy replaces it (as ticking that one does) instead of adding a clash.
  const proxyServices = state.services.filter((id): id is "caddy" | "traefik" => id === "caddy" || id === "traefik");
  if (!state.proxy && proxyServices.length === 1) state.proxy = proxyServices[0]!;
  state.domain = text("domain", input.domain) ?? state.domain;
  if (typeof input.gpu === "boolean") state.gpu = input.gpu;
  else unknown("gpu", input.gpu);
  state.platform = input.platform === "linux/amd64" || input.platform === "linux/arm64" ? input.platform : "";
  if (!state.platform && input.platform !== "" && input.platform !== null) unknown("platform", input.platform);
  const deployment = input.deployment ?? input.deploymentType;
  if (deployment === "bare-metal") state.deployment = "bare-metal";
  else if (deployment === "docker" || deployment === "local") state.deployment = "docker";
  else unknown("deployment", deployment);
  if (typeof input.generateSecrets === "boolean") state.generateSecrets = input.generateSecrets;
  else unknown("generateSecrets", input.generateSecrets);
  if (typeof input.memoryLimits === "boolean") state.memoryLimits = input.memoryLimits;
  else unknown("memoryLimits", input.memoryLimits);
  state.coreVersion = text("coreVersion", input.coreVersion) ?? state.coreVersion;
  return { state, ignored: [...new Set(ignored)] };
}


// A link to the page carries the choices in its query string (`?services=n8n,redis&proxy=caddy`),
// so a stack can be shared or bookmarked. Only choices that differ from a fresh page are written;
// never a secret: a link makes new ones, as a fresh page does.
const LIST_PARAMS = ["services", "skillPacks"] as const;
const TEXT_PARAMS = ["projectName", "proxy", "domain", "platform", "deployment", "coreVersion"] as const;
const FLAG_PARAMS = ["gpu", "generateSecrets", "memoryLimits"] as const;

/** The query string (without `?`) of a link that opens the page with `state`'s choices. The
 *  preset is named while the selection is still the preset's, so the link shows it as chosen. */
export function linkQuery(state: FormState, presets: ReadonlyMap<string, Preset> = new Map()): string {
  const fresh = initialState();
  const params = new URLSearchParams();
  const preset = state.presetId === null ? undefined : presets.get(state.presetId);
  if (preset && matchesPreset(state, preset)) params.set("preset", preset.id);
  for (const name of LIST_PARAMS) if (state[name].length) params.set(name, state[name].join(","));
  for (const name of TEXT_PARAMS) if (state[name] !== fresh[name]) params.set(name, state[name]);
  for (const name of FLAG_PARAMS) if (state[name] !== fresh[name]) params.set(name, String(state[name]));
  return params.toString();
}

/** `?<linkQuery>`, or "" for a fresh page's choices. */
export function linkSearch(state: FormState, presets?: ReadonlyMap<string, Preset>): string {
  const query = linkQuery(state, presets);
  return query ? `?${query}` : "";
}

/** The generation input a link's query string carries (for stateFromInput), or undefined when it
 *  carries none. `preset=<id>` is the base its lists add to, as in an imported input. */
export function inputOfLink(search: string): Record<string, unknown> | undefined {
  const params = new URLSearchParams(search);
  const input: Record<string, unknown> = {};
  for (const name of LIST_PARAMS) {
    const value = params.get(name);
    if (value !== null) input[name] = value.split(",").map((id) => id.trim()).filter(Boolean);
  }
  // Trimmed: a link can carry a line break or spaces around a value that the field would show as
  // nothing, leaving the user with an error they cannot see the cause of (one inside a value is
  // left out by stateFromInput).
  for (const name of [...TEXT_PARAMS, "preset"]) {
    const value = params.get(name);
    if (value !== null) input[name] = value.trim();
  }
  for (const name of FLAG_PARAMS) {
    const value = params.get(name);
    // Anything but true or false goes on as text, to be named as left out.
    if (value !== null) input[name] = value === "true" ? true : value === "false" ? false : value;
  }
  return Object.keys(input).length ? input : undefined;
}

/** The generation input of a parsed file: an exported complete document (SPEC §2.7), a bundle's
 *  stackgen.json or a plain generation input; an error saying what it is not otherwise. */
/** A bundle path as stackgen writes them: relative, plain names, no `..` (a file imported from
 *  anywhere must not put a ZIP entry outside its folder). */
const BUNDLE_PATH = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

/** The files of a complete export, when it carries a whole bundle (a compose file and `.env`,
 *  every path a bundle path, every content text) and its metadata; else undefined. */
export function bundleOfDocument(doc: unknown): { files: Record<string, string>; metadata: Record<string, unknown> } | undefined {
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) return undefined;
  const { files, metadata } = doc as { files?: unknown; metadata?: unknown };
  if (!files || typeof files !== "object" || Array.isArray(files) || !metadata || typeof metadata !== "object" || Array.isArray(metadata)) return undefined;
  const f = files as Record<string, unknown>;
  const m = metadata as Record<string, unknown>;
  if (!Object.entries(f).every(([path, text]) => BUNDLE_PATH.test(path) && typeof text === "string")) return undefined;
  if (typeof m.totalServices !== "number" || typeof m.estimatedMemoryMB !== "number" || typeof m.generatedAt !== "string") return undefined;
  if (typeof f["docker-compose.yml"] !== "string" || typeof f[".env"] !== "string") return undefined;
  return { files: f as Record<string, string>, metadata: m };
}

export function inputOfDocument(doc: unknown): Record<string, unknown> {
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw new Error("The file is not a JSON object.");
  const d = doc as Record<string, unknown>;
  if ("formatVersion" in d) {
    if (d.formatVersion !== COMPLETE_FORMAT_VERSION) {
      // A number for the version string is a hand-written document, not a newer format.
      throw new Error(typeof d.formatVersion === "number" && String(d.formatVersion) === COMPLETE_FORMAT_VERSION
        ? `formatVersion must be the string "${COMPLETE_FORMAT_VERSION}", not the number ${COMPLETE_FORMAT_VERSION}.`
        : `Unsupported formatVersion ${JSON.stringify(d.formatVersion)}; this version reads "${COMPLETE_FORMAT_VERSION}".`);
    }
    if (!d.input || typeof d.input !== "object" || Array.isArray(d.input)) throw new Error("The document has no input object.");
    return d.input as Record<string, unknown>;
  }
  // A bundle's stackgen.json (config version 1 or 2, migrated as the API does) or a plain input.
  if ("configVersion" in d) {
    const version = d.configVersion;
    if (!(Number.isInteger(version) && (version as number) >= 1 && (version as number) <= CURRENT_CONFIG_VERSION)) throw new Error(`No migration path from config version ${JSON.stringify(version)}.`);
    return d;
  }
  if ("projectName" in d || "services" in d || "preset" in d) return d;
  throw new Error("It is neither an export (Export JSON), a bundle's stackgen.json nor a generation input.");
}

/** Every service a selection brings in on its own (packs and transitive dependencies), computed locally. */
export function localClosure(ids: Iterable<string>, byId: ReadonlyMap<string, CatalogService>): Set<string> {
  const seen = new Set<string>();
  const visit = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    for (const dep of byId.get(id)?.dependencies ?? []) visit(dep);
  };
  for (const id of ids) visit(id);
  return seen;
}

export function selectionClosure(state: FormState, byId: ReadonlyMap<string, CatalogService>, packsById: ReadonlyMap<string, SkillPack>): Set<string> {
  const packServices = state.skillPacks.flatMap((p) => packsById.get(p)?.services ?? []);
  // The proxy chosen in Options is a service of the stack, as the API resolves it.
  const proxy = state.proxy && byId.has(state.proxy) ? [state.proxy] : [];
  return localClosure([...state.services, ...packServices, ...proxy], byId);
}

/** The services and memory a preset resolves to (its packs, proxy and dependencies included):
 *  its own `estimatedMemoryMB` counts only the services it lists. */
export function presetFootprint(preset: Preset, byId: ReadonlyMap<string, CatalogService>, packsById: ReadonlyMap<string, SkillPack>) {
  const services = selectionClosure(applyPreset(initialState(), preset), byId, packsById);
  const memoryMB = [...services].reduce((sum, id) => sum + (byId.get(id)?.estimatedMemoryMB ?? 0), 0);
  return { services: services.size, memoryMB };
}

/** The services of `current` that `id` conflicts with, declared on either side. */
export function clashesWith(id: string, current: ReadonlySet<string>, byId: ReadonlyMap<string, CatalogService>): string[] {
  const out = (byId.get(id)?.conflicts ?? []).filter((c) => current.has(c));
  for (const other of current) if (byId.get(other)?.conflicts.includes(id) && !out.includes(other)) out.push(other);
  return out;
}

/** Of what choosing would add (`added`), each service that conflicts with `current`, and with
 *  what: a dependency clashes too (the server then leaves it out, DEPENDENCY_MISSING). */
export function addedClashes(added: readonly string[], current: ReadonlySet<string>, byId: ReadonlyMap<string, CatalogService>): { id: string; with: string[] }[] {
  return added.map((id) => ({ id, with: clashesWith(id, current, byId) })).filter((c) => c.with.length > 0);
}

/** What choosing `ids` would add to a stack that already resolves to `current`: ids and memory. */
export function whatItAdds(ids: readonly string[], current: ReadonlySet<string>, byId: ReadonlyMap<string, CatalogService>) {
  const added = [...localClosure(ids, byId)].filter((id) => !current.has(id));
  const memoryMB = added.reduce((sum, id) => sum + (byId.get(id)?.estimatedMemoryMB ?? 0), 0);
  return { added, memoryMB };
}

/** Whether the page's host name is this machine's loopback (as the server judges a deploy's
 *  caller): localhost, 127.0.0.0/8, ::1, or 0.0.0.0 (which the browser opens on this machine). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(host) || host === "::1" || host === "0.0.0.0";
}
