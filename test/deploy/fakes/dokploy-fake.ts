// A fake Dokploy instance: routes and validates requests against
// test/reference/dokploy-openapi.json (requests only: its response schemas are placeholders,
// research §1), checks `x-api-key` itself (the document's security name is undefined), and
// models the version differences that matter (research §3).
import { join } from "node:path";
import { randomId, SpecFake, type ProviderRules, type Reply, type RequestContext } from "./spec-fake.ts";
import { envValues } from "../../../src/core/parse-env.ts";

export const DOKPLOY_SPEC = join(import.meta.dir, "..", "..", "reference", "dokploy-openapi.json");

/** The env text as the `dotenv` package reads it (Dokploy's reader): its line pattern, then the
 *  surrounding quotes removed, and `\n`/`\r` expanded in double quotes only. */
export function readLikeDotenv(text: string): Map<string, string> {
  const line = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?$/gm;
  const vars = new Map<string, string>();
  for (const m of text.replace(/\r\n?/gm, "\n").matchAll(line)) {
    const raw = (m[2] ?? "").trim();
    const unquoted = raw.replace(/^(['"`])([\s\S]*)\1$/gm, "$2");
    vars.set(m[1]!, raw[0] === '"' ? unquoted.replace(/\\n/g, "\n").replace(/\\r/g, "\r") : unquoted);
  }
  return vars;
}

/** What the containers of a Dokploy compose stack get from its env text: Dokploy reads it with
 *  dotenv, fills in `${{…}}` (an unknown one fails the deployment), writes each value as
 *  `KEY="…"` with `\`, `"` and `$` escaped into the .env, and compose reads that file. */
export function dokployContainerEnv(text: string): Map<string, string> {
  const written = [...readLikeDotenv(text)].map(([key, value]) => {
    if (value.includes("${{")) throw new Error(`Dokploy would fail the deployment: ${key} references \${{…}}`);
    return `${key}="${value.replace(/[\\"$]/g, (c) => `\\${c}`)}"`;
  });
  return envValues(written.join("\n"));
}

export interface DokployComposeRow {
  composeId: string;
  name: string;
  appName: string;
  description: string | null;
  environmentId: string;
  composeType: string;
  composeFile: string;
  env: string | null;
  sourceType: string;
  composeStatus: string;
  createdAt: string;
  serverId: string | null;
}

export interface DokployEnvironmentRow {
  environmentId: string;
  name: string;
  description: string;
  projectId: string;
  isDefault: boolean;
  createdAt: string;
  env: string;
}

export interface DokployProjectRow {
  projectId: string;
  name: string;
  description: string | null;
  createdAt: string;
  organizationId: string;
  env: string;
}

export interface DokployFakeOptions {
  apiKey?: string;
  /** The version it behaves as, and answers settings.getDokployVersion with, e.g. "v0.30.2". */
  version?: string;
  /** Another answer to settings.getDokployVersion (its published document says an object). */
  versionAnswer?: unknown;
}

/** Numeric [major, minor, patch] of a "v0.30.2" string. */
function versionTuple(version: string): number[] {
  return version.replace(/^v/, "").split("-")[0]!.split(".").map(Number);
}
function atLeast(version: string, minimum: string): boolean {
  const a = versionTuple(version);
  const b = versionTuple(minimum);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

export class DokployFake extends SpecFake {
  apiKey: string;
  version: string;
  versionAnswer: unknown;
  readonly projects: DokployProjectRow[] = [];
  readonly environments: DokployEnvironmentRow[] = [];
  readonly composes: DokployComposeRow[] = [];
  readonly deployments: { composeId: string; title?: string }[] = [];
  /** Dokploy Cloud, or `remoteServersOnly`: a compose must name one of `servers`. */
  remoteServersOnly = false;
  /** Remote servers, as server.all lists them. */
  readonly servers: { serverId: string; name: string; ipAddress: string; serverStatus: string }[] = [];

  constructor(options: DokployFakeOptions = {}) {
    const rules: ProviderRules = {
      before: (ctx, violate) => this.before(ctx, violate),
      validationFailed: (errors) => ({
        status: 400,
        body: { message: "Input validation failed", code: "BAD_REQUEST", issues: errors.map((message) => ({ message })) },
      }),
      handle: (ctx, violate) => this.handle(ctx, violate),
    };
    super(DOKPLOY_SPEC, "/api", rules);
    this.apiKey = options.apiKey ?? "test-dokploy-key-0001";
    this.version = options.version ?? "v0.30.2";
    this.versionAnswer = "versionAnswer" in options ? options.versionAnswer : this.version;
  }

  /** Seed a project with its production environment (duplicate tests). */
  addProject(name: string): { project: DokployProjectRow; environment: DokployEnvironmentRow } {
    const now = new Date().toISOString();
    const project: DokployProjectRow = { projectId: randomId(21), name, description: null, createdAt: now, organizationId: "org1", env: "" };
    const environment: DokployEnvironmentRow = {
      environmentId: randomId(21),
      name: "production",
      description: "Production environment",
      projectId: project.projectId,
      isDefault: true,
      createdAt: now,
      env: "",
    };
    this.projects.push(project);
    this.environments.push(environment);
    return { project, environment };
  }

  private before(ctx: RequestContext, violate: (why: string) => void): Reply | null {
    const key = ctx.headers["x-api-key"];
    if (!key) {
      violate("no x-api-key header (the document's apiKey scheme)");
      return { status: 401, body: { message: "Unauthorized" } };
    }
    if (ctx.headers["authorization"]) violate("Authorization header sent (Dokploy 0.19+ uses x-api-key only)");
    if (key !== this.apiKey) return { status: 401, body: { message: "Unauthorized" } };
    if (ctx.method === "post") {
      const type = (ctx.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (type !== "application/json") {
        violate(`mutation with content type "${type}"`);
        return { status: 415, body: { message: "Unsupported content-type", code: "UNSUPPORTED_MEDIA_TYPE" } };
      }
    }
    return null;
  }

  private handle(ctx: RequestContext, violate: (why: string) => void): Reply {
    const body = (ctx.body ?? {}) as Record<string, unknown>;
    switch (ctx.operationId) {
      case "settings-getDokployVersion":
        return { status: 200, body: this.versionAnswer };
      case "project-all":
        return { status: 200, body: this.projects.map((p) => this.projectView(p)) };
      case "project-one": {
        const project = this.projects.find((p) => p.projectId === ctx.query.projectId);
        if (!project) return notFound("Project not found");
        return { status: 200, body: this.projectView(project) };
      }
      case "project-create": {
        const { project, environment } = this.addProject(String(body.name));
        project.description = (body.description as string | null | undefined) ?? null;
        if (typeof body.env === "string") project.env = body.env;
        const envView = this.environmentView(environment, false);
        return { status: 200, body: atLeast(this.version, "0.25.0") ? { project, environment: envView } : project };
      }
      case "server-all":
        return { status: 200, body: this.servers };
      case "compose-create": {
        const environment = this.environments.find((e) => e.environmentId === body.environmentId);
        if (!environment) return notFound("Environment not found");
        const serverId = typeof body.serverId === "string" ? body.serverId : null;
        if (this.remoteServersOnly && !serverId) return { status: 401, body: { message: "You need to use a server to create a compose", code: "UNAUTHORIZED" } };
        if (serverId && !this.servers.some((s) => s.serverId === serverId)) return notFound("Server not found");
        const row: DokployComposeRow = {
          composeId: randomId(21),
          name: String(body.name),
          appName: `${String(body.appName ?? body.name).toLowerCase().replace(/[^a-z0-9._-]+/g, "-")}-${randomId(6)}`,
          description: (body.description as string | null | undefined) ?? null,
          environmentId: environment.environmentId,
          composeType: String(body.composeType ?? "docker-compose"),
          composeFile: typeof body.composeFile === "string" ? body.composeFile : "",
          env: null,
          // Before 0.30 zod stripped sourceType on create, leaving the default "github".
          sourceType: atLeast(this.version, "0.30.0") && typeof body.sourceType === "string" ? body.sourceType : "github",
          composeStatus: "idle",
          createdAt: new Date().toISOString(),
          serverId,
        };
        this.composes.push(row);
        return { status: 200, body: row };
      }
      case "compose-one": {
        const row = this.composes.find((c) => c.composeId === ctx.query.composeId);
        if (!row) return notFound("Compose not found");
        return { status: 200, body: row };
      }
      case "compose-update": {
        const row = this.composes.find((c) => c.composeId === body.composeId);
        if (!row) return notFound("Compose not found");
        if (typeof body.env === "string" && body.env.includes("${{")) {
          violate("env holds ${{ which Dokploy expands and rejects when unknown");
        }
        for (const field of ["name", "description", "env", "composeFile", "sourceType", "composeType"] as const) {
          if (body[field] !== undefined) (row as unknown as Record<string, unknown>)[field] = body[field];
        }
        return { status: 200, body: row };
      }
      case "compose-deploy": {
        const row = this.composes.find((c) => c.composeId === body.composeId);
        if (!row) return notFound("Compose not found");
        if (row.sourceType !== "raw") violate(`deploy of compose ${row.composeId} with sourceType ${row.sourceType} would fail (no repository)`);
        if (!row.composeFile) violate(`deploy of compose ${row.composeId} with an empty compose file`);
        this.deployments.push({ composeId: row.composeId, title: body.title as string | undefined });
        return { status: 200, body: { success: true, message: "Deployment queued", composeId: row.composeId } };
      }
      default:
        violate(`operation ${ctx.operationId} is valid but not expected from stackgen`);
        return { status: 501, body: { message: "Not modelled by the fake", code: "NOT_IMPLEMENTED" } };
    }
  }

  private projectView(project: DokployProjectRow) {
    return {
      ...project,
      environments: this.environments.filter((e) => e.projectId === project.projectId).map((e) => this.environmentView(e, true)),
    };
  }

  private environmentView(env: DokployEnvironmentRow, withServices: boolean) {
    // `isDefault` exists from 0.26.1 on.
    const { isDefault, ...rest } = env;
    const view: Record<string, unknown> = atLeast(this.version, "0.26.1") ? { ...rest, isDefault } : { ...rest };
    if (withServices) {
      view.compose = this.composes.filter((c) => c.environmentId === env.environmentId);
      view.applications = [];
      view.postgres = [];
    }
    return view;
  }
}

function notFound(message: string): Reply {
  return { status: 404, body: { message, code: "NOT_FOUND", data: { code: "NOT_FOUND", httpStatus: 404 } } };
}
