// Seeded fuzzing of every route of the OpenAPI document: malformed and random bodies, headers,
// query strings and path parameters. Every answer must be below 500, every refusal must have the
// SPEC error body, and the server must still serve afterwards. Reproduce with FUZZ_SEED=<seed>.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "./guard-helpers.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_125);
const CASES = Number(process.env.FUZZ_CASES ?? 2400);
const CONCURRENCY = 16;

/** mulberry32: small, fast, deterministic. */
function makeRng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof makeRng>;

const ALPHABET = "abcxyz019-_./\\:;,?#&=%+*@!$'\"`<>{}[]() \t\n\r\u0000\u001f\u007f\u00e9\u00ff\u2028\u{1f600}\ufeff";
const FIELD_NAMES = [
  "projectName", "services", "skillPacks", "preset", "proxy", "domain", "gpu", "platform", "deployment", "deploymentType",
  "generateSecrets", "coreVersion", "configVersion", "format", "input", "complete", "provider", "apiKey", "update",
  "__proto__", "constructor", "prototype", "formatVersion", "files", "metadata",
];
const VALUES = ["redis", "postgresql", "n8n", "caddy", "traefik", "none", "linux/amd64", "linux/arm64", "docker", "bare-metal", "local", "minimal", "full-stack", "devops", "research", "coolify", "dokploy", "", "x", "../../etc/passwd", "a".repeat(300)];

function randomText(rng: Rng, max = 24): string {
  const chars = Array.from(ALPHABET);
  let s = "";
  for (let i = rng.int(max + 1); i > 0; i--) s += rng.pick(chars);
  return s;
}

function randomValue(rng: Rng, depth = 0): unknown {
  const kind = rng.int(depth > 3 ? 6 : 9);
  switch (kind) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER, 1, 2, 3, 200, 201]);
    case 3: return rng.pick(VALUES);
    case 4: case 5: return randomText(rng);
    case 6: return Array.from({ length: rng.chance(0.05) ? 250 : rng.int(5) }, () => (rng.chance(0.6) ? rng.pick(VALUES) : randomValue(rng, depth + 1)));
    default: return randomObject(rng, depth + 1);
  }
}

function randomObject(rng: Rng, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = rng.int(6); i > 0; i--) {
    const key = rng.chance(0.8) ? rng.pick(FIELD_NAMES) : randomText(rng, 8);
    // Never a deploy target: without `url` no deploy request can pass validation.
    if (key.toLowerCase() === "url") continue;
    out[key] = randomValue(rng, depth);
  }
  return out;
}

function randomBody(rng: Rng): string | Uint8Array | undefined {
  switch (rng.int(12)) {
    case 0: return undefined;
    case 1: return "";
    case 2: return JSON.stringify(randomValue(rng));
    case 3: return JSON.stringify(randomObject(rng)).slice(0, -1 - rng.int(5)); // truncated
    case 4: return "[".repeat(2000 + rng.int(20_000)) + "]".repeat(rng.int(3));
    case 5: return Uint8Array.from({ length: rng.int(300) }, () => rng.int(256)); // binary, invalid UTF-8
    case 6: return "\ufeff" + JSON.stringify(randomObject(rng));
    case 7: return `--b\r\nContent-Disposition: form-data; name="services"\r\n\r\n${randomText(rng)}\r\n--b--`;
    case 8: return `projectName=${encodeURIComponent(randomText(rng))}&services=redis&services=${randomText(rng, 5)}`;
    case 9: return JSON.stringify({ projectName: rng.pick(["x", "ok-name", randomText(rng, 10)]), services: rng.chance(0.5) ? ["redis"] : randomValue(rng), ...randomObject(rng) });
    default: return JSON.stringify(randomObject(rng));
  }
}

const CONTENT_TYPES = [
  "application/json", "application/json; charset=utf-8", "application/json; charset=utf-16", "text/plain", "text/html",
  "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", "multipart/form-data", "application/octet-stream",
  "application/zip", "garbage", "application/json, text/plain", ";;;", undefined,
];

function randomQuery(rng: Rng): string {
  if (rng.chance(0.3)) return "";
  const parts: string[] = [];
  for (let i = 1 + rng.int(4); i > 0; i--) {
    const key = rng.pick(["format", "services", "category", "maturity", "id", "__proto__", "a[]", randomText(rng, 6)]);
    const value = rng.pick([rng.pick(VALUES), randomText(rng), "zip", "complete", "json", "database", "stable", "%zz", "%", "redis,redis,", ",,,"]);
    parts.push(`${encodeURIComponent(key)}=${rng.chance(0.2) ? value.replace(/[^A-Za-z0-9%,]/g, "") : encodeURIComponent(value)}`);
  }
  if (rng.chance(0.1)) parts.push("%E0%A4%A", "==", "&&");
  return "?" + parts.join("&");
}

function randomHeaders(rng: Rng): Record<string, string> {
  const headers: Record<string, string> = {};
  const type = rng.pick(CONTENT_TYPES);
  if (type) headers["content-type"] = type;
  if (rng.chance(0.3)) headers.accept = rng.pick(["application/zip", "*/*", "text/html", "application/json", "garbage/;q=x"]);
  if (rng.chance(0.2)) headers["x-request-id"] = randomText(rng, 40).replace(/[\r\n\u0000-\u001f\u007f-\uffff]/g, "");
  if (rng.chance(0.2)) headers.origin = rng.pick(["https://a.example", "null", "file://", randomText(rng, 10).replace(/[^\x21-\x7e]/g, "")]);
  if (rng.chance(0.2)) headers["x-forwarded-for"] = rng.pick(["1.2.3.4", "::1, 1.1.1.1", "junk", "999.999.999.999"]);
  if (rng.chance(0.05)) headers["x-api-key"] = randomText(rng, 12).replace(/[^\x21-\x7e]/g, "") || "k";
  return headers;
}

function pathFor(rng: Rng, template: string): string {
  let path = template.replace(/\{[^}]+\}/g, () =>
    rng.chance(0.3) ? rng.pick(["redis", "minimal", "n8n"]) : encodeURIComponent(randomText(rng, 20)) || "x");
  if (rng.chance(0.05)) path += rng.pick(["/", "//", "/extra", "%00", "/..%2f.."]);
  return path;
}

let server: TestServer;
let routes: { path: string; method: string }[] = [];

beforeAll(async () => {
  server = await startTestServer({ logLevel: "silent", anonymousLimits: { standard: 1e9, generate: 1e9 } });
  const doc = (await (await fetch(`${server.base}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ path, method: method.toUpperCase() })));
});
afterAll(async () => {
  await server.stop();
});

function checkErrorBody(route: string, status: number, text: string): string | undefined {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return `non-JSON ${status} body: ${text.slice(0, 80)}`;
  }
  const nested = body && typeof body.error === "object" && body.error !== null && typeof body.error.code === "string" && typeof body.error.message === "string"
    && (body.error.details === undefined || (Array.isArray(body.error.details) && body.error.details.every((d: any) => typeof d?.field === "string" && typeof d?.message === "string")));
  const flat = body && typeof body.error === "string" && typeof body.code === "string";
  // /v1/skills answers its own refusals flat (SPEC §7); schema-level refusals there may be nested.
  const ok = route === "/v1/skills" ? flat || nested : nested;
  return ok ? undefined : `bad error shape: ${text.slice(0, 120)}`;
}

test(`fuzz: ${CASES} malformed requests to every route never get a 5xx (seed ${SEED})`, async () => {
  expect(routes.map((r) => r.path)).toEqual(expect.arrayContaining(["/v1/health", "/v1/validate", "/v1/generate", "/v1/services/{id}", "/v1/skills"]));
  const rng = makeRng(SEED);
  const cases = Array.from({ length: CASES }, (_, i) => {
    const route = routes[i % routes.length];
    const method = rng.chance(0.85) ? route.method : rng.pick(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]);
    return { i, route: route.path, method, url: pathFor(rng, route.path) + randomQuery(rng), headers: randomHeaders(rng), body: method === "GET" || method === "HEAD" ? undefined : randomBody(rng) };
  });
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < cases.length) {
      const c = cases[next++];
      const res = await fetch(server.base + c.url, { method: c.method, headers: c.headers, body: c.body as BodyInit | undefined });
      const text = await res.text();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const where = `#${c.i} ${c.method} ${c.url.slice(0, 80)} -> ${res.status}`;
      if (res.status >= 500) failures.push(`${where}: ${text.slice(0, 160)}`);
      else if (res.status >= 400 && c.method !== "HEAD") {
        const problem = checkErrorBody(c.route, res.status, text);
        if (problem) failures.push(`${where}: ${problem}`);
      }
      if (!res.headers.get("x-ratelimit-limit")) failures.push(`${where}: no X-RateLimit-Limit`);
    }
  }));
  if (process.env.FUZZ_VERBOSE) console.error(JSON.stringify([...statuses].sort()), routes.map((r) => r.method + " " + r.path).join(", "));
  if (failures.length) console.error(`seed ${SEED}: ${failures.length} failures\n${failures.slice(0, 20).join("\n")}`);
  expect(failures).toEqual([]);
  // The fuzz reached past the schemas at least sometimes, and refused plenty.
  expect([...statuses.keys()].some((s) => s >= 200 && s < 300)).toBe(true);
  expect([...statuses.entries()].filter(([s]) => s >= 400).reduce((n, [, c]) => n + c, 0)).toBeGreaterThan(CASES / 4);

  // Still serving.
  const health = await fetch(`${server.base}/v1/health`);
  expect(health.status).toBe(200);
  const valid = await fetch(`${server.base}/v1/validate`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"services":["redis"]}' });
  expect(valid.status).toBe(200);
  expect(((await valid.json()) as { resolvedServices: string[] }).resolvedServices).toEqual(["redis"]);
}, 120_000);
