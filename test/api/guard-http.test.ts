// The guard over a real listening server (CONTRACT §1, §3; SPEC §5, §8): headers on every answer,
// keys, rate limits and their window, client addresses, CORS, body limit and the request log.
import { afterEach, describe, expect, test } from "bun:test";
import { startTestServer, expectErrorShape, type TestServer } from "./guard-helpers.ts";
import { createGuard, guardConfig } from "../../src/api/guard/index.ts";
import { MemoryStore } from "../../src/api/guard/memory-store.ts";
import { startServers } from "../../src/api/server.ts";
import { testCatalog, freePort } from "./guard-helpers.ts";
import { connect } from "node:net";

const JSON_HEADERS = { "content-type": "application/json" };
const GENERATE_BODY = JSON.stringify({ projectName: "x", services: ["redis"] });
const MIB = 1024 * 1024;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(server!.base + path, { headers });
const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(server!.base + path, { method: "POST", body, headers: { ...JSON_HEADERS, ...headers } });

function expectGuardHeaders(res: Response): void {
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  // Pages also get a CSP and a referrer policy; JSON answers have no use for them.
  if (res.headers.get("content-type")?.startsWith("text/html")) {
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  }
  for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) expect(res.headers.get(name)).toMatch(/^\d+$/);
  expect(res.headers.get("x-request-id")).toBeTruthy();
}

/** One request written to the socket exactly as given (fetch would not send some of these: a
 *  short or missing Host); the answer as the server wrote it, once it closed the connection. */
const rawRequest = (base: string, request: string) =>
  new Promise<string>((done, fail) => {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    // Connection: close (or HTTP/1.0): the server ends it once it has answered.
    socket.on("close", () => done(text));
    socket.on("error", fail);
  });
/** The status code of a raw answer. */
const status = (answer: string) => Number(answer.split(" ")[1]);

describe("headers on every response", () => {
  test("success (Elysia and hot routes), 404, 400, 401, 413, 429, preflight and HTML all carry security, limit and id headers", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 8, generate: 5 }, apiKeys: [{ key: "good-key" }] });
    const answers: [string, Response, number][] = [
      ["health", await get("/v1/health"), 200],
      ["validate", await post("/v1/validate", '{"services":["redis"]}'), 200],
      ["generate", await post("/v1/generate", '{"projectName":"h","services":["redis"]}'), 200],
      ["unknown route", await get("/v1/no-such-route"), 404],
      ["bad body", await post("/v1/validate", '{"services":"redis"}'), 400],
      ["wrong key", await get("/v1/services", { "x-api-key": "nope" }), 401],
      ["too large", await post("/v1/validate", " ".repeat(MIB + 1)), 413],
      ["preflight", await fetch(server.base + "/v1/validate", { method: "OPTIONS", headers: { origin: "https://x.example", "access-control-request-method": "POST" } }), 204],
      ["docs", await get("/v1/docs"), 200],
    ];
    for (const [what, res, status] of answers) {
      expect({ what, status: res.status }).toEqual({ what, status });
      expectGuardHeaders(res);
    }
    const docs = answers.find(([w]) => w === "docs")![1];
    expect(docs.headers.get("content-type")).toContain("text/html");
    expect(docs.headers.get("content-security-policy")).toContain("default-src 'self'");
    // Exhaust the budget: the 429 carries the headers too, plus Retry-After.
    let res = await get("/v1/health");
    while (res.status !== 429) res = await get("/v1/health");
    expectGuardHeaders(res);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  test("the UI listener's page, its assets and its /v1 answers carry the headers too; page loads are logged but not counted", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 5, generate: 5 } }, true);
    const page = await fetch(server.uiBase + "/", { headers: { "x-request-id": "page-load-1" } });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expectGuardHeaders(page);
    expect(page.headers.get("x-request-id")).toBe("page-load-1");
    const html = await page.text();
    const script = /<script[^>]+src="([^"]+)"/.exec(html)?.[1];
    expect(script).toBeTruthy();
    const asset = await fetch(new URL(script!, server.uiBase + "/"));
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toContain("javascript");
    expectGuardHeaders(asset);
    await asset.text();
    // Many page loads later the caller still has its whole standard window for the API.
    for (let i = 0; i < 8; i++) expect((await fetch(server.uiBase + "/")).status).toBe(200);
    expect((await fetch(server.uiBase + "/")).headers.get("x-ratelimit-remaining")).toBe("5");
    const api = await fetch(server.uiBase + "/v1/health");
    expect(api.status).toBe(200);
    expectGuardHeaders(api);
    expect(api.headers.get("x-ratelimit-remaining")).toBe("4");
    await Bun.sleep(50);
    const pageLine = server.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === "page-load-1");
    expect(pageLine).toMatchObject({ msg: "request", method: "GET", path: "/", status: 200 });
    const missing = await fetch(server.uiBase + "/no-such-page");
    expect(missing.status).toBe(404);
    expectErrorShape(await missing.json());
  });

  test("a short or malformed Host neither routes a request past the guard's count nor breaks the page listener; HEAD says the page's size", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 3, generate: 1 }, apiKeys: [{ key: "good-key" }] }, true);
    const send = (base: string, path: string, host: string, extra = "") => rawRequest(base, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: close\r\n\r\n`);
    // Elysia reads the path from the URL's 12th character: under Host `x` it would take
    // /v1/v1/services for /v1/services, counted by the guard as another path (or as a page).
    expect(status(await send(server.base, "/v1/v1/services", "x"))).toBe(404);
    expect(status(await send(server.uiBase!, "/zz/v1/services", "x", "X-API-Key: wrong\r\n"))).toBe(404);
    expect(status(await send(server.base, "/v1/services", "x", "X-API-Key: wrong\r\n"))).toBe(401);
    expect(status(await send(server.base, "/v1/health", "api"))).toBe(200);
    // Counted against the caller's own address like any request: the window of 3 runs out.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push(status(await send(server.base, "/v1/presets", "x")));
    expect(statuses.at(-1)).toBe(429);
    expect(status(await send(server.base, "/v1/presets", "localhost"))).toBe(429);
    // A Host no URL can hold: the page still answers, never Bun's error page.
    for (const host of ["[", "%", "a b"]) {
      const answer = await send(server.uiBase!, "/", host);
      expect([host, status(answer)]).toEqual([host, 200]);
      expect(answer).not.toContain("__bunfallback");
    }
    // The size as sent (compressed when accepted), not as fetch decodes it.
    const head = await fetch(server.uiBase + "/", { method: "HEAD", headers: { "accept-encoding": "gzip, br" } });
    const get = await fetch(server.uiBase + "/", { headers: { "accept-encoding": "gzip, br" }, decompress: false });
    expect(Number(head.headers.get("content-length"))).toBe((await get.arrayBuffer()).byteLength);
  });

  test("no Host at all (HTTP/1.0) or an empty one: the path as sent is routed, not one with its first segment taken for a host", async () => {
    server = await startTestServer({}, true);
    const plain = async (base: string, request: string) => status(await rawRequest(base, request));
    // Bun's URL for such a request is the bare path.
    expect(await plain(server.base, "GET /v1/health HTTP/1.0\r\n\r\n")).toBe(200);
    expect(await plain(server.base, "GET /v1/health HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n")).toBe(200);
    expect(await plain(server.base, "GET /zz/v1/health HTTP/1.0\r\n\r\n")).toBe(404);
    expect(await plain(server.uiBase!, "GET / HTTP/1.0\r\n\r\n")).toBe(200);
    expect(await plain(server.uiBase!, "GET /v1/health HTTP/1.0\r\n\r\n")).toBe(200);
  });

  test("a body that cannot be read to its end (broken chunked encoding, a connection closed early) is the sender's 400, never logged as an internal error", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 1e6, generate: 1e6 } });
    const { hostname, port } = new URL(server.base);
    /** Sends `request`, then closes the sending side; resolves once the server closed too. */
    const send = (request: string) =>
      new Promise<void>((done) => {
        const socket = connect(Number(port), hostname, () => socket.end(request));
        socket.on("data", () => {});
        socket.on("close", () => done());
        socket.on("error", () => done());
      });
    const paths = ["/v1/generate", "/v1/validate", "/v1/generate?format=zip", "/v1/deploy"];
    for (const path of paths) {
      await send(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`);
      await send(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"projectName":"cut`);
    }
    await Bun.sleep(200);
    const lines = server.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    // Both broken bodies of every path, each logged once as the sender's 400.
    expect(lines.map((l) => l.path).sort()).toEqual(paths.flatMap((p) => [p.split("?")[0]!, p.split("?")[0]!]).sort());
    for (const line of lines) expect([line.path, line.status, line.level]).toEqual([line.path, 400, "info"]);
  });

  test("X-Request-Id: a plain incoming id is echoed, anything else replaced", async () => {
    server = await startTestServer();
    expect((await get("/v1/health", { "x-request-id": "trace-42.a_b" })).headers.get("x-request-id")).toBe("trace-42.a_b");
    const replaced = (await get("/v1/health", { "x-request-id": "bad id <x>" })).headers.get("x-request-id");
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    const a = (await get("/v1/health")).headers.get("x-request-id");
    const b = (await get("/v1/health")).headers.get("x-request-id");
    expect(a).not.toBe(b);
  });
});

describe("request log", () => {
  test("one JSON line per request: method, path without query, status, ms, request id; never keys or bodies", async () => {
    server = await startTestServer({ apiKeys: [{ key: "super-secret-key-1" }] });
    await get("/v1/services?category=database&token=query-secret", { "x-request-id": "log-test-1" });
    await post("/v1/validate", '{"services":["body-secret"]}', { "x-api-key": "super-secret-key-1" });
    await get("/v1/health", { "x-api-key": "wrong-secret-key" });
    await fetch(server.base + "/v1/health", { method: "OPTIONS" });
    await Bun.sleep(50);
    const lines = server.logs.map((l) => JSON.parse(l));
    expect(lines.length).toBe(4);
    expect(lines[0]).toMatchObject({ level: "info", msg: "request", method: "GET", path: "/v1/services", status: 200, requestId: "log-test-1" });
    expect(typeof lines[0].ms).toBe("number");
    expect(lines.map((l) => l.status)).toEqual([200, 400, 401, 204]);
    const all = server.logs.join("");
    for (const secret of ["query-secret", "category=", "body-secret", "super-secret-key-1", "wrong-secret-key"]) expect(all).not.toContain(secret);
  });

  test("LOG_LEVEL silent and error keep ordinary requests out of the log", async () => {
    for (const logLevel of ["silent", "error"] as const) {
      server = await startTestServer({ logLevel });
      await get("/v1/health");
      await get("/v1/nowhere");
      await Bun.sleep(20);
      expect(server.logs).toEqual([]);
      await server.stop();
      server = undefined;
    }
  });
});

describe("rate limits", () => {
  test("validate counts as standard; POST /v1/generate counts only in its own bucket; over the limit is 429 RATE_LIMITED", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 4, generate: 2 } });
    const before = Date.now();
    const first = await post("/v1/validate", "{}");
    expect(first.headers.get("x-ratelimit-limit")).toBe("4");
    expect(first.headers.get("x-ratelimit-remaining")).toBe("3");
    const reset = Number(first.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThanOrEqual(Math.floor((before + 900_000) / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil((Date.now() + 900_000) / 1000));

    const g1 = await post("/v1/generate", GENERATE_BODY);
    expect(g1.status).toBe(200);
    expect(g1.headers.get("x-ratelimit-limit")).toBe("2");
    expect(g1.headers.get("x-ratelimit-remaining")).toBe("1");
    expect((await post("/v1/generate", GENERATE_BODY)).status).toBe(200);
    const g3 = await post("/v1/generate", GENERATE_BODY);
    expect(g3.status).toBe(429);
    expect(g3.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(g3.headers.get("retry-after"))).toBeGreaterThan(800);
    expect(await g3.json()).toEqual({ error: { code: "RATE_LIMITED", message: expect.any(String) } });

    // Generating used none of the standard budget.
    const s2 = await get("/v1/health");
    expect(s2.status).toBe(200);
    expect(s2.headers.get("x-ratelimit-remaining")).toBe("2");
    expect((await get("/v1/services")).status).toBe(200);
    expect((await get("/v1/nowhere")).status).toBe(404); // 404s count too
    const over = await get("/v1/skills");
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ error: expect.any(String), code: "RATE_LIMITED" }); // flat shape on /v1/skills
    expect((await post("/v1/validate", "{}")).status).toBe(429);
  });

  test("the window resets", async () => {
    server = await startTestServer({ windowMs: 1000, anonymousLimits: { standard: 2, generate: 1 } });
    expect((await get("/v1/health")).status).toBe(200);
    expect((await get("/v1/health")).status).toBe(200);
    const limited = await get("/v1/health");
    expect(limited.status).toBe(429);
    const resetAtMs = Number(limited.headers.get("x-ratelimit-reset")) * 1000;
    expect(Number(limited.headers.get("retry-after"))).toBeLessThanOrEqual(1);
    await Bun.sleep(Math.max(0, resetAtMs - Date.now()) + 50);
    const again = await get("/v1/health");
    expect(again.status).toBe(200);
    expect(again.headers.get("x-ratelimit-remaining")).toBe("1");
  });

  test("valid keys raise the limits (default or per key); a wrong key is 401 and counts against the IP", async () => {
    server = await startTestServer({
      anonymousLimits: { standard: 3, generate: 1 },
      authenticatedLimits: { standard: 6, generate: 3 },
      apiKeys: [{ key: "team-key" }, { key: "small-key", limits: { standard: 2, generate: 2 } }],
    });
    const keyed = await get("/v1/health", { "x-api-key": "team-key" });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get("x-ratelimit-limit")).toBe("6");
    expect(keyed.headers.get("x-ratelimit-remaining")).toBe("5");
    const gen = await post("/v1/generate", GENERATE_BODY, { "x-api-key": "team-key" });
    expect(gen.headers.get("x-ratelimit-limit")).toBe("3");
    const small = await get("/v1/health", { "x-api-key": "small-key" });
    expect(small.headers.get("x-ratelimit-limit")).toBe("2");
    expect((await post("/v1/generate", GENERATE_BODY, { "x-api-key": "small-key" })).headers.get("x-ratelimit-limit")).toBe("2");
    expect((await get("/v1/health", { "x-api-key": "small-key" })).status).toBe(200);
    expect((await get("/v1/health", { "x-api-key": "small-key" })).status).toBe(429);
    expect((await get("/v1/health", { "x-api-key": "team-key" })).status).toBe(200); // other key, own budget

    const wrong = await get("/v1/services", { "x-api-key": "guess-1" });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: { code: "UNAUTHORIZED", message: "Invalid API key." } });
    expect(wrong.headers.get("x-ratelimit-limit")).toBe("3");
    expect(wrong.headers.get("x-ratelimit-remaining")).toBe("2");
    const wrongSkills = await get("/v1/skills", { "x-api-key": "guess-2" });
    expect(await wrongSkills.json()).toEqual({ error: "Invalid API key.", code: "UNAUTHORIZED" });
    expect((await post("/v1/validate", "{}", { "x-api-key": "" })).status).toBe(401);
    // Three wrong keys used the anonymous budget of this IP.
    const anon = await get("/v1/health");
    expect(anon.status).toBe(429);
    // Once over the limit, guesses are refused without being checked.
    expect((await get("/v1/health", { "x-api-key": "guess-4" })).status).toBe(429);
  });

  test("X-Forwarded-For is ignored unless TRUST_PROXY, then the client is its right-most public entry", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 2, generate: 1 } });
    for (let i = 0; i < 2; i++) expect((await get("/v1/health", { "x-forwarded-for": `198.51.100.${i}` })).status).toBe(200);
    expect((await get("/v1/health", { "x-forwarded-for": "198.51.100.77" })).status).toBe(429);
    await server.stop();

    server = await startTestServer({ anonymousLimits: { standard: 2, generate: 1 }, trustProxy: true });
    for (let i = 0; i < 2; i++) expect((await get("/v1/health", { "x-forwarded-for": "203.0.113.5, 10.0.0.1" })).status).toBe(200);
    expect((await get("/v1/health", { "x-forwarded-for": "203.0.113.5, 10.0.0.2" })).status).toBe(429);
    const other = await get("/v1/health", { "x-forwarded-for": "203.0.113.6, 10.0.0.1" });
    expect(other.status).toBe(200);
    expect(other.headers.get("x-ratelimit-remaining")).toBe("1");
    // Rotating what it prepends does not give a client new windows.
    for (let i = 0; i < 3; i++) {
      const r = await get("/v1/health", { "x-forwarded-for": `198.51.100.${i}, 203.0.113.6` });
      expect(r.status).toBe(i === 0 ? 200 : 429);
    }
    // Without a usable header the socket address counts.
    expect((await get("/v1/health", { "x-forwarded-for": "not an ip" })).status).toBe(200);
  });

  test("both listeners pass the caller's socket address to the limiter", async () => {
    const seen: string[] = [];
    const inner = new MemoryStore();
    const spy = { ...inner, hit: (key: string, ms: number) => (seen.push(key), inner.hit(key, ms)), peek: inner.peek.bind(inner), health: () => inner.health(), close: () => inner.close() };
    const guard = createGuard(guardConfig({ logLevel: "silent" }), { store: spy });
    const servers = startServers({ port: 0, uiPort: await freePort(), host: "127.0.0.1", catalog: testCatalog(), guard });
    try {
      await (await fetch(`http://127.0.0.1:${servers.api.port}/v1/health`)).text();
      await (await fetch(`http://127.0.0.1:${servers.ui!.port}/v1/health`)).text();
      expect(seen).toEqual(["standard:127.0.0.1", "standard:127.0.0.1"]);
    } finally {
      await servers.stop();
      await guard.close();
    }
  });

  test("the in-process store stays bounded under many distinct clients", async () => {
    const store = new MemoryStore({ maxEntries: 100 });
    const guard = createGuard(guardConfig({ logLevel: "silent", trustProxy: true }), { store });
    const servers = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", catalog: testCatalog(), guard });
    try {
      for (let i = 0; i < 300; i++) {
        const res = await fetch(`http://127.0.0.1:${servers.api.port}/v1/health`, { headers: { "x-forwarded-for": `10.1.${i >> 8}.${i & 255}` } });
        expect(res.status).toBe(200);
        await res.text();
      }
      expect(store.size).toBeLessThanOrEqual(100);
      expect(store.size).toBeGreaterThan(0);
    } finally {
      await servers.stop();
      await guard.close();
    }
  });
});

describe("CORS", () => {
  test("every origin by default", async () => {
    server = await startTestServer();
    const res = await get("/v1/health", { origin: "https://anywhere.example" });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-expose-headers")).toContain("X-RateLimit-Remaining");
  });

  test("with CORS_ORIGINS only the listed origins, echoed with Vary: Origin", async () => {
    server = await startTestServer({ corsOrigins: ["https://app.example.com"] });
    const allowed = await get("/v1/health", { origin: "https://app.example.com" });
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(allowed.headers.get("vary")).toContain("Origin");
    const refused = await get("/v1/health", { origin: "https://evil.example.com" });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    expect(refused.headers.get("vary")).toContain("Origin");
    const preflight = await fetch(server.base + "/v1/generate", {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type, x-api-key" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
  });

  test("a preflight's Allow names the methods of its path, as that path's 405 does", async () => {
    const servers = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", catalog: testCatalog(), guardConfig: guardConfig({ logLevel: "silent" }) });
    try {
      const base = `http://127.0.0.1:${servers.api.port}`;
      for (const [path, allow] of [["/v1/services", "GET, HEAD, OPTIONS"], ["/v1/services/redis", "GET, HEAD, OPTIONS"], ["/v1/generate", "POST, OPTIONS"]]) {
        const preflight = await fetch(base + path, { method: "OPTIONS" });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get("allow"), path).toBe(allow);
        const wrong = await fetch(base + path, { method: "DELETE" });
        expect(wrong.status).toBe(405);
        expect(wrong.headers.get("allow"), path).toBe(allow);
      }
      // A path the app does not have claims no methods.
      expect((await fetch(base + "/v1/nothing-here", { method: "OPTIONS" })).headers.get("allow")).toBeNull();
    } finally {
      await servers.stop();
    }
  });

  test("preflight is answered on every route of the OpenAPI document", async () => {
    server = await startTestServer({ anonymousLimits: { standard: 2, generate: 1 } });
    const doc = (await (await get("/v1/openapi.json")).json()) as { info: { description: string }; paths: Record<string, Record<string, unknown>> };
    // The document states the limits this server applies, not the defaults.
    expect(doc.info.description).toContain("in a 15-minute window: 2 standard requests and 1 generation without a key, 1000 and 50 with a valid `X-API-Key`");
    const paths = Object.keys(doc.paths);
    expect(paths).toContain("/v1/validate");
    for (const path of paths) {
      for (const method of Object.keys(doc.paths[path])) {
        const res = await fetch(server.base + path.replace(/\{[^}]+\}/g, "redis"), {
          method: "OPTIONS",
          headers: { origin: "https://x.example", "access-control-request-method": method.toUpperCase(), "access-control-request-headers": "x-api-key, content-type" },
        });
        expect({ path, status: res.status }).toEqual({ path, status: 204 });
        expect(res.headers.get("access-control-allow-origin")).toBe("*");
        expect(res.headers.get("access-control-allow-methods")).toContain(method.toUpperCase());
        const allowedHeaders = res.headers.get("access-control-allow-headers")!.toLowerCase();
        expect(allowedHeaders).toContain("x-api-key");
        expect(allowedHeaders).toContain("content-type");
      }
    }
    // Preflights are not counted.
    expect((await get("/v1/health")).headers.get("x-ratelimit-remaining")).toBe("0");
  });
});

describe("body limit and input size", () => {
  test("declared bodies over 1 MiB are 413 PAYLOAD_TOO_LARGE; exactly 1 MiB is accepted", async () => {
    server = await startTestServer();
    const over = await post("/v1/validate", "{}" + " ".repeat(MIB - 1));
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) } });
    const exact = await post("/v1/validate", '{"services":[]}'.padEnd(MIB, " "));
    expect(exact.status).toBe(200);
    // Far over the limit too: the JSON error and the guard's headers, never the transport's bare 413.
    const huge = await post("/v1/generate", "x".repeat(64 * MIB));
    expect(huge.status).toBe(413);
    expect(huge.headers.get("x-ratelimit-limit")).not.toBeNull();
    expect(await huge.json()).toEqual({ error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) } });
  });

  test("chunked bodies (no Content-Length) are measured too", async () => {
    server = await startTestServer();
    const chunked = (size: number, text: string) =>
      fetch(server!.base + "/v1/validate", {
        method: "POST",
        headers: JSON_HEADERS,
        body: new ReadableStream({
          start(controller) {
            const bytes = new TextEncoder().encode(text.padEnd(size, " "));
            for (let at = 0; at < bytes.length; at += 64 * 1024) controller.enqueue(bytes.slice(at, at + 64 * 1024));
            controller.close();
          },
        }),
        duplex: "half",
      } as RequestInit);
    const over = await chunked(MIB + 10, "{}");
    expect(over.status).toBe(413);
    expectErrorShape(await over.json());
    // Read only up to the limit: a sender that keeps going is refused all the same.
    const huge = await chunked(16 * MIB, "{}");
    expect(huge.status).toBe(413);
    expect(huge.headers.get("x-ratelimit-limit")).not.toBeNull();
    expect(((await huge.json()) as { error: { code: string } }).error.code).toBe("PAYLOAD_TOO_LARGE");
    const under = await chunked(MIB - 10, '{"services":["redis"]}');
    expect(under.status).toBe(200);
    expect(((await under.json()) as { resolvedServices: string[] }).resolvedServices).toContain("redis");
  });

  test("arrays of more than 200 ids are refused by the schemas", async () => {
    server = await startTestServer();
    const ids = Array.from({ length: 201 }, () => "redis");
    for (const [path, body] of [["/v1/validate", { services: ids }], ["/v1/validate", { skillPacks: ids }], ["/v1/generate", { projectName: "x", services: ids }]] as const) {
      const res = await post(path, JSON.stringify(body));
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { code: string; details: { field: string }[] } };
      expect(json.error.code).toBe("VALIDATION_ERROR");
      expect(json.error.details.some((d) => /^(services|skillPacks)/.test(d.field))).toBe(true);
    }
  });
});
