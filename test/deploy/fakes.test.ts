// The fakes must reject what the real servers reject; otherwise the deployer tests prove nothing.
// These requests repeat the mistakes listed in research §4 (the reference tool's deployers).
import { afterEach, describe, expect, test } from "bun:test";
import { CoolifyFake } from "./fakes/coolify-fake.ts";
import { DokployFake } from "./fakes/dokploy-fake.ts";

let fakes: (CoolifyFake | DokployFake)[] = [];
afterEach(async () => {
  for (const fake of fakes) await fake.stop();
  fakes = [];
});

async function coolify(): Promise<CoolifyFake> {
  const fake = await new CoolifyFake().start();
  fakes.push(fake);
  return fake;
}
async function dokploy(): Promise<DokployFake> {
  const fake = await new DokployFake().start();
  fakes.push(fake);
  return fake;
}

function send(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  return fetch(url, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("Coolify fake rejects what Coolify rejects", () => {
  const bearer = (fake: CoolifyFake) => ({ authorization: `Bearer ${fake.token}` });

  async function projectAndEnv(fake: CoolifyFake) {
    const project = fake.addProject("demo");
    return { project, env: project.environments[0]! };
  }

  /** POST /services in a fresh project, with `docker_compose_raw` as given. */
  async function createService(fake: CoolifyFake, composeRaw: string) {
    const { project, env } = await projectAndEnv(fake);
    return send(`${fake.url}/api/v1/services`, "POST", bearer(fake), {
      project_uuid: project.uuid,
      server_uuid: fake.servers[0]!.uuid,
      environment_name: env.name,
      environment_uuid: env.uuid,
      docker_compose_raw: composeRaw,
    });
  }

  test("GET /deploy is not in the spec (405 on 4.2+)", async () => {
    const fake = await coolify();
    const res = await send(`${fake.url}/api/v1/deploy?uuid=x&force=true`, "GET", bearer(fake));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await res.json()).toEqual({ message: "This endpoint has changed to a POST request." });
    expect(fake.violations).toHaveLength(1);
    expect(fake.violations[0]).toContain("method not allowed");
  });

  test("raw YAML in docker_compose_raw: 422 should be base64 encoded", async () => {
    const fake = await coolify();
    const res = await createService(fake, "services:\n  a:\n    image: nginx\n");
    expect(res.status).toBe(422);
    expect((await res.json()).errors.docker_compose_raw).toBe("The docker_compose_raw should be base64 encoded.");
    expect(fake.violations.join()).toContain("base64");
  });

  test("base64 compose without services: rejected", async () => {
    const fake = await coolify();
    const res = await createService(fake, Buffer.from("volumes: {}\n").toString("base64"));
    expect(res.status).toBe(422);
    expect(fake.violations.join()).toContain("no services map");
  });

  test("volume paths with shell metacharacters: rejected; ${VAR} references are fine", async () => {
    for (const volume of ["./data;touch /tmp/x:/data", "$(id):/x", { type: "bind", source: "./a`id`", target: "/a" }]) {
      const fake = await coolify();
      const compose = { services: { app: { image: "nginx", volumes: [volume] } } };
      const res = await createService(fake, Buffer.from(JSON.stringify(compose)).toString("base64"));
      expect(res.status).toBe(422);
      expect(fake.violations.join()).toContain("shell metacharacters");
    }
    const fake = await coolify();
    const fine = { services: { app: { image: "nginx", volumes: ["${DATA_DIR:-./data}:/data", "app_data:/var/lib/app"] } } };
    expect((await createService(fake, Buffer.from(JSON.stringify(fine)).toString("base64"))).status).toBe(201);
    expect(fake.violations).toEqual([]);
  });

  test("only one of environment_name/environment_uuid: the spec's required list catches it", async () => {
    const fake = await coolify();
    const { project } = await projectAndEnv(fake);
    const res = await send(`${fake.url}/api/v1/services`, "POST", bearer(fake), {
      project_uuid: project.uuid,
      server_uuid: fake.servers[0]!.uuid,
      environment_name: "production",
      docker_compose_raw: Buffer.from("services: {a: {image: nginx}}\n").toString("base64"),
    });
    expect(res.status).toBe(422);
    expect(fake.violations.join()).toContain("environment_uuid");
  });

  test("PATCH /services/{uuid}/envs with an array body (reference tool): spec says object", async () => {
    const fake = await coolify();
    const res = await send(`${fake.url}/api/v1/services/abc/envs`, "PATCH", bearer(fake), [{ key: "A", value: "1" }]);
    expect(res.status).toBe(422);
    expect(fake.violations.join()).toContain("must be object");
  });

  test("unknown fields on POST /projects: 422 This field is not allowed.", async () => {
    const fake = await coolify();
    const res = await send(`${fake.url}/api/v1/projects`, "POST", bearer(fake), { name: "demo", team: 1 });
    expect(res.status).toBe(422);
    expect((await res.json()).errors.team).toEqual(["This field is not allowed."]);
  });

  test("GET /projects/{uuid}/services does not exist (matches the environment route, not modelled)", async () => {
    const fake = await coolify();
    const res = await send(`${fake.url}/api/v1/projects/abc/services`, "GET", bearer(fake));
    expect(res.status).toBe(501);
    expect(fake.violations).toHaveLength(1);
  });

  test("no Authorization header is a violation; a wrong token is a plain 401", async () => {
    const fake = await coolify();
    expect((await send(`${fake.url}/api/v1/version`, "GET", {})).status).toBe(401);
    expect(fake.violations).toHaveLength(1);
    const res = await send(`${fake.url}/api/v1/version`, "GET", { authorization: "Bearer nope" });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: "Unauthenticated." });
    expect(fake.violations).toHaveLength(1);
  });

  test("a form-encoded body: 400 Content-Type must be application/json", async () => {
    const fake = await coolify();
    const res = await fetch(`${fake.url}/api/v1/projects`, {
      method: "POST",
      headers: { ...bearer(fake), "content-type": "application/x-www-form-urlencoded" },
      body: "name=demo",
    });
    expect(res.status).toBe(400);
    expect(fake.violations.join()).toContain("application/json");
  });
});

describe("Dokploy fake rejects what Dokploy rejects", () => {
  test("a mutation without JSON content type: 415", async () => {
    const fake = await dokploy();
    const res = await fetch(`${fake.url}/api/project.create`, {
      method: "POST",
      headers: { "x-api-key": fake.apiKey, "content-type": "text/plain" },
      body: JSON.stringify({ name: "x" }),
    });
    expect(res.status).toBe(415);
    expect(fake.violations).toHaveLength(1);
  });

  test("compose.create without environmentId (pre-0.25 projectId shape): 400 Input validation failed", async () => {
    const fake = await dokploy();
    const res = await send(`${fake.url}/api/compose.create`, "POST", { "x-api-key": fake.apiKey }, { name: "x", projectId: "p" });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toBe("Input validation failed");
    expect(fake.violations.join()).toContain("environmentId");
  });

  test("Bearer auth (pre-0.19): 401 and a violation", async () => {
    const fake = await dokploy();
    const res = await send(`${fake.url}/api/project.all`, "GET", { authorization: `Bearer ${fake.apiKey}` });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: "Unauthorized" });
    expect(fake.violations.join()).toContain("x-api-key");
  });

  test("deploying a compose left on sourceType github is flagged", async () => {
    const fake = await dokploy();
    const { environment } = fake.addProject("p");
    const key = { "x-api-key": fake.apiKey };
    const created = await (await send(`${fake.url}/api/compose.create`, "POST", key, { name: "x", environmentId: environment.environmentId, composeFile: "services: {}" })).json();
    await send(`${fake.url}/api/compose.deploy`, "POST", key, { composeId: created.composeId });
    expect(fake.violations.join()).toContain("sourceType github");
  });

  test("unknown environmentId: 404 Environment not found", async () => {
    const fake = await dokploy();
    const res = await send(`${fake.url}/api/compose.create`, "POST", { "x-api-key": fake.apiKey }, { name: "x", environmentId: "nope" });
    expect(res.status).toBe(404);
    expect((await res.json()).message).toBe("Environment not found");
  });

  test("a path that is not in the document: 404 and a violation", async () => {
    const fake = await dokploy();
    const res = await send(`${fake.url}/api/compose.saveEverything`, "POST", { "x-api-key": fake.apiKey }, {});
    expect(res.status).toBe(404);
    expect(fake.violations.join()).toContain("no such path");
  });
});
