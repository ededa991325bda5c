// GET /v1/openapi.json: the document @elysiajs/openapi generates from the routes, completed in
// one place with what the plugin cannot see from them:
// - request bodies: the POST routes read their JSON with our own parse hook (../json-body.ts), from
//   which the plugin infers no media type (it leaves `content: {}`); each gets application/json
//   with the body schema the route validates with;
// - the guard's answers (../guard), which run outside Elysia: 401 (invalid X-API-Key), 429 (with
//   Retry-After) and, for operations with a body, 413 and 415 (read by the body reader, but the same
//   for every body); the X-RateLimit-* and X-Request-Id headers
//   of every response; the optional X-API-Key. Their error body is the route's (errorBodyFor);
// - the document itself, whose route the plugin hides.
import { Elysia } from "elysia";
import { openapi, type ElysiaOpenAPIConfig, type OpenAPIVersion } from "@elysiajs/openapi";
import { unwrapSchema } from "@elysiajs/openapi/openapi";
import { declaredSchema, ErrorBody, FlatErrorBody } from "../../schema/api.ts";
import { errorBodyFor } from "../errors.ts";
import { COMPLETE_FORMAT_VERSION } from "../../schema/versions.ts";

type Json = Record<string, any>;
type Route = { method: string; path: string; hooks: Json };

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Sent with every response, refusals included. */
const RESPONSE_HEADERS = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-Id"];

const GUARD_COMPONENTS = {
  securitySchemes: {
    ApiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "Optional; a valid key raises the rate limits, an invalid one is refused with 401" },
  },
  headers: {
    "X-RateLimit-Limit": { description: "Requests allowed in the current 15-minute window (per client IP and key; generations have their own bucket)", schema: { type: "integer" } },
    "X-RateLimit-Remaining": { description: "Requests left in the current window", schema: { type: "integer" } },
    "X-RateLimit-Reset": { description: "When the current window ends, in Unix seconds", schema: { type: "integer" } },
    "X-Request-Id": { description: "The request's id: the caller's X-Request-Id when it is usable, else a new UUID", schema: { type: "string" } },
    "Retry-After": { description: "Seconds until the window ends", schema: { type: "integer" } },
  },
};

/** The refusals the guard may answer on any operation, and the unexpected failure, with the error body used on `path`. */
function guardResponses(path: string, hasBody: boolean): Json {
  const flat = typeof errorBodyFor(path, { code: "", message: "" }).error === "string";
  const content = { "application/json": { schema: schemaRef(flat ? "FlatErrorBody" : "ErrorBody") } };
  return {
    401: { description: "UNAUTHORIZED: the X-API-Key header holds an invalid key (requests without a key are not refused)", content },
    ...(hasBody ? {
      413: { description: "PAYLOAD_TOO_LARGE: the body is larger than the server's limit (1 MiB by default)", content },
      415: { description: "UNSUPPORTED_MEDIA_TYPE: the body is sent with a Content-Encoding (gzip, br): send it uncompressed", content },
    } : {}),
    429: { description: "RATE_LIMITED: too many requests in the window; retry after Retry-After seconds", headers: { "Retry-After": headerRef("Retry-After") }, content },
    // SPEC §7: any route may fail unexpectedly; generate documents its own GENERATION_ERROR.
    500: { description: "INTERNAL_ERROR: an unexpected failure on the server (never a client's mistake)", content },
  };
}

/** Marks (in a route's `detail`) a body that may also be a whole `complete` export, read through
 *  its `input` by the route's parse hook: the document says so beside the plain body. */
export const ACCEPTS_EXPORT = "x-accepts-complete-export";

/** The body's object schema, also describing the export form: its `formatVersion` and `input`
 *  (the same fields) as properties, and what is required as either form's requirement. Kept one
 *  object with `properties`, as clients read a body schema. */
function orCompleteExport(body: Json): Json {
  const { required, ...rest } = body;
  const input = { ...body, description: "The generation input, as in the plain form" };
  return {
    ...rest,
    description: `${body.description ?? "The request"}; or a \`complete\` export posted back whole (its \`input\` is read, its files and metadata are ignored)`,
    properties: {
      ...body.properties,
      // Not a const: a plain body's stray formatVersion is an unknown field, ignored by the server.
      formatVersion: { type: "string", description: `Marks a \`complete\` export posted back (this version reads "${COMPLETE_FORMAT_VERSION}")` },
      input,
    },
    ...(required?.length ? { anyOf: [{ required }, { required: ["formatVersion", "input"] }] } : {}),
  };
}

/** Bodies the server takes, shown by the docs' "Try it out" (without one it builds a body from the
 *  schema, which the server refuses: a configVersion of 0, a formatVersion "string"). */
const REQUEST_EXAMPLES: Record<string, unknown> = {
  "post /v1/validate": { services: ["n8n", "redis"], skillPacks: ["research"], proxy: "caddy" },
  "post /v1/generate": { projectName: "demo", services: ["n8n"], proxy: "caddy", domain: "example.com" },
  "post /v1/deploy": { provider: "coolify", url: "https://coolify.example.com", apiKey: "<the platform's API token>", input: { projectName: "demo", services: ["n8n"] } },
};

/** The generated document with request bodies, the guard's answers and headers filled in. */
export function completeDocument(generated: Json, routes: readonly Route[]): Json {
  const doc: Json = JSON.parse(JSON.stringify(generated));
  const version = (doc.openapi ?? "3.1.2") as OpenAPIVersion;
  const bodies = new Map(routes.filter((r) => r.hooks?.body).map((r) => [`${r.method.toLowerCase()} ${r.path.replace(/:([^/?]+)\??/g, "{$1}")}`, r.hooks.body]));
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) {
      const body = bodies.get(`${method} ${path}`);
      if (op.requestBody && body && !Object.keys(op.requestBody.content ?? {}).length) {
        const schema = unwrapSchema(declaredSchema(body), undefined, "input", version) as Json;
        const example = REQUEST_EXAMPLES[`${method} ${path}`];
        op.requestBody.content = { "application/json": { schema: op[ACCEPTS_EXPORT] ? orCompleteExport(schema) : schema, ...(example ? { example } : {}) } };
      }
      op.responses = { ...guardResponses(path, op.requestBody !== undefined), ...op.responses };
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        op.responses[status] = { ...response, headers: { ...Object.fromEntries(RESPONSE_HEADERS.map((h) => [h, headerRef(h)])), ...response.headers } };
      }
    }
  }
  doc.security = [{}, { ApiKey: [] }];
  doc.components = {
    ...doc.components,
    schemas: { ...doc.components?.schemas, ErrorBody, FlatErrorBody },
    securitySchemes: { ...doc.components?.securitySchemes, ...GUARD_COMPONENTS.securitySchemes },
    headers: { ...doc.components?.headers, ...GUARD_COMPONENTS.headers },
  };
  return doc;
}

/** @elysiajs/openapi serving the completed document at `specPath`, which it also documents. */
export function apiDocs(config: ElysiaOpenAPIConfig<true, string> & { specPath: string }) {
  const completed = new WeakMap<object, Json>();
  const documentation = {
    ...config.documentation,
    paths: {
      ...config.documentation?.paths,
      [config.specPath]: {
        get: {
          operationId: "getV1OpenapiJson",
          summary: "OpenAPI document",
          description: "This document: every route with its parameters, request body and responses (OpenAPI 3.1).",
          tags: ["meta"],
          responses: { 200: { description: "The OpenAPI 3.1 document", content: { "application/json": { schema: { type: "object" } } } } },
        },
      },
    },
  } as ElysiaOpenAPIConfig["documentation"];
  const docs = new Elysia({ name: "api-docs" });
  // The whole app's routes, as the plugin reads them (once used, an instance delegates to its parent).
  const appRoutes = () => (docs as unknown as { getGlobalRoutes(): Route[] }).getGlobalRoutes();
  // A local hook: it runs only on the plugin's own route (the document), which the plugin caches; so do we.
  return docs
    .onAfterHandle(({ response }) => {
      if (typeof response !== "object" || response === null || !("paths" in response)) return;
      let doc = completed.get(response);
      if (!doc) completed.set(response, (doc = completeDocument(response as Json, appRoutes())));
      return doc;
    })
    .use(openapi({ ...config, documentation }));
}
