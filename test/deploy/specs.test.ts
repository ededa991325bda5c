// The fakes validate against the providers' published OpenAPI documents, so those documents
// must be what research §1 recorded (sha256 pins catch edits) and must be valid OpenAPI 3.1.
// The official 3.1 meta-schema is not installed, so the structural rules of the OpenAPI
// specification that matter here are checked directly, and every schema is compiled with the
// JSON Schema 2020-12 dialect that OpenAPI 3.1 uses.
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { COOLIFY_SPEC } from "./fakes/coolify-fake.ts";
import { DOKPLOY_SPEC } from "./fakes/dokploy-fake.ts";

const SPECS = [
  {
    name: "Coolify",
    file: COOLIFY_SPEC,
    sha256: "94741780dcae68803a7db94f4b7140a2042069db7385a33b95f6aa7c95726b4c",
    // Security requirement names with no matching scheme (research §1 quirk).
    undefinedSchemes: [] as string[],
  },
  {
    name: "Dokploy",
    file: DOKPLOY_SPEC,
    sha256: "e574f3c2f661ff63a11d80c03dd6842c737f49240474b3db13fcfc6a4933ae6e",
    undefinedSchemes: ["Authorization"],
  },
];

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
type Json = Record<string, any>;

function resolvePointer(doc: Json, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: any = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

function* walk(node: unknown, pointer = "#"): Generator<[string, Json]> {
  if (node === null || typeof node !== "object") return;
  yield [pointer, node as Json];
  for (const [key, value] of Object.entries(node)) {
    yield* walk(value, `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`);
  }
}

/** Every problem found against the OpenAPI 3.1 structural rules (empty = valid). */
function openApiProblems(doc: Json, undefinedSchemesAllowed: string[]): string[] {
  const problems: string[] = [];
  if (!/^3\.1\.\d+$/.test(String(doc.openapi))) problems.push(`openapi is ${doc.openapi}, not 3.1.x`);
  if (typeof doc.info?.title !== "string" || typeof doc.info?.version !== "string") problems.push("info.title/info.version missing");
  if (!doc.paths || typeof doc.paths !== "object") problems.push("no paths object");

  const schemes = new Set(Object.keys(doc.components?.securitySchemes ?? {}));
  for (const [name, scheme] of Object.entries<Json>(doc.components?.securitySchemes ?? {})) {
    if (!["apiKey", "http", "mutualTLS", "oauth2", "openIdConnect"].includes(scheme.type)) problems.push(`scheme ${name}: bad type`);
    if (scheme.type === "apiKey" && (!scheme.name || !["query", "header", "cookie"].includes(scheme.in))) problems.push(`scheme ${name}: bad apiKey`);
    if (scheme.type === "http" && typeof scheme.scheme !== "string") problems.push(`scheme ${name}: http without scheme`);
  }
  const undefinedSchemes = new Set<string>();
  const operationIds = new Set<string>();

  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    if (!path.startsWith("/")) problems.push(`path ${path} does not start with /`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const method of Object.keys(item)) {
      if (!METHODS.includes(method) && !["parameters", "summary", "description", "servers", "$ref"].includes(method)) {
        problems.push(`${path}: unknown key ${method}`);
      }
    }
    for (const method of METHODS.filter((m) => item[m])) {
      const op = item[method] as Json;
      const where = `${method.toUpperCase()} ${path}`;
      if (op.operationId !== undefined) {
        if (operationIds.has(op.operationId)) problems.push(`${where}: duplicate operationId ${op.operationId}`);
        operationIds.add(op.operationId);
      }
      if (!op.responses || Object.keys(op.responses).length === 0) problems.push(`${where}: no responses`);
      for (const code of Object.keys(op.responses ?? {})) {
        if (!/^([1-5](\d\d|XX)|default)$/.test(code)) problems.push(`${where}: bad response key ${code}`);
        const response = op.responses[code].$ref ? resolvePointer(doc, op.responses[code].$ref) : op.responses[code];
        if (typeof (response as Json)?.description !== "string") problems.push(`${where} ${code}: response without description`);
      }
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Json) => (p.$ref ? (resolvePointer(doc, p.$ref) as Json) : p));
      for (const p of params) {
        if (!p?.name || !["query", "header", "path", "cookie"].includes(p.in)) problems.push(`${where}: bad parameter ${JSON.stringify(p)}`);
        else if (!p.schema && !p.content) problems.push(`${where}: parameter ${p.name} without schema or content`);
        else if (p.in === "path" && p.required !== true) problems.push(`${where}: path parameter ${p.name} not required`);
        else if (p.in === "path" && !templated.includes(p.name)) problems.push(`${where}: path parameter ${p.name} not in the template`);
      }
      for (const name of templated) {
        if (!params.some((p) => p?.in === "path" && p.name === name)) problems.push(`${where}: template {${name}} has no parameter`);
      }
      if (op.requestBody && !op.requestBody.$ref && !op.requestBody.content) problems.push(`${where}: requestBody without content`);
      for (const requirement of op.security ?? doc.security ?? []) {
        for (const name of Object.keys(requirement)) if (!schemes.has(name)) undefinedSchemes.add(name);
      }
    }
  }
  for (const [pointer, node] of walk(doc)) {
    if (typeof node.$ref === "string" && resolvePointer(doc, node.$ref) === undefined) problems.push(`${pointer}: unresolved $ref ${node.$ref}`);
  }
  const unexpected = [...undefinedSchemes].filter((n) => !undefinedSchemesAllowed.includes(n));
  if (unexpected.length) problems.push(`security requirements name undefined schemes: ${unexpected.join(", ")}`);
  const missingQuirk = undefinedSchemesAllowed.filter((n) => !undefinedSchemes.has(n));
  if (missingQuirk.length) problems.push(`expected quirk not present any more: ${missingQuirk.join(", ")} (update research §1)`);
  return problems;
}

/**
 * Compile every schema of the document (parameters, bodies, responses, components) as JSON Schema
 * 2020-12. Local refs are pointed at the document registered as "doc"; identical schemas (Dokploy
 * repeats its placeholder thousands of times) are compiled once.
 */
function schemaProblems(doc: Json): string[] {
  const ajv = new Ajv2020({ strict: false, logger: false });
  addFormats(ajv);
  ajv.addSchema(doc, "doc");
  const problems: string[] = [];
  const compiled = new Set<string>();
  const compile = (pointer: string, schema: unknown) => {
    const text = JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"doc#/');
    if (compiled.has(text)) return;
    compiled.add(text);
    try {
      ajv.compile(JSON.parse(text));
    } catch (e) {
      problems.push(`${pointer}: ${(e as Error).message}`);
    }
  };
  for (const [pointer, node] of walk(doc.paths, "#/paths")) {
    if (node.schema && typeof node.schema === "object") compile(`${pointer}/schema`, node.schema);
  }
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) compile(`#/components/schemas/${name}`, schema);
  if (compiled.size === 0) problems.push("no schema compiled");
  return problems;
}

describe.each(SPECS)("$name OpenAPI document", (spec) => {
  test("is the pinned copy (sha256)", async () => {
    const bytes = new Uint8Array(await Bun.file(spec.file).arrayBuffer());
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(spec.sha256);
  });

  test("is a valid OpenAPI 3.1 document", async () => {
    const doc = JSON.parse(await Bun.file(spec.file).text());
    expect(openApiProblems(doc, spec.undefinedSchemes)).toEqual([]);
    expect(schemaProblems(doc)).toEqual([]);
  });
});

test("the checkers do find problems", () => {
  expect(schemaProblems({ paths: { "/a": { get: { parameters: [{ schema: { type: "nonsense" } }] } } } }).join()).toContain("~1a/get/parameters/0/schema: schema is invalid");
  expect(schemaProblems({ paths: { "/a": { get: { parameters: [{ schema: { $ref: "#/components/schemas/Missing" } }] } } } }).join()).toContain("Missing");

  const broken = {
    openapi: "3.0.3",
    info: { title: "x" },
    paths: {
      "/a/{id}": { get: { operationId: "a", responses: {}, security: [{ nope: [] }] } },
      b: { post: { operationId: "a", responses: { "200": { $ref: "#/components/responses/missing" } } } },
    },
  };
  const problems = openApiProblems(broken, []);
  for (const fragment of ["not 3.1.x", "info.title", "no responses", "template {id}", "does not start with /", "duplicate operationId", "unresolved $ref", "undefined schemes: nope"]) {
    expect(problems.join("\n")).toContain(fragment);
  }
});
