// docker-compose.yml: the core gateway plus every resolved service (and their sidecars), one
// network, named volumes, health-gated depends_on. Emitted through the `yaml` library.
import { Scalar, stringify } from "yaml";
import type { CatalogService, HealthCheck, Sidecar } from "../../schema/catalog.ts";
import { allServices, hasPrivateDomain, hasProxy, hostnameOf, publishedOnLoopback, publishedPorts, webServices, type FileMap, type GenContext } from "./context.ts";
import { CORE_CONFIG_TARGET } from "./core-gateway.ts";
import { isDatabase } from "../databases.ts";
import { bundleMounts, DOCKER_SOCKET, needsPostgresInit, POSTGRES_INIT_TARGET } from "./mounts.ts";

export const NETWORK = "stack";
const VAR_REF = /\$\{([A-Z][A-Z0-9_]*)\}/g;

/** `${NAME}` stays a compose reference; any other `$` is a literal and is doubled. */
export function escapeDollars(value: string): string {
  return value.replace(/\$(?!\{[A-Z][A-Z0-9_]*(?:(?::?[-?])[^}]*)?\})/g, () => "$$");
}

function interpolate(ctx: GenContext, value: string): string {
  const escaped = escapeDollars(value);
  if (ctx.generateSecrets) return escaped;
  const secretNames = new Set(ctx.variables.filter((v) => v.secret).map((v) => v.name));
  return escaped.replace(VAR_REF, (ref, name: string) =>
    secretNames.has(name) ? `\${${name}:?${name} is empty - set it in .env}` : ref);
}

function healthcheck(h: HealthCheck, ctx: GenContext) {
  return {
    test: h.test.map((t, i) => (i === 0 ? t : interpolate(ctx, t))),
    interval: h.interval,
    timeout: h.timeout,
    retries: h.retries,
    ...(h.startPeriod ? { start_period: h.startPeriod } : {}),
  };
}

/** Whether the container's PID 1 may idle in a process that ignores SIGTERM: `sleep infinity`
 *  keeping a tool container up (jobs run in it with `docker compose exec`), or a shell that waits
 *  in a `sleep` loop (for a project to appear) before it starts the app. As PID 1 they have no
 *  handler for it, so every stop (update, a cold backup, `down`) waited out Docker's 10 s grace
 *  period and then killed them. Docker's init passes the signal on. Not for a shell that execs
 *  the image's own entrypoint at once: an s6 `/init` (Home Assistant's) must itself be PID 1. */
const ignoresSigterm = (s: { entrypoint?: string[]; command?: string[] }) => /\bsleep\b/.test([...(s.entrypoint ?? []), ...(s.command ?? [])].join(" "));

/** PostgreSQL runs its init scripts only on an empty volume, so a service added to a stack that
 *  already ran would never get its database. Its health check therefore applies the (idempotent)
 *  script on every check, and clients, which wait for it to be healthy, start once their
 *  database exists. Over TCP: the image's first-start server listens on the socket only, while it
 *  runs the same script itself. */
function postgresHealthCheck(h: HealthCheck): HealthCheck {
  const ready = 'pg_isready -h 127.0.0.1 -U "$POSTGRES_USER" -d postgres';
  const apply = `PGHOST=127.0.0.1 PGPASSWORD="$POSTGRES_PASSWORD" sh ${POSTGRES_INIT_TARGET}/10-databases.sh >/dev/null`;
  return { ...h, test: ["CMD-SHELL", `${ready} && ${apply}`] };
}

const envOf = (ctx: GenContext, env: Record<string, string>) =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(ctx, v)]));

/** Port mappings are always quoted: YAML 1.1 readers take `22:22` for a base-60 number. */
function quoted(text: string): Scalar {
  const node = new Scalar(text);
  node.type = Scalar.QUOTE_DOUBLE;
  return node;
}

/** The gateway image: repository and tag both overridable from .env (CORE_IMAGE, CORE_VERSION). */
export const coreImage = (ctx: GenContext) => `\${CORE_IMAGE:-ghcr.io/openclaw/openclaw}:\${CORE_VERSION:-${ctx.coreVersion}}`;

export const sidecarName = (s: CatalogService, sc: Sidecar) => `${s.id}-${sc.name}`;

/** The memory cap of a container whose service is estimated at `estimateMB`: twice the estimate
 *  (an estimate is a typical working set, and a cap at it would kill a service at its first
 *  peak), at least 256 MiB, in whole 64 MiB steps. */
export const memoryLimitMB = (estimateMB: number) => Math.max(256, Math.ceil((estimateMB * 2) / 64) * 64);
const memoryLimit = (ctx: GenContext, estimateMB: number | undefined) =>
  ctx.memoryLimits && estimateMB !== undefined ? { limits: { memory: `${memoryLimitMB(estimateMB)}M` } } : {};
/** A service's `deploy` key for these resources; none when there are none. */
const deployWith = (resources: Record<string, unknown>) => (Object.keys(resources).length ? { deploy: { resources } } : {});

/** With Watchtower in the stack: it updates this stack's containers only (its scope, the project
 *  name; unscoped it would recreate every container on the host, other stacks included), and
 *  never the databases, which it would recreate under running clients with no order, health
 *  wait or way back (`stackgen update` does those). */
function watchtowerLabels(ctx: GenContext, present: boolean): (category: string | undefined, image: string) => Record<string, string> {
  if (!present) return () => ({});
  return (category, image) => ({
    "com.centurylinklabs.watchtower.scope": ctx.projectName,
    ...(isDatabase(category, image) ? { "com.centurylinklabs.watchtower.enable": "false" } : {}),
  });
}

export function buildCompose(ctx: GenContext): Record<string, unknown> {
  const services: Record<string, unknown> = {};
  const volumes = new Set<string>();
  const mounts = bundleMounts(ctx);
  const containerServices = allServices(ctx).filter((s) => !ctx.nativeIds.has(s.id));
  const byId = new Map(containerServices.map((s) => [s.id, s]));
  const extraHosts = [...ctx.nativeIds].sort().map((id) => `${id}:host-gateway`);
  const traefik = byId.has("traefik");
  const watched = watchtowerLabels(ctx, byId.has("watchtower"));
  const webById = new Map(webServices(ctx).map((w) => [w.id, w]));

  const volumeSpecs = (list: CatalogService["volumes"]) =>
    list.map((v) => {
      if (!v.source.startsWith("/")) volumes.add(v.source);
      return `${v.source}:${v.target}${v.readOnly ? ":ro" : ""}`;
    });

  const condition = (id: string) => ({ condition: byId.get(id)!.healthCheck ? "service_healthy" : "service_started" });
  /** What waiting for a sidecar means: its exit for a job, its health check, or its start. */
  const sidecarCondition = (sc: Sidecar) => ({ condition: sc.runsOnce ? "service_completed_successfully" : sc.healthCheck ? "service_healthy" : "service_started" });
  /** The stack's services `s` depends on, with the condition to wait for. */
  const parentDependencies = (s: CatalogService): [string, { condition: string }][] =>
    s.id === "core" ? [] : s.dependencies.filter((d) => byId.has(d)).map((d) => [d, condition(d)]);
  const sidecarDependencies = (s: CatalogService, sc: Sidecar): [string, { condition: string }][] => [
    ...parentDependencies(s),
    ...(sc.after ?? []).map((name): [string, { condition: string }] => {
      const sibling = s.sidecars!.find((x) => x.name === name)!;
      return [sidecarName(s, sibling), sidecarCondition(sibling)];
    }),
  ];

  for (const s of containerServices) {
    for (const sc of s.sidecars ?? []) {
      services[sidecarName(s, sc)] = {
        image: sc.image,
        ...(ctx.platform ? { platform: ctx.platform } : {}),
        restart: sc.runsOnce ? "no" : "unless-stopped",
        ...(sc.command ? { command: sc.command.map((a) => interpolate(ctx, a)) } : {}),
        ...(sc.user ? { user: sc.user } : {}),
        ...(sc.env && Object.keys(sc.env).length ? { environment: envOf(ctx, sc.env) } : {}),
        ...(sc.volumes?.length ? { volumes: volumeSpecs(sc.volumes) } : {}),
        ...(sc.healthCheck ? { healthcheck: healthcheck(sc.healthCheck, ctx) } : {}),
        ...deployWith(memoryLimit(ctx, sc.estimatedMemoryMB)),
        // A worker sidecar uses what its service uses (authentik's worker, its database): it waits
        // for the same services, or it starts before PostgreSQL has made its user and restarts.
        // It also waits for the sibling sidecars it uses (AppFlowy's auth server, its database).
        ...(sidecarDependencies(s, sc).length ? { depends_on: Object.fromEntries(sidecarDependencies(s, sc)) } : {}),
        // A sidecar reaches the natively installed services as its service does (dify-api, Redis).
        ...(extraHosts.length ? { extra_hosts: extraHosts } : {}),
        labels: { "dev.stackgen.project": ctx.projectName, "dev.stackgen.service": s.id, "dev.stackgen.sidecar": sc.name, ...watched(undefined, sc.image) },
        networks: [NETWORK],
      };
    }

    const environment: Record<string, string> = envOf(ctx, s.env);
    if (s.id === "core") {
      for (const other of ctx.stack.services) Object.assign(environment, envOf(ctx, other.coreEnv ?? {}));
      // The configuration comes from the bundle (./core-gateway.ts), not from the state volume.
      environment.OPENCLAW_CONFIG_PATH = CORE_CONFIG_TARGET;
    }
    if (s.proxiedEnv && webById.has(s.id) && hasProxy(ctx)) Object.assign(environment, envOf(ctx, s.proxiedEnv));
    if (s.id === "caddy" && ctx.domain && !hasPrivateDomain(ctx)) {
      // The Caddyfile reads it for its ACME account; an empty value would stop Caddy from starting.
      environment.CADDY_ACME_EMAIL = `\${CADDY_ACME_EMAIL:-admin@${ctx.domain}}`;
    }
    if (s.id === "postgresql") {
      // The init script creates each service's user with its own password.
      for (const db of ctx.stack.services.flatMap((x) => x.databases ?? [])) environment[db.passwordVar] = interpolate(ctx, `\${${db.passwordVar}}`);
    }

    const dependsOn: Record<string, { condition: string }> = {};
    for (const sc of s.sidecars ?? []) dependsOn[sidecarName(s, sc)] = sidecarCondition(sc);
    if (s.id === "core") {
      // The gateway starts after the services it uses; the proxy sits in front of it instead.
      for (const other of ctx.stack.services) if (byId.has(other.id) && other.category !== "proxy") dependsOn[other.id] = { condition: "service_started" };
    } else {
      for (const [d, c] of parentDependencies(s)) dependsOn[d] = c;
    }

    const vols = volumeSpecs(s.volumes);
    for (const m of mounts.get(s.id) ?? []) vols.push(`${m.source}:${m.target}${m.readOnly ? ":ro" : ""}`);
    if (s.id === "traefik" && !s.volumes.some((v) => v.source === DOCKER_SOCKET)) vols.push(`${DOCKER_SOCKET}:${DOCKER_SOCKET}:ro`);

    const ports = publishedPorts(ctx, s.id).map((p) =>
      quoted(`${publishedOnLoopback(ctx, s.id, p) ? "127.0.0.1:" : ""}${p.host}:${p.container}${p.protocol === "udp" ? "/udp" : ""}`));

    const labels: Record<string, string> = { "dev.stackgen.project": ctx.projectName, "dev.stackgen.service": s.id, ...watched(s.category, s.image) };
    if (s.id === "watchtower") environment.WATCHTOWER_SCOPE = ctx.projectName;
    const web = webById.get(s.id);
    if (traefik && web) {
      const router = `${s.id}`;
      labels["traefik.enable"] = "true";
      // Metrics without a login stay inside the stack (see WebService): no router takes that path.
      const metricsPath = web.metricsPath;
      labels[`traefik.http.routers.${router}.rule`] = `Host(\`${hostnameOf(ctx, s.id)}\`)${metricsPath ? ` && !(Path(\`${metricsPath}\`) || PathPrefix(\`${metricsPath}/\`))` : ""}`;
      labels[`traefik.http.routers.${router}.entrypoints`] = ctx.domain ? "websecure" : "web";
      if (hasPrivateDomain(ctx)) labels[`traefik.http.routers.${router}.tls`] = "true";
      else if (ctx.domain) labels[`traefik.http.routers.${router}.tls.certresolver`] = "letsencrypt";
      labels[`traefik.http.routers.${router}.middlewares`] = "security-headers@file";
      labels[`traefik.http.services.${router}.loadbalancer.server.port`] = String(web.port);
    }

    const gpu = ctx.gpu && s.gpu;
    const resources = {
      ...memoryLimit(ctx, s.estimatedMemoryMB),
      ...(gpu ? { reservations: { devices: [{ driver: "nvidia", count: "all", capabilities: ["gpu"] }] } } : {}),
    };
    services[s.id] = {
      image: s.id === "core" ? coreImage(ctx) : s.image,
      ...(ctx.platform ? { platform: ctx.platform } : {}),
      restart: "unless-stopped",
      ...(s.id === "core" || ignoresSigterm(s) ? { init: true } : {}),
      ...(s.entrypoint ? { entrypoint: s.entrypoint.map((a) => interpolate(ctx, a)) } : {}),
      ...(s.command ? { command: s.command.map((a) => interpolate(ctx, a)) } : {}),
      ...(s.user ? { user: s.user } : {}),
      ...(s.shmSize ? { shm_size: s.shmSize } : {}),
      ...(Object.keys(environment).length ? { environment } : {}),
      ...(ports.length ? { ports } : {}),
      ...(vols.length ? { volumes: vols } : {}),
      ...(Object.keys(dependsOn).length ? { depends_on: dependsOn } : {}),
      ...(s.healthCheck ? { healthcheck: healthcheck(s.id === "postgresql" && needsPostgresInit(ctx) ? postgresHealthCheck(s.healthCheck) : s.healthCheck, ctx) } : {}),
      ...deployWith(resources),
      ...(extraHosts.length ? { extra_hosts: extraHosts } : {}),
      labels,
      networks: [NETWORK],
    };
  }

  return {
    name: ctx.projectName,
    services,
    networks: { [NETWORK]: { driver: "bridge" } },
    ...(volumes.size ? { volumes: Object.fromEntries([...volumes].sort().map((v) => [v, {}])) } : {}),
  };
}

export function composeFile(ctx: GenContext): FileMap {
  const header = `# ${ctx.projectName}: generated by stackgen ${ctx.version}. Start with: docker compose up -d\n# Secrets live in .env; edit settings there rather than here.\n`;
  return { "docker-compose.yml": header + stringify(buildCompose(ctx), { lineWidth: 0, version: "1.1", aliasDuplicateObjects: false }) };
}
