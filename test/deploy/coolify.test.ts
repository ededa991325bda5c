import { describe, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { deployBundle, type DeployOptions } from "../../src/deploy/index.ts";
import type { DeployStep } from "../../src/deploy/types.ts";
import { CoolifyFake, destination, usableServer } from "./fakes/coolify-fake.ts";
import { adaptCompose } from "../../src/deploy/adapt-compose.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";
import { COMPOSE, ENV_KEYS, ENV_TEXT, PROJECT, connectionDropped, fixtureOptions, hostileAnswerTests, losingAnswersTo, rejection, timedOut, trackFakes } from "./fixtures.ts";

const track = trackFakes<CoolifyFake>();
const startFake = (options?: ConstructorParameters<typeof CoolifyFake>[0]) => track(new CoolifyFake(options));
const options = (fake: CoolifyFake, overrides: Partial<DeployOptions> = {}) => fixtureOptions("coolify", overrides.url ?? fake.url, fake.token, overrides);

const CREATE_SEQUENCE = [
  "GET /version",
  "GET /servers",
  "GET /projects",
  "POST /projects",
  "GET /projects/{project}",
  "POST /services",
  "PATCH /services/{service}/envs/bulk",
  "POST /deploy",
];

/** The recorded sequence with the generated uuids replaced by placeholders. */
function normalisedSequence(fake: CoolifyFake): string[] {
  const project = fake.projects[0]?.uuid ?? "-";
  const service = fake.services[0]?.uuid ?? "-";
  return fake.sequence().map((s) => s.replace(project, "{project}").replace(service, "{service}"));
}

describe("Coolify deployer against a spec-validating fake", () => {
  test("happy path: exact call order, valid requests, state as expected", async () => {
    const fake = await startFake();
    const events: DeployStep[] = [];
    const result = await deployBundle(options(fake), (e) => events.push(e));

    expect(fake.violations).toEqual([]);
    expect(result.error).toBeUndefined();
    expect(result.success).toBe(true);
    expect(normalisedSequence(fake)).toEqual(CREATE_SEQUENCE);
    // Every call authenticated with the bearer token.
    for (const call of fake.calls) expect(call.headers.authorization).toBe(`Bearer ${fake.token}`);

    expect(fake.projects).toHaveLength(1);
    expect(fake.projects[0]!.name).toBe(PROJECT);
    expect(fake.services).toHaveLength(1);
    const service = fake.services[0]!;
    expect(service.name).toBe(PROJECT);
    expect(service.environment_id).toBe(fake.projects[0]!.environments[0]!.id);

    // The compose file arrived base64-encoded, adapted: no host ports, configs inline.
    const createBody = fake.calls.find((c) => c.operationId === "create-service")!.body as Record<string, unknown>;
    expect(createBody.instant_deploy).toBe(false);
    expect(createBody.environment_name).toBe("production");
    expect(createBody.environment_uuid).toBe(fake.projects[0]!.environments[0]!.uuid);
    expect(createBody.server_uuid).toBe(fake.servers[0]!.uuid);
    expect(Buffer.from(String(createBody.docker_compose_raw), "base64").toString("utf8")).toBe(service.compose);
    const compose = parseYaml(service.compose);
    expect(compose.services.caddy.ports).toBeUndefined();
    expect(compose.services.caddy.expose).toEqual(["80", "443"]);
    expect(compose.services.prometheus.expose).toEqual(["9090"]);
    expect(compose.services.caddy.configs).toEqual([{ source: "Caddyfile", target: "/etc/caddy/Caddyfile" }]);
    expect(compose.configs.Caddyfile.content).toContain("{$$DOMAIN:localhost}");
    expect(compose.services.caddy.volumes).toEqual(["caddy_data:/data"]);

    // Variables: every .env key, literal, not preview, values as written.
    for (const key of ENV_KEYS) {
      const row = service.envs.get(key);
      expect(row, key).toBeDefined();
      expect(row!.is_literal).toBe(true);
      expect(row!.is_preview).toBe(false);
    }
    expect(service.envs.get("GREETING")!.value).toBe("hello world");
    expect(service.envs.get("QUOTED")!.value).toBe("a $literal value");

    expect(fake.deployments).toEqual([{ uuid: service.uuid, force: "false" }]);
    // Every POST and PATCH goes as JSON, the deploy (query parameters only) too.
    for (const call of fake.calls.filter((c) => c.method === "POST" || c.method === "PATCH")) expect(call.headers["content-type"], call.path).toBe("application/json");
    expect(result.projectId).toBe(fake.projects[0]!.uuid);
    expect(result.stackId).toBe(service.uuid);
    expect(result.composeId).toBe(service.uuid);
    expect(result.dashboardUrl).toBe(`${fake.url}/project/${result.projectId}/environment/${fake.projects[0]!.environments[0]!.uuid}/service/${service.uuid}`);
    expect(result.changes.some((c) => c.includes('service "caddy": removed host port bindings 80:80, 443:443'))).toBe(true);
    // SPEC §4.2's seven steps, named as it names them (the project lookup is part of "Discover server").
    expect(result.steps.map((s) => `${s.step}:${s.status}`)).toEqual([
      "Test connection:ok",
      "Discover server:ok",
      "Create project:ok",
      "Get project:ok",
      "Create compose service:ok",
      "Set env:ok",
      "Deploy:ok",
    ]);
    // Each step is announced as running before its outcome.
    expect(events.filter((e) => e.status === "running").map((e) => e.step)).toEqual(result.steps.map((s) => s.step));
  });

  test("a bundle with text past ASCII (an inlined skill's …) arrives as ASCII that reads back the same, on create and --update", async () => {
    const fake = await startFake();
    const bundle = generateBundle({ projectName: PROJECT, preset: "devops" }, getCatalog());
    const files = Object.fromEntries(Object.entries(bundle.files).filter(([name]) => name !== "docker-compose.yml"));
    const deploy = (update: boolean, label: string) => {
      const composeYaml = bundle.files["docker-compose.yml"]!.replace("services:\n", `# Déploiement ${label}\nservices:\n`);
      return { composeYaml, result: deployBundle(options(fake, { update, composeYaml, envText: bundle.files[".env"]!, files })) };
    };
    for (const [update, label] of [[false, "créé"], [true, "mis à jour 🎉"]] as const) {
      const { composeYaml, result } = deploy(update, label);
      expect(/[^\x00-\x7f]/.test(adaptCompose(composeYaml, files).yaml)).toBe(true);
      expect((await result).success).toBe(true);
      expect(fake.violations).toEqual([]);
      expect(fake.services).toHaveLength(1);
      expect(parseYaml(fake.services[0]!.compose)).toEqual(parseYaml(adaptCompose(composeYaml, files).yaml));
      expect(fake.services[0]!.compose).toContain(`# D\\u00e9ploiement ${update ? "mis \\u00e0 jour \\U0001f389" : "cr\\u00e9\\u00e9"}`);
    }
  });

  test("a generated stack's ports Coolify's proxy cannot carry (LiveKit's UDP and WebRTC ones) are named among the changes", async () => {
    const fake = await startFake();
    const bundle = generateBundle({ projectName: PROJECT, services: ["livekit"] }, getCatalog());
    const result = await deployBundle(options(fake, { composeYaml: bundle.files["docker-compose.yml"]!, envText: bundle.files[".env"]!, files: bundle.files }));
    expect(result.success).toBe(true);
    expect(result.changes.find((c) => c.startsWith('service "livekit": the platform\'s proxy carries only HTTP(S)'))).toContain("7882:7882/udp (WebRTC media over UDP (one muxed port)), which is not TCP, nor 7881:7881 (WebRTC over TCP) unless it speaks HTTP");
  });

  test("${NAME} references in .env values arrive filled in as compose fills them; names .env lacks are sent as written and named", async () => {
    const fake = await startFake();
    const envText = `${ENV_TEXT}DB_USER=app\nDATABASE_URL=postgres://\${DB_USER}:\${POSTGRES_PASSWORD}@postgres/app\nGREETING2="\${GREETING}, \${MISSING:-friend}"\nLITERAL='\${DB_USER}'\nFROM_SHELL=\${HOME_DIR}/data\nDOLLARS=$$DB_USER\n`;
    const result = await deployBundle(options(fake, { envText }));
    expect(result.success).toBe(true);
    expect(fake.violations).toEqual([]);
    const value = (key: string) => fake.services[0]!.envs.get(key)!.value;
    expect(value("DATABASE_URL")).toBe("postgres://app:Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4@postgres/app");
    expect(value("GREETING2")).toBe("hello world, friend");
    expect(value("LITERAL")).toBe("\${DB_USER}");
    expect(value("FROM_SHELL")).toBe("\${HOME_DIR}/data");
    expect(value("DOLLARS")).toBe("$DB_USER");
    expect(result.changes).toContain(".env: DATABASE_URL, GREETING2 sent with the ${…} references in their values filled in from .env, as compose fills them here: the platform takes values as written");
    expect(result.changes.some((c) => c.startsWith(".env: FROM_SHELL (${HOME_DIR}) refers to a variable .env does not set"))).toBe(true);
  });

  test("wrong key: exact message, stops at the first call", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake, { apiKey: "not-the-right-token" }));
    expect(result.success).toBe(false);
    expect(result.error).toBe("Coolify API 401: Unauthorized");
    expect(result.failedStep).toBe("Test connection");
    expect(result.created).toEqual([]);
    expect(fake.calls).toHaveLength(1);
    expect(fake.violations).toEqual([]);
    // The fixed error text names only the status; the hint says what to check.
    expect(result.hint).toContain("Keys & Tokens > API tokens");
  });

  test("a token whose team is gone (Coolify's 400 'Invalid token.') gets the token hint", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "version", reply: { status: 400, body: { message: "Invalid token.", docs: "https://coolify.io/docs/api-reference/authorization" } } });
    const result = await deployBundle(options(fake));
    expect(result).toMatchObject({ success: false, error: "Coolify API 400: Bad Request", failedStep: "Test connection" });
    expect(result.hint).toContain("Keys & Tokens > API tokens");
    expect(fake.projects).toHaveLength(0);
  });

  test("an API switched off in Coolify's settings is named as such", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "list-servers", reply: { status: 403, body: { success: true, message: "API is disabled." } } });
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("Coolify API 403: Forbidden");
    expect(result.hint).toContain("API is switched off");
    expect(fake.violations).toEqual([]);
  });

  test("variable names Coolify refuses (one fails the whole batch) are left out before any call, and named", async () => {
    const fake = await startFake();
    const long = `K${"x".repeat(255)}`;
    const envText = `${ENV_TEXT}MY-VAR=2\n1ST=3\nDOTTED.NAME=4\n${long}=5\n`;
    const result = await deployBundle(options(fake, { envText }));
    expect(fake.violations).toEqual([]);
    expect(result.error).toBeUndefined();
    expect(result.success).toBe(true);
    expect([...fake.services[0]!.envs.keys()].sort()).toEqual([...ENV_KEYS, "DOTTED.NAME"].sort());
    expect(result.changes.find((c) => c.includes("not sent: a platform variable name"))).toContain(`MY-VAR, 1ST, ${long}`);
  });

  test("Coolify's other refusals get their own hints: an address its API allow-list lacks, a token that may not deploy (after the project and service exist)", async () => {
    const listed = await startFake();
    listed.injections.push({ operationId: "list-servers", reply: { status: 403, body: { message: "You are not allowed to access the API." } } });
    const refused = await deployBundle(options(listed));
    expect(refused).toMatchObject({ success: false, error: "Coolify API 403: Forbidden", created: [] });
    expect(refused.hint).toContain("allow-list");

    const noDeploy = await startFake();
    noDeploy.injections.push({ operationId: "deploy-by-tag-or-uuid", reply: { status: 403, body: { message: "Missing required permissions: deploy" } } });
    const halfway = await deployBundle(options(noDeploy));
    expect(halfway).toMatchObject({ success: false, error: "Coolify API 403: Forbidden", failedStep: "Deploy" });
    expect(halfway.hint).toContain("read, write and deploy");
    // What exists now is named, so the next run can reuse it (--update) rather than duplicate it.
    expect(halfway.created).toHaveLength(2);
    expect(noDeploy.violations).toEqual([]);
  });

  test("a 429 that goes on says how long Coolify asked to wait; a short wait is waited out first (three tries), a long one is not", async () => {
    const cases = [
      ["30", "wait 30 seconds (its Retry-After)", []],
      [new Date(Date.now() + 300_000).toUTCString(), "wait 5 minutes", []],
      [undefined, "wait a minute and", [1000, 2000]],
      ["0", "wait a second (its Retry-After)", [0, 0]],
      ["1.5", "wait a minute and", [1000, 2000]],
      ["15", "wait 15 seconds (its Retry-After)", [15_000, 15_000]],
    ] as const;
    for (const [header, wait, waits] of cases) {
      const fake = await startFake();
      fake.injections.push({ operationId: "list-servers", reply: { status: 429, headers: header ? { "retry-after": header } : {}, body: { message: "Too Many Attempts." } } });
      const slept: number[] = [];
      const result = await deployBundle(options(fake, { sleep: async (ms) => slept.push(ms) }));
      expect(result.error).toBe("Coolify API 429: Too Many Requests");
      expect(result.hint).toContain(wait);
      // Nothing was made yet: a plain run again, not one with --update.
      expect(result.hint).toEndWith("and run again.");
      expect(slept).toEqual([...waits]);
      expect(fake.calls.filter((c) => c.operationId === "list-servers")).toHaveLength(waits.length + 1);
    }
  });

  test("a 429 that goes on once the project exists says to run again with --update", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "create-service", reply: { status: 429, headers: { "retry-after": "30" }, body: { message: "Too Many Attempts." } } });
    const result = await deployBundle(options(fake, { sleep: async () => {} }));
    expect(result).toMatchObject({ success: false, failedStep: "Create compose service", created: [expect.stringContaining("Coolify project")] });
    expect(result.hint).toEndWith("wait 30 seconds (its Retry-After) and run again with --update.");
  });

  test("one 429 in the middle of a deploy is waited out and the call made again: one project, one service, deployed", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "create-project", nth: 1, reply: { status: 429, headers: { "retry-after": "2" }, body: { message: "Too Many Attempts." } } });
    const slept: number[] = [];
    const events: DeployStep[] = [];
    const result = await deployBundle(options(fake, { sleep: async (ms) => slept.push(ms) }), (e) => events.push(e));
    expect(result.success).toBe(true);
    expect(slept).toEqual([2000]);
    // The step says why it waits, between its start and its outcome (the result lists outcomes only).
    expect(events.filter((e) => e.step === "Create project").map((e) => [e.status, e.detail])).toEqual([
      ["running", undefined],
      ["running", "Coolify API 429: Too Many Requests; trying again in 2 s"],
      ["ok", fake.projects[0]!.uuid],
    ]);
    expect(result.steps.filter((s) => s.step === "Create project")).toHaveLength(1);
    expect(fake.projects).toHaveLength(1);
    expect(fake.services).toHaveLength(1);
    expect(fake.deployments).toHaveLength(1);
    expect(fake.violations).toEqual([]);
  });

  test("interrupted while a call waits to be tried again: no wait is waited out and nothing more is sent", async () => {
    const fake = await startFake();
    const controller = new AbortController();
    fake.injections.push({ operationId: "create-project", reply: { status: 429, headers: { "retry-after": "15" }, body: { message: "Too Many Attempts." } } });
    // A wait that never ends by itself: only the abort can end it.
    const running = deployBundle(options(fake, { signal: controller.signal, sleep: () => new Promise(() => {}) }));
    while (!fake.calls.some((c) => c.operationId === "create-project")) await Bun.sleep(5);
    controller.abort();
    const result = await running;
    expect(result.success).toBe(false);
    expect(result.error).toBe("Coolify API 429: Too Many Requests");
    expect(result.failedStep).toBe("Create project");
    expect(fake.calls.filter((c) => c.operationId === "create-project")).toHaveLength(1);
    expect(fake.calls.at(-1)!.operationId).toBe("create-project");
  });

  test("a 503 (nothing done) is tried again for any call; a gateway's 502/504 for a read only, never for a write (it may have been carried out)", async () => {
    const unavailable = await startFake();
    unavailable.injections.push({ operationId: "create-project", nth: 1, reply: { status: 503, headers: { "retry-after": "3" }, body: { message: "Service Unavailable" } } });
    const pauses: number[] = [];
    expect((await deployBundle(options(unavailable, { sleep: async (ms) => pauses.push(ms) }))).success).toBe(true);
    expect(pauses).toEqual([3000]);
    expect(unavailable.projects).toHaveLength(1);

    const read = await startFake();
    read.injections.push({ operationId: "list-servers", nth: 1, reply: { status: 504, body: { message: "Gateway Timeout" } } });
    read.injections.push({ operationId: "list-servers", nth: 2, reply: { status: 502, body: { message: "Bad Gateway" } } });
    const slept: number[] = [];
    const ok = await deployBundle(options(read, { sleep: async (ms) => slept.push(ms) }));
    expect(ok.success).toBe(true);
    expect(slept).toEqual([1000, 2000]);

    const write = await startFake();
    write.injections.push({ operationId: "create-service", nth: 1, reply: { status: 504, body: { message: "Gateway Timeout" } } });
    const waited: number[] = [];
    const failed = await deployBundle(options(write, { sleep: async (ms) => waited.push(ms) }));
    expect(failed.success).toBe(false);
    expect(failed.error).toBe("Coolify API 504: Gateway Timeout");
    expect(waited).toEqual([]);
    expect(write.calls.filter((c) => c.operationId === "create-service")).toHaveLength(1);
  });

  test("no servers: clear message, nothing created", async () => {
    const fake = await startFake({ servers: [] });
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("No servers found in Coolify instance");
    expect(result.failedStep).toBe("Discover server");
    expect(fake.projects).toHaveLength(0);
    expect(fake.violations).toEqual([]);
  });

  test("skips unreachable and build servers", async () => {
    const good = usableServer({ name: "good" });
    const fake = await startFake({
      servers: [
        usableServer({ name: "down", is_reachable: false }),
        usableServer({ name: "builder", settings: { is_build_server: true, is_reachable: true, is_usable: true } }),
        good,
      ],
    });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(true);
    expect((fake.calls.find((c) => c.operationId === "create-service")!.body as { server_uuid: string }).server_uuid).toBe(good.uuid);
  });

  describe("a server with several Docker destinations", () => {
    const server = usableServer();
    const deployWith = async (destinations: ReturnType<typeof destination>[], listsDestinations = true, chosen?: string) => {
      const fake = await startFake({ servers: [server], destinations: { [server.uuid]: destinations }, listsDestinations });
      return { fake, result: await deployBundle(options(fake, { destination: chosen })) };
    };

    test("uses the one on Coolify's default network, and says so", async () => {
      const main = destination("coolify");
      const { fake, result } = await deployWith([destination("apps"), main, destination("coolify", "swarm")]);
      expect(result.success).toBe(true);
      expect(fake.services[0]!.destination_uuid).toBe(main.uuid);
      expect(normalisedSequence(fake)).toEqual([
        ...CREATE_SEQUENCE.slice(0, 6),
        `GET /servers/${server.uuid}/destinations`,
        "POST /services",
        ...CREATE_SEQUENCE.slice(6),
      ]);
      expect(result.steps.find((s) => s.step === "Create compose service")!.detail).toContain(`on destination ${main.name} (network coolify)`);
      expect(fake.violations).toEqual([]);
    });

    test("uses the only standalone one when none is on the default network", async () => {
      const only = destination("apps");
      const { fake, result } = await deployWith([only, destination("edge", "swarm")]);
      expect(result.success).toBe(true);
      expect(fake.services[0]!.destination_uuid).toBe(only.uuid);
    });

    test("refuses to guess between several, naming them; nothing but the project was created", async () => {
      const { fake, result } = await deployWith([destination("apps"), destination("db")]);
      expect(result.success).toBe(false);
      expect(result.failedStep).toBe("Create compose service");
      expect(result.error).toContain("has several Docker destinations and none is clearly the one to use");
      expect(result.error).toContain("localhost-apps (network apps), localhost-db (network db)");
      expect(fake.services).toHaveLength(0);
      expect(result.created).toEqual([`Coolify project "${PROJECT}" (${fake.projects[0]!.uuid})`]);
      expect(fake.violations).toEqual([]);
    });

    test("the user names one by uuid, name or network; it wins over the default network", async () => {
      const apps = destination("apps");
      const db = destination("db");
      for (const chosen of [apps.uuid, apps.name, "apps"]) {
        const { fake, result } = await deployWith([db, apps, destination("coolify")], true, chosen);
        expect(result.success).toBe(true);
        expect(fake.services[0]!.destination_uuid).toBe(apps.uuid);
        expect(fake.violations).toEqual([]);
      }
    });

    test("a named destination the server does not have is an error listing what it has", async () => {
      const { fake, result } = await deployWith([destination("apps"), destination("db")], true, "web");
      expect(result.success).toBe(false);
      expect(result.error).toContain('no standalone Docker destination matching STACKGEN_COOLIFY_DESTINATION="web"');
      expect(result.error).toContain("localhost-apps (network apps), localhost-db (network db)");
      expect(fake.services).toHaveLength(0);
    });

    test("without a choice, the error says how to make one", async () => {
      const { result } = await deployWith([destination("apps"), destination("db")]);
      expect(result.error).toContain("set STACKGEN_COOLIFY_DESTINATION to the uuid, name or network of one");
    });

    test("a version that cannot list destinations gets a clear error", async () => {
      const { fake, result } = await deployWith([destination("coolify"), destination("apps")], false);
      expect(result.success).toBe(false);
      expect(result.error).toContain("cannot list them over its API");
      expect(fake.services).toHaveLength(0);
    });
  });

  test("existing project without --update: Coolify API 409: Conflict, nothing created", async () => {
    const fake = await startFake();
    fake.addProject(PROJECT);
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.error).toBe("Coolify API 409: Conflict");
    expect(result.failedStep).toBe("Create project");
    expect(result.steps.at(-1)!.detail).toContain("--update");
    expect(fake.projects).toHaveLength(1);
    expect(fake.services).toHaveLength(0);
    expect(fake.calls.filter((c) => c.method !== "GET")).toEqual([]);
    expect(fake.violations).toEqual([]);
  });

  test("--update: reuses the project and its service, replaces the compose file, no duplicates", async () => {
    const fake = await startFake();
    const first = await deployBundle(options(fake));
    expect(first.success).toBe(true);
    const callsBefore = fake.calls.length;

    const changed = COMPOSE.replace("postgres:16-alpine", "postgres:17-alpine");
    const second = await deployBundle(options(fake, { update: true, composeYaml: changed, envText: `${ENV_TEXT}NEW_VAR=42\n` }));
    expect(fake.violations).toEqual([]);
    expect(second.success).toBe(true);
    expect(fake.projects).toHaveLength(1);
    expect(fake.services).toHaveLength(1);
    const service = fake.services[0]!;
    expect(second.projectId).toBe(first.projectId);
    expect(second.stackId).toBe(first.stackId);
    expect(service.compose).toContain("postgres:17-alpine");
    expect(service.envs.get("NEW_VAR")!.value).toBe("42");
    expect(fake.deployments).toHaveLength(2);
    const project = fake.projects[0]!.uuid;
    expect(fake.sequence().slice(callsBefore).map((s) => s.replace(project, "{project}").replace(service.uuid, "{service}"))).toEqual([
      "GET /version",
      "GET /servers",
      "GET /projects",
      "GET /projects/{project}",
      "GET /services",
      "PATCH /services/{service}",
      "PATCH /services/{service}/envs/bulk",
      "POST /deploy",
    ]);
    expect(second.steps.map((s) => `${s.step}:${s.status}`)).toEqual([
      "Test connection:ok",
      "Discover server:ok",
      "Create project:skipped",
      "Get project:ok",
      "Create compose service:ok",
      "Set env:ok",
      "Deploy:ok",
    ]);
    expect(second.steps.find((s) => s.step === "Create compose service")!.detail).toBe(`reusing service "${PROJECT}" (${service.uuid}): its compose file replaced`);
  });

  for (const hidesEnvValues of [false, true]) {
    test(`an update of a freshly generated bundle (the API relay) keeps every value Coolify has set${hidesEnvValues ? ", also when it hides them" : ""}`, async () => {
      const fake = await startFake({ hidesEnvValues });
      expect((await deployBundle(options(fake))).success).toBe(true);
      const service = fake.services[0]!;
      service.envs.get("CORE_VERSION")!.value = "";
      // Laravel stores an empty value as null: that is empty too, not hidden.
      (service.envs.get("GREETING")! as { value: string | null }).value = null;
      const fresh = `${ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "a-new-secret").replace("CORE_VERSION=latest", "CORE_VERSION=2026.11.1")}NEW_SECRET=n3w\n`;
      const callsBefore = fake.calls.length;
      const result = await deployBundle(options(fake, { update: true, envText: fresh, keepExistingValues: true }));
      expect(fake.violations).toEqual([]);
      expect(result.success).toBe(true);
      expect(service.envs.get("POSTGRES_PASSWORD")!.value).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
      expect(service.envs.get("NEW_SECRET")!.value).toBe("n3w");
      // A hidden value cannot be told from an empty one: it counts as set and stays.
      expect(service.envs.get("CORE_VERSION")!.value).toBe(hidesEnvValues ? "" : "2026.11.1");
      const pushed = (fake.calls.slice(callsBefore).find((c) => c.path.endsWith("/envs/bulk"))!.body as { data: { key: string }[] }).data.map((d) => d.key);
      expect(pushed.sort()).toEqual(hidesEnvValues ? ["NEW_SECRET"] : ["CORE_VERSION", "GREETING", "NEW_SECRET"]);
      // Read before the compose file is replaced (which adds empty rows for new references).
      const order = fake.sequence().slice(callsBefore).map((c) => c.replace(service.uuid, "{service}"));
      expect(order.indexOf("GET /services/{service}/envs")).toBeLessThan(order.indexOf("PATCH /services/{service}"));
    });
  }

  test("a fresh bundle's update on a Coolify that does not list variables sends no generated secret", async () => {
    const fake = await startFake();
    expect((await deployBundle(options(fake))).success).toBe(true);
    fake.injections.push({ operationId: "list-envs-by-service-uuid", reply: { status: 404, body: { message: "Not found." } } });
    const service = fake.services[0]!;
    service.envs.set("OIDC_SECRET", { key: "OIDC_SECRET", value: "set-by-the-user", is_literal: true, is_preview: false, is_multiline: false });
    const fresh = `${ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "a-new-secret").replace("CORE_VERSION=latest", "CORE_VERSION=2026.11.1")}OIDC_SECRET=\n`;
    const result = await deployBundle(options(fake, { update: true, envText: fresh, keepExistingValues: true, freshSecrets: new Set(["POSTGRES_PASSWORD"]) }));
    expect(result.success).toBe(true);
    expect(service.envs.get("POSTGRES_PASSWORD")!.value).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
    // An empty placeholder in a fresh bundle never blanks what the user set on Coolify.
    expect(service.envs.get("OIDC_SECRET")!.value).toBe("set-by-the-user");
    expect(service.envs.get("CORE_VERSION")!.value).toBe("2026.11.1");
    expect(result.steps.find((s) => s.step === "Create compose service")!.detail).toContain("could not be listed");
  });

  test("--update on a project without the service creates it once", async () => {
    const fake = await startFake();
    fake.addProject(PROJECT);
    const result = await deployBundle(options(fake, { update: true }));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect(fake.projects).toHaveLength(1);
    expect(fake.services).toHaveLength(1);
  });

  test("--update where Coolify lists a service of the name without its environment stops: neither a second service nor another project's replaced", async () => {
    const fake = await startFake();
    expect((await deployBundle(options(fake))).success).toBe(true);
    const service = fake.services[0]!;
    fake.injections.push({ operationId: "list-services", reply: { status: 200, body: [{ uuid: service.uuid, name: service.name }] } });
    const result = await deployBundle(options(fake, { update: true }));
    expect(result.success).toBe(false);
    expect(result.failedStep).toBe("Get project");
    expect(result.error).toContain(`Coolify lists a service named "${PROJECT}" without saying which environment it is in`);
    expect(fake.services).toHaveLength(1);
    expect(fake.calls.filter((c) => c.operationId === "create-service" || c.operationId === "update-service-by-uuid")).toHaveLength(1);
  });

  test.each([
    ["4.0.0-beta.398", false],
    ["4.0.0-beta.380", false],
    ["3.12.36", false],
    ["4.0.0-beta.399", true],
    ["4.0.0-beta.474", true],
    ["v4.0.0", true],
    ["4.3.10", true],
  ])("version %s accepted: %p", async (version, accepted) => {
    const fake = await startFake({ version });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(accepted);
    if (!accepted) {
      expect(result.failedStep).toBe("Test connection");
      expect(result.error).toContain("4.0.0-beta.399 or later");
      expect(result.error).toContain(version);
      expect(fake.calls).toHaveLength(1);
    }
  });

  test("a version answer that is not a version points at --url", async () => {
    const fake = await startFake({ version: "<!DOCTYPE html><html><body>Login</body></html>" });
    const result = await deployBundle(options(fake));
    expect(result.error).toContain("did not report a version");
    expect(result.error).toContain("--url");
  });

  test("500 mid-way: names the failed step and what was already created", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "update-envs-by-service-uuid", reply: { status: 500, body: { message: "Server Error" } } });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.error).toBe("Coolify API 500: Internal Server Error");
    expect(result.failedStep).toBe("Set env");
    expect(result.steps.at(-1)).toEqual({ step: "Set env", status: "failed", detail: "Server Error" });
    expect(result.created).toEqual([
      `Coolify project "${PROJECT}" (${fake.projects[0]!.uuid})`,
      `Coolify service "${PROJECT}" (${fake.services[0]!.uuid})`,
    ]);
    expect(result.projectId).toBe(fake.projects[0]!.uuid);
    expect(fake.deployments).toHaveLength(0);
    expect(fake.violations).toEqual([]);
  });

  test("a create call whose answer never comes may have created its resource: named as possibly created, not as nothing created", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake, { fetch: losingAnswersTo("POST", "/api/v1/projects", timedOut), timeoutMs: 2000 }));
    expect(result).toMatchObject({ success: false, failedStep: "Create project", created: [], possiblyCreated: [`Coolify project "${PROJECT}"`] });
    expect(result.error).toBe("Coolify did not answer within 2 s");
    // It had: --update finds and reuses it.
    expect(fake.projects).toHaveLength(1);
    const again = await deployBundle(options(fake, { update: true }));
    expect(again.success).toBe(true);
    expect(again.possiblyCreated).toBeUndefined();
    expect(fake.projects).toHaveLength(1);

    // The service's answer lost after the project was made: one of each list.
    const second = await startFake();
    const lost = await deployBundle(options(second, { fetch: losingAnswersTo("POST", "/api/v1/services", connectionDropped) }));
    expect(lost.created).toEqual([`Coolify project "${PROJECT}" (${second.projects[0]!.uuid})`]);
    expect(lost.possiblyCreated).toEqual([`Coolify service "${PROJECT}"`]);
    expect(second.services).toHaveLength(1);

    // A create Coolify refuses made nothing, and one that never left this machine neither.
    const third = await startFake();
    third.injections.push({ operationId: "create-project", reply: { status: 422, body: { message: "Validation failed." } } });
    const refused = await deployBundle(options(third));
    expect(refused).toMatchObject({ success: false, failedStep: "Create project", created: [] });
    expect(refused.possiblyCreated).toBeUndefined();
    const unsent = await deployBundle(options(third, { fetch: async (input, init) => (init.method === "POST" ? Promise.reject(Object.assign(new TypeError("ECONNREFUSED"), { code: "ECONNREFUSED" })) : fetch(input, init)) }));
    expect(unsent.failedStep).toBe("Create project");
    expect(unsent.possiblyCreated).toBeUndefined();
    // A 500 may come after the row was written (an error while answering): possibly created.
    const fourth = await startFake();
    fourth.injections.push({ operationId: "create-project", reply: { status: 500, body: { message: "Server Error" } } });
    const erred = await deployBundle(options(fourth));
    expect(erred).toMatchObject({ success: false, failedStep: "Create project", possiblyCreated: [`Coolify project "${PROJECT}"`] });
    expect(fake.violations.concat(second.violations, third.violations, fourth.violations)).toEqual([]);
  });

  test("a deploy Coolify answers 200 but refuses in its message is a failure, not a success", async () => {
    const fake = await startFake();
    // What Coolify's deploy endpoint answers when the token's role may not deploy the service.
    fake.injections.push({ operationId: "deploy-by-tag-or-uuid", reply: { status: 200, body: { deployments: [{ message: "Unauthorized to deploy this service.", deployment_uuid: null }] } } });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.failedStep).toBe("Deploy");
    expect(result.error).toContain("Unauthorized to deploy this service.");
    expect(fake.violations).toEqual([]);
  });

  test("a deploy Coolify answers 200 without a deployment started nothing: a failure, not a success", async () => {
    for (const answer of [{ deployments: [] }, {}]) {
      const fake = await startFake();
      fake.injections.push({ operationId: "deploy-by-tag-or-uuid", reply: { status: 200, body: answer } });
      const result = await deployBundle(options(fake));
      expect(result.success).toBe(false);
      expect(result.failedStep).toBe("Deploy");
      expect(result.error).toBe("Coolify did not deploy the stack: its answer lists no deployment for the service");
      expect(fake.violations).toEqual([]);
    }
  });

  describe("an answer of another shape than Coolify's API documents is named as such, never a JavaScript error", () => {
    hostileAnswerTests("Coolify", [
      ["list-servers", [{ uuid: { x: 1 } }, null, 5], "GET /servers", "[0].uuid is an object, expected a non-empty string"],
      ["list-servers", [usableServer(), null], "GET /servers", "[1] is null, expected an object"],
      ["list-servers", { data: [] }, "GET /servers", "the answer is an object, expected a list"],
      ["list-servers", [usableServer({ name: 7 as never })], "GET /servers", "[0].name is a number, expected a string"],
      ["list-servers", [{ ...usableServer(), settings: "yes" }], "GET /servers", "[0].settings is a string, expected an object"],
      ["list-servers", [{ ...usableServer(), is_usable: "false" }], "GET /servers", "[0].is_usable is a string, expected true or false"],
      ["list-projects", [null], "GET /projects", "[0] is null, expected an object"],
      ["list-projects", [{ uuid: "p1", name: ["demo-stack"] }], "GET /projects", "[0].name is a list, expected a string"],
      ["create-project", "created", "POST /projects", "the answer is a string, expected an object"],
      ["create-project", { uuid: 42 }, "POST /projects", "uuid is a number, expected a non-empty string"],
      ["get-project-by-uuid", { uuid: "p", environments: "production" }, "GET /projects/{uuid}", "environments is a string, expected a list"],
      ["get-project-by-uuid", { uuid: "p", environments: [null] }, "GET /projects/{uuid}", "environments[0] is null, expected an object"],
      ["get-project-by-uuid", { uuid: "p", environments: [{ name: "production", uuid: { id: 1 } }] }, "GET /projects/{uuid}", "environments[0].uuid is an object, expected a non-empty string"],
      ["create-service", { uuid: "" }, "POST /services", "uuid is an empty string, expected a non-empty string"],
      ["deploy-by-tag-or-uuid", { deployments: [{ message: { text: "ok" } }] }, "POST /deploy", "deployments[0].message is an object, expected a string"],
      ["deploy-by-tag-or-uuid", [], "POST /deploy", "the answer is a list, expected an object"],
      ["list-services", [{ uuid: "s", name: "demo-stack", environment_id: "1" }], "GET /services", "[0].environment_id is a string, expected a number", true],
    ], () => startFake(), (fake, update) => deployBundle(options(fake, { update })));

    test("a destination list of another shape", async () => {
      const server = usableServer();
      const fake = await startFake({ servers: [server], destinations: { [server.uuid]: [destination("db"), destination("apps")] } });
      fake.injections.push({ operationId: "list-server-destinations", reply: { status: 200, body: [{ uuid: "d1", network: ["coolify"] }] } });
      const result = await deployBundle(options(fake));
      expect(result).toMatchObject({ success: false, failedStep: "Create compose service", error: "Coolify's answer to GET /servers/{uuid}/destinations is not what its API documents: [0].network is a list, expected a string" });
    });

    test("variables listed in another shape are unreadable: no generated secret is sent over them", async () => {
      const fake = await startFake();
      expect((await deployBundle(options(fake))).success).toBe(true);
      const service = fake.services[0]!;
      fake.injections.push({ operationId: "list-envs-by-service-uuid", reply: { status: 200, body: { POSTGRES_PASSWORD: "old" } } });
      const fresh = ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "a-new-secret");
      const result = await deployBundle(options(fake, { update: true, envText: fresh, keepExistingValues: true, freshSecrets: new Set(["POSTGRES_PASSWORD"]) }));
      expect(result.success).toBe(true);
      expect(service.envs.get("POSTGRES_PASSWORD")!.value).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
      expect(result.steps.find((s) => s.step === "Create compose service")!.detail).toContain("could not be listed (Coolify's answer to GET /services/{uuid}/envs is not what its API documents: the answer is an object, expected a list)");
    });
  });

  test("a redirect is reported, never followed (the key does not travel)", async () => {
    const elsewhere = await startFake();
    const fake = await startFake();
    fake.redirectTo = elsewhere.url;
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("Coolify API 302: Found");
    expect(result.steps.at(-1)!.detail).toContain("not followed");
    expect(result.failedStep).toBe("Test connection");
    expect(fake.calls).toHaveLength(1);
    expect(elsewhere.calls).toHaveLength(0);
  });

  test("unreachable URL: clear message naming the step", async () => {
    const fake = await startFake();
    const url = fake.url;
    await fake.stop();
    const result = await deployBundle(options(fake, { url }));
    expect(result.success).toBe(false);
    expect(result.failedStep).toBe("Test connection");
    expect(result.error).toStartWith(`Cannot reach Coolify at ${url} (`);
    expect(result.created).toEqual([]);
  });

  test("timeout: the call is abandoned after timeoutMs", async () => {
    const fake = await startFake();
    fake.delayMs = 1000;
    const started = Date.now();
    const result = await deployBundle(options(fake, { timeoutMs: 200 }));
    expect(Date.now() - started).toBeLessThan(900);
    expect(result.error).toBe("Coolify did not answer within 0.2 s");
    expect(result.failedStep).toBe("Test connection");
  });

  test("non-JSON answer where JSON is expected", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "list-servers", reply: { status: 200, text: "<html>maintenance</html>", contentType: "text/html" } });
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("Coolify API 200: expected JSON, got text/html");
    expect(result.failedStep).toBe("Discover server");
  });

  test("a server that echoes the key back: the key is redacted everywhere", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "list-servers", reply: { status: 403, body: { message: `token ${fake.token} is not allowed` } } });
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("Coolify API 403: Forbidden");
    expect(JSON.stringify(result)).not.toContain(fake.token);
    expect(result.steps.at(-1)!.detail).toContain("[redacted]");
  });

  test("a key pasted into the URL's path is hidden in the dashboard URL and in the message for a URL that does not parse", async () => {
    const fake = await startFake();
    // The instance behind a path that is the key: every call has it stripped before the fake.
    const prefix = `/${fake.token}`;
    const fetch: typeof globalThis.fetch = ((input: string, init: RequestInit) => globalThis.fetch(input.replace(prefix, ""), init)) as never;
    const result = await deployBundle(options(fake, { url: `${fake.url}${prefix}/`, fetch }));
    expect(result.success).toBe(true);
    expect(result.dashboardUrl).toStartWith(`${fake.url}/[redacted]/project/`);
    expect(JSON.stringify(result)).not.toContain(fake.token);
    const error = await rejection<Error>(deployBundle(options(fake, { url: `http://[::1${prefix}` })));
    expect(error.message).toBe('"http://[::1/[redacted]" is not a URL (expected the address of your instance, e.g. https://paas.example.com)');
  });

  test("project names Coolify would refuse fail before any call", async () => {
    const fake = await startFake();
    await expect(deployBundle(options(fake, { projectName: "ab" }))).rejects.toThrow("3 to 255 characters");
    await expect(deployBundle(options(fake, { projectName: "bad;name" }))).rejects.toThrow("does not accept");
    expect(fake.calls).toHaveLength(0);
  });
});
