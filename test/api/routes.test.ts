// Every endpoint of SPEC §4 and CONTRACT §3, through app.handle and over a real listening server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { unzipSync, strFromU8 } from "fflate";
import { createApp } from "../../src/api/app.ts";
import { startServers } from "../../src/api/server.ts";
import { hotRoutes } from "../../src/api/hot-routes.ts";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020";
import { getCatalog } from "../../src/catalog/index.ts";
import { MAX_DOMAIN_LENGTH } from "../../src/schema/limits.ts";

const app = createApp();
const catalog = getCatalog();
const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  app.handle(new Request(`http://localhost${path}`, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  }));
const json = async (r: Response) => (await r.json()) as any;
const hot = hotRoutes(catalog, 1 << 20);
/** The same request answered as the server answers it: by the hot routes where they take it. */
const hotCall = async (method: string, path: string, body: unknown) => {
  const request = new Request(`http://localhost${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const reply = hot(request, path.split("?")[0]);
  if (!reply) return app.handle(request);
  const { status, type, body: text } = await reply;
  return new Response(text, { status, headers: { "content-type": type } });
};

function expectError(body: any, code: string) {
  expect(body).toEqual({ error: { code, message: expect.any(String), ...(body.error.details ? { details: expect.any(Array) } : {}) } });
  for (const d of body.error.details ?? []) expect(d).toEqual({ field: expect.any(String), message: expect.any(String) });
}

describe("read endpoints", () => {
  test("GET /v1/health", async () => {
    const r = await call("GET", "/v1/health");
    expect(r.status).toBe(200);
    expect(await json(r)).toMatchObject({ status: "ok", version: expect.any(String) });
  });

  test("GET /v1/services lists all 94 with 20 categories", async () => {
    const b = await json(await call("GET", "/v1/services"));
    expect(b.total).toBe(94);
    expect(b.services).toHaveLength(94);
    expect(b.categories).toHaveLength(20);
    expect(b.categories.reduce((a: number, c: any) => a + c.count, 0)).toBe(94);
    for (const s of b.services) expect(Object.keys(s)).toEqual(expect.arrayContaining(["id", "name", "description", "category", "maturity", "image", "ports", "dependencies", "conflicts", "estimatedMemoryMB", "env", "volumes", "platforms", "gpu", "skills", "docsUrl"]));
  });

  test("filters combine and categories/total follow the filtered result", async () => {
    const b = await json(await call("GET", "/v1/services?category=database"));
    expect(b.total).toBe(catalog.services.filter((s) => s.category === "database").length);
    expect(b.services.every((s: any) => s.category === "database")).toBe(true);
    expect(b.categories).toEqual([{ id: "database", name: expect.any(String), count: b.total }]);
    const both = await json(await call("GET", "/v1/services?category=ai-models&maturity=experimental"));
    expect(both.services.every((s: any) => s.category === "ai-models" && s.maturity === "experimental")).toBe(true);
    expect(both.total).toBe(both.services.length);
  });

  test("unknown category or maturity is 400 naming the field", async () => {
    for (const [q, field] of [["category=nope", "category"], ["maturity=alpha", "maturity"]]) {
      const r = await call("GET", `/v1/services?${q}`);
      expect(r.status).toBe(400);
      const b = await json(r);
      expectError(b, "VALIDATION_ERROR");
      expect(b.error.details.map((d: any) => d.field)).toContain(field);
    }
  });

  test("a query parameter given more than once is 400 naming it, on every route that reads one value of it", async () => {
    // The last one silently won: category=database&category=storage listed storage only.
    const cases: [string, string, string[]][] = [
      ["GET", "/v1/services?category=database&category=storage", ["category"]],
      ["GET", "/v1/services?maturity=stable&category=database&maturity=stable", ["maturity"]],
      ["GET", "/v1/services?category=database&maturity=beta&maturity=stable&category=storage", ["category", "maturity"]],
      // Repeated and wrong: the repeat is what is said (the value read would be a guess).
      ["GET", "/v1/services?category=database&category=nope", ["category"]],
      ["GET", "/v1/services?cat%65gory=database&category=", ["category"]],
      ["POST", "/v1/generate?format=zip&format=json", ["format"]],
      ["POST", "/v1/generate/?format=json&format=json", ["format"]],
    ];
    for (const [method, path, fields] of cases) {
      const r = await call(method, path, method === "POST" ? { projectName: "p", services: ["redis"] } : undefined);
      expect(r.status, path).toBe(400);
      const b = await json(r);
      expectError(b, "VALIDATION_ERROR");
      expect(b.error.message).toBe(method === "POST" ? "Invalid generation input" : "Invalid query parameters");
      expect(b.error.details, path).toEqual(fields.map((field) => ({ field, message: "Given more than once" })));
    }
    // /v1/skills keeps its flat error body and its one 400 code (SPEC §7): the message names the parameter.
    const skills = await call("GET", "/v1/skills?services=redis&services=n8n");
    expect(skills.status).toBe(400);
    expect(await json(skills)).toEqual({ error: expect.stringContaining("services: given more than once"), code: "INVALID_SERVICE_ID" });
    // Parameters the routes do not read may repeat, and each read one may be given once.
    for (const path of ["/v1/services?category=database&x=1&x=2", "/v1/skills?services=redis,n8n", "/v1/services?category=database&maturity=stable"]) {
      expect((await call("GET", path)).status, path).toBe(200);
    }
    expect((await call("POST", "/v1/generate?format=json", { projectName: "p", services: ["redis"] })).status).toBe(200);
  });

  test("GET /v1/services/{id} and 404 naming the id", async () => {
    expect((await json(await call("GET", "/v1/services/postgresql"))).service.healthCheck).toMatchObject({ interval: "10s", timeout: "5s", retries: 5 });
    const r = await call("GET", "/v1/services/mongodb");
    expect(r.status).toBe(404);
    const b = await json(r);
    expectError(b, "NOT_FOUND");
    expect(b.error.message).toContain("mongodb");
  });

  test("a 404 names an id that is not valid percent-encoding as it was sent, shortened when long", async () => {
    for (const [path, named] of [["/v1/services/%ff", "%ff"], ["/v1/presets/%E0%A4", "%E0%A4"], ["/v1/services/a%22b", 'a\\"b']]) {
      const r = await call("GET", path);
      expect(r.status).toBe(404);
      const b = await json(r);
      expectError(b, "NOT_FOUND");
      expect(b.error.message).toContain(named);
      expect(b.error.message).not.toContain("null");
    }
    const long = await json(await call("GET", `/v1/services/${"z".repeat(5000)}`));
    expect(long.error.message.length).toBeLessThan(200);
  });

  test("GET /v1/presets and /v1/presets/{id}", async () => {
    const list = await json(await call("GET", "/v1/presets"));
    expect(list.total).toBe(9);
    const one = await json(await call("GET", "/v1/presets/devops"));
    expect(one.preset).toMatchObject({ id: "devops", estimatedMemoryMB: 3072, proxy: "caddy", gpu: false });
    expect(one.services.map((s: any) => s.id)).toEqual(one.preset.services);
    const missing = await call("GET", "/v1/presets/full");
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.message).toContain("full");
  });

  test("GET /v1/skills with and without services", async () => {
    const all = await json(await call("GET", "/v1/skills"));
    expect(all.total).toBe(catalog.packs.length);
    expect(all.packs.every((p: any) => p.compatibilityScore === undefined)).toBe(true);
    const some = await json(await call("GET", "/v1/skills?services=qdrant,redis"));
    expect(some.packs.length).toBeGreaterThan(0);
    for (const p of some.packs) {
      const expected = Math.round((p.services.filter((s: string) => s === "qdrant" || s === "redis").length / p.services.length) * 100) / 100;
      expect(p.compatibilityScore).toBe(expected);
      expect(p.compatibilityScore).toBeGreaterThan(0);
    }
    const scores = some.packs.map((p: any) => p.compatibilityScore);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    const research = some.packs.find((p: any) => p.id === "research-agent");
    expect(research.compatibilityScore).toBe(0.33);
  });

  test("a route asked with a method it does not answer is 405 with Allow; an unknown path stays 404", async () => {
    const cases: [string, string, string][] = [
      ["GET", "/v1/generate", "POST, OPTIONS"],
      ["PUT", "/v1/health", "GET, HEAD, OPTIONS"],
      ["DELETE", "/v1/services/redis", "GET, HEAD, OPTIONS"],
      ["POST", "/v1/presets/", "GET, HEAD, OPTIONS"],
    ];
    for (const [method, path, allow] of cases) {
      const r = await call(method, path);
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.headers.get("allow")).toBe(allow);
      const b = await json(r);
      expectError(b, "METHOD_NOT_ALLOWED");
      expect(b.error.message).toContain(method);
    }
    // /v1/skills keeps its flat error shape (SPEC §7).
    expect(await json(await call("POST", "/v1/skills"))).toEqual({ error: expect.stringContaining("POST"), code: "METHOD_NOT_ALLOWED" });
    for (const path of ["/v1/generatex", "/v1/services/redis/extra", "/v2/health"]) {
      const r = await call("GET", path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get("allow")).toBeNull();
      expectError(await json(r), "NOT_FOUND");
    }
  });

  test("GET /v1/skills with an unknown id is the flat INVALID_SERVICE_ID error", async () => {
    const r = await call("GET", "/v1/skills?services=redis,nope");
    expect(r.status).toBe(400);
    expect(await json(r)).toEqual({ error: expect.stringContaining("nope"), code: "INVALID_SERVICE_ID" });
    // A near miss gets the id meant, as the body routes' errors do.
    const near = await call("GET", "/v1/skills?services=qdrnt,nope");
    expect(await json(near)).toEqual({ error: 'Unknown service ids: qdrnt (did you mean "qdrant"?), nope', code: "INVALID_SERVICE_ID" });
  });

  test("GET /v1/skills takes at most 200 ids, as an id array in a body", async () => {
    const ids = (n: number) => Array.from({ length: n }, () => "redis").join(",");
    expect((await call("GET", `/v1/skills?services=${ids(200)}`)).status).toBe(200);
    const r = await call("GET", `/v1/skills?services=${ids(201)}`);
    expect(r.status).toBe(400);
    // SPEC §7 gives this route one 400 code.
    expect(await json(r)).toEqual({ error: expect.stringContaining("at most 200 ids"), code: "INVALID_SERVICE_ID" });
  });

  test("openapi.json is OpenAPI 3 covering every route; docs work offline", async () => {
    const doc = await json(await call("GET", "/v1/openapi.json"));
    expect(doc.openapi).toMatch(/^3\./);
    const verdict = await new Validator().validate(doc);
    expect(verdict.errors ?? []).toEqual([]);
    expect(verdict.valid).toBe(true);
    for (const p of ["/v1/health", "/v1/services", "/v1/services/{id}", "/v1/presets", "/v1/presets/{id}", "/v1/skills", "/v1/validate", "/v1/generate"]) expect(doc.paths[p], p).toBeDefined();
    expect(doc.paths["/v1/validate"].post.requestBody).toBeDefined();
    const html = await (await call("GET", "/v1/docs")).text();
    expect(html).not.toMatch(/https?:\/\/(?!localhost)/);
    for (const asset of [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])) {
      const r = await call("GET", asset);
      expect(r.status, asset).toBe(200);
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(10);
    }
  });
});

describe("OpenAPI document", () => {
  // SPEC §4's table, plus POST /v1/deploy (CONTRACT §3): every operation of the app, no more.
  const OPERATIONS = [
    "get /v1/health", "get /v1/services", "get /v1/services/{id}", "get /v1/presets", "get /v1/presets/{id}", "get /v1/skills",
    "post /v1/validate", "post /v1/generate", "get /v1/openapi.json", "get /v1/docs", "post /v1/deploy",
  ];
  const document = async () => json(await call("GET", "/v1/openapi.json"));
  const operations = (doc: any) =>
    Object.entries(doc.paths).flatMap(([path, item]: [string, any]) => Object.entries(item).map(([method, op]) => ({ path, method, op: op as any })));
  /** A schema with its `$ref` (to components) followed. */
  const deref = (doc: any, schema: any) =>
    schema?.$ref ? doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema;

  test("documents exactly the routes of SPEC §4 and CONTRACT §3, /v1/openapi.json and /v1/docs included", async () => {
    const doc = await document();
    expect(operations(doc).map(({ method, path }) => `${method} ${path}`).sort()).toEqual([...OPERATIONS].sort());
    expect(Object.keys(doc.paths["/v1/openapi.json"].get.responses["200"].content)).toEqual(["application/json"]);
    expect(Object.keys(doc.paths["/v1/docs"].get.responses["200"].content)).toEqual(["text/html"]);
    for (const path of ["/v1/openapi.json", "/v1/docs"]) expect(doc.paths[path].get.description, path).toEqual(expect.any(String));
  });

  test("a document first asked for after the server checked bodies still shows unknown fields as allowed (CONTRACT §3: ignored)", async () => {
    // Elysia marks a route's schema `additionalProperties: false` in place when it first checks a
    // body against it; the document was built from that schema on its first request.
    const fresh = createApp();
    const post = (path: string, body: unknown) => fresh.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    expect((await post("/v1/validate?via=app", { services: ["redis"] })).status).toBe(200);
    expect((await post("/v1/generate?format=json", { projectName: "p", services: ["redis"] })).status).toBe(200);
    await (await post("/v1/deploy", { provider: "coolify", url: "http://127.0.0.1:9", apiKey: "k", input: { projectName: "ppp", services: ["redis"] } })).text();
    const doc = await json(await fresh.handle(new Request("http://localhost/v1/openapi.json")));
    for (const path of ["/v1/validate", "/v1/generate", "/v1/deploy"]) {
      const schema = doc.paths[path].post.requestBody.content["application/json"].schema;
      expect(JSON.stringify(schema), path).not.toContain('"additionalProperties":false');
    }
  });

  test("every POST documents its JSON request body with the route's schema", async () => {
    const doc = await document();
    const posts = operations(doc).filter(({ method }) => method === "post");
    expect(posts.map(({ path }) => path).sort()).toEqual(["/v1/deploy", "/v1/generate", "/v1/validate"]);
    for (const { path, op } of posts) {
      expect(op.requestBody?.required, path).toBe(true);
      expect(Object.keys(op.requestBody.content), path).toEqual(["application/json"]);
      const schema = deref(doc, op.requestBody.content["application/json"].schema);
      expect(schema?.properties, path).toEqual(expect.any(Object));
    }
    const body = (path: string) => deref(doc, doc.paths[path].post.requestBody.content["application/json"].schema);
    expect(Object.keys(body("/v1/generate").properties)).toEqual(expect.arrayContaining(["projectName", "services", "preset"]));
    expect(Object.keys(body("/v1/validate").properties)).toEqual(expect.arrayContaining(["services", "skillPacks", "preset"]));
    expect(Object.keys(body("/v1/deploy").properties)).toEqual(expect.arrayContaining(["provider", "url", "apiKey", "input", "complete"]));
    // Each carries an example the docs' "Try it out" sends: valid by its schema, and taken by the server.
    const ajv = new Ajv2020({ strict: false });
    for (const { path, op } of posts) {
      const example = op.requestBody.content["application/json"].example;
      const check = ajv.compile(deref(doc, op.requestBody.content["application/json"].schema));
      expect(check(example), `${path} ${ajv.errorsText(check.errors)}`).toBe(true);
      if (path !== "/v1/deploy") expect((await call("POST", path, example)).status, path).toBe(200);
    }
  });

  test("generate's and validate's bodies are documented in both forms the server takes: the input, or a complete export posted back", async () => {
    const doc = await document();
    const ajv = new Ajv2020({ strict: false });
    const exported = (input: object) => ({ formatVersion: "1", input, files: { "README.md": "x" }, metadata: {} });
    for (const path of ["/v1/generate", "/v1/validate"]) {
      const check = ajv.compile(deref(doc, doc.paths[path].post.requestBody.content["application/json"].schema));
      for (const body of [{ projectName: "lab", services: ["redis"] }, exported({ projectName: "lab", services: ["redis"] })]) {
        expect(check(body), `${path} ${JSON.stringify(body)} ${ajv.errorsText(check.errors)}`).toBe(true);
        expect((await call("POST", path, body)).status, path).toBe(200);
      }
    }
    // Either form's requirement stays: generate needs a projectName, or an export's input.
    const generate = ajv.compile(deref(doc, doc.paths["/v1/generate"].post.requestBody.content["application/json"].schema));
    expect(generate({ services: ["redis"] })).toBe(false);
    expect(generate({ formatVersion: "1" })).toBe(false);
    // A stray formatVersion in a plain body is an unknown field the server ignores: not refused here either.
    expect(generate({ projectName: "lab", services: ["redis"], formatVersion: "2" })).toBe(true);
    expect((await call("POST", "/v1/generate", { projectName: "lab", services: ["redis"], formatVersion: "2" })).status).toBe(200);
  });

  test("every operation declares the guard's answers, the unexpected failure (500), headers and the optional X-API-Key", async () => {
    const doc = await document();
    const scheme = Object.values(doc.components.securitySchemes ?? {}).find((s: any) => s.type === "apiKey") as any;
    expect(scheme).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
    const name = Object.keys(doc.components.securitySchemes).find((k) => doc.components.securitySchemes[k] === scheme)!;
    // Optional: the empty requirement allows calls without a key.
    expect(doc.security).toEqual(expect.arrayContaining([{}, { [name]: [] }]));
    const header = (doc: any, h: any) => (h?.$ref ? doc.components.headers[h.$ref.replace("#/components/headers/", "")] : h);
    for (const { path, method, op } of operations(doc)) {
      const where = `${method} ${path}`;
      const statuses = ["401", "429", "500", ...(method === "post" ? ["413"] : [])];
      for (const status of statuses) {
        const response = op.responses?.[status];
        expect(response, `${where} ${status}`).toBeDefined();
        const error = deref(doc, response.content?.["application/json"]?.schema);
        // /v1/skills answers its refusals flat, `{error, code}` (SPEC §7); every other route `{error: {code, message}}`.
        expect(error?.properties?.error?.type, `${where} ${status}`).toBe(path === "/v1/skills" ? "string" : "object");
      }
      expect(header(doc, op.responses["429"].headers?.["Retry-After"]), where).toMatchObject({ schema: { type: "integer" } });
      for (const [status, response] of Object.entries(op.responses) as [string, any][]) {
        for (const h of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]) {
          expect(header(doc, response.headers?.[h]), `${where} ${status} ${h}`).toMatchObject({ schema: { type: "integer" } });
        }
      }
    }
    const verdict = await new Validator().validate(doc);
    expect(verdict.errors ?? []).toEqual([]);
  });
});

describe("POST /v1/validate", () => {
  test("resolves and reports", async () => {
    const b = await json(await call("POST", "/v1/validate", { services: ["n8n"], platform: "linux/amd64" }));
    expect(b).toMatchObject({ valid: true, resolvedServices: ["postgresql", "n8n"], conflicts: [] });
    expect(b.addedDependencies[0]).toMatchObject({ service: "postgresql", requiredBy: "n8n" });
  });

  test("conflicts still answer 200 with valid false", async () => {
    const r = await call("POST", "/v1/validate", { services: ["caddy", "traefik"] });
    expect(r.status).toBe(200);
    const b = await json(r);
    expect(b.valid).toBe(false);
    expect(b.conflicts[0]).toMatchObject({ code: "SERVICE_CONFLICT", services: expect.arrayContaining(["caddy", "traefik"]) });
  });

  test("empty body is an empty stack", async () => {
    const b = await json(await call("POST", "/v1/validate", {}));
    expect(b).toMatchObject({ valid: true, resolvedServices: [], estimatedMemoryMB: 0 });
    expect(b.warnings.map((w: any) => w.code)).toEqual(["EMPTY_STACK"]);
  });

  test("a leading byte order mark is skipped, however many, on both paths", async () => {
    const BOM = [0xef, 0xbb, 0xbf];
    const bytes = (marks: number, text: string) => new Uint8Array([...Array.from({ length: marks }, () => BOM).flat(), ...new TextEncoder().encode(text)]);
    for (const marks of [1, 2, 3]) {
      for (const [path, body] of [["/v1/validate", { services: ["redis"] }], ["/v1/generate", { projectName: "bom", services: ["redis"] }], ["/v1/generate?format=json", { projectName: "bom", services: ["redis"] }]] as const) {
        const request = () => new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: bytes(marks, JSON.stringify(body)) });
        const viaHot = await hot(request(), path);
        for (const r of [viaHot ? new Response(viaHot.body, { status: viaHot.status }) : undefined, await app.handle(request())]) {
          if (!r) continue;
          expect({ marks, path, status: r.status }).toEqual({ marks, path, status: 200 });
          await r.text();
        }
      }
    }
    // Only at the start: elsewhere it is not JSON.
    const inside = await call("POST", "/v1/validate", '{"services":\ufeff["redis"]}');
    expect(inside.status).toBe(400);
    expect((await json(inside)).error.details).toEqual([{ field: "body", message: "Malformed JSON" }]);
  });

  test("a preset in the body is the base", async () => {
    const b = await json(await call("POST", "/v1/validate", { preset: "minimal", services: ["n8n"] }));
    expect(b.resolvedServices).toEqual(["redis", "postgresql", "n8n"]);
  });

  test("bad shapes are 400 VALIDATION_ERROR naming each field", async () => {
    const r = await call("POST", "/v1/validate", { services: "redis", gpu: "yes", platform: "windows" });
    expect(r.status).toBe(400);
    const b = await json(r);
    expectError(b, "VALIDATION_ERROR");
    expect(b.error.message).toBe("Invalid request body");
    const fields = Object.fromEntries(b.error.details.map((d: any) => [d.field, d.message]));
    expect(fields.services).toBe("Expected array, received string");
    expect(Object.keys(fields)).toEqual(expect.arrayContaining(["services", "gpu", "platform"]));
  });

  test("unknown ids are 400 pointing at the offending element", async () => {
    const b = await json(await call("POST", "/v1/validate", { services: ["redis", "redis", "nope"] }));
    expect(b.error.details).toEqual([{ field: "services.2", message: expect.stringContaining("nope") }]);
  });

  test("malformed JSON, wrong content type and huge arrays are 4xx with the error body", async () => {
    for (const [body, headers] of [["{bad", { "content-type": "application/json" }], ["services=redis", { "content-type": "application/x-www-form-urlencoded" }], ["hello", { "content-type": "text/plain" }], ["[1,2]", { "content-type": "application/json" }]] as const) {
      const r = await app.handle(new Request("http://localhost/v1/validate", { method: "POST", body, headers }));
      expect(r.status, body).toBe(400);
      expectError(await json(r), "VALIDATION_ERROR");
    }
    // Nesting a walker runs out of stack on (a complete export echoes its input): a 400, not a 500.
    const deep = `{"projectName":"p","services":["redis"],"extra":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
    for (const url of ["http://localhost/v1/generate?format=complete", "http://localhost/v1/validate"]) {
      const r = await app.handle(new Request(url, { method: "POST", body: deep, headers: { "content-type": "application/json" } }));
      expect(r.status, url).toBe(400);
      expect((await json(r)).error.details[0]).toEqual({ field: "body", message: "Nested deeper than 64 levels" });
    }
    // Whatever the Content-Type, a body that is JSON is read (curl -d sends a form type).
    const form = await app.handle(new Request("http://localhost/v1/validate", { method: "POST", body: '{"services":["redis"]}', headers: { "content-type": "application/x-www-form-urlencoded" } }));
    expect(form.status).toBe(200);
    expect((await json(form)).resolvedServices).toEqual(["redis"]);
    const r = await call("POST", "/v1/validate", { services: Array.from({ length: 201 }, () => "redis") });
    expect(r.status).toBe(400);
    expect((await json(r)).error.details[0].field).toBe("services");
  });
});

describe("POST /v1/generate", () => {
  test("json: files and metadata", async () => {
    const r = await call("POST", "/v1/generate", { projectName: "demo", services: ["n8n"] });
    expect(r.status).toBe(200);
    const b = await json(r);
    expect(Object.keys(b.files)).toEqual(expect.arrayContaining(["docker-compose.yml", ".env", ".env.example", "README.md", "stackgen.json"]));
    expect(b.metadata).toMatchObject({ totalServices: 2, serviceCount: 2, resolvedDependencies: ["postgresql"], estimatedMemoryMB: expect.any(Number), warnings: [] });
    expect(new Date(b.metadata.generatedAt).toISOString()).toBe(b.metadata.generatedAt);
  });

  test("complete round-trips through its input", async () => {
    // A field stackgen does not know is ignored, and the export's input is still the body as sent (SPEC §2.7).
    const input = { projectName: "rt", preset: "researcher", domain: "example.com", coreVersion: "1.2.3", note: { from: "a client" } };
    const first = await json(await call("POST", "/v1/generate?format=complete", input));
    expect(first.formatVersion).toBe("1");
    expect(first.input).toEqual(input);
    expect(first.metadata.totalServices).toBeGreaterThan(0);
    const second = await json(await call("POST", "/v1/generate?format=complete", first.input));
    for (const path of Object.keys(first.files)) if (path !== ".env") expect(second.files[path], path).toBe(first.files[path]);
    expect(Object.keys(second.files)).toEqual(Object.keys(first.files));
    // The whole export posted back works too, and validates as its input does.
    const whole = await json(await call("POST", "/v1/generate", first));
    expect(whole.files["docker-compose.yml"]).toBe(first.files["docker-compose.yml"]);
    const verdict = await call("POST", "/v1/validate", first);
    expect(verdict.status).toBe(200);
    expect(await json(verdict)).toEqual(await json(await call("POST", "/v1/validate", first.input)));
  });

  test("zip by query or Accept header", async () => {
    for (const r of [await call("POST", "/v1/generate?format=zip", { projectName: "zz", services: ["redis"] }),
      await call("POST", "/v1/generate", { projectName: "zz", services: ["redis"] }, { accept: "application/zip" })]) {
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("application/zip");
      expect(r.headers.get("content-disposition")).toBe('attachment; filename="zz.zip"');
      const entries = unzipSync(new Uint8Array(await r.arrayBuffer()));
      expect(Object.keys(entries).every((k) => k.startsWith("zz/"))).toBe(true);
      expect(strFromU8(entries["zz/docker-compose.yml"])).toContain("name: zz");
    }
  });

  test("a complete export whose formatVersion is not the string \"1\" is refused naming formatVersion only", async () => {
    for (const formatVersion of [1, "2", null]) {
      for (const [path, message] of [["/v1/generate", "Invalid generation input"], ["/v1/validate", "Invalid request body"]]) {
        const r = await call("POST", path, { formatVersion, input: { projectName: "back", services: ["redis"] }, files: {}, metadata: {} });
        expect(r.status, path).toBe(400);
        const b = await json(r);
        expect(b.error.message).toBe(message);
        expect(b.error.details).toEqual([{ field: "formatVersion", message: expect.stringContaining("Unsupported format version") }]);
      }
    }
  });

  test("errors in a complete export posted back name its fields from the body's root (input.<field>)", async () => {
    const exported = (input: unknown) => ({ formatVersion: "1", input, files: {}, metadata: {} });
    const cases: [string, unknown, string[]][] = [
      ["/v1/validate", exported({ services: ["redis", "nope"] }), ["input.services.1"]],
      ["/v1/validate", exported({ services: ["redis"], gpu: "y" }), ["input.gpu"]],
      // The hot route (plain JSON) and the Elysia route (?format=complete) alike.
      ["/v1/generate", exported({ projectName: "BAD", services: ["nope"] }), ["input.projectName", "input.services.0"]],
      ["/v1/generate?format=complete", exported({ projectName: "BAD", services: ["nope"] }), ["input.projectName", "input.services.0"]],
      ["/v1/generate", exported({ projectName: "ok", configVersion: 7, services: ["redis"] }), ["input.configVersion"]],
      ["/v1/generate", exported({ projectName: "ok" }), ["input.services"]],
    ];
    for (const [path, body, fields] of cases) {
      const r = await call("POST", path, body);
      expect(r.status, path).toBe(400);
      expect((await json(r)).error.details.map((d: { field: string }) => d.field).sort(), `${path} ${JSON.stringify(body)}`).toEqual(fields);
    }
    // A plain body keeps its own paths.
    const plain = await call("POST", "/v1/validate", { services: ["nope"] });
    expect((await json(plain)).error.details.map((d: { field: string }) => d.field)).toEqual(["services.0"]);
  });

  test("one answer names every offending field: shape errors and unknown ids together", async () => {
    const cases: [string, unknown, string[]][] = [
      ["/v1/validate", { services: ["redis", 5, "nope"] }, ["services.1", "services.2"]],
      ["/v1/validate", { services: ["redis"], gpu: "y", skillPacks: ["nope3"], preset: "nope4" }, ["gpu", "skillPacks.0", "preset"]],
      ["/v1/generate", { projectName: "BAD", services: ["nope"] }, ["projectName", "services.0"]],
      ["/v1/generate?format=zip", { projectName: "ok", services: ["redis", 7, "nope"] }, ["services.1", "services.2"]],
    ];
    for (const [path, body, fields] of cases) {
      for (const send of [call, hotCall]) {
        const r = await send("POST", path, body);
        expect(r.status, path).toBe(400);
        const b = await json(r);
        expectError(b, "VALIDATION_ERROR");
        expect(b.error.details.map((d: any) => d.field).sort(), `${path} ${JSON.stringify(body)}`).toEqual([...fields].sort());
      }
    }
    // A list over the limit is refused as a whole, not id by id.
    const many = await json(await call("POST", "/v1/validate", { services: Array.from({ length: 500 }, (_, i) => `x${i}`) }));
    expect(many.error.details).toHaveLength(1);
  });

  test("Accept is negotiated by quality: q=0 refuses the archive, a higher JSON quality wins, a wildcard never asks for it", async () => {
    const body = { projectName: "zz", services: ["redis"] };
    const cases: [string, string][] = [
      ["application/zip;q=0, application/json", "application/json"],
      ["application/json, application/zip;q=0.5", "application/json"],
      ["application/zip;q=0.5, */*", "application/json"],
      ["*/*", "application/json"],
      ["application/*", "application/json"],
      ["application/json;q=0.4, application/zip;q=0.9", "application/zip"],
      ["APPLICATION/ZIP", "application/zip"],
      ["application/zip;q=bogus", "application/zip"],
      ["text/html, application/zip", "application/zip"],
    ];
    for (const [accept, type] of cases) {
      const r = await call("POST", "/v1/generate", body, { accept });
      expect(r.status, accept).toBe(200);
      expect(r.headers.get("content-type"), accept).toStartWith(type);
    }
  });

  test("409 CONFLICT_ERROR on a conflicting selection", async () => {
    const r = await call("POST", "/v1/generate", { projectName: "c", services: ["caddy", "traefik"] });
    expect(r.status).toBe(409);
    expectError(await json(r), "CONFLICT_ERROR");
  });

  test("400 on missing projectName, services as a string, nothing selected, bad names", async () => {
    const cases: [unknown, string][] = [
      [{ services: ["redis"] }, "projectName"],
      [{ projectName: "x", services: "redis" }, "services"],
      [{ projectName: "x" }, "services"],
      [{ projectName: "../etc", services: ["redis"] }, "projectName"],
      [{ projectName: "x", services: ["redis"], domain: "bad domain;{}" }, "domain"],
      [{ projectName: "x", services: ["redis"], domain: "192.168.1.10" }, "domain"],
      // Valid as a name, but <service>.<domain> would pass DNS's 253 characters.
      [{ projectName: "x", services: ["lasuite-meet-frontend"], proxy: "caddy", domain: `${"a".repeat(60)}.`.repeat(4) + "com" }, "domain"],
      [{ projectName: "x", services: ["redis"], deployment: "k8s" }, "deployment"],
      [{ projectName: "x", services: ["nope"] }, "services.0"],
      [{ projectName: "x", preset: "nope" }, "preset"],
    ];
    for (const [body, field] of cases) {
      const r = await call("POST", "/v1/generate", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      const b = await json(r);
      expectError(b, "VALIDATION_ERROR");
      expect(b.error.message).toBe("Invalid generation input");
      expect(b.error.details.map((d: any) => d.field), JSON.stringify(body)).toContain(field);
    }
  });

  test("the longest domain accepted leaves every service a valid host name under it", async () => {
    const longest = [`${"b".repeat(63)}.`, `${"c".repeat(63)}.`, `${"d".repeat(63)}.`].join("") + "e".repeat(MAX_DOMAIN_LENGTH - 3 * 64);
    expect(longest).toHaveLength(MAX_DOMAIN_LENGTH);
    const r = await call("POST", "/v1/generate", { projectName: "x", preset: "videoconf", services: ["lasuite-meet-frontend"], proxy: "caddy", domain: longest });
    expect(r.status).toBe(200);
    const hosts = [...(await json(r)).files.Caddyfile.matchAll(/^([a-z0-9.-]+\.e+)\b/gm)].map((m) => m[1]);
    expect(hosts.length).toBeGreaterThan(0);
    for (const host of hosts) expect(host.length, host).toBeLessThanOrEqual(253);
    // The catalog schema holds every id to what is left.
    for (const s of catalog.services) expect(s.id.length + 1 + MAX_DOMAIN_LENGTH).toBeLessThanOrEqual(253);
  });

  test("a value that breaks a pattern is explained in words, not by the regular expression", async () => {
    const body = { projectName: "My Stack", services: ["redis"], domain: "https://example.com/", coreVersion: "-1" };
    // Both paths: the hot route (plain POST) and the Elysia route (the complete format).
    for (const answer of [await hotCall("POST", "/v1/generate", body), await call("POST", "/v1/generate?format=complete", body)]) {
      expect(answer.status).toBe(400);
      const details: { field: string; message: string }[] = (await json(answer)).error.details;
      const messages = Object.fromEntries(details.map((d) => [d.field, d.message]));
      expect(messages.projectName).toContain("lowercase letters, digits, - and _");
      expect(messages.domain).toContain("DNS name");
      expect(messages.coreVersion).toContain("image tag");
      for (const d of details) expect(d.message).not.toContain("^");
    }
  });

  test("config documents migrate; unknown versions are refused", async () => {
    const ok = await json(await call("POST", "/v1/generate", { configVersion: 1, projectName: "m", services: ["redis"] }));
    expect(JSON.parse(ok.files["stackgen.json"])).toMatchObject({ configVersion: 2, deploymentType: "docker" });
    const bad = await call("POST", "/v1/generate", { configVersion: 99, projectName: "m", services: ["redis"] });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.message).toMatch(/^No migration path from config version 99/);
    // A version that is not a number is bad input with each route's own message.
    for (const [path, message] of [["/v1/generate", "Invalid generation input"], ["/v1/validate", "Invalid request body"]]) {
      const r = await call("POST", path, { configVersion: 1.5, projectName: "m", services: ["redis"] });
      expect(r.status).toBe(400);
      const b = await json(r);
      expect(b.error.message).toBe(message);
      expect(b.error.details).toEqual([{ field: "configVersion", message: expect.stringMatching(/^Expected integer/) }]);
    }
  });

  test("a migrated body's errors name its own fields, with or without a query string", async () => {
    // The migration makes a new object; that did not make the body a complete export (its
    // fields were named input.projectName on the Elysia route, projectName on the hot route).
    for (const [path, sent, field] of [
      ["/v1/generate", { configVersion: 1, services: ["redis"] }, "projectName"],
      ["/v1/validate", { configVersion: 1, deploymentType: "foo" }, "deploymentType"],
      // A bad `deployment` is named as sent, not also under the deploymentType it migrates into.
      ["/v1/generate", { configVersion: 1, projectName: "m", services: ["redis"], deployment: 5 }, "deployment"],
    ] as const) {
      const answers = [];
      for (const query of ["", "?format=json", "?format=complete", "?x=1"]) {
        if (path === "/v1/validate" && query.startsWith("?format")) continue;
        const r = await call("POST", `${path}${query}`, sent);
        expect(r.status, `${path}${query}`).toBe(400);
        answers.push((await json(r)).error.details.map((d: { field: string }) => d.field));
      }
      for (const fields of answers) expect(fields).toEqual([field]);
    }
  });

  test("a v1 config's complete export echoes the body as sent; deployment carries into deploymentType", async () => {
    const sent = { configVersion: 1, projectName: "m", services: ["redis"], deployment: "bare-metal" };
    const doc = await json(await call("POST", "/v1/generate?format=complete", sent));
    expect(doc.input).toEqual(sent);
    expect(doc.files["install.sh"]).toBeDefined();
    expect(JSON.parse(doc.files["stackgen.json"])).toMatchObject({ configVersion: 2, deploymentType: "bare-metal" });
    // Posted back, the export's v1 input is echoed as it was, and regenerates the same stack.
    const back = await json(await call("POST", "/v1/generate?format=complete", doc));
    expect(back.input).toEqual(sent);
    expect(Object.keys(back.files).sort()).toEqual(Object.keys(doc.files).sort());
    expect(back.files["docker-compose.yml"]).toBe(doc.files["docker-compose.yml"]);
  });

  test("a complete document whose input is not an object is refused, naming input, on both routes", async () => {
    for (const input of ["x", null, [], 3]) {
      for (const [path, message] of [["/v1/validate", "Invalid request body"], ["/v1/generate", "Invalid generation input"], ["/v1/generate?format=complete", "Invalid generation input"]]) {
        const sent = { formatVersion: "1", input };
        const r = path === "/v1/generate" ? await hotCall("POST", path, sent) : await call("POST", path, sent);
        expect(r.status, `${path} ${JSON.stringify(input)}`).toBe(400);
        const b = await json(r);
        expect(b.error.message).toBe(message);
        expect(b.error.details).toEqual([{ field: "input", message: expect.stringMatching(/^Expected object, received /) }]);
      }
    }
  });

  test("a path with a trailing slash is the same route, with the same error messages", async () => {
    for (const [path, message] of [["/v1/generate/", "Invalid generation input"], ["/v1/generate/?format=complete", "Invalid generation input"], ["/v1/validate/", "Invalid request body"]]) {
      const r = await call("POST", path, { projectName: "a", services: "redis" });
      expect(r.status, path).toBe(400);
      expect((await json(r)).error.message, path).toBe(message);
    }
  });
});

describe("over a real listening server", () => {
  let servers: ReturnType<typeof startServers>;
  let api = "", ui = "";
  beforeAll(() => {
    servers = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", guardConfig: undefined } as never);
    api = `http://127.0.0.1:${servers.api.port}`;
    ui = servers.ui ? `http://127.0.0.1:${servers.ui.port}` : "";
  });
  afterAll(() => servers?.stop());

  test("API answers every read route", async () => {
    for (const p of ["/v1/health", "/v1/services", "/v1/services/redis", "/v1/presets", "/v1/presets/minimal", "/v1/skills", "/v1/openapi.json", "/v1/docs"]) {
      const r = await fetch(api + p);
      expect(r.status, p).toBe(200);
    }
  });

  test("a compressed body is refused as such (415), not read as malformed JSON or taken as it is", async () => {
    const body = JSON.stringify({ projectName: "enc", services: ["redis"] });
    const cases: [string, string, BodyInit][] = [
      ["/v1/validate", "gzip", Bun.gzipSync(body)],
      ["/v1/generate", "gzip", Bun.gzipSync(body)],
      ["/v1/generate?format=complete", "br", body],
    ];
    for (const [path, encoding, payload] of cases) {
      const r = await fetch(api + path, { method: "POST", headers: { "content-type": "application/json", "content-encoding": encoding }, body: payload });
      expect(r.status, path).toBe(415);
      expect(await r.json(), path).toEqual({ error: { code: "UNSUPPORTED_MEDIA_TYPE", message: `Content-Encoding ${encoding} is not supported: send the JSON body uncompressed.` } });
    }
    const identity = await fetch(`${api}/v1/validate`, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "identity" }, body });
    expect(identity.status).toBe(200);
  });

  test("validate and generate over HTTP", async () => {
    const v = await fetch(`${api}/v1/validate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ preset: "devops" }) });
    expect((await v.json() as any).valid).toBe(true);
    const g = await fetch(`${api}/v1/generate?format=zip`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ projectName: "http", preset: "minimal" }) });
    expect(g.headers.get("content-type")).toBe("application/zip");
    // Every form of a generation carries fresh secrets: none may be kept by a cache on the way.
    expect(g.headers.get("cache-control")).toBe("no-store");
    for (const format of ["", "?format=json", "?format=complete", "/", "/?format=complete"]) {
      const r = await fetch(`${api}/v1/generate${format}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ projectName: "http", preset: "minimal" }) });
      expect(r.status, format).toBe(200);
      expect(r.headers.get("cache-control"), format).toBe("no-store");
    }
    expect(v.headers.get("cache-control")).toBeNull();
  });

  test("the UI listener (when enabled) also answers /v1 routes", async () => {
    if (!ui) return;
    expect((await fetch(`${ui}/v1/health`)).status).toBe(200);
    expect((await fetch(`${ui}/`)).headers.get("content-type")).toContain("text/html");
  });
});
