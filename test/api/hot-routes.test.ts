// The server answers POST /v1/validate and POST /v1/generate (JSON) through src/api/hot-routes.ts
// instead of Elysia. Both paths must give the same answers: status, content type and body, for
// good input and for every kind of bad input. Generated secrets and timestamps differ per call and
// are compared by shape.
import { describe, expect, test } from "bun:test";
import { createApp } from "../../src/api/app.ts";
import { hotRoutes } from "../../src/api/hot-routes.ts";
import { MAX_BODY_BYTES } from "../../src/api/guard/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";
import { MAIN } from "../support/tools.ts";
import { eventually, freePort } from "./guard-helpers.ts";

const catalog = getCatalog();
const app = createApp({ catalog });
const hot = hotRoutes(catalog, MAX_BODY_BYTES);

const request = (path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
  new Request(`http://localhost${path}`, { method: "POST", body, headers });

/** Secret values and the generation time vary per call; everything else must match. */
function stable(text: string): unknown {
  const doc = JSON.parse(text);
  if (doc.files?.[".env"]) doc.files[".env"] = doc.files[".env"].replace(/^([A-Z0-9_]+)=[A-Za-z0-9]{16,}$/gm, "$1=<secret>");
  if (doc.metadata?.generatedAt) doc.metadata.generatedAt = "<time>";
  return doc;
}

/** A hot route's answer as text (a generation's is a Blob). */
async function hotText(path: string, body: string, headers?: Record<string, string>) {
  const reply = await hot(request(path, body, headers), path);
  expect(reply).toBeDefined();
  return { ...reply!, body: typeof reply!.body === "string" ? reply!.body : await reply!.body.text() };
}

async function both(path: string, body: string, headers?: Record<string, string>) {
  const reply = await hotText(path, body, headers);
  const viaApp = await app.handle(request(path, body, headers));
  const viaAppBody = await viaApp.text();
  return {
    hot: { status: reply!.status, type: reply!.type as string | null, body: stable(reply!.body) },
    app: { status: viaApp.status, type: viaApp.headers.get("content-type"), body: stable(viaAppBody) },
  };
}

const SEVEN = ["redis", "postgresql", "n8n", "qdrant", "grafana", "prometheus", "minio"];

const validateCases: [string, string][] = [
  ["a valid selection", JSON.stringify({ services: SEVEN })],
  ["a preset with packs", JSON.stringify({ preset: "minimal", skillPacks: ["research"] })],
  ["a conflict (still 200)", JSON.stringify({ services: ["caddy", "traefik"] })],
  ["an unknown id", JSON.stringify({ services: ["redis", "nope"] })],
  ["a wrong type", JSON.stringify({ services: "redis" })],
  ["too many ids", JSON.stringify({ services: Array.from({ length: 201 }, () => "redis") })],
  ["a v1 config document", JSON.stringify({ configVersion: 1, services: ["redis"] })],
  // Its migration gives a null deploymentType the default: both paths check the migrated fields.
  ["a v1 config document with a null deploymentType", JSON.stringify({ configVersion: 1, services: ["redis"], deploymentType: null })],
  ["an unknown config version", JSON.stringify({ configVersion: 99, services: ["redis"] })],
  ["a config version that is not an integer", JSON.stringify({ configVersion: 1.5, services: ["redis"] })],
  ["a complete export posted back", JSON.stringify({ formatVersion: "1", input: { projectName: "back", services: ["n8n"] }, files: {}, metadata: {} })],
  ["a complete export of a later format version", JSON.stringify({ formatVersion: "2", input: { projectName: "back", services: ["redis"] }, files: {}, metadata: {} })],
  ["a complete export with an unknown id and a wrong type", JSON.stringify({ formatVersion: "1", input: { services: ["redis", "nope"], gpu: "y" }, files: {}, metadata: {} })],
  ["a null config version", JSON.stringify({ configVersion: null })],
  ["a config version that is a string, beside a wrong type and an unknown id", JSON.stringify({ configVersion: "2", services: ["redis", "nope"], gpu: "y" })],
  ["a config version of no migration path, beside a wrong type", JSON.stringify({ configVersion: 99, services: "redis" })],
  ["a complete export whose input has a null config version and a wrong type", JSON.stringify({ formatVersion: "1", input: { configVersion: null, gpu: "y" }, files: {}, metadata: {} })],
  ["malformed JSON", '{"services": ['],
  ["an empty body", ""],
  ["an array", "[]"],
  ["a string", '"redis"'],
  ["null", "null"],
];

const generateCases: [string, string][] = [
  ["seven services", JSON.stringify({ projectName: "p", services: SEVEN })],
  ["a preset behind traefik with a domain", JSON.stringify({ projectName: "p", preset: "minimal", proxy: "traefik", domain: "Example.COM" })],
  ["bare metal", JSON.stringify({ projectName: "p", services: ["redis", "postgresql"], deployment: "bare-metal" })],
  ["no secrets", JSON.stringify({ projectName: "p", services: ["redis"], generateSecrets: false })],
  ["a complete export posted back", JSON.stringify({ formatVersion: "1", input: { projectName: "back", services: ["redis"] }, files: {}, metadata: {} })],
  ["a complete export of a later format version", JSON.stringify({ formatVersion: "2", input: { projectName: "back", services: ["redis"] }, files: {}, metadata: {} })],
  ["a complete export whose format version is a number", JSON.stringify({ formatVersion: 1, input: { projectName: "back", services: ["redis"] }, files: {}, metadata: {} })],
  ["a complete export with a bad name and an unknown id", JSON.stringify({ formatVersion: "1", input: { projectName: "BAD", services: ["nope"] }, files: {}, metadata: {} })],
  ["a v1 config document", JSON.stringify({ configVersion: 1, projectName: "m", services: ["redis"] })],
  ["a v1 config document with a null deploymentType", JSON.stringify({ configVersion: 1, projectName: "m", services: ["redis"], deploymentType: null })],
  ["a complete export of a v1 config with a null deploymentType", JSON.stringify({ formatVersion: "1", input: { configVersion: 1, projectName: "m", services: ["redis"], deploymentType: null }, files: {}, metadata: {} })],
  ["an unknown config version", JSON.stringify({ configVersion: 99, projectName: "m", services: ["redis"] })],
  ["a config version that is not an integer", JSON.stringify({ configVersion: "two", projectName: "m", services: ["redis"] })],
  ["a conflict (409)", JSON.stringify({ projectName: "p", services: ["caddy", "traefik"] })],
  ["no projectName", JSON.stringify({ services: ["redis"] })],
  ["a bad projectName", JSON.stringify({ projectName: "../etc", services: ["redis"] })],
  ["nothing selected", JSON.stringify({ projectName: "p" })],
  ["an unknown preset", JSON.stringify({ projectName: "p", preset: "nope" })],
  ["a bad coreVersion", JSON.stringify({ projectName: "p", services: ["redis"], coreVersion: "1.0; rm -rf /" })],
  // One answer names every offending field, on both paths: the version beside the rest.
  ["a null config version and no projectName", JSON.stringify({ configVersion: null })],
  ["a config version that is a string, a wrong type and an unknown id, no projectName", JSON.stringify({ configVersion: "2", services: ["redis", "nope"], gpu: "y" })],
  // No migration path: the version alone, since a later version's fields may mean something else.
  ["a config version of no migration path and no projectName", JSON.stringify({ configVersion: 99 })],
  ["a config version of no migration path and an unknown id", JSON.stringify({ configVersion: 3, projectName: "m", services: ["nope"] })],
  ["a complete export whose input has a null config version and no projectName", JSON.stringify({ formatVersion: "1", input: { configVersion: null, services: ["nope"] }, files: {}, metadata: {} })],
  ["malformed JSON", "{"],
  ["an array", "[1]"],
];

describe("hot routes answer exactly like the Elysia routes", () => {
  for (const [what, body] of validateCases) {
    test(`POST /v1/validate: ${what}`, async () => {
      const { hot, app } = await both("/v1/validate", body);
      expect(hot).toEqual(app);
    });
  }
  for (const [what, body] of generateCases) {
    test(`POST /v1/generate: ${what}`, async () => {
      const { hot, app } = await both("/v1/generate", body);
      expect(hot).toEqual(app);
    });
  }
  test("a generate answer is all ASCII (text past it as JSON \\u escapes) and reads back to the same files", async () => {
    // The skills README holds a "…": one such character made the whole answer a two-byte string.
    const body = JSON.stringify({ projectName: "p", services: SEVEN });
    const reply = await hotText("/v1/generate", body);
    const viaApp = await (await app.handle(request("/v1/generate", body))).text();
    for (const text of [reply.body, viaApp]) {
      expect(/[^\x00-\x7f]/.test(text)).toBe(false);
      expect(JSON.parse(text).files["skills/README.md"]).toContain("`docker compose …`");
    }
  });

  test("a JSON body sent as text/plain (fetch's default for a string) or without a Content-Type is read as JSON", async () => {
    for (const path of ["/v1/validate", "/v1/generate"]) {
      for (const headers of [{ "content-type": "text/plain;charset=UTF-8" }, {}] as Record<string, string>[]) {
        const { hot, app } = await both(path, '{"projectName":"p","services":["redis"]}', headers);
        expect(hot.status).toBe(200);
        expect(app.status).toBe(200);
        // Generate answers carry fresh secrets and a time: compare what does not change.
        if (path === "/v1/validate") expect(hot).toEqual(app);
      }
    }
  });
  test("a chunked body over the limit is 413 on both paths", async () => {
    const big = () => new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(`{"services":["${"x".repeat(MAX_BODY_BYTES)}"]}`)); c.close(); } });
    const chunked = () => new Request("http://localhost/v1/validate", { method: "POST", body: big(), headers: { "content-type": "application/json" } });
    const reply = await hot(chunked(), "/v1/validate");
    const viaApp = await app.handle(chunked());
    expect(reply!.status).toBe(413);
    expect(viaApp.status).toBe(413);
    expect(JSON.parse(reply!.body as string)).toEqual(await viaApp.json());
  });
});

describe("what the hot routes leave to the app", () => {
  const left = [
    ["a query string", request("/v1/generate?format=complete", "{}"), "/v1/generate"],
    ["a ZIP download", request("/v1/generate", "{}", { "content-type": "application/json", accept: "application/zip" }), "/v1/generate"],
    ["another method", new Request("http://localhost/v1/validate", { method: "GET" }), "/v1/validate"],
    ["another route", request("/v1/deploy", "{}"), "/v1/deploy"],
  ] as const;
  for (const [what, req, path] of left) {
    test(what, () => {
      expect(hot(req, path)).toBeUndefined();
    });
  }
});

describe("bodies seen again (answers and prepared generations are kept by body text)", () => {
  const secretsOf = (text: string) => [...JSON.parse(text).files[".env"].matchAll(/^[A-Z0-9_]+=([A-Za-z0-9]{32,})$/gm)].map((m) => m[1]);

  test("a generation repeated with the same text still gets fresh secrets and a fresh time", async () => {
    const body = JSON.stringify({ projectName: "again", services: SEVEN });
    const first = await hotText("/v1/generate", body);
    await Bun.sleep(2);
    const second = await hotText("/v1/generate", body);
    expect(first.status).toBe(200);
    expect(stable(second.body)).toEqual(stable(first.body));
    const [a, b] = [secretsOf(first.body), secretsOf(second.body)];
    expect(a.length).toBeGreaterThan(3);
    expect(b).toHaveLength(a.length);
    for (let i = 0; i < a.length; i++) expect(b[i]).not.toBe(a[i]);
    expect(JSON.parse(second.body).metadata.generatedAt).not.toBe(JSON.parse(first.body).metadata.generatedAt);
  });

  test("a failing body fails every time, and a good one after it is not affected", async () => {
    const bad = JSON.stringify({ projectName: "p", services: ["caddy", "traefik"] });
    for (let i = 0; i < 3; i++) expect((await hot(request("/v1/generate", bad), "/v1/generate"))!.status).toBe(409);
    const unknown = JSON.stringify({ services: ["nope"] });
    for (let i = 0; i < 3; i++) expect((await hot(request("/v1/validate", unknown), "/v1/validate"))!.status).toBe(400);
    expect((await hot(request("/v1/validate", JSON.stringify({ services: ["redis"] })), "/v1/validate"))!.status).toBe(200);
  });

  test("texts that differ only in spacing, and bodies too long to keep, answer as the app does", async () => {
    const spaced = JSON.stringify({ services: SEVEN }, null, 2);
    const padded = JSON.stringify({ services: SEVEN, note: "x".repeat(5000) });
    for (const body of [spaced, padded, spaced, padded]) {
      const { hot: viaHot, app: viaApp } = await both("/v1/validate", body);
      expect(viaHot).toEqual(viaApp);
      expect(viaHot.status).toBe(200);
    }
    const long = JSON.stringify({ projectName: "long", services: SEVEN, note: "y".repeat(5000) });
    const [one, two] = [await hotText("/v1/generate", long), await hotText("/v1/generate", long)];
    expect(stable(two.body)).toEqual(stable(one.body));
    expect(secretsOf(two.body)[0]).not.toBe(secretsOf(one.body)[0]);
  });
});

describe("the app's routes leave the shared schemas as they are", () => {
  // Elysia changes a route's schema in place when it first checks a body (unknown fields become
  // errors there). A fresh server, whose first requests go to the Elysia routes (a query string
  // sends them there), must still ignore unknown fields on the hot routes afterwards.
  test("after Elysia served validate, generate and deploy, a body with unknown fields is still accepted", async () => {
    const port = await freePort();
    const proc = Bun.spawn([process.execPath, MAIN, "serve", "--port", String(port), "--ui-port", "0", "--host", "127.0.0.1"], {
      env: { ...process.env, LOG_LEVEL: "silent" },
      stdout: "ignore",
      stderr: "ignore",
    });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      await eventually(() => fetch(`http://127.0.0.1:${port}/v1/health`).then((r) => r.ok, () => false), 10_000, "the server");
      expect((await post("/v1/validate?via=app", { services: ["redis"] })).status).toBe(200);
      expect((await post("/v1/generate?format=complete", { projectName: "first", services: ["redis"] })).status).toBe(200);
      // Refused by the relay's policy or the platform: what matters is that its schema was compiled.
      await post("/v1/deploy", { provider: "coolify", url: "http://127.0.0.1:9", apiKey: "k", input: { projectName: "first", services: ["redis"] } }).then((r) => r.text());
      const withExtras = { projectName: "later", services: ["redis"], note: "kept by the client", uiState: { open: true } };
      for (const path of ["/v1/validate", "/v1/generate", "/v1/validate?via=app", "/v1/generate?format=complete"]) {
        const r = await post(path, withExtras);
        expect(r.status, `${path}: ${await r.clone().text()}`).toBe(200);
      }
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
});
