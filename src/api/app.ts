// The HTTP API: one Elysia app, every route under /v1. Shells (serve, tests, the UI listener)
// call `createApp()` and hand requests to `app.handle` or listen with it.
import { Elysia, ValidationError } from "elysia";
import { withUnknownIds } from "../core/check-input.ts";
import { isJsonObject, jsonKind } from "../schema/json-kind.ts";
import { issuesUnder, type FieldIssue } from "../errors.ts";
import { getCatalog, type Catalog } from "../catalog/index.ts";
import { VERSION } from "../version.ts";
import { plural } from "../core/words.ts";
import { Health } from "../schema/api.ts";
import { errorBodyFor, methodNotAllowed, toErrorReply } from "./errors.ts";
import { bodySent, documentSent } from "./json-body.ts";
import { catalogRoutes } from "./routes/catalog.ts";
import { validateRoutes } from "./routes/validate.ts";
import { generateRoutes } from "./routes/generate.ts";
import { docsRoutes } from "./routes/docs.ts";
import { apiDocs } from "./docs/openapi.ts";
import { deployRoutes, type DeployPolicy } from "./routes/deploy.ts";
import { DEFAULT_GUARD_CONFIG, MAX_BODY_BYTES, type Guard, type GuardConfig } from "./guard/index.ts";
import { forwardedHops } from "./guard/client-ip.ts";

export interface AppOptions {
  catalog?: Catalog;
  /** Extra fields for /v1/health (e.g. the rate limiter's store state). */
  healthExtra?: () => Record<string, string>;
  /** Keys, rate limits, CORS, body limit, security headers, request log (src/api/guard). */
  guard?: Guard;
  /** Who may use POST /v1/deploy (default: loopback clients, valid API keys, or ALLOW_REMOTE_DEPLOY=true). */
  deployPolicy?: DeployPolicy;
  /** fetch used by the deploy relay (tests point it at fake providers). */
  deployFetch?: typeof fetch;
  /** The ports this server listens on (API and UI): a page from one of them on this machine may
   *  deploy. Without them only a page of the port called (same origin) may. */
  ownPorts?: () => number[];
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

const LOOPBACK_HOST = /^(localhost|[a-z0-9.-]+\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;

/** Whether the request names this machine (Host) and, from a browser, comes from a page served by
 *  this server (Origin: a loopback name on the port called, or this server's other port). Any web
 *  page the local user opens can send requests to 127.0.0.1 (CORS is open by default), a rebinding
 *  DNS name points another site's page at it with its own Host, and another local web server's
 *  page (a dev server on :8080) is not ours either. */
function fromLocalPage(request: Request, ownPorts?: () => number[]): boolean {
  const host = request.headers.get("host") ?? "";
  let hostname = "";
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  if (!LOOPBACK_HOST.test(hostname)) return false;
  const origin = request.headers.get("origin");
  if (origin === null) return true;
  try {
    const page = new URL(origin);
    if (!LOOPBACK_HOST.test(page.hostname)) return false;
    const port = Number(page.port || (page.protocol === "https:" ? 443 : 80));
    return page.host.toLowerCase() === host.toLowerCase() || (ownPorts?.().includes(port) ?? false);
  } catch {
    return false;
  }
}

/** Loopback callers, callers with a valid key, or everyone when the operator opted in. A loopback
 *  caller is one whose socket is loopback and whose every forwarded hop (X-Forwarded-For,
 *  X-Real-IP and its kin, Forwarded) is loopback too: a proxy on this machine passes on who really
 *  called, and a client can prepend `127.0.0.1` to X-Forwarded-For but cannot remove what the
 *  proxy adds. Forwarding headers only refuse here, except that with TRUST_PROXY a chain must be
 *  present. A browser qualifies only from a page on this machine (fromLocalPage). */
export function defaultDeployPolicy(guard: Guard | undefined, env: Record<string, string | undefined> = process.env, ownPorts?: () => number[]): DeployPolicy {
  const allowRemote = env.ALLOW_REMOTE_DEPLOY === "true";
  return (request) => {
    if (allowRemote || guard?.hasValidKey(request)) return true;
    // Without a guard (app.handle alone) the caller's address is unknown: never loopback.
    const peer = guard?.peerOf(request);
    if (peer === undefined || !LOOPBACK.test(peer)) return false;
    const hops = forwardedHops(request.headers);
    // TRUST_PROXY says a proxy is in front: a loopback socket is then the proxy's, and only a
    // forwarded chain of loopback hops shows a local caller (a proxy that forwards no header
    // would otherwise pass every remote caller as local).
    if (guard!.config.trustProxy && hops.length === 0) return false;
    return hops.every((hop) => LOOPBACK.test(hop)) && fromLocalPage(request, ownPorts);
  };
}

/** Shape-check issues of a selection body plus its unknown ids (under `input` and `complete.input`
 *  for a deploy request). */
function withBodyIds(issues: FieldIssue[], path: string, body: unknown, catalog: Catalog, request: Request): FieldIssue[] {
  const route = path.replace(/\/+$/, "");
  if (route === "/v1/validate" || route === "/v1/generate") {
    // A complete export's input was checked: name its fields as the client sent them.
    const found = withUnknownIds(issues, body, catalog);
    return documentSent(request) ? issuesUnder("input", found) : found;
  }
  if (route !== "/v1/deploy" || typeof body !== "object" || body === null) return issues;
  const { input, complete } = body as { input?: unknown; complete?: { input?: unknown } | null };
  const found = withUnknownIds(withUnknownIds(issues, input, catalog, "input"), complete?.input, catalog, "complete.input");
  return withParts(found, bodySent(request));
}

/** A deploy request's `input` or `complete` that is not an object, named as such: Elysia checks
 *  an empty object in its place, whose errors named fields inside it (`complete: null` was
 *  reported as `complete.input.projectName: Required`). `sent` is the body as the client sent it. */
function withParts(issues: FieldIssue[], sent: Record<string, unknown> | undefined): FieldIssue[] {
  let out = issues;
  for (const part of ["input", "complete"]) {
    const value = sent?.[part];
    if (value === undefined || isJsonObject(value)) continue;
    const inside = (field: string) => field === part || field.startsWith(`${part}.`);
    const at = out.findIndex((issue) => inside(issue.field));
    const named = { field: part, message: `Expected object, received ${jsonKind(value)}` };
    const rest = out.filter((issue) => !inside(issue.field));
    out = at < 0 ? [...rest, named] : [...rest.slice(0, at), named, ...rest.slice(at)];
  }
  return out;
}

/** A lookup of the methods `routes` answer at a path (GET also answers HEAD), in a stable order.
 *  Each route's pattern is compiled once, here. */
export function routeMethods(routes: readonly { method: string; path: string }[]): (path: string) => string[] {
  const patterns = routes.map((route) => ({
    method: route.method,
    pattern: new RegExp(`^${route.path.split("/").map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}/?$`),
  }));
  return (path) => {
    const methods = new Set(patterns.filter(({ pattern }) => pattern.test(path)).map(({ method }) => method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods].sort();
  };
}

/** Each app's method lookup, built once its routes are all there (405 answers, preflight Allow). */
const methodLookups = new WeakMap<object, (path: string) => string[]>();

/** The methods `app` answers at a path. */
export function methodsOf(app: { routes: readonly { method: string; path: string }[] }): (path: string) => string[] {
  let lookup = methodLookups.get(app);
  if (!lookup) methodLookups.set(app, (lookup = routeMethods(app.routes)));
  return lookup;
}

export function createApp(options: AppOptions = {}) {
  const catalog = options.catalog ?? getCatalog();
  const maxBodyBytes = options.guard?.config.maxBodyBytes ?? MAX_BODY_BYTES;
  const v1 = new Elysia({ prefix: "/v1" })
    .get("/health", () => ({ status: "ok", version: VERSION, ...(options.healthExtra?.() ?? {}) }), {
      response: { 200: Health },
      detail: { summary: "Health and version", tags: ["meta"] },
    })
    .use(catalogRoutes(catalog))
    .use(validateRoutes(catalog, maxBodyBytes))
    .use(generateRoutes(catalog, maxBodyBytes))
    .use(deployRoutes(catalog, maxBodyBytes, options.deployPolicy ?? defaultDeployPolicy(options.guard, process.env, options.ownPorts), options.deployFetch, options.guard ? options.guard.config.apiKeys.length > 0 : true))
    .use(docsRoutes);

  /** The built app, for its 405 answers (the handler below runs only once it is built). */
  let built: Parameters<typeof methodsOf>[0] | undefined;
  const app = new Elysia()
    .onError(({ code, error, path, set, request }) => {
      // A known path asked with a method it does not answer: 405 with the methods it does.
      // (A route's own 404, an unknown id, comes with a method the path answers.)
      const allowed = code === "NOT_FOUND" && built ? methodsOf(built)(path) : [];
      const wrongMethod = allowed.length > 0 && !allowed.includes(request.method);
      const reply = wrongMethod ? methodNotAllowed(request.method, path, allowed) : toErrorReply(code, error, path);
      if (wrongMethod) set.headers.allow = [...allowed, "OPTIONS"].join(", ");
      // The body failed its shape check before the route ran: name its unknown ids too.
      if (error instanceof ValidationError && error.type === "body" && reply.body.error.details) {
        reply.body.error.details = withBodyIds(reply.body.error.details, path, error.value, catalog, request);
      }
      set.status = reply.status;
      set.headers["content-type"] = "application/json";
      return errorBodyFor(path, reply.body.error);
    })
    // The generated document, completed with JSON request bodies and the guard's answers (./docs/openapi.ts).
    .use(apiDocs({
      path: "/v1/openapi",
      specPath: "/v1/openapi.json",
      provider: null,
      documentation: {
        info: {
          title: "stackgen API",
          version: VERSION,
          description: "Validate and generate self-hosted container stacks, and deploy them to Coolify or Dokploy.\n\n" +
            "Every response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix seconds) and `X-Request-Id`. " +
            limitsText(options.guard?.config ?? DEFAULT_GUARD_CONFIG) +
            "Every route may also answer 401 `UNAUTHORIZED` (invalid key), 405 `METHOD_NOT_ALLOWED` (with `Allow`), 413 `PAYLOAD_TOO_LARGE` (body over 1 MiB) and 429 `RATE_LIMITED` (with `Retry-After`), " +
            "with the error body `{error: {code, message, details?}}` (`{error, code}` on /v1/skills).",
        },
        tags: [{ name: "catalog" }, { name: "stacks" }, { name: "meta" }],
      },
    }))
    .use(v1);
  built = app;
  return app;
}

export type App = ReturnType<typeof createApp>;

/** The limits this server applies, as its OpenAPI document states them (set by RATE_LIMIT_*). */
function limitsText({ windowMs, anonymousLimits: anon, authenticatedLimits: keyed }: GuardConfig): string {
  const minutes = windowMs / 60_000;
  const window = Number.isInteger(minutes) ? `${minutes}-minute` : `${windowMs / 1000}-second`;
  return `Limits are per client IP in a ${window} window: ${plural(anon.standard, "standard request")} and ${plural(anon.generate, "generation")} without a key, ${keyed.standard} and ${keyed.generate} with a valid \`X-API-Key\` (a key may have its own). `;
}
