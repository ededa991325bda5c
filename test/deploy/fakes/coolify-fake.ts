// A fake Coolify v4 instance: routes and validates against test/reference/coolify-openapi.json,
// then applies the server-side rules the document cannot express (research §2 and §7), keeps
// state (projects with a `production` environment, services, env rows, deployments) and answers
// with the shapes the real server sends.
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { randomId, SpecFake, type ProviderRules, type Reply, type RequestContext } from "./spec-fake.ts";

export const COOLIFY_SPEC = join(import.meta.dir, "..", "..", "reference", "coolify-openapi.json");

export interface CoolifyServerRow {
  id: number;
  uuid: string;
  name: string;
  ip: string;
  user: string;
  port: number;
  description: string;
  is_reachable: boolean;
  is_usable: boolean;
  settings: { is_build_server: boolean; is_reachable: boolean; is_usable: boolean };
}

export interface CoolifyEnvRow {
  key: string;
  value: string;
  is_literal: boolean;
  is_preview: boolean;
  is_multiline: boolean;
}

export interface CoolifyServiceRow {
  id: number;
  uuid: string;
  name: string;
  environment_id: number;
  server_uuid: string;
  destination_uuid: string;
  /** Decoded YAML as the server stored it. */
  compose: string;
  envs: Map<string, CoolifyEnvRow>;
}

export interface CoolifyProjectRow {
  id: number;
  uuid: string;
  name: string;
  description: string | null;
  environments: { id: number; uuid: string; name: string; project_id: number }[];
}

export interface CoolifyDestinationRow {
  uuid: string;
  name: string;
  network: string;
  type: "standalone" | "swarm";
  server_uuid: string;
  created_at: string;
  updated_at: string;
}

export interface CoolifyFakeOptions {
  token?: string;
  /** Answer of GET /version (text/html). */
  version?: string;
  servers?: CoolifyServerRow[];
  /** Docker destinations per server uuid (default: each server has one, on the `coolify` network). */
  destinations?: Record<string, Omit<CoolifyDestinationRow, "server_uuid" | "created_at" | "updated_at">[]>;
  /** False: GET /servers/{uuid}/destinations is unknown (404), as on older versions. */
  listsDestinations?: boolean;
  /** True: env rows are listed without `value`/`real_value`, as for a token that may not read secrets. */
  hidesEnvValues?: boolean;
}

export function destination(network: string, type: "standalone" | "swarm" = "standalone") {
  return { uuid: `dst${randomId(10)}`, name: `localhost-${network}`, network, type };
}

export function usableServer(overrides: Partial<CoolifyServerRow> = {}): CoolifyServerRow {
  return {
    id: 0,
    uuid: `srv${randomId(10)}`,
    name: "localhost",
    ip: "host.docker.internal",
    user: "root",
    port: 22,
    description: "",
    is_reachable: true,
    is_usable: true,
    settings: { is_build_server: false, is_reachable: true, is_usable: true },
    ...overrides,
  };
}

const PROJECT_FIELDS = new Set(["name", "description"]);
// The server's outer allow-list for POST /services (connect_to_docker_network is NOT in it).
const CREATE_SERVICE_FIELDS = new Set([
  "type", "name", "description", "project_uuid", "environment_name", "environment_uuid", "server_uuid",
  "destination_uuid", "instant_deploy", "docker_compose_raw", "urls", "force_domain_override",
  "is_container_label_escape_enabled", "tags",
]);
const UPDATE_SERVICE_FIELDS = new Set([
  "name", "description", "instant_deploy", "connect_to_docker_network", "docker_compose_raw", "urls",
  "force_domain_override", "is_container_label_escape_enabled",
]);
const NAME_RE = /^[\p{L}\p{M}\p{N}\s\-_.@/&()#,:+]+$/u;
const DESCRIPTION_RE = /^[\p{L}\p{M}\p{N}\s\-_.@/&()',+!?"]+$/u;
const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_.]*$/;

export class CoolifyFake extends SpecFake {
  token: string;
  version: string;
  servers: CoolifyServerRow[];
  readonly destinations: Record<string, CoolifyDestinationRow[]> = {};
  listsDestinations: boolean;
  hidesEnvValues: boolean;
  readonly projects: CoolifyProjectRow[] = [];
  readonly services: CoolifyServiceRow[] = [];
  readonly deployments: { uuid: string; force: string | undefined }[] = [];
  private nextId = 1;

  constructor(options: CoolifyFakeOptions = {}) {
    const rules: ProviderRules = {
      before: (ctx, violate) => this.before(ctx, violate),
      validationFailed: (errors) => ({ status: 422, body: { message: "Validation failed.", errors: { request: errors } } }),
      handle: (ctx, violate) => this.handle(ctx, violate),
      // Coolify 4.2+ answers a GET of its former GET-or-POST endpoints with its own words.
      methodNotAllowed: (path, allowed) =>
        /\/deploy$|\/services\/[^/]+\/(?:start|stop|restart)$/.test(path) && allowed.includes("POST")
          ? { status: 405, headers: { allow: "POST" }, body: { message: "This endpoint has changed to a POST request." } }
          : { status: 405, headers: { allow: allowed.join(", ") }, body: { message: "Method Not Allowed" } },
    };
    super(COOLIFY_SPEC, "/api/v1", rules);
    this.token = options.token ?? "test-coolify-token-0001";
    this.version = options.version ?? "4.3.10";
    this.servers = options.servers ?? [usableServer()];
    this.listsDestinations = options.listsDestinations ?? true;
    this.hidesEnvValues = options.hidesEnvValues ?? false;
    const now = new Date(0).toISOString();
    for (const server of this.servers) {
      this.destinations[server.uuid] = (options.destinations?.[server.uuid] ?? [destination("coolify")]).map((d) => ({
        ...d,
        server_uuid: server.uuid,
        created_at: now,
        updated_at: now,
      }));
    }
  }

  /** Seed a project as if created earlier (duplicate tests). */
  addProject(name: string): CoolifyProjectRow {
    const id = this.nextId++;
    const project: CoolifyProjectRow = {
      id,
      uuid: `prj${randomId(10)}`,
      name,
      description: null,
      environments: [{ id: this.nextId++, uuid: `env${randomId(10)}`, name: "production", project_id: id }],
    };
    this.projects.push(project);
    return project;
  }

  private before(ctx: RequestContext, violate: (why: string) => void): Reply | null {
    const auth = ctx.headers["authorization"];
    if (!auth) {
      violate("no Authorization header (the spec requires bearerAuth)");
      return { status: 401, body: { message: "Unauthenticated." } };
    }
    if (auth !== `Bearer ${this.token}`) return { status: 401, body: { message: "Unauthenticated." } };
    if ((ctx.method === "post" || ctx.method === "patch") && ctx.rawBody !== "") {
      const type = (ctx.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (type !== "application/json") {
        violate(`content type "${type}" (the server wants application/json)`);
        return { status: 400, body: { message: "Invalid request.", error: "Content-Type must be application/json." } };
      }
      if (typeof ctx.body === "string") {
        violate("body is not JSON");
        return { status: 400, body: { message: "Invalid request.", error: "Invalid JSON." } };
      }
    }
    return null;
  }

  private handle(ctx: RequestContext, violate: (why: string) => void): Reply {
    const body = (ctx.body ?? {}) as Record<string, unknown>;
    switch (ctx.operationId) {
      case "version":
        return { status: 200, text: this.version, contentType: "text/html; charset=UTF-8" };
      case "list-servers":
        return { status: 200, body: this.servers };
      case "list-projects":
        return { status: 200, body: this.projects.map(({ id, uuid, name, description }) => ({ id, uuid, name, description })) };
      case "create-project":
        return this.createProject(body, violate);
      case "get-project-by-uuid": {
        const project = this.projects.find((p) => p.uuid === ctx.params.uuid);
        if (!project) return { status: 404, body: { message: "Project not found." } };
        return { status: 200, body: { ...project, team_id: 0 } };
      }
      case "list-services":
        return {
          status: 200,
          body: this.services.map((s) => ({ id: s.id, uuid: s.uuid, name: s.name, environment_id: s.environment_id, docker_compose_raw: s.compose })),
        };
      case "create-service":
        return this.createService(body, violate);
      case "list-server-destinations": {
        if (!this.listsDestinations) return { status: 404, body: { message: "Not found." } };
        const list = this.destinations[ctx.params.server_uuid!];
        if (!list) return { status: 404, body: { message: "Server not found." } };
        return { status: 200, body: list };
      }
      case "update-service-by-uuid":
        return this.updateService(ctx.params.uuid!, body, violate);
      case "update-envs-by-service-uuid":
        return this.bulkEnvs(ctx.params.uuid!, body, violate);
      case "list-envs-by-service-uuid": {
        const service = this.services.find((s) => s.uuid === ctx.params.uuid);
        if (!service) return { status: 404, body: { message: "Service not found." } };
        const rows = [...service.envs.values()].map((r, i) => {
          const row = { id: i + 1, uuid: `env${randomId(8)}`, ...r, is_shown_once: false, comment: null, created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" };
          if (this.hidesEnvValues) return { ...row, value: undefined };
          return { ...row, real_value: r.value };
        });
        return { status: 200, body: JSON.parse(JSON.stringify(rows)) };
      }
      case "deploy-by-tag-or-uuid": {
        const service = this.services.find((s) => s.uuid === ctx.query.uuid);
        if (!service) return { status: 404, body: { message: "No resources found." } };
        this.deployments.push({ uuid: service.uuid, force: ctx.query.force });
        return {
          status: 200,
          body: { deployments: [{ message: `Service ${service.name} started. It could take a while, be patient.`, resource_uuid: service.uuid }] },
        };
      }
      default:
        violate(`operation ${ctx.operationId} is valid but not expected from stackgen`);
        return { status: 501, body: { message: "Not modelled by the fake." } };
    }
  }

  private createProject(body: Record<string, unknown>, violate: (why: string) => void): Reply {
    const unknown = Object.keys(body).filter((k) => !PROJECT_FIELDS.has(k));
    if (unknown.length) return this.invalid(violate, Object.fromEntries(unknown.map((k) => [k, ["This field is not allowed."]])));
    const name = body.name;
    if (typeof name !== "string" || name.length < 3 || name.length > 255 || !NAME_RE.test(name)) {
      return this.invalid(violate, { name: ["The name field must be 3-255 characters of the allowed set."] });
    }
    if (body.description !== undefined && (typeof body.description !== "string" || !DESCRIPTION_RE.test(body.description) || body.description.length > 255)) {
      return this.invalid(violate, { description: ["The description format is invalid."] });
    }
    const project = this.addProject(name);
    project.description = (body.description as string | undefined) ?? null;
    return { status: 201, body: { uuid: project.uuid } };
  }

  private createService(body: Record<string, unknown>, violate: (why: string) => void): Reply {
    const unknown = Object.keys(body).filter((k) => !CREATE_SERVICE_FIELDS.has(k));
    if (unknown.length) return this.invalid(violate, Object.fromEntries(unknown.map((k) => [k, ["This field is not allowed."]])));
    if (body.type !== undefined && body.docker_compose_raw !== undefined) {
      return this.invalid(violate, { type: ["The type and docker_compose_raw fields cannot be used together."] });
    }
    if (body.docker_compose_raw === undefined) {
      violate("no docker_compose_raw (one-click types are not what stackgen deploys)");
      return { status: 422, body: { message: "Validation failed.", errors: { type: ["The type field is required."] } } };
    }
    const compose = this.decodeCompose(body.docker_compose_raw, violate);
    if (typeof compose !== "string") return compose;

    const project = this.projects.find((p) => p.uuid === body.project_uuid);
    if (!project) return { status: 404, body: { message: "Project not found." } };
    const environment =
      project.environments.find((e) => e.name === body.environment_name) ??
      project.environments.find((e) => e.uuid === body.environment_uuid);
    if (!environment) {
      violate("environment not found by name or uuid");
      return { status: 404, body: { message: "Environment not found." } };
    }
    if (!this.servers.some((s) => s.uuid === body.server_uuid)) return { status: 404, body: { message: "Server not found." } };
    // research §2: a destination must be named when the server has several.
    const destinations = this.destinations[String(body.server_uuid)] ?? [];
    if (destinations.length === 0) return { status: 400, body: { message: "Server has no destinations." } };
    let destinationUuid = destinations[0]!.uuid;
    if (body.destination_uuid !== undefined) {
      if (!destinations.some((d) => d.uuid === body.destination_uuid)) {
        violate("destination_uuid is not a destination of the server");
        return { status: 404, body: { message: "Destination not found." } };
      }
      destinationUuid = String(body.destination_uuid);
    } else if (destinations.length > 1) {
      return { status: 400, body: { message: "Server has multiple destinations and you do not set destination_uuid." } };
    }
    if (body.instant_deploy === true) violate("instant_deploy:true would start the stack before its variables are set");

    const service: CoolifyServiceRow = {
      id: this.nextId++,
      uuid: `svc${randomId(10)}`,
      name: typeof body.name === "string" ? body.name : `service-${randomId(6)}`,
      environment_id: environment.id,
      server_uuid: String(body.server_uuid),
      destination_uuid: destinationUuid,
      compose,
      envs: new Map(),
    };
    // Like the server: every ${VAR} the compose file references becomes an env row.
    for (const key of referencedVariables(compose)) {
      service.envs.set(key, { key, value: "", is_literal: false, is_preview: false, is_multiline: false });
    }
    this.services.push(service);
    return { status: 201, body: { uuid: service.uuid, domains: [] } };
  }

  private updateService(uuid: string, body: Record<string, unknown>, violate: (why: string) => void): Reply {
    const service = this.services.find((s) => s.uuid === uuid);
    if (!service) return { status: 404, body: { message: "Service not found." } };
    const unknown = Object.keys(body).filter((k) => !UPDATE_SERVICE_FIELDS.has(k));
    if (unknown.length) return this.invalid(violate, Object.fromEntries(unknown.map((k) => [k, ["This field is not allowed."]])));
    if (body.docker_compose_raw !== undefined) {
      const compose = this.decodeCompose(body.docker_compose_raw, violate);
      if (typeof compose !== "string") return compose;
      service.compose = compose;
      // Like creation: variables the new file references get (empty) rows.
      for (const key of referencedVariables(compose)) {
        if (!service.envs.has(key)) service.envs.set(key, { key, value: "", is_literal: false, is_preview: false, is_multiline: false });
      }
    }
    return { status: 200, body: { uuid: service.uuid, domains: [] } };
  }

  private bulkEnvs(uuid: string, body: Record<string, unknown>, violate: (why: string) => void): Reply {
    const service = this.services.find((s) => s.uuid === uuid);
    if (!service) return { status: 404, body: { message: "Service not found." } };
    if (!Array.isArray(body.data)) return { status: 400, body: { message: "Bulk data is required." } };
    const rows: CoolifyEnvRow[] = [];
    for (const item of body.data as Record<string, unknown>[]) {
      const key = item.key;
      if (typeof key !== "string" || !ENV_KEY_RE.test(key) || key.length > 255) {
        return this.invalid(violate, { key: ["The key format is invalid."] });
      }
      if (item.value !== undefined && item.value !== null && typeof item.value !== "string") {
        return this.invalid(violate, { value: ["The value must be a string."] });
      }
      const row: CoolifyEnvRow = {
        key,
        value: (item.value as string | null | undefined) ?? "",
        is_literal: item.is_literal === true,
        is_preview: item.is_preview === true,
        is_multiline: item.is_multiline === true,
      };
      service.envs.set(key, row); // upsert by key
      rows.push(row);
    }
    return { status: 201, body: rows.map((r, i) => ({ id: i + 1, uuid: randomId(10), ...r })) };
  }

  /** The strict base64 round-trip and the `services:` check of the server. Returns the YAML or an error reply. */
  private decodeCompose(raw: unknown, violate: (why: string) => void): string | Reply {
    const encoded = String(raw);
    const decoded = Buffer.from(encoded, "base64");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || decoded.toString("base64") !== encoded) {
      violate("docker_compose_raw is not strict base64");
      return { status: 422, body: { message: "Validation failed.", errors: { docker_compose_raw: "The docker_compose_raw should be base64 encoded." } } };
    }
    // Coolify's next check (mb_detect_encoding(..., 'ASCII', true)) refuses any byte past ASCII,
    // with the same misleading message.
    if (decoded.some((byte) => byte > 0x7f)) {
      violate("docker_compose_raw holds non-ASCII bytes, which Coolify refuses");
      return { status: 422, body: { message: "Validation failed.", errors: { docker_compose_raw: "The docker_compose_raw should be base64 encoded." } } };
    }
    const text = decoded.toString("utf8");
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch {
      violate("docker_compose_raw is not YAML");
      return { status: 422, body: { message: "Invalid docker-compose file." } };
    }
    const services = (doc as { services?: unknown })?.services;
    if (!services || typeof services !== "object" || Array.isArray(services)) {
      violate("docker_compose_raw has no services map");
      return { status: 422, body: { message: "Invalid docker-compose file: services section is required." } };
    }
    for (const [name, service] of Object.entries(services as Record<string, { volumes?: unknown[] }>)) {
      if (/[;&|`$<>(){}\s]/.test(name)) {
        violate(`service name ${name} has shell metacharacters`);
        return { status: 422, body: { message: "Invalid service name." } };
      }
      // Volume paths too (research §2); `${VAR}` references are allowed, command substitution is not.
      for (const volume of service?.volumes ?? []) {
        const paths = typeof volume === "string" ? [volume] : [String((volume as { source?: unknown })?.source ?? ""), String((volume as { target?: unknown })?.target ?? "")];
        const bad = paths.find((path) => /[;&|`<>\n]|\$\(/.test(path.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*(:?-[^}]*)?\}/g, "")));
        if (bad !== undefined) {
          violate(`volume path ${bad} of ${name} has shell metacharacters`);
          return { status: 422, body: { message: "Invalid volume path." } };
        }
      }
    }
    return text;
  }

  private invalid(violate: (why: string) => void, errors: Record<string, string[]>): Reply {
    violate(`server-side validation: ${JSON.stringify(errors)}`);
    return { status: 422, body: { message: "Validation failed.", errors } };
  }
}

function referencedVariables(compose: string): string[] {
  const keys = new Set<string>();
  for (const m of compose.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) keys.add(m[1]!);
  return [...keys];
}
