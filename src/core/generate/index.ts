// generate = check input -> resolve -> run every artifact generator -> FileMap + metadata.
import type { Catalog } from "../../catalog/index.ts";
import { GenerateRequest, type GenerateMetadata } from "../../schema/api.ts";
import { conflictError, validationError } from "../../errors.ts";
import { VERSION } from "../../version.ts";
import { checkRequest, toSelection, type Selection } from "../check-input.ts";
import { checkedAsSent, migrateConfig, requestInput } from "../migrate.ts";

export { requestInput };
import { resolve, type ResolvedStack } from "../resolve.ts";
import { catalogMemo } from "../memo.ts";
import { asciiJson } from "../ascii-json.ts";
import type { FileMap, GenContext, GenOptions } from "./context.ts";
import type { Variable } from "../../schema/catalog.ts";
import { cryptoSecrets, derivedSecrets, type DerivedSecret, type SecretSource } from "./secrets.ts";
import { collectVariables, publicUrl } from "./variables.ts";
import { composeFile } from "./compose.ts";
import { envExampleFile, envFile } from "./env.ts";
import { caddyFile } from "./caddy.ts";
import { traefikFiles } from "./traefik.ts";
import { prometheusFiles } from "./prometheus.ts";
import { grafanaFiles } from "./grafana.ts";
import { postgresInit } from "./postgres-init.ts";
import { headscaleFiles } from "./headscale.ts";
import { coreGatewayFiles } from "./core-gateway.ts";
import { skillFiles } from "./skills.ts";
import { readmeFile } from "./readme.ts";
import { bareMetalFiles } from "./bare-metal.ts";
import { configFile } from "./config.ts";

export const GENERATE_MESSAGE = "Invalid generation input";
/** Default gateway tag when the request names none. */
export const DEFAULT_CORE_VERSION = "latest";

export interface GenerateOptions {
  secrets?: SecretSource;
  now?: () => Date;
  /** Host ports the bundle being regenerated publishes (see Selection.keptPorts). */
  keptPorts?: Record<string, number>;
}

export interface Generated {
  input: GenerateRequest;
  files: FileMap;
  metadata: GenerateMetadata;
  stack: ResolvedStack;
  /** Names of the `.env` variables that hold generated secrets. */
  secretNames: ReadonlySet<string>;
  /** The secrets among them made from another (signed API keys): made again when that one changes. */
  derivedSecrets: readonly DerivedSecret[];
  /** The `.env` variables whose values must have a shape (catalog `pattern`), for values kept
   *  from another .env. */
  valuePatterns: ReadonlyMap<string, RegExp>;
  /** `files` as JSON text, built from a cached serialization of everything but `.env`. */
  filesJson(): string;
  /** The same JSON as pieces to send one after another: the cached UTF-8 bytes of the fixed text
   *  between the secrets, and the secrets. Joining them into one string per answer (40 KB for
   *  seven services) cost a server more than the generation. */
  filesJsonPieces(): (string | Uint8Array<ArrayBuffer>)[];
}

/** Migrate a generation input or config document into a checked GenerateRequest. */
function parseGenerateInput(doc: Record<string, unknown>, catalog: Catalog): GenerateRequest {
  const migrated = migrateConfig(doc, GENERATE_MESSAGE);
  const input = checkRequest<GenerateRequest>(GenerateRequest, migrated, catalog, GENERATE_MESSAGE);
  if (!input.services?.length && !input.skillPacks?.length && !input.preset) {
    throw validationError(GENERATE_MESSAGE, [{ field: "services", message: "Select at least one service, skill pack or preset" }]);
  }
  return input;
}

/** What does not change between two runs with the same input: everything but `.env`. */
interface Rendered {
  ctx: GenContext;
  files: FileMap;
  /** `.env` split around its secret values: `parts[0] + secret0 + parts[1] + ...`. */
  envParts: string[];
  envSecrets: Variable[];
  /** The derived ones among `envSecrets`, with the positions of their value and its source. */
  derived: { at: number; from: number; secret: DerivedSecret }[];
  /** JSON of `{".env": ..., ...files}` split the same way, made on first use: escaping 30 KB of
   *  text per request would cost more than generating. Secrets need no escaping (letters, digits,
   *  `-_.`). */
  filesJsonParts?: string[];
  /** The same parts as UTF-8 bytes (the server's answers), made on first use. */
  filesJsonBytes?: Uint8Array<ArrayBuffer>[];
}

/** Marks where a secret value goes in the `.env` template (plain characters: never quoted, never generated). */
const SECRET_MARK = "@@stackgen-secret@@";

/** Recently rendered bundles per catalog, keyed by their normalized input (LRU). */
const recentRenders = catalogMemo<Rendered>(64);

/** Everything a generation needs except its secrets and time: a pure function of the body, so
 *  callers may keep it for a body they see again. */
export interface PreparedGeneration {
  input: GenerateRequest;
  generateSecrets: boolean;
  rendered: Rendered;
}

export function generateBundle(body: unknown, catalog: Catalog, options: GenerateOptions = {}): Generated {
  return finishGeneration(prepareGeneration(body, catalog, options.keptPorts), options);
}

/** Check the body and render (or reuse) everything but `.env`; throws 400 / 409 errors. */
export function prepareGeneration(body: unknown, catalog: Catalog, keptPorts?: Record<string, number>): PreparedGeneration {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw validationError(GENERATE_MESSAGE, [{ field: "body", message: "Expected object" }]);
  }
  // The input of a complete export posted back: its errors name fields as the client sent them.
  const doc = requestInput(body as Record<string, unknown>, GENERATE_MESSAGE);
  const { input, selection: asSent } = checkedAsSent(body as Record<string, unknown>, doc, () => {
    const input = parseGenerateInput(doc, catalog);
    return { input, selection: toSelection(input, catalog, GENERATE_MESSAGE) };
  });
  const selection: Selection = keptPorts && Object.keys(keptPorts).length > 0 ? { ...asSent, keptPorts } : asSent;
  const deploymentType = input.deployment ?? input.deploymentType ?? "docker";
  const opts: GenOptions = {
    projectName: input.projectName,
    proxy: selection.proxy,
    domain: selection.domain,
    gpu: selection.gpu,
    platform: input.platform,
    deployment: deploymentType === "bare-metal" ? "bare-metal" : "docker",
    deploymentType,
    generateSecrets: input.generateSecrets ?? true,
    memoryLimits: input.memoryLimits ?? false,
    coreVersion: input.coreVersion ?? DEFAULT_CORE_VERSION,
    skillPacks: selection.skillPacks,
    preset: selection.preset,
  };
  // Rendering (YAML above all) is the expensive part and depends only on the input, so identical
  // requests reuse it; secrets, and therefore .env, are new on every call.
  const key = JSON.stringify([opts, selection.services, selection.platform, selection.keptPorts]);
  const rendered = recentRenders(catalog, key, () => render(opts, selection, catalog));
  return { input, generateSecrets: opts.generateSecrets, rendered };
}

/** A bundle from a prepared generation: fresh secrets (and so `.env`) and metadata on every call. */
export function finishGeneration({ input, generateSecrets, rendered }: PreparedGeneration, options: GenerateOptions = {}): Generated {
  const { ctx, files, envParts, envSecrets, derived } = rendered;
  const source = options.secrets ?? cryptoSecrets;
  const secrets = envSecrets.map((v) => (generateSecrets && !v.jwt ? source(v.name, v.format ?? "alnum", v.length ?? 32) : ""));
  if (generateSecrets) for (const d of derived) secrets[d.at] = d.secret.derive(secrets[d.from]);
  const stack = ctx.stack;
  const metadata: GenerateMetadata = {
    generatedAt: (options.now?.() ?? new Date()).toISOString(),
    totalServices: stack.resolvedServices.length,
    serviceCount: stack.resolvedServices.length,
    estimatedMemoryMB: stack.estimatedMemoryMB,
    resolvedDependencies: stack.addedDependencies.map((d) => d.service),
    warnings: stack.warnings,
    projectName: input.projectName,
    stackgenVersion: VERSION,
  };
  let all: FileMap | undefined;
  return {
    input,
    metadata,
    stack,
    get secretNames() {
      return new Set(envSecrets.map((v) => v.name));
    },
    get derivedSecrets() {
      return derived.map((d) => d.secret);
    },
    get valuePatterns() {
      return new Map(ctx.variables.filter((v) => v.pattern !== undefined).map((v) => [v.name, new RegExp(v.pattern!)]));
    },
    // Built on first use: the JSON answer never needs the object.
    get files() {
      return (all ??= { ".env": interleave(envParts, secrets), ...files });
    },
    filesJson: () => interleave((rendered.filesJsonParts ??= filesJsonParts(envParts, files)), secrets),
    filesJsonPieces: () => {
      const bytes = (rendered.filesJsonBytes ??= (rendered.filesJsonParts ??= filesJsonParts(envParts, files)).map((part) => utf8.encode(part)));
      const pieces: (string | Uint8Array<ArrayBuffer>)[] = [bytes[0]];
      for (let i = 0; i < secrets.length; i++) pieces.push(secrets[i], bytes[i + 1]);
      return pieces;
    },
  };
}

const utf8 = new TextEncoder();

/** `parts[0] + values[0] + parts[1] + ... + parts[n]`. */
function interleave(parts: string[], values: string[]): string {
  let out = parts[0];
  for (let i = 0; i < values.length; i++) out += values[i] + parts[i + 1];
  return out;
}

/** The JSON text of `{".env": env, ...files}` cut where the secrets of `.env` go. */
function filesJsonParts(envParts: string[], files: FileMap): string[] {
  const inner = envParts.map((part) => asciiJson(JSON.stringify(part).slice(1, -1)));
  inner[0] = `{".env":"${inner[0]}`;
  const members = asciiJson(JSON.stringify(files).slice(1, -1));
  inner[inner.length - 1] += members ? `",${members}}` : `"}`;
  return inner;
}

/** Resolve and run every generator except `.env`'s; refuses a conflicting selection. */
function render(opts: GenOptions, selection: Selection, catalog: Catalog): Rendered {
  const stack = resolve(selection, catalog);
  if (!stack.valid) {
    throw conflictError(
      `Incompatible selection: ${stack.conflicts.map((c) => c.message).join(" ")}`,
      stack.conflicts.map((c) => ({ field: "services", message: `${c.code}: ${c.message}` })),
    );
  }
  const nativeIds = new Set(opts.deployment === "bare-metal" ? stack.services.filter((s) => s.native && !needsContainer(s.id, stack)).map((s) => s.id) : []);
  const base: GenContext = { ...opts, stack, catalog, nativeIds, version: VERSION, variables: [] };
  const ctx: GenContext = {
    ...base,
    // Secret values never reach the cached files (.env is rendered per call).
    variables: collectVariables(stack.services, stack.core, opts, () => "", (id, declared) => publicUrl(base, id, declared)),
  };
  const files: FileMap = {
    ...composeFile(ctx),
    ...coreGatewayFiles(ctx),
    ...envExampleFile(ctx),
    ...caddyFile(ctx),
    ...traefikFiles(ctx),
    ...prometheusFiles(ctx),
    ...grafanaFiles(ctx),
    ...postgresInit(ctx),
    ...headscaleFiles(ctx),
    ...skillFiles(ctx),
    ...readmeFile(ctx),
  };
  // The install scripts read the variables the scripts they run use (the init script among them).
  Object.assign(files, bareMetalFiles(ctx, files));
  Object.assign(files, configFile(ctx, files));
  // Secrets are alphanumeric or hex, so they go into the template unquoted.
  const envSecrets = ctx.variables.filter((v) => v.secret);
  const envParts = envFile({ ...ctx, variables: ctx.variables.map((v) => (v.secret ? { ...v, value: SECRET_MARK } : v)) }).split(SECRET_MARK);
  const position = new Map(envSecrets.map((v, i) => [v.name, i]));
  const derived = derivedSecrets(envSecrets).map((secret) => ({ at: position.get(secret.name)!, from: position.get(secret.from)!, secret }));
  return { ctx, files: Object.fromEntries(Object.keys(files).sort().map((k) => [k, files[k]])), envParts, envSecrets, derived };
}

/** Debian's PostgreSQL has no pgvector: a stack whose databases need extensions keeps it in a container. */
function needsContainer(id: string, stack: ResolvedStack): boolean {
  return id === "postgresql" && stack.services.some((s) => (s.databases ?? []).some((d) => (d.extensions ?? []).length > 0));
}

