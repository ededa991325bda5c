import { describe, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { deployBundle, type DeployOptions } from "../../src/deploy/index.ts";
import { envValues } from "../../src/core/parse-env.ts";
import { DokployFake, dokployContainerEnv } from "./fakes/dokploy-fake.ts";
import { COMPOSE, ENV_TEXT, PROJECT, connectionDropped, fixtureOptions, hostileAnswerTests, losingAnswersTo, timedOut, trackFakes } from "./fixtures.ts";

const track = trackFakes<DokployFake>();
const startFake = (options?: ConstructorParameters<typeof DokployFake>[0]) => track(new DokployFake(options));
const options = (fake: DokployFake, overrides: Partial<DeployOptions> = {}) => fixtureOptions("dokploy", overrides.url ?? fake.url, fake.apiKey, overrides);

/** What the containers of the fake's (only) compose stack get from its env text. */
const envOf = (fake: DokployFake) => dokployContainerEnv(fake.composes[0]!.env!);

/** Values compose and Dokploy's dotenv reader read differently when sent as written. */
const AWKWARD_ENV = [
  "# written for compose",
  'BACKSLASH="C:\\\\share\\\\x"',
  'DOLLAR="it\'s \\$5"',
  "DOUBLED=pa$$word",
  "A='x' B=2",
  'LINES="one\ntwo"',
  'TRAILING="ends with a backslash \\\\"',
  "HASH='a #b'",
  // The fixture's compose file refuses to start without it.
  "POSTGRES_PASSWORD=Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4",
  "",
].join("\n");

const CREATE_SEQUENCE = [
  "GET /settings.getDokployVersion",
  "GET /project.all",
  "POST /project.create",
  "GET /project.one",
  "POST /compose.create",
  "POST /compose.update",
  "POST /compose.deploy",
];

describe("Dokploy deployer against a spec-validating fake", () => {
  test("happy path: exact call order, valid requests, state as expected", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake));

    expect(fake.violations).toEqual([]);
    expect(result.error).toBeUndefined();
    expect(result.success).toBe(true);
    expect(fake.sequence()).toEqual(CREATE_SEQUENCE);
    for (const call of fake.calls) {
      expect(call.headers["x-api-key"]).toBe(fake.apiKey);
      expect(call.headers.authorization).toBeUndefined();
    }

    expect(fake.projects).toHaveLength(1);
    expect(fake.composes).toHaveLength(1);
    const compose = fake.composes[0]!;
    const project = fake.projects[0]!;
    expect(fake.calls[3]!.query).toEqual({ projectId: project.projectId });
    expect(compose.name).toBe(PROJECT);
    expect(compose.sourceType).toBe("raw");
    expect(compose.composeType).toBe("docker-compose");
    expect(compose.env).toBe(ENV_TEXT);
    // Plain YAML (not base64), adapted for the platform.
    const parsed = parseYaml(compose.composeFile);
    expect(parsed.services.caddy.ports).toBeUndefined();
    expect(parsed.services.caddy.expose).toEqual(["80", "443"]);
    expect(parsed.configs["prometheus_prometheus.yml"].content).toContain("scrape_interval: 15s");
    const createBody = fake.calls[4]!.body as Record<string, unknown>;
    expect(createBody).toMatchObject({ name: PROJECT, composeType: "docker-compose", sourceType: "raw" });
    expect(createBody.environmentId).toBe(fake.environments[0]!.environmentId);

    expect(fake.deployments).toEqual([{ composeId: compose.composeId, title: "Deployed by stackgen" }]);
    expect(result.projectId).toBe(project.projectId);
    expect(result.stackId).toBe(compose.composeId);
    expect(result.dashboardUrl).toBe(
      `${fake.url}/dashboard/project/${project.projectId}/environment/${compose.environmentId}/services/compose/${compose.composeId}`,
    );
    expect(result.steps.map((s) => `${s.step}:${s.status}`)).toEqual([
      "Test connection:ok",
      "Create project:ok",
      "Get project:ok",
      "Create compose stack:ok",
      "Set env:ok",
      "Deploy:ok",
    ]);
  });

  test("wrong key: exact message", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake, { apiKey: "wrong-key-1234" }));
    expect(result.error).toBe("Dokploy API 401: Unauthorized");
    expect(result.failedStep).toBe("Test connection");
    expect(result.created).toEqual([]);
    expect(fake.violations).toEqual([]);
    expect(result.hint).toContain("with an organization selected");
  });

  test("a member key without a permission: Dokploy's 401 in its own words gets the permission hint, not 'check the key'", async () => {
    for (const message of ["Permission denied", "You don't have access to this project"]) {
      const fake = await startFake();
      fake.injections.push({ operationId: "project-create", reply: { status: 401, body: { message, code: "UNAUTHORIZED" } } });
      const result = await deployBundle(options(fake));
      expect(result).toMatchObject({ success: false, error: "Dokploy API 401: Unauthorized", failedStep: "Create project" });
      expect(result.steps.find((s) => s.step === "Create project")?.detail).toBe(message);
      expect(result.hint).toContain("lacks a permission");
      expect(result.hint).not.toContain("Check the key");
    }
  });

  test("${NAME} references in .env values reach the containers filled in, as compose fills them on this machine", async () => {
    const fake = await startFake();
    const envText = `${ENV_TEXT}DB_USER=app\nDATABASE_URL="postgres://\${DB_USER}@db/\${MISSING:-app}"\nLITERAL='\${DB_USER}'\n`;
    const result = await deployBundle(options(fake, { envText }));
    expect(result.success).toBe(true);
    expect(envOf(fake).get("DATABASE_URL")).toBe("postgres://app@db/app");
    expect(envOf(fake).get("LITERAL")).toBe("\${DB_USER}");
  });

  test("Dokploy's own refusal text reaches the user (its 400 when a project cannot be made)", async () => {
    const fake = await startFake();
    fake.injections.push({ operationId: "project-create", reply: { status: 400, body: { message: "Error creating the project: name already taken by an organization", code: "BAD_REQUEST" } } });
    const result = await deployBundle(options(fake));
    expect(result).toMatchObject({ success: false, error: "Dokploy API 400: Bad Request", failedStep: "Create project", created: [] });
    expect(result.steps.find((s) => s.step === "Create project")?.detail).toBe("Error creating the project: name already taken by an organization");
  });

  test("a deploy answered 200 that queued nothing (`false`, or success: false) is a failure naming why, not a success", async () => {
    for (const [answer, error] of [
      [false, "Dokploy did not deploy the stack (its answer says success: false)"],
      [{ success: false, message: "Deployment could not be queued" }, "Dokploy did not deploy the stack: Deployment could not be queued"],
    ] as const) {
      const fake = await startFake();
      fake.injections.push({ operationId: "compose-deploy", reply: { status: 200, body: answer } });
      const result = await deployBundle(options(fake));
      expect(result.success).toBe(false);
      expect(result.failedStep).toBe("Deploy");
      expect(result.error).toBe(error);
      expect(fake.violations).toEqual([]);
    }
  });

  test("existing project without --update: Project already exists, nothing created", async () => {
    const fake = await startFake();
    fake.addProject(PROJECT);
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.error).toBe("Project already exists");
    expect(result.failedStep).toBe("Create project");
    expect(fake.projects).toHaveLength(1);
    expect(fake.composes).toHaveLength(0);
    expect(fake.calls.filter((c) => c.method !== "GET")).toEqual([]);
  });

  test("--update: reuses the project and its compose stack, no duplicates", async () => {
    const fake = await startFake();
    expect((await deployBundle(options(fake))).success).toBe(true);
    const before = fake.calls.length;
    const changed = COMPOSE.replace("postgres:16-alpine", "postgres:17-alpine");
    const second = await deployBundle(options(fake, { update: true, composeYaml: changed, envText: `${ENV_TEXT}NEW_VAR=1\n` }));
    expect(fake.violations).toEqual([]);
    expect(second.success).toBe(true);
    expect(fake.projects).toHaveLength(1);
    expect(fake.composes).toHaveLength(1);
    expect(fake.composes[0]!.composeFile).toContain("postgres:17-alpine");
    expect(fake.composes[0]!.env).toContain("NEW_VAR=1");
    expect(fake.deployments).toHaveLength(2);
    expect(fake.sequence().slice(before)).toEqual([
      "GET /settings.getDokployVersion",
      "GET /project.all",
      "GET /project.one",
      "GET /compose.one",
      "POST /compose.update",
      "POST /compose.deploy",
    ]);
    expect(second.stackId).toBe(fake.composes[0]!.composeId);
  });

  test("--update keeps variables added on Dokploy; the bundle's values win for the others", async () => {
    const fake = await startFake();
    expect((await deployBundle(options(fake))).success).toBe(true);
    // compose.update replaces the whole env text: what the user added there must survive.
    fake.composes[0]!.env += "SMTP_PASSWORD='set on dokploy'\n";
    const rotated = ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "rotated-in-the-bundle");
    const result = await deployBundle(options(fake, { update: true, envText: rotated }));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    const env = envOf(fake);
    expect(env.get("POSTGRES_PASSWORD")).toBe("rotated-in-the-bundle");
    expect(env.get("SMTP_PASSWORD")).toBe("set on dokploy");
    expect(env.get("QUOTED")).toBe("a $literal value");
    expect(result.steps.find((s) => s.step === "Set env")!.detail).toContain("1 only on Dokploy kept");
  });

  test("when Dokploy does not show the current variables: the bundle's go in, freshly generated ones leave them alone", async () => {
    for (const keepExistingValues of [false, true]) {
      const fake = await startFake();
      expect((await deployBundle(options(fake))).success).toBe(true);
      fake.injections.push({ operationId: "compose-one", reply: { status: 404, body: { message: "Not found", code: "NOT_FOUND" } } });
      const changed = ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "changed-value");
      const result = await deployBundle(options(fake, { update: true, envText: changed, keepExistingValues }));
      expect(result.success).toBe(true);
      expect(envOf(fake).get("POSTGRES_PASSWORD")).toBe(keepExistingValues ? "Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4" : "changed-value");
      expect(result.steps.find((s) => s.step === "Set env")!.detail).toContain("not readable");
    }
  });

  test("an update of a freshly generated bundle (the API relay) keeps every value Dokploy has set", async () => {
    const fake = await startFake();
    expect((await deployBundle(options(fake))).success).toBe(true);
    fake.composes[0]!.env = fake.composes[0]!.env!.replace("CORE_VERSION=latest", "CORE_VERSION=");
    const fresh = `${ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "a-new-secret").replace("CORE_VERSION=latest", "CORE_VERSION=2026.11.1")}NEW_SECRET=n3w\n`;
    const result = await deployBundle(options(fake, { update: true, envText: fresh, keepExistingValues: true }));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    const env = envOf(fake);
    expect(env.get("POSTGRES_PASSWORD")).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
    expect(env.get("GREETING")).toBe("hello world");
    expect(env.get("QUOTED")).toBe("a $literal value");
    // Empty on the platform, or new: the fresh values go in.
    expect(env.get("CORE_VERSION")).toBe("2026.11.1");
    expect(env.get("NEW_SECRET")).toBe("n3w");
    expect(result.steps.find((s) => s.step === "Set env")!.detail).toContain("3 kept as set on Dokploy");
  });

  test("values reach the containers as compose reads the bundle's .env, however Dokploy's reader differs", async () => {
    const want = envValues(AWKWARD_ENV);
    expect(want.get("BACKSLASH")).toBe("C:\\share\\x");
    expect(want.get("DOLLAR")).toBe("it's $5");
    expect(want.get("DOUBLED")).toBe("pa$word");
    expect(want.get("TRAILING")).toBe("ends with a backslash \\");
    expect(want.get("HASH")).toBe("a #b");
    expect(want.get("B")).toBe("2");
    const fake = await startFake();
    const result = await deployBundle(options(fake, { envText: AWKWARD_ENV }));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect(envOf(fake)).toEqual(want);
    expect(fake.composes[0]!.env).toStartWith("# written for compose\n");
    // An update that keeps one value as Dokploy has it rewrites the rest the same way.
    fake.composes[0]!.env += `EXTRA="set on dokploy"\n`;
    const again = await deployBundle(options(fake, { update: true, envText: AWKWARD_ENV.replace("pa$$word", "new$$one"), keepExistingValues: true }));
    expect(again.success).toBe(true);
    expect(envOf(fake)).toEqual(new Map([...want, ["EXTRA", "set on dokploy"]]));
  });

  test("a ${{ in a value, which Dokploy expands and fails the deployment on, is refused before any call", async () => {
    const fake = await startFake();
    // ODD: all three quotes and a #; SLASHED: a # and a trailing backslash (read alone, a quoted
    // form seems to work, but in the text its \' runs on into the next line's quote).
    const envText = `${ENV_TEXT}CALLBACK='https://x/\${{path}}'\nODD=" ' and \\" and \` # "\nSLASHED="#\\\\"\n# quoted with '\nAFTER=1\n`;
    const refused = await deployBundle(options(fake, { envText })).then(() => undefined, (e: Error) => e);
    expect(refused?.message).toContain("${{…}}");
    expect(refused?.message).toContain("CALLBACK");
    expect(refused?.message).toContain("ODD");
    expect(refused?.message).toContain("SLASHED");
    expect(fake.calls).toEqual([]);
  });

  test("--update on a project without the stack creates it once", async () => {
    const fake = await startFake();
    fake.addProject(PROJECT);
    const result = await deployBundle(options(fake, { update: true }));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect(fake.composes).toHaveLength(1);
  });

  test.each(["v0.24.3", "v0.19.0", "v0.5.0"])("version %s is refused, naming the minimum", async (version) => {
    const fake = await startFake({ version });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.failedStep).toBe("Test connection");
    expect(result.error).toContain("0.25.0 or later");
    expect(result.error).toContain(version);
    expect(fake.calls).toHaveLength(1);
  });

  test("a version answered as an object (the published document's shape) is read, or taken as current when it names none", async () => {
    const named = await startFake({ versionAnswer: { version: "v0.26.0" } });
    const ok = await deployBundle(options(named));
    expect(ok.success).toBe(true);
    expect(ok.steps[0]!.detail).toContain("Dokploy v0.26.0");
    const old = await startFake({ versionAnswer: { version: "v0.20.0" } });
    const refused = await deployBundle(options(old));
    expect(refused.success).toBe(false);
    expect(refused.error).toContain("0.25.0 or later");
    const empty = await startFake({ versionAnswer: {} });
    const result = await deployBundle(options(empty));
    expect(empty.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect(result.steps[0]!.detail).toContain("Dokploy (version not reported)");
    // As the published document describes compose.create: with its sourceType.
    expect((empty.calls.find((c) => c.path === "/compose.create")!.body as Record<string, unknown>).sourceType).toBe("raw");
    // Not an object and not a version: something else answered.
    const other = await startFake({ versionAnswer: 42 });
    expect((await deployBundle(options(other))).error).toContain("did not report a version");
  });

  test("0.25.x/0.26.0 (no isDefault): picks the production environment", async () => {
    const fake = await startFake({ version: "v0.26.0" });
    const result = await deployBundle(options(fake));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect(fake.composes[0]!.environmentId).toBe(fake.environments[0]!.environmentId);
  });

  test("before 0.30 (sourceType stripped on create): compose.update makes it raw before deploy", async () => {
    const fake = await startFake({ version: "v0.29.4" });
    const result = await deployBundle(options(fake));
    expect(fake.violations).toEqual([]);
    expect(result.success).toBe(true);
    expect((fake.calls.find((c) => c.path === "/compose.create")!.body as Record<string, unknown>).sourceType).toBeUndefined();
    expect(fake.composes[0]!.sourceType).toBe("raw");
  });

  test("Dokploy Cloud / remote servers only: the stack goes to the first remote server", async () => {
    const fake = await startFake();
    fake.remoteServersOnly = true;
    fake.servers.push({ serverId: "srv-one", name: "edge-1", ipAddress: "203.0.113.7", serverStatus: "active" });
    const result = await deployBundle(options(fake));
    expect(fake.violations).toEqual([]);
    expect(result.error).toBeUndefined();
    expect(result.success).toBe(true);
    expect(fake.composes).toHaveLength(1);
    expect(fake.composes[0]!.serverId).toBe("srv-one");
    expect(result.steps.find((s) => s.step === "Create compose stack")?.detail).toContain("on server edge-1");
    expect(fake.sequence()).toEqual([...CREATE_SEQUENCE.slice(0, 5), "GET /server.all", ...CREATE_SEQUENCE.slice(4)]);
  });

  test("remote servers only, and none listed: a message that says so, not a wrong key", async () => {
    const fake = await startFake();
    fake.remoteServersOnly = true;
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.failedStep).toBe("Create compose stack");
    expect(result.error).toContain("add a server in Dokploy");
    expect(result.error).not.toContain("Unauthorized");
    expect(fake.composes).toHaveLength(0);
  });

  test("500 mid-way: names the failed step and what was already created", async () => {
    const fake = await startFake();
    fake.injections.push({
      operationId: "compose-update",
      reply: { status: 500, body: { message: "database is locked", code: "INTERNAL_SERVER_ERROR" } },
    });
    const result = await deployBundle(options(fake));
    expect(result.success).toBe(false);
    expect(result.error).toBe("Dokploy API 500: Internal Server Error");
    expect(result.failedStep).toBe("Set env");
    expect(result.steps.at(-1)!.detail).toBe("database is locked");
    expect(result.created).toEqual([
      `Dokploy project "${PROJECT}" (${fake.projects[0]!.projectId})`,
      `Dokploy compose "${PROJECT}" (${fake.composes[0]!.composeId})`,
    ]);
    expect(fake.deployments).toHaveLength(0);
    expect(fake.violations).toEqual([]);
  });

  test("a create call whose answer never comes (a dropped connection) may have created its resource: named as possibly created", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake, { fetch: losingAnswersTo("POST", "/api/compose.create", connectionDropped) }));
    expect(result).toMatchObject({ success: false, failedStep: "Create compose stack" });
    expect(result.error).toContain("Cannot reach Dokploy");
    expect(result.created).toEqual([`Dokploy project "${PROJECT}" (${fake.projects[0]!.projectId})`]);
    expect(result.possiblyCreated).toEqual([`Dokploy compose "${PROJECT}"`]);
    expect(fake.composes).toHaveLength(1);
    // The project's own answer lost: that one is possibly created.
    const second = await startFake();
    const lost = await deployBundle(options(second, { fetch: losingAnswersTo("POST", "/api/project.create", timedOut) }));
    expect(lost).toMatchObject({ failedStep: "Create project", created: [], possiblyCreated: [`Dokploy project "${PROJECT}"`] });
    expect(second.projects).toHaveLength(1);
    expect(fake.violations.concat(second.violations)).toEqual([]);
  });

  describe("an answer of another shape than Dokploy's API documents is named as such, never a JavaScript error", () => {
    hostileAnswerTests("Dokploy", [
      ["project-all", [null], "GET /project.all", "[0] is null, expected an object"],
      ["project-all", [{ projectId: { id: 1 }, name: PROJECT }], "GET /project.all", "[0].projectId is an object, expected a non-empty string"],
      ["project-all", { projects: [] }, "GET /project.all", "the answer is an object, expected a list"],
      ["project-create", true, "POST /project.create", "the answer is a boolean, expected an object"],
      ["project-create", { project: { projectId: 5 } }, "POST /project.create", "project.projectId is a number, expected a non-empty string"],
      ["project-create", { project: { projectId: "p1" }, environment: { environmentId: "e1", name: 3 } }, "POST /project.create", "environment.name is a number, expected a string"],
      ["project-one", { projectId: "p", environments: { production: {} } }, "GET /project.one", "environments is an object, expected a list"],
      ["project-one", { projectId: "p", environments: [{ environmentId: "e", name: "production", compose: "none" }] }, "GET /project.one", "environments[0].compose is a string, expected a list"],
      ["project-one", { projectId: "p", environments: [{ environmentId: "e", name: "production", isDefault: "yes" }] }, "GET /project.one", "environments[0].isDefault is a string, expected true or false"],
      ["project-one", { projectId: "p", environments: [{ environmentId: "e", name: "production", compose: [null] }] }, "GET /project.one", "environments[0].compose[0] is null, expected an object", true],
      ["compose-create", [], "POST /compose.create", "the answer is a list, expected an object"],
      ["compose-deploy", { message: 5 }, "POST /compose.deploy", "message is a number, expected a string"],
    ], () => startFake(), (fake, update) => deployBundle(options(fake, { update })));

    test("a server list of another shape (remote servers only)", async () => {
      const fake = await startFake();
      fake.remoteServersOnly = true;
      fake.injections.push({ operationId: "server-all", reply: { status: 200, body: [{ serverId: 3, name: "edge" }] } });
      const result = await deployBundle(options(fake));
      expect(result).toMatchObject({ success: false, failedStep: "Create compose stack", error: "Dokploy's answer to GET /server.all is not what its API documents: [0].serverId is a number, expected a non-empty string" });
    });

    test("an env text of another shape is unreadable: a fresh bundle then leaves Dokploy's as it is", async () => {
      const fake = await startFake();
      expect((await deployBundle(options(fake))).success).toBe(true);
      fake.injections.push({ operationId: "compose-one", reply: { status: 200, body: { composeId: fake.composes[0]!.composeId, env: { POSTGRES_PASSWORD: "x" } } } });
      const fresh = ENV_TEXT.replace("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4", "a-new-secret");
      const result = await deployBundle(options(fake, { update: true, envText: fresh, keepExistingValues: true }));
      expect(result.success).toBe(true);
      expect(envOf(fake).get("POSTGRES_PASSWORD")).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
      expect(result.steps.find((s) => s.step === "Set env")!.detail).toContain("not readable (Dokploy's answer to GET /compose.one is not what its API documents: env is an object, expected a string)");
    });
  });

  test("a redirect is reported, never followed", async () => {
    const elsewhere = await startFake();
    const fake = await startFake();
    fake.redirectTo = elsewhere.url;
    const result = await deployBundle(options(fake));
    expect(result.error).toBe("Dokploy API 302: Found");
    expect(result.steps.at(-1)!.detail).toContain("not followed");
    expect(elsewhere.calls).toHaveLength(0);
  });

  test("unreachable URL", async () => {
    const fake = await startFake();
    const url = fake.url;
    await fake.stop();
    const result = await deployBundle(options(fake, { url }));
    expect(result.failedStep).toBe("Test connection");
    expect(result.error).toStartWith(`Cannot reach Dokploy at ${url} (`);
  });

  test("accepts a pasted API root as --url", async () => {
    const fake = await startFake();
    const result = await deployBundle(options(fake, { url: `${fake.url}/api/` }));
    expect(result.success).toBe(true);
    expect(fake.violations).toEqual([]);
  });
});
