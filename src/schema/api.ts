// HTTP/CLI contracts (SPEC §2.4–2.8, CONTRACT §3). Each schema drives request validation,
// the OpenAPI document and the TypeScript type of the same name.
import { CloneType, Type, type Static, type TSchema } from "@sinclair/typebox";
import { CatalogService, CategoryId, Maturity, Platform, Preset, SkillPack, Category } from "./catalog.ts";
import { COMPLETE_FORMAT_VERSION } from "./versions.ts";
import { MAX_DOMAIN_LENGTH } from "./limits.ts";
import { CORE_VERSION_PATTERN, DOMAIN_PATTERN, PROJECT_NAME_MESSAGE, PROJECT_NAME_PATTERN } from "./patterns.ts";

/** A route's own copy of a schema. Elysia changes a route's schema in place when it first checks
 *  a request (it sets `additionalProperties: false` and strips unknown fields), and the core
 *  checks bodies against the shared schema: once changed, any body with an unknown field (which
 *  CONTRACT §3 says is ignored) failed in the hot routes and the CLI of the same process. */
export const routeSchema = <T extends TSchema>(schema: T): T => {
  const copy = CloneType(schema);
  asDeclared.set(copy, schema);
  return copy;
};

/** Route copies -> the schemas they were made from. */
const asDeclared = new WeakMap<TSchema, TSchema>();

/** The schema a route's copy was made from, as declared: what the OpenAPI document shows. Once
 *  Elysia has checked a body against the copy, the copy says `additionalProperties: false`, and a
 *  document built after the server's first request documented every unknown field as refused. */
export const declaredSchema = (schema: TSchema): TSchema => asDeclared.get(schema) ?? schema;

export const MAX_IDS = 200;
const IdList = (description: string) =>
  Type.Array(Type.String({ maxLength: 64 }), { maxItems: MAX_IDS, description });

export const ProxyChoice = Type.Union([Type.Literal("caddy"), Type.Literal("traefik"), Type.Literal("none"), Type.Null()], {
  description: "Reverse proxy: caddy or traefik; `none` or null turns a preset's proxy off",
});
export const DeploymentType = Type.Union([Type.Literal("docker"), Type.Literal("bare-metal"), Type.Literal("local")], {
  description: "`docker` (default), `bare-metal` (hybrid native + container install scripts) or `local` (alias of docker)",
});

/** Fields shared by validate and generate (CONTRACT §3: a preset is the base, explicit fields add or override). */
const SelectionFields = {
  services: Type.Optional(IdList("Service ids")),
  skillPacks: Type.Optional(IdList("Skill pack ids (`research` and `dev-ops` are accepted aliases)")),
  preset: Type.Optional(Type.String({ maxLength: 64, description: "Preset id used as the base of the selection" })),
  proxy: Type.Optional(ProxyChoice),
  domain: Type.Optional(Type.String({
    maxLength: MAX_DOMAIN_LENGTH,
    pattern: DOMAIN_PATTERN,
    errorMessage: `Expected a DNS name such as example.com or home.lan (letters, digits and hyphens between dots; not an IP address, no scheme or path; at most ${MAX_DOMAIN_LENGTH} characters, so that <service>.<domain> is a valid host name)`,
    description: "Base domain; services are served at <service>.<domain>",
  })),
  gpu: Type.Optional(Type.Boolean({ description: "Add NVIDIA GPU reservations to GPU-capable services" })),
  platform: Type.Optional(Platform),
};

export const ValidateRequest = Type.Object(
  { ...SelectionFields, configVersion: Type.Optional(Type.Integer()), deploymentType: Type.Optional(DeploymentType), deployment: Type.Optional(DeploymentType) },
  { description: "A selection to check; every field is optional" },
);
export type ValidateRequest = Static<typeof ValidateRequest>;

export const GenerateRequest = Type.Object(
  {
    projectName: Type.String({
      pattern: PROJECT_NAME_PATTERN,
      errorMessage: PROJECT_NAME_MESSAGE,
      description: "Compose project name and bundle folder: lowercase letters, digits, - and _",
    }),
    ...SelectionFields,
    deployment: Type.Optional(DeploymentType),
    /** Config-file spelling of `deployment` (SPEC §2.8). */
    deploymentType: Type.Optional(DeploymentType),
    generateSecrets: Type.Optional(Type.Boolean({ description: "Fill .env with random secrets (default true)" })),
    memoryLimits: Type.Optional(Type.Boolean({ description: "Cap each container's memory (deploy.resources.limits.memory) at twice the service's estimate, at least 256 MiB (default false)" })),
    coreVersion: Type.Optional(Type.String({ pattern: CORE_VERSION_PATTERN, errorMessage: "Expected an image tag: up to 128 letters, digits, ., _ and -, starting with a letter or digit", description: "Image tag of the core gateway" })),
    configVersion: Type.Optional(Type.Integer({ description: "Set when the body is a config file (SPEC §2.8)" })),
  },
  { description: "Generation input (SPEC §2.4); a config document (configVersion) is accepted too" },
);
export type GenerateRequest = Static<typeof GenerateRequest>;

export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  }),
});

export const FlatErrorBody = Type.Object({ error: Type.String(), code: Type.String() });

export const Warning = Type.Object({ code: Type.String(), message: Type.String(), service: Type.Union([Type.String(), Type.Null()]) });
export type Warning = Static<typeof Warning>;
export const Conflict = Type.Object({ code: Type.String(), message: Type.String(), services: Type.Array(Type.String()) });
export type Conflict = Static<typeof Conflict>;
export const AddedDependency = Type.Object({ service: Type.String(), requiredBy: Type.String(), reason: Type.String() });
export type AddedDependency = Static<typeof AddedDependency>;

export const ValidateResponse = Type.Object({
  valid: Type.Boolean(),
  resolvedServices: Type.Array(Type.String()),
  addedDependencies: Type.Array(AddedDependency),
  warnings: Type.Array(Warning),
  conflicts: Type.Array(Conflict),
  estimatedMemoryMB: Type.Number(),
});
export type ValidateResponse = Static<typeof ValidateResponse>;

export const GenerateMetadata = Type.Object({
  generatedAt: Type.String({ format: "date-time" }),
  totalServices: Type.Integer(),
  serviceCount: Type.Integer(),
  estimatedMemoryMB: Type.Number(),
  resolvedDependencies: Type.Array(Type.String()),
  warnings: Type.Array(Warning),
  projectName: Type.String(),
  stackgenVersion: Type.String(),
});
export type GenerateMetadata = Static<typeof GenerateMetadata>;

export const GenerateJsonResponse = Type.Object({
  files: Type.Record(Type.String(), Type.String(), { description: "File path -> UTF-8 content" }),
  metadata: GenerateMetadata,
});

export const CompleteDocument = Type.Object({
  formatVersion: Type.Literal(COMPLETE_FORMAT_VERSION),
  input: GenerateRequest,
  files: Type.Record(Type.String(), Type.String()),
  metadata: GenerateMetadata,
});
export type CompleteDocument = Static<typeof CompleteDocument>;

export const GenerateQuery = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal("json"), Type.Literal("complete"), Type.Literal("zip")], { description: "Response format" })),
});

export const Health = Type.Object({
  status: Type.String(),
  version: Type.String(),
  rateLimitStore: Type.Optional(Type.String()),
  redis: Type.Optional(Type.String()),
});

export const ServicesQuery = Type.Object({
  category: Type.Optional(CategoryId),
  maturity: Type.Optional(Maturity),
});
export const ServicesResponse = Type.Object({ services: Type.Array(CatalogService), categories: Type.Array(Category), total: Type.Integer() });
export const ServiceResponse = Type.Object({ service: CatalogService });
export const PresetsResponse = Type.Object({ presets: Type.Array(Preset), total: Type.Integer() });
export const PresetResponse = Type.Object({ preset: Preset, services: Type.Array(CatalogService) });
export const SkillPackListed = Type.Composite([SkillPack, Type.Object({ compatibilityScore: Type.Optional(Type.Number()) })]);
export const SkillsResponse = Type.Object({ packs: Type.Array(SkillPackListed), total: Type.Integer() });
export const SkillsQuery = Type.Object({ services: Type.Optional(Type.String({ description: "Comma-separated service ids" })) });

export const DeployRequest = Type.Object({
  provider: Type.Union([Type.Literal("coolify"), Type.Literal("dokploy")]),
  // Any case, as URLs read the scheme (HTTPS:// is https://).
  url: Type.String({ pattern: "^[Hh][Tt][Tt][Pp][Ss]?://", maxLength: 2048 }),
  apiKey: Type.String({ minLength: 1, maxLength: 4096 }),
  update: Type.Optional(Type.Boolean()),
  /** Coolify: the Docker destination (uuid, name or network) on a server that has several. */
  destination: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "Coolify only: the Docker destination (uuid, name or network) to use on a server that has several" })),
  input: Type.Optional(GenerateRequest),
  complete: Type.Optional(Type.Object({
    input: GenerateRequest,
    /** The document's files: its `.env` values are the ones deployed (as previewed or downloaded). */
    files: Type.Optional(Type.Record(Type.String(), Type.String())),
  }, { additionalProperties: true })),
});
export type DeployRequest = Static<typeof DeployRequest>;
