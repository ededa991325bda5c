// Catalog contracts: one TypeBox schema per kind of catalog file. The same objects check the
// YAML files at load time, type the core and describe the API responses in OpenAPI.
import { Type, type Static } from "@sinclair/typebox";
import { MAX_DOMAIN_LENGTH } from "./limits.ts";

export const CATEGORY_IDS = [
  "ai-agents", "ai-platforms", "ai-models", "automation", "database", "vector-db", "media", "social",
  "analytics", "knowledge", "storage", "devtools", "proxy", "monitoring", "browser", "search",
  "communication", "streaming", "security", "desktop",
] as const;
export const CategoryId = Type.Union([
  Type.Literal("ai-agents"), Type.Literal("ai-platforms"), Type.Literal("ai-models"), Type.Literal("automation"),
  Type.Literal("database"), Type.Literal("vector-db"), Type.Literal("media"), Type.Literal("social"),
  Type.Literal("analytics"), Type.Literal("knowledge"), Type.Literal("storage"), Type.Literal("devtools"),
  Type.Literal("proxy"), Type.Literal("monitoring"), Type.Literal("browser"), Type.Literal("search"),
  Type.Literal("communication"), Type.Literal("streaming"), Type.Literal("security"), Type.Literal("desktop"),
], { description: "One of the 20 catalog categories" });
export type CategoryId = Static<typeof CategoryId>;

export const MATURITY_IDS = ["stable", "beta", "experimental"] as const;
export const Maturity = Type.Union([Type.Literal("stable"), Type.Literal("beta"), Type.Literal("experimental")]);
export type Maturity = Static<typeof Maturity>;

export const Platform = Type.Union([Type.Literal("linux/amd64"), Type.Literal("linux/arm64")]);
export type Platform = Static<typeof Platform>;

// An id is also a host name's first label (`<id>.<domain>`): with the longest domain accepted,
// the whole name stays within DNS's 253 characters.
const Id = Type.String({ pattern: "^[a-z0-9][a-z0-9-]*$", maxLength: 253 - 1 - MAX_DOMAIN_LENGTH });
/** Name of a variable in the bundle's `.env`: upper snake case. */
const VarName = Type.String({ pattern: "^[A-Z][A-Z0-9_]*$", maxLength: 128 });
const Duration = Type.String({ pattern: "^[0-9]+(ms|s|m|h)$" });

/** Catalog files are written by hand: a key the schema does not know is a mistake (in a YAML flow
 *  mapping an unquoted comma silently ends a description and starts a new key). Also given to
 *  records whose keys have a pattern: TypeBox checks such keys only when no other is allowed. */
const STRICT = { additionalProperties: false } as const;

export const Port = Type.Object({
  container: Type.Integer({ minimum: 1, maximum: 65535 }),
  host: Type.Integer({ minimum: 1, maximum: 65535 }),
  protocol: Type.Optional(Type.Union([Type.Literal("tcp"), Type.Literal("udp")])),
  /** HTTP port the reverse proxy routes `<service>.<domain>` to (at most one per service). */
  web: Type.Optional(Type.Boolean()),
  /** Published on 127.0.0.1 only (databases, caches, admin ports). */
  local: Type.Optional(Type.Boolean()),
  /** With `web`: Caddy leaves out X-Forwarded-For, for an app that refuses forwarded requests
   *  until it is configured to trust its proxy (Home Assistant answers 400). */
  dropForwardedFor: Type.Optional(Type.Boolean()),
  description: Type.Optional(Type.String()),
}, STRICT);
export type Port = Static<typeof Port>;

export const Volume = Type.Object({
  /** A named volume (`redis-data`) or an absolute host path for a bind mount (`/var/run/docker.sock`). */
  source: Type.String({ minLength: 1 }),
  target: Type.String({ pattern: "^/" }),
  readOnly: Type.Optional(Type.Boolean()),
}, STRICT);
export type Volume = Static<typeof Volume>;

export const HealthCheck = Type.Object({
  test: Type.Array(Type.String(), { minItems: 2, description: 'Compose array form: ["CMD", ...] or ["CMD-SHELL", "..."]' }),
  interval: Duration,
  timeout: Duration,
  retries: Type.Integer({ minimum: 1 }),
  startPeriod: Type.Optional(Duration),
}, STRICT);
export type HealthCheck = Static<typeof HealthCheck>;

/** A variable the service needs in `.env`. Names are namespaced by the service id (`N8N_...`). */
export const Variable = Type.Object({
  name: VarName,
  description: Type.String({ minLength: 1 }),
  /** Generated from a CSPRNG at generate time. */
  secret: Type.Optional(Type.Boolean()),
  /** Secret alphabet/length; default alnum, 32 characters. `password` adds an upper-case letter, a
   *  lower-case letter, a digit and a symbol (`-_.`) for apps that enforce password rules. */
  format: Type.Optional(Type.Union([Type.Literal("alnum"), Type.Literal("hex"), Type.Literal("password")])),
  length: Type.Optional(Type.Integer({ minimum: 32, maximum: 128 })),
  /** Non-secret default written to `.env`. Absent and not secret: left empty for the user. */
  default: Type.Optional(Type.String()),
  /** What a value must look like (a regular expression over the whole value) for a setting that
   *  reaches a config file as text (Caddy substitutes `{$NAME}` before it parses its Caddyfile): a
   *  value taken from another .env (an export, the bundle's own) that does not match is replaced
   *  by the generated one, and said so. */
  pattern: Type.Optional(Type.String({ minLength: 1 })),
  /** The URL users reach the service at; `default` is its address on the host
   *  (`http://localhost:<host port>`). The generator rewrites it to the proxy's hostname when the
   *  proxy serves that port, or to the port the service got after a clash. */
  publicUrl: Type.Optional(Type.Boolean()),
  /** With `publicUrl`: the URL of this other service (an app that must know where users reach its
   *  web frontend or media server); `default` is then that service's address on the host. */
  publicUrlOf: Type.Optional(Type.String({ pattern: "^[a-z0-9][a-z0-9-]*$" })),
  /** With `publicUrl`: only this part of that URL (an app that wants its host name or scheme). */
  publicUrlPart: Type.Optional(Type.Union([Type.Literal("host"), Type.Literal("scheme")])),
  /** Left empty for the user (no default, not secret), and the service does not start or cannot
   *  do its job until it is filled in: the bundle's README and `.env` say so. */
  beforeStart: Type.Optional(Type.Boolean()),
  /** A secret made from another rather than drawn: an HS256 JWT carrying `role` (and `issuer` as
   *  `iss`), signed with the value of the secret variable `secret` of the same service. For apps
   *  whose API keys are tokens checked against a shared secret (Supabase's anon and service_role
   *  keys). Signed again whenever that secret gets a new value; never drawn on its own. */
  jwt: Type.Optional(Type.Object({
    secret: VarName,
    role: Type.String({ pattern: "^[a-z_][a-z0-9_]*$" }),
    issuer: Type.Optional(Type.String({ pattern: "^[a-z0-9_.-]+$" })),
  }, STRICT)),
}, STRICT);
export type Variable = Static<typeof Variable>;

/** A database the relational database must create for this service at first start. */
export const Database = Type.Object({
  engine: Type.Literal("postgresql"),
  name: Type.String({ pattern: "^[a-z_][a-z0-9_]*$" }),
  user: Type.String({ pattern: "^[a-z_][a-z0-9_]*$" }),
  /** Variable (declared in `variables`, secret) holding the user's password. */
  passwordVar: VarName,
  /** Extensions to create in the database (`vector` is available: the image is pgvector's build). */
  extensions: Type.Optional(Type.Array(Type.String({ pattern: "^[a-z_][a-z0-9_]*$" }))),
  /** `C` when the application insists on C collation (Synapse does). */
  collation: Type.Optional(Type.Literal("C")),
}, STRICT);
export type Database = Static<typeof Database>;

/** A helper container that belongs to one catalog entry (e.g. its own MongoDB). Compose name `<id>-<name>`. */
export const Sidecar = Type.Object({
  name: Id,
  image: Type.String({ minLength: 3 }),
  command: Type.Optional(Type.Array(Type.String())),
  /** User the container runs as, when the image's own cannot write its volumes. */
  user: Type.Optional(Type.String()),
  env: Type.Optional(Type.Record(Type.String(), Type.String())),
  volumes: Type.Optional(Type.Array(Volume)),
  healthCheck: Type.Optional(HealthCheck),
  estimatedMemoryMB: Type.Optional(Type.Number({ minimum: 0 })),
  /** Sibling sidecars this one uses and must start after (healthy, when they have a check):
   *  AppFlowy's auth server waits for AppFlowy's own PostgreSQL. */
  after: Type.Optional(Type.Array(Id, { minItems: 1 })),
  /** A job that runs to completion before its service (and the siblings naming it in `after`)
   *  start: restart "no", waited for with service_completed_successfully. It hands a volume to
   *  the user a non-root image runs as (Docker makes an empty volume's folder root's). */
  runsOnce: Type.Optional(Type.Literal(true)),
}, STRICT);
export type Sidecar = Static<typeof Sidecar>;

/** How bare-metal deployment installs this service natively on Debian/Ubuntu. */
export const NativeRecipe = Type.Object({
  packages: Type.Array(Type.String({ pattern: "^[a-z0-9][a-z0-9.+-]*$" }), { minItems: 1 }),
  systemdUnit: Type.String({ pattern: "^[a-z0-9@._-]+$" }),
  /** The command that shows its recent log on the host (the bundle README's troubleshooting). */
  logs: Type.String({ minLength: 5 }),
  /** Where it keeps its data on the host and how to copy it: no volume holds it, so stackgen's
   *  backups do not, and the bundle's README and `backup create` say so. */
  dataOnHost: Type.String({ minLength: 20 }),
  /** Variables set for apt-get's install (and so for the package's own scripts), as
   *  `NAME=value` words: a first PostgreSQL cluster made where no locale is set would be SQL_ASCII. */
  installEnv: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Z_][A-Z0-9_]*$" }), Type.String({ pattern: "^[A-Za-z0-9._:/-]+$" }), STRICT)),
  /** What the install changes in one the host already has, beside listening on docker0 with the
   *  password of `.env` (the bundle README warns before install.sh is run on such a host). */
  hostChanges: Type.Optional(Type.String({ minLength: 10 })),
  /** What is left on the host after `apt-get purge` of the packages, besides the systemd drop-in
   *  every recipe adds (the bundle README's manual uninstall). */
  leftAfterPurge: Type.Optional(Type.String({ minLength: 10 })),
  /** Shell lines run before anything is installed, also by `--check` (install.sh checks every
   *  script first): what the install needs of the host. Variables they set stay for `configure`. */
  check: Type.Optional(Type.Array(Type.String())),
  /** Shell lines run after install (no user input is ever interpolated into them). */
  configure: Type.Optional(Type.Array(Type.String())),
  /** The host's form of a command skills run in its container (`docker compose exec -T <id>
   *  <command>`): installed natively, the service has no container to run it in. */
  hostCommands: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }))),
}, STRICT);
export type NativeRecipe = Static<typeof NativeRecipe>;

export const MetricsEndpoint = Type.Object({
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  path: Type.String({ pattern: "^/" }),
}, STRICT);

export const CatalogService = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1 }),
  description: Type.String({ minLength: 20 }),
  category: CategoryId,
  maturity: Maturity,
  image: Type.String({ minLength: 3, description: "Image reference with tag" }),
  /** Why the image uses a floating tag (`latest`, `nightly`): only when upstream publishes nothing pinned. */
  floatingTag: Type.Optional(Type.String({ minLength: 10 })),
  platforms: Type.Array(Platform, { minItems: 1 }),
  gpu: Type.Boolean({ description: "Can use an NVIDIA GPU" }),
  gpuRequired: Type.Optional(Type.Boolean()),
  ports: Type.Array(Port),
  dependencies: Type.Array(Id),
  /** Why each dependency is needed (shown in addedDependencies). */
  dependencyReasons: Type.Optional(Type.Record(Type.String(), Type.String())),
  conflicts: Type.Array(Id),
  estimatedMemoryMB: Type.Number({ minimum: 0 }),
  /** Container environment; values may reference `.env` variables as `${NAME}`. */
  env: Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_.]*$" }), Type.String(), STRICT),
  variables: Type.Optional(Type.Array(Variable)),
  databases: Type.Optional(Type.Array(Database)),
  volumes: Type.Array(Volume),
  healthCheck: Type.Optional(HealthCheck),
  command: Type.Optional(Type.Array(Type.String())),
  entrypoint: Type.Optional(Type.Array(Type.String())),
  user: Type.Optional(Type.String()),
  /** Size of /dev/shm (compose `shm_size`) for apps that need more than Docker's 64 MB: Chromium
   *  and desktops crash or hang when it fills. */
  shmSize: Type.Optional(Type.String({ pattern: "^[1-9][0-9]*[kmg]$" })),
  sidecars: Type.Optional(Type.Array(Sidecar)),
  metrics: Type.Optional(MetricsEndpoint),
  native: Type.Optional(NativeRecipe),
  /** What to do right after the first start, when the app hands its admin account to whoever
   *  comes first or ships a default login (the bundle's README lists these). */
  firstStart: Type.Optional(Type.String({ minLength: 20 })),
  /** Its web page works in a browser only in a secure context (HTTPS, or localhost): Web Crypto,
   *  camera and microphone. Without a proxy serving a domain, the bundle says so. */
  needsHttps: Type.Optional(Type.Boolean()),
  /** A known gap of the entry that the user of a bundle with it must know about (the bundle's
   *  README lists these under "Known limits"). */
  knownLimits: Type.Optional(Type.String({ minLength: 20 })),
  /** Container environment added only when the stack's reverse proxy serves this service (an app
   *  that must be told to trust its proxy's forwarded headers, which it would otherwise refuse or
   *  take from any client). */
  proxiedEnv: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_.]*$" }), Type.String(), STRICT)),
  /** What the core gateway is told about this service (hosts, ports, credentials as `${NAME}`). */
  coreEnv: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Z][A-Z0-9_]*$" }), Type.String(), STRICT)),
  skills: Type.Array(Id),
  docsUrl: Type.String({ pattern: "^https://" }),
}, STRICT);
export type CatalogService = Static<typeof CatalogService>;

export const Preset = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1 }),
  description: Type.String({ minLength: 20 }),
  services: Type.Array(Id, { minItems: 1 }),
  skillPacks: Type.Array(Id),
  estimatedMemoryMB: Type.Number({ minimum: 0 }),
  proxy: Type.Union([Type.Literal("caddy"), Type.Literal("traefik"), Type.Null()]),
  gpu: Type.Boolean(),
}, STRICT);
export type Preset = Static<typeof Preset>;

export const SkillPack = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1 }),
  description: Type.String({ minLength: 20 }),
  services: Type.Array(Id, { minItems: 1 }),
  skills: Type.Array(Id, { minItems: 1 }),
  tags: Type.Array(Type.String()),
}, STRICT);
export type SkillPack = Static<typeof SkillPack>;

export const Category = Type.Object({ id: CategoryId, name: Type.String(), count: Type.Integer({ minimum: 0 }) });
export type Category = Static<typeof Category>;

/** `catalog/categories.yaml`: display names. */
export const CategoryNames = Type.Array(Type.Object({ id: CategoryId, name: Type.String({ minLength: 1 }) }), { minItems: 20, maxItems: 20 });

/** YAML front matter of `catalog/skills/<id>/SKILL.md`. */
export const SkillFrontMatter = Type.Object({
  name: Id,
  description: Type.String({ minLength: 20 }),
  services: Type.Array(Id),
});
export type SkillFrontMatter = Static<typeof SkillFrontMatter>;
