// POST /v1/deploy: the loopback/key rule and the streamed steps, over real listeners and a fake
// Coolify that checks every request against its published OpenAPI document.
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServers } from "../../src/api/server.ts";
import { createApp, defaultDeployPolicy } from "../../src/api/app.ts";
import { createGuard, readGuardConfig } from "../../src/api/guard/index.ts";
import { CoolifyFake, destination, usableServer } from "../deploy/fakes/coolify-fake.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";

const KEY = "relay-test-key-0123456789";
let fake: CoolifyFake;
let servers: ReturnType<typeof startServers>;
let base = "";

beforeAll(async () => {
  fake = await new CoolifyFake().start();
  const guard = createGuard(readGuardConfig({ API_KEYS: KEY, LOG_LEVEL: "silent" }));
  servers = startServers({ port: 0, uiPort: 0, uiAnyPort: true, host: "127.0.0.1", guard });
  base = `http://127.0.0.1:${servers.api.port}`;
});
afterAll(async () => {
  await servers?.stop();
  await fake?.stop();
});

const body = () => ({ provider: "coolify", url: fake.url, apiKey: fake.token, input: { projectName: "relay-demo", preset: "minimal" } });
const post = (b: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${base}/v1/deploy`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(b), signal });

async function lines(r: Response): Promise<any[]> {
  return (await r.text()).trim().split("\n").map((l) => JSON.parse(l));
}

describe("POST /v1/deploy", () => {
  test("a loopback client gets streamed steps ending in the result", async () => {
    const r = await post(body());
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/x-ndjson");
    const events = await lines(r);
    const steps = events.filter((e) => e.type === "step");
    expect(steps.length).toBeGreaterThan(5);
    expect(steps.map((s) => s.step)).toContain("Deploy");
    const last = events.at(-1);
    expect(last.type).toBe("result");
    expect(last.result.success).toBe(true);
    expect(fake.violations).toEqual([]);
    expect(fake.projects.map((p) => p.name)).toContain("relay-demo");
    expect(JSON.stringify(events)).not.toContain(fake.token);
  });

  test("the instance URL's scheme is read in any case, as the CLI reads it", async () => {
    const r = await post({ ...body(), update: true, url: fake.url.replace(/^http:/, "HTTP:") });
    expect(r.status).toBe(200);
    expect((await lines(r)).at(-1).result.success).toBe(true);
  });

  test("a complete document is accepted in place of input", async () => {
    const r = await post({ provider: "coolify", url: fake.url, apiKey: fake.token, update: true, complete: { formatVersion: "1", input: { projectName: "relay-demo", preset: "minimal" } } });
    const last = (await lines(r)).at(-1);
    expect(last.result.success).toBe(true);
    expect(fake.projects.filter((p) => p.name === "relay-demo")).toHaveLength(1);
  });

  test("bad input is a 400 naming the field from the body's root, before any call to the platform", async () => {
    const before = fake.calls.length;
    const cases: [unknown, string, string][] = [
      [{ ...body(), input: { projectName: "a", services: ["redis"] } }, "input.projectName", "3 to 255 characters"],
      [{ ...body(), input: { projectName: "relay-x", services: ["nope"] } }, "input.services.0", "nope"],
      [{ ...body(), input: undefined, complete: { formatVersion: "1", input: { projectName: "ab", services: ["redis"] } } }, "complete.input.projectName", "3 to 255 characters"],
      [{ ...body(), input: undefined, complete: { formatVersion: "1", input: { projectName: "relay-x", services: ["nope"] } } }, "complete.input.services.0", "nope"],
      [{ ...body(), input: undefined, complete: { formatVersion: "99", input: { projectName: "relay-x", services: ["redis"] } } }, "complete.formatVersion", "Unsupported format version"],
      [{ ...body(), input: undefined, complete: { formatVersion: 1, input: { projectName: "relay-x", services: ["redis"] } } }, "complete.formatVersion", "Unsupported format version"],
    ];
    for (const [request, field, message] of cases) {
      const r = await post(request);
      expect(r.status, field).toBe(400);
      const error = ((await r.json()) as any).error;
      expect(error.code).toBe("VALIDATION_ERROR");
      // In this route's words, whichever check found it (generate's said "Invalid generation input").
      expect(error.message, field).toBe("Invalid deploy request");
      expect(error.details, field).toContainEqual({ field, message: expect.stringContaining(message) });
    }
    // A shape error and an unknown id in one body: both named, from the body's root.
    const both = await post({ ...body(), input: { projectName: "BAD", services: ["nope"] } });
    expect(both.status).toBe(400);
    expect(((await both.json()) as any).error.details.map((d: any) => d.field).sort()).toEqual(["input.projectName", "input.services.0"]);
    // A message of its own stays (CONTRACT §3).
    const version = await post({ ...body(), input: { projectName: "relay-x", services: ["redis"], configVersion: 99 } });
    expect(((await version.json()) as any).error).toMatchObject({ message: "No migration path from config version 99", details: [{ field: "input.configVersion" }] });
    // A part that is not an object is named itself, not a field inside it.
    const parts: [Record<string, unknown>, { field: string; message: string }[]][] = [
      [{ complete: null }, [{ field: "complete", message: "Expected object, received null" }]],
      [{ complete: "doc" }, [{ field: "complete", message: "Expected object, received string" }]],
      [{ input: [] }, [{ field: "input", message: "Expected object, received array" }]],
      [{ input: null, complete: null }, [{ field: "input", message: "Expected object, received null" }, { field: "complete", message: "Expected object, received null" }]],
      [{ input: 5, provider: "heroku" }, [{ field: "provider", message: expect.any(String) }, { field: "input", message: "Expected object, received number" }]],
      // Files that are not an object are refused, not dropped (Elysia's check would make "x" {"0":"x"}).
      ...(["x", [], 5, true] as const).map((files): [Record<string, unknown>, { field: string; message: string }[]] => [
        { complete: { formatVersion: "1", input: { projectName: "relay-x", services: ["redis"] }, files } },
        [{ field: "complete.files", message: `Expected object, received ${Array.isArray(files) ? "array" : typeof files}` }],
      ]),
    ];
    for (const [part, details] of parts) {
      const r = await post({ ...body(), input: undefined, ...part });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).error, JSON.stringify(part)).toEqual({ code: "VALIDATION_ERROR", message: "Invalid deploy request", details });
    }
    // A body that starts with byte order marks (one the decoder drops, one more an editor added).
    const marked = await fetch(`${base}/v1/deploy`, { method: "POST", headers: { "content-type": "application/json" }, body: new Uint8Array([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, ...new TextEncoder().encode(JSON.stringify({ ...body(), provider: "heroku" }))]) });
    expect(marked.status).toBe(400);
    expect(((await marked.json()) as any).error.details).toEqual([{ field: "provider", message: expect.any(String) }]);
    const conflict = await post({ ...body(), input: { projectName: "relay-x", services: ["redis", "valkey"] } });
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as any).error.details[0].field).toBe("input.services");
    expect(fake.calls.length).toBe(before);
  });

  test("an update never replaces the secrets a running stack has; a document's .env is what gets deployed", async () => {
    const own = await new CoolifyFake().start();
    try {
      const input = { projectName: "relay-secrets", preset: "minimal" };
      const doc = (await (await fetch(`${base}/v1/generate?format=complete`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(input) })).json()) as any;
      const first = (await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, complete: doc }))).at(-1);
      expect(first.result.success).toBe(true);
      const values = () => new Map([...own.services[0]!.envs.values()].map((row) => [row.key, row.value]));
      const deployed = values();
      // The deployed values are the document's (what the user previewed or downloaded).
      const documentEnv = parseEnvValues(doc.files[".env"]);
      const secret = [...documentEnv].find(([key, value]) => /PASSWORD|SECRET|KEY/.test(key) && value.length >= 16)!;
      expect(secret).toBeDefined();
      expect(deployed.get(secret[0])).toBe(secret[1]);
      // Each relay request generates new secrets: an update must not push them over the old ones.
      for (const again of [{ input }, { complete: { input } }]) {
        const update = (await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, update: true, ...again }))).at(-1);
        expect(update.result.success).toBe(true);
        expect(values()).toEqual(deployed);
      }
      expect(own.violations).toEqual([]);
    } finally {
      await own.stop();
    }
  });

  test("a document's .env is taken as the CLI and the UI take one: only this stack's variables, in their shape, and what it changes is named", async () => {
    const own = await new CoolifyFake().start();
    try {
      const input = { projectName: "relay-foreign", services: ["n8n"], proxy: "caddy" };
      const doc = (await (await fetch(`${base}/v1/generate?format=complete`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(input) })).json()) as any;
      const env = doc.files[".env"] as string;
      expect(env).toMatch(/^CORE_IMAGE=$/m);
      expect(env).toMatch(/^N8N_WEBHOOK_URL=/m);
      expect(env).toMatch(/^CADDY_ACME_EMAIL=/m);
      // Someone else's export: a variable of no service, another gateway image, a webhook address
      // elsewhere, and an e-mail that is not one.
      doc.files[".env"] = env
        .replace(/^CORE_IMAGE=.*$/m, "CORE_IMAGE=evil/backdoor")
        // A gateway tag that is no image tag (`--core-version` refuses it with a 400).
        .replace(/^CORE_VERSION=.*$/m, "CORE_VERSION=$(id)")
        .replace(/^N8N_WEBHOOK_URL=.*$/m, "N8N_WEBHOOK_URL=https://collector.evil.example/")
        .replace(/^CADDY_ACME_EMAIL=.*$/m, "CADDY_ACME_EMAIL=x}\\nadmin 0.0.0.0:2019")
        // A secret that would end the connection URL it goes into (`postgresql://agent:${…}@postgresql`).
        .replace(/^POSTGRESQL_AGENT_PASSWORD=.*$/m, "POSTGRESQL_AGENT_PASSWORD=x@collector.evil.example:5432/agent#")
        + "EXTRA_FOREIGN=from-someone-else\nCOMPOSE_PROJECT_NAME=other\n";
      const events = await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, complete: doc }));
      const result = events.at(-1).result;
      expect(result.success).toBe(true);
      const sent = new Map([...own.services[0]!.envs.values()].map((row) => [row.key, row.value]));
      expect(sent.has("EXTRA_FOREIGN")).toBe(false);
      expect(sent.has("COMPOSE_PROJECT_NAME")).toBe(false);
      expect(sent.get("CADDY_ACME_EMAIL")).toBe("");
      // Settings of the stack are taken (the user's own export must keep its choices), and named.
      expect(sent.get("CORE_IMAGE")).toBe("evil/backdoor");
      expect(sent.get("CORE_VERSION")).toBe("latest");
      const changes = (result.changes as string[]).filter((c) => c.startsWith(".env of the document"));
      expect(changes).toHaveLength(3);
      expect(changes[0]).toContain("CORE_IMAGE, N8N_WEBHOOK_URL taken");
      expect(changes[1]).toContain("EXTRA_FOREIGN, COMPOSE_PROJECT_NAME not taken");
      expect(changes[2]).toMatch(/not taken \(not the shape/);
      for (const name of ["CORE_VERSION", "CADDY_ACME_EMAIL", "POSTGRESQL_AGENT_PASSWORD"]) expect(changes[2]).toContain(name);
      expect(sent.get("POSTGRESQL_AGENT_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);
      // The document's own secrets are still what gets deployed.
      const password = parseEnvValues(env).get("N8N_DB_PASSWORD")!;
      expect(password.length).toBeGreaterThanOrEqual(32);
      expect(sent.get("N8N_DB_PASSWORD")).toBe(password);
      // A document of this stackgen, untouched, changes nothing and says nothing.
      const again = await (await fetch(`${base}/v1/generate?format=complete`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...input, projectName: "relay-own" }) })).json() as any;
      const plain = (await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, complete: again }))).at(-1).result;
      expect(plain.success).toBe(true);
      expect((plain.changes as string[]).filter((c) => c.startsWith(".env of the document"))).toEqual([]);
      // A quote that never closes is refused before any call, naming where it is.
      const before = own.calls.length;
      const broken = await post({ provider: "coolify", url: own.url, apiKey: own.token, complete: { ...doc, files: { ".env": 'A="open\n' } } });
      expect(broken.status).toBe(400);
      expect(((await broken.json()) as any).error).toMatchObject({ code: "VALIDATION_ERROR", message: "Invalid deploy request", details: [{ field: "complete.files..env", message: expect.stringContaining("never closes") }] });
      expect(own.calls.length).toBe(before);
      expect(own.violations).toEqual([]);
    } finally {
      await own.stop();
    }
  });

  test("an update that keeps the platform's JWT secret sends API keys signed with it", async () => {
    const own = await new CoolifyFake().start();
    try {
      const input = { projectName: "relay-keys", services: ["supabase"] };
      expect((await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, input }))).at(-1).result.success).toBe(true);
      const envs = own.services[0]!.envs;
      // As a stack deployed before its keys existed: the secret is there, the keys are not.
      envs.delete("SUPABASE_ANON_KEY");
      envs.delete("SUPABASE_SERVICE_ROLE_KEY");
      const secret = envs.get("SUPABASE_JWT_SECRET")!.value;
      expect((await lines(await post({ provider: "coolify", url: own.url, apiKey: own.token, update: true, input }))).at(-1).result.success).toBe(true);
      expect(envs.get("SUPABASE_JWT_SECRET")!.value).toBe(secret);
      for (const name of ["SUPABASE_ANON_KEY", "SUPABASE_SERVICE_ROLE_KEY"]) {
        const [header, payload, signature] = envs.get(name)!.value.split(".");
        expect(signature).toBe(createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url"));
      }
      expect(own.violations).toEqual([]);
    } finally {
      await own.stop();
    }
  });

  test("destination names the Coolify destination on a server that has several", async () => {
    const server = usableServer();
    const apps = destination("apps");
    const busy = await new CoolifyFake({ servers: [server], destinations: { [server.uuid]: [destination("db"), apps] } }).start();
    try {
      const request = { provider: "coolify", url: busy.url, apiKey: busy.token, input: { projectName: "relay-busy", preset: "minimal" } };
      const refused = (await lines(await post(request))).at(-1);
      expect(refused.result.success).toBe(false);
      expect(refused.result.error).toContain("several Docker destinations");
      const chosen = (await lines(await post({ ...request, update: true, destination: "apps" }))).at(-1);
      expect(chosen.result.success).toBe(true);
      expect(busy.services[0]!.destination_uuid).toBe(apps.uuid);
      expect(busy.violations).toEqual([]);
      expect((await post({ ...request, destination: "" })).status).toBe(400);
    } finally {
      await busy.stop();
    }
  });

  test("a provider error is reported in the stream, naming the step", async () => {
    const r = await post({ ...body(), apiKey: "wrong-token" });
    const last = (await lines(r)).at(-1);
    expect(last.result.success).toBe(false);
    expect(last.result.error).toBe("Coolify API 401: Unauthorized");
  });

  test("a platform slower than the server's idle timeout (10 s) still gets its answer streamed, not a cut connection", async () => {
    // Answers every call after 12 s (the fake's own listener waits that long).
    const slow = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 60,
      fetch: async () => {
        await Bun.sleep(12_000);
        return Response.json({ message: "Unauthenticated." }, { status: 401 });
      },
    });
    try {
      const r = await post({ ...body(), url: `http://127.0.0.1:${slow.port}` });
      expect(r.status).toBe(200);
      const events = await lines(r);
      expect(events[0]).toMatchObject({ type: "step", step: "Test connection", status: "running" });
      expect(events.at(-1).result).toMatchObject({ success: false, failedStep: "Test connection", error: "Coolify API 401: Unauthorized" });
    } finally {
      await slow.stop(true);
    }
  }, 30_000);

  test("a caller that goes away mid-deploy: the call under way finishes, no further step starts (as the CLI's Ctrl-C)", async () => {
    const slow = await new CoolifyFake().start();
    slow.delayMs = 400;
    try {
      const leaving = new AbortController();
      const r = await post({ ...body(), url: slow.url, apiKey: slow.token, input: { projectName: "relay-gone", preset: "minimal" } }, {}, leaving.signal);
      const reader = r.body!.getReader();
      await reader.read(); // the first step has begun
      leaving.abort();
      const sentWhenGone = slow.calls.length;
      // Long enough for every remaining call of a deploy, had it gone on.
      await Bun.sleep(4_000);
      expect(slow.calls.length).toBeLessThanOrEqual(sentWhenGone + 1);
      expect(slow.services).toHaveLength(0);
      expect(slow.deployments).toHaveLength(0);
    } finally {
      await slow.stop();
    }
  }, 30_000);

  test("a caller that sends half a deploy body is still cut off by the idle timeout", async () => {
    let closed = false;
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port: servers.api.port!,
      socket: { data() {}, close() { closed = true; } },
    });
    socket.write(`POST /v1/deploy HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"provider":`);
    await Bun.sleep(12_500);
    expect(closed).toBe(true);
    socket.end();
  }, 30_000);

  test("only application/json starts a deploy: a web page can post text/plain to a local server without a preflight", async () => {
    const before = fake.calls.length;
    for (const type of ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded"]) {
      const r = await fetch(`${base}/v1/deploy`, { method: "POST", headers: { "content-type": type }, body: JSON.stringify(body()) });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).error.details[0].message).toContain("Expected Content-Type application/json");
      // From a page of another site, it is refused as that before the body is read.
      const page = await fetch(`${base}/v1/deploy`, { method: "POST", headers: { "content-type": type, origin: "https://evil.example" }, body: JSON.stringify(body()) });
      expect(page.status).toBe(403);
    }
    expect(fake.calls.length).toBe(before);
  });

  test("bad input is a plain 400 before anything is called", async () => {
    const before = fake.calls.length;
    const r = await post({ provider: "heroku", url: fake.url, apiKey: "x", input: { projectName: "a", services: ["redis"] } });
    expect(r.status).toBe(400);
    const error = (await r.json() as any).error;
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.message).toBe("Invalid deploy request");
    const missing = await post({ provider: "coolify", url: fake.url, apiKey: "x" });
    expect(missing.status).toBe(400);
    // The router takes /v1/deploy/ as /v1/deploy: its errors read the same.
    const slash = await fetch(`${base}/v1/deploy/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ provider: "heroku", url: fake.url, apiKey: "x", input: { projectName: "a" } }) });
    expect(slash.status).toBe(400);
    expect((await slash.json() as any).error.message).toBe("Invalid deploy request");
    // Checks shared with the CLI answer with the API's code, never the CLI's USAGE_ERROR.
    // Each names the field it is about (CONTRACT §3).
    const cases: [unknown, string][] = [
      [{ ...body(), url: "ftp://example.com" }, "url"],
      [{ ...body(), url: "http://169.254.169.254/latest" }, "url"],
      [{ ...body(), url: "http://" }, "url"],
      [{ ...body(), url: "https://user:pw@paas.example.com" }, "url"],
      [{ ...body(), apiKey: "line\nbreak" }, "apiKey"],
      [{ ...body(), input: { projectName: "a", preset: "minimal" } }, "input.projectName"],
    ];
    for (const [bad, field] of cases) {
      const r2 = await post(bad);
      expect(r2.status).toBe(400);
      const error = ((await r2.json()) as any).error;
      expect(error.code).toBe("VALIDATION_ERROR");
      expect(error.details.map((d: any) => d.field), field).toEqual([field]);
      expect(error.message).not.toContain("coolify.example.com");
    }
    expect(fake.calls.length).toBe(before);
  });

  test("remote clients need a valid key unless ALLOW_REMOTE_DEPLOY=true", async () => {
    const app = createApp({ deployPolicy: defaultDeployPolicy(undefined, {}) });
    // app.handle has no socket: the caller is not loopback, so the rule applies.
    const r = await app.handle(new Request("http://localhost/v1/deploy", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body()) }));
    expect(r.status).toBe(403);
    const b = await r.json() as any;
    expect(b.error.code).toBe("FORBIDDEN");
    expect(b.error.message).toContain("ALLOW_REMOTE_DEPLOY=true");
    // Whatever it sends: a caller who may not deploy learns nothing of what the body must hold.
    for (const [type, sent] of [["application/json", "{}"], ["text/plain", "x"], ["application/json", "{"], [undefined, undefined]] as const) {
      const headers: Record<string, string> = type ? { "content-type": type } : {};
      const other = await app.handle(new Request("http://localhost/v1/deploy", { method: "POST", headers, body: sent }));
      expect(other.status, `${type} ${sent}`).toBe(403);
      expect(((await other.json()) as any).error.code).toBe("FORBIDDEN");
    }

    const guard = createGuard(readGuardConfig({ API_KEYS: KEY, LOG_LEVEL: "silent", TRUST_PROXY: "true" }));
    const proxied = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", guard });
    try {
      const url = `http://127.0.0.1:${proxied.api.port}/v1/deploy`;
      const remote = { "content-type": "application/json", "x-forwarded-for": "203.0.113.7" };
      const refused = await fetch(url, { method: "POST", headers: remote, body: JSON.stringify(body()) });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as any).error.message).toContain("with a valid X-API-Key");
      const withKey = await fetch(url, { method: "POST", headers: { ...remote, "x-api-key": KEY }, body: JSON.stringify({ ...body(), update: true }) });
      expect(withKey.status).toBe(200);
      expect((await lines(withKey)).at(-1).result.success).toBe(true);
    } finally {
      await proxied.stop();
    }
    // A server without API keys does not send the caller looking for one.
    const keyless = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", guard: createGuard(readGuardConfig({ LOG_LEVEL: "silent", TRUST_PROXY: "true" })) });
    try {
      const r2 = await fetch(`http://127.0.0.1:${keyless.api.port}/v1/deploy`, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.7" }, body: JSON.stringify(body()) });
      expect(r2.status).toBe(403);
      expect(((await r2.json()) as any).error.message).toContain("this server has no API keys (API_KEYS)");
    } finally {
      await keyless.stop();
    }
    const open = createApp({ deployPolicy: defaultDeployPolicy(undefined, { ALLOW_REMOTE_DEPLOY: "true" }) });
    const allowed = await open.handle(new Request("http://localhost/v1/deploy", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body(), update: true }) }));
    expect(allowed.status).toBe(200);
    await allowed.text();
  });

  test("a forwarded caller is not loopback, whatever it prepends to X-Forwarded-For", async () => {
    // The relay would call a URL the caller chooses: a remote client behind a proxy on this
    // machine must not pass as local by writing 127.0.0.1 where the proxy keeps it.
    for (const trustProxy of ["true", "false"]) {
      const guard = createGuard(readGuardConfig({ LOG_LEVEL: "silent", TRUST_PROXY: trustProxy }));
      const proxied = startServers({ port: 0, uiPort: 0, host: "127.0.0.1", guard });
      try {
        const url = `http://127.0.0.1:${proxied.api.port}/v1/deploy`;
        const before = fake.calls.length;
        const forgedHops: Record<string, string>[] = [
          { "x-forwarded-for": "127.0.0.1, 203.0.113.9" },
          { "x-forwarded-for": "203.0.113.9" },
          { "x-real-ip": "203.0.113.9" },
          { forwarded: 'for=127.0.0.1, for="[2001:db8::7]:4711"' },
          { "x-forwarded-for": "unknown" },
          { "cf-connecting-ip": "203.0.113.9" },
          { "true-client-ip": "203.0.113.9" },
        ];
        for (const forwarded of forgedHops) {
          const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...forwarded }, body: JSON.stringify(body()) });
          expect({ forwarded, status: r.status }).toEqual({ forwarded, status: 403 });
          expect(((await r.json()) as any).error.code).toBe("FORBIDDEN");
        }
        expect(fake.calls.length).toBe(before);
        // With TRUST_PROXY a proxy is in front: a request without any forwarded chain may come
        // through one that forwards no header, so it is not taken for a local caller.
        const bare = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body(), update: true }) });
        expect(bare.status).toBe(trustProxy === "true" ? 403 : 200);
        await bare.text();
        // A proxy on this machine forwarding a local caller keeps the relay open to it.
        const local = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": "127.0.0.1", forwarded: "for=\"[::1]:5000\"" }, body: JSON.stringify({ ...body(), update: true }) });
        expect(local.status).toBe(200);
        expect((await lines(local)).at(-1).result.success).toBe(true);
      } finally {
        await proxied.stop();
      }
    }
  });

  test("a page of another site, or a rebinding DNS name, does not get the loopback privilege", async () => {
    // CORS is open by default, so any page the local user opens can post to 127.0.0.1; the relay
    // would then call URLs of that page's choosing from this machine.
    const before = fake.calls.length;
    // A page of another local web server (a dev server on :8080) is not this server's either.
    const foreign: Record<string, string>[] = [{ origin: "https://evil.example" }, { host: `evil.example:${servers.api.port}` }, { origin: "null" }, { origin: "http://localhost:8080" }, { origin: "http://evil.localhost:1" }];
    for (const headers of foreign) {
      const r = await post(body(), headers);
      expect({ headers, status: r.status }).toEqual({ headers, status: 403 });
      await r.body?.cancel();
    }
    expect(fake.calls.length).toBe(before);
    // Pages served by this machine (the UI on its own port too) keep it, and so does a key.
    const same = await post({ ...body(), update: true }, { origin: `http://localhost:${servers.ui!.port}` });
    expect(same.status).toBe(200);
    expect((await lines(same)).at(-1).result.success).toBe(true);
    const sameOrigin = await post({ ...body(), update: true }, { origin: `http://127.0.0.1:${servers.api.port}` });
    expect(sameOrigin.status).toBe(200);
    await sameOrigin.text();
    const keyed = await post({ ...body(), update: true }, { origin: "https://evil.example", "x-api-key": KEY });
    expect(keyed.status).toBe(200);
    await keyed.text();
  });

  test("documented in OpenAPI", async () => {
    const doc = await (await fetch(`${base}/v1/openapi.json`)).json() as any;
    expect(doc.paths["/v1/deploy"].post.requestBody).toBeDefined();
  });
});
