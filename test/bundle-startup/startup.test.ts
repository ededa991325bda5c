// Generated bundles really start on a Docker engine. Each image is swapped for a local busybox
// stand-in (docker-compose.standin.yml, test-only) that checks its bind-mounted bundle files, writes
// its environment and a marker into its named volumes and then reports healthy; the test asserts
// health, dependency order, volumes, the single network and the environment from .env.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { fixedSecrets } from "../../src/core/generate/secrets.ts";
import { dockerTest, dockerUnavailable, TestStack } from "../docker/helpers.ts";
import { composeWithStandins, dockerOk, parsePs, watchProjectEvents, runCommand, standinDockerfileLines, type EngineEvent } from "./engine.ts";
import {
  containerPort,
  ENV_SNAPSHOT_FILE,
  expectedEnvironment,
  interpolate,
  MARKER_FILE,
  nanosOf,
  OVERRIDE_FILE,
  parseDotEnv,
  parseEnvOutput,
  planServices,
  READY_AFTER_SECONDS,
  standinOverride,
  type ComposeDoc,
} from "./standin.ts";

const e2e = await dockerTest();
const dockerMissing = await dockerUnavailable();

interface BundleCase {
  label: string;
  body: Record<string, unknown>;
  /** Services the bundle must contain (guards against a preset silently shrinking). */
  mustHave: string[];
}

const CASES: BundleCase[] = [
  { label: "devops preset (caddy, postgresql -> n8n, prometheus -> grafana)", body: { preset: "devops" }, mustHave: ["core", "caddy", "postgresql", "n8n", "prometheus", "grafana"] },
  { label: "researcher preset (caddy)", body: { preset: "researcher" }, mustHave: ["core", "caddy", "redis"] },
  { label: "minimal preset with proxy caddy", body: { preset: "minimal", proxy: "caddy" }, mustHave: ["core", "caddy"] },
  { label: "n8n + redis, deployment docker", body: { services: ["n8n", "redis"], deployment: "docker" }, mustHave: ["core", "postgresql", "n8n", "redis"] },
  // The other presets: the machines running this have no NVIDIA runtime, so GPU presets run without.
  { label: "ai-playground preset (no GPU here)", body: { preset: "ai-playground", gpu: false }, mustHave: ["core", "caddy", "ollama", "open-webui", "litellm", "postgresql"] },
  { label: "coding-team preset", body: { preset: "coding-team" }, mustHave: ["core", "caddy", "gitea", "claude-code", "opencode"] },
  { label: "content-creator preset (no GPU here)", body: { preset: "content-creator", gpu: false }, mustHave: ["core", "caddy", "stable-diffusion", "minio"] },
  { label: "creator preset", body: { preset: "creator" }, mustHave: ["core", "caddy", "remotion", "minio"] },
  { label: "full-stack preset (no GPU here)", body: { preset: "full-stack", gpu: false }, mustHave: ["core", "caddy", "n8n", "grafana", "ollama", "minio"] },
  { label: "videoconf preset", body: { preset: "videoconf", domain: "meet.example.com" }, mustHave: ["core", "caddy", "livekit", "lasuite-meet-backend", "lasuite-meet-frontend"] },
  // One-shot jobs: each app starts only once its volume-owner job has exited 0.
  { label: "one-shot jobs before their services (Dify, Flowise)", body: { services: ["dify", "flowise"] }, mustHave: ["core", "dify", "dify-storage-owner", "dify-api", "dify-beat", "flowise", "flowise-data-owner", "postgresql", "redis"] },
];

/** Values that must agree across services and with .env: [service, variable] pairs per .env key. */
const LINKED_SECRETS: Record<string, [string, string][]> = {
  N8N_DB_PASSWORD: [
    ["n8n", "DB_POSTGRESDB_PASSWORD"],
    ["postgresql", "N8N_DB_PASSWORD"],
  ],
  REDIS_PASSWORD: [
    ["redis", "REDISCLI_AUTH"],
    ["core", "REDIS_PASSWORD"],
  ],
  CORE_GATEWAY_TOKEN: [["core", "OPENCLAW_GATEWAY_TOKEN"]],
};

const UP_TIMEOUT_SECONDS = 120;

function writeBundle(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    const full = join(dir, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text, { mode: path === ".env" ? 0o600 : 0o644 });
  }
  chmodSync(join(dir, ".env"), 0o600); // mode only applies on create; be explicit
}

async function failureDetails(dir: string): Promise<string> {
  const ps = await composeWithStandins(dir, ["ps", "-a"], 30_000);
  const logs = await composeWithStandins(dir, ["logs", "--no-color", "--tail", "20"], 30_000);
  return `\n--- compose ps ---\n${ps.stdout}${ps.stderr}\n--- compose logs ---\n${logs.stdout}${logs.stderr}`;
}

const firstEventNanos = (events: EngineEvent[], service: string, action: string) =>
  events
    .filter((e) => e.Action === action && e.Actor.Attributes["com.docker.compose.service"] === service)
    .map((e) => e.nanos)
    .reduce<bigint | undefined>((min, n) => (min === undefined || n < min ? n : min), undefined);

/** Read marker and environment snapshot of every volume through one throwaway container. */
async function readVolumes(image: string, volumes: Record<string, string>): Promise<Record<string, { marker: string; env: string }>> {
  const mounts = Object.entries(volumes).flatMap(([key, name]) => ["-v", `${name}:/v/${key}:ro`]);
  const script = `for d in /v/*; do echo "@@volume \${d#/v/}"; cat "$d/${MARKER_FILE}"; echo "@@env"; cat "$d/${ENV_SNAPSHOT_FILE}"; done`;
  const out = await dockerOk(["run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", ...mounts, image, "-c", script], 60_000);
  const result: Record<string, { marker: string; env: string }> = {};
  for (const block of out.split("@@volume ").slice(1)) {
    const [head, env = ""] = block.split("@@env\n");
    const [key, ...marker] = head.split("\n");
    result[key.trim()] = { marker: marker.join("\n").trim(), env };
  }
  return result;
}

describe("stand-in helpers", () => {
  test("interpolation follows compose for the forms bundles use", () => {
    const vars = { A: "x", EMPTY: "" };
    expect(interpolate("${A}-${EMPTY:-d}-${EMPTY-d}-${MISSING:-img}:$${A}", vars)).toBe("x-d--img:${A}");
    expect(() => interpolate("${MISSING}", vars)).toThrow(/MISSING is not set/);
  });

  test("ports, binds and volumes are planned from the compose file", () => {
    expect(containerPort("127.0.0.1:5432:5432")).toBe("5432/tcp");
    expect(containerPort("3150:3000")).toBe("3000/tcp");
    expect(containerPort("53:53/udp")).toBe("53/udp");
    const compose: ComposeDoc = {
      services: {
        web: { image: "x", ports: ["80:8080"], volumes: ["data:/data", "./conf:/etc/web:ro", "./one.txt:/one.txt:ro"], depends_on: { db: { condition: "service_healthy" } } },
      },
    };
    const [plan] = planServices(compose, { "conf/a.yml": "a", "conf/sub/b.yml": "b", "one.txt": "1" });
    expect(plan.files.map((f) => f.path)).toEqual(["/etc/web/a.yml", "/etc/web/sub/b.yml", "/one.txt"]);
    expect(plan.volumes).toEqual([{ volume: "data", target: "/data", readOnly: false }]);
    expect(plan.dependsOn).toEqual({ db: "service_healthy" });
    expect(() => planServices(compose, { "one.txt": "1" })).toThrow(/binds \.\/conf, which the bundle does not contain/);
    const override = standinOverride("p", "img:1", [plan]);
    expect(override).toContain('ports: !override ["127.0.0.1::8080/tcp"]');
    expect(override).toContain("healthcheck: !override");
  });

  test("StartedAt keeps its nanoseconds", () => {
    expect(nanosOf("2024-01-01T00:00:01.000000002Z") - nanosOf("2024-01-01T00:00:01.000000001Z")).toBe(1n);
    expect(nanosOf("2024-01-01T00:00:02Z") - nanosOf("2024-01-01T00:00:01.5Z")).toBe(500_000_000n);
  });
});

describe("generated bundles start on a real engine", () => {
  const imageHolder = TestStack.unique("bsimg");
  const standinImage = `stackgen-standin/busybox:${imageHolder.project}`;

  beforeAll(async () => {
    if (dockerMissing) return;
    await imageHolder.build(standinImage, standinDockerfileLines());
  }, 120_000);
  afterAll(async () => {
    if (dockerMissing) rmSync(imageHolder.dir, { recursive: true, force: true });
    else await imageHolder.cleanup();
  }, 60_000);

  for (const c of CASES) {
    e2e(
      c.label,
      async () => {
        const stack = TestStack.unique("bs");
        const project = stack.project;
        const dir = stack.dir;
        let watch: ReturnType<typeof watchProjectEvents> | undefined;
        try {
          // 1. The bundle, as `stackgen generate` would write it.
          const { files } = generateBundle({ ...c.body, projectName: project }, getCatalog(), { secrets: fixedSecrets() });
          writeBundle(dir, files);
          expect(statSync(join(dir, ".env")).mode & 0o777).toBe(0o600);
          const compose = parse(files["docker-compose.yml"]) as ComposeDoc;
          const dotEnv = parseDotEnv(files[".env"]);
          const services = Object.keys(compose.services);
          expect(compose.name).toBe(project);
          for (const s of c.mustHave) expect(services).toContain(s);
          if (services.includes("caddy")) {
            expect(compose.services.caddy.volumes).toContain("./Caddyfile:/etc/caddy/Caddyfile:ro");
          }
          const networkKeys = Object.keys(compose.networks ?? {});
          expect(networkKeys).toHaveLength(1);

          // The generated file on its own must be valid for compose, without unset variables.
          const baseConfig = await runCommand(["docker", "compose", "-f", "docker-compose.yml", "config", "--quiet"], { cwd: dir, timeoutMs: 30_000 });
          expect(baseConfig.stderr).toBe("");
          expect(baseConfig.code).toBe(0);

          // 2. The test-only override.
          const plans = planServices(compose, files);
          writeFileSync(join(dir, OVERRIDE_FILE), standinOverride(project, standinImage, plans));

          // 3. Start and wait for every health check.
          watch = watchProjectEvents(project);
          await Bun.sleep(300); // the stream is listening before the first container is created
          const up = await composeWithStandins(dir, ["up", "-d", "--wait", "--wait-timeout", String(UP_TIMEOUT_SECONDS)], (UP_TIMEOUT_SECONDS + 30) * 1000);
          if (up.code !== 0) throw new Error(`compose up failed (${up.code}): ${up.stderr}${await failureDetails(dir)}`);
          expect(up.stderr).not.toMatch(/variable is not set|WARN/);
          const events = await watch.stop();

          // 4a. Every service running and healthy, one container each; a job exited with 0.
          const ps = parsePs((await composeWithStandins(dir, ["ps", "-a", "--format", "json"], 30_000)).stdout);
          expect(ps.map((r) => r.Service).sort()).toEqual([...services].sort());
          const jobs = new Set(plans.filter((p) => p.job).map((p) => p.name));
          for (const row of ps) {
            const want = jobs.has(row.Service) ? { state: "exited", health: "" } : { state: "running", health: "healthy" };
            expect({ service: row.Service, state: row.State, health: row.Health }).toEqual({ service: row.Service, ...want });
          }
          const inspected: any[] = JSON.parse(await dockerOk(["inspect", ...ps.map((r) => r.ID)]));
          const containerOf = Object.fromEntries(inspected.map((i) => [i.Config.Labels["com.docker.compose.service"], i]));

          // 4b. Dependency order: a dependent starts only after its dependency is healthy / started.
          const startedAt = (s: string) => nanosOf(containerOf[s].State.StartedAt);
          for (const s of jobs) expect({ job: s, exitCode: containerOf[s].State.ExitCode }).toEqual({ job: s, exitCode: 0 });
          for (const s of services.filter((name) => !jobs.has(name))) {
            const healthy = firstEventNanos(events, s, "health_status: healthy");
            expect({ service: s, healthyEvent: healthy !== undefined }).toEqual({ service: s, healthyEvent: true });
            // The stand-in only turns healthy after its delay: proves the health check is the stand-in's.
            expect((healthy as bigint) - startedAt(s)).toBeGreaterThanOrEqual(BigInt(READY_AFTER_SECONDS) * 1_000_000_000n);
          }
          let healthyEdges = 0;
          for (const plan of plans) {
            for (const [dep, condition] of Object.entries(plan.dependsOn)) {
              expect(["service_healthy", "service_started", "service_completed_successfully"]).toContain(condition);
              const ready = condition === "service_healthy" ? firstEventNanos(events, dep, "health_status: healthy")
                : condition === "service_completed_successfully" ? nanosOf(containerOf[dep].State.FinishedAt) : startedAt(dep);
              const edge = `${plan.name} (${condition} on ${dep})`;
              expect({ edge, startsAfter: startedAt(plan.name) > (ready as bigint) }).toEqual({ edge, startsAfter: true });
              if (condition === "service_healthy") healthyEdges++;
            }
          }
          if (services.includes("n8n")) expect(healthyEdges).toBeGreaterThan(0);

          // 4c. Named volumes: exactly the declared ones, mounted where the compose file says, holding the marker.
          const volumeLines = (await dockerOk(["volume", "ls", "--filter", `label=com.docker.compose.project=${project}`, "--format", '{{.Name}}\t{{.Label "com.docker.compose.volume"}}'])).trim();
          const volumeNames = Object.fromEntries(volumeLines.split("\n").filter(Boolean).map((l) => l.split("\t").reverse()));
          expect(Object.keys(volumeNames).sort()).toEqual(Object.keys(compose.volumes ?? {}).sort());
          const contents = await readVolumes(standinImage, volumeNames);
          for (const plan of plans) {
            const mounts: any[] = containerOf[plan.name].Mounts;
            for (const v of plan.volumes) {
              const m = mounts.find((x) => x.Destination === v.target);
              expect({ service: plan.name, target: v.target, type: m?.Type, name: m?.Name }).toEqual({ service: plan.name, target: v.target, type: "volume", name: volumeNames[v.volume] });
            }
            for (const b of plan.binds) {
              const m = mounts.find((x) => x.Destination === b.target);
              expect({ service: plan.name, target: b.target, type: m?.Type, source: m?.Source, rw: m?.RW }).toEqual({ service: plan.name, target: b.target, type: "bind", source: join(dir, b.source), rw: !b.readOnly });
            }
          }
          for (const volume of Object.keys(volumeNames)) {
            const writers = plans.flatMap((p) => p.volumes.filter((v) => v.volume === volume && !v.readOnly).map((v) => `standin project=${project} service=${p.name} target=${v.target}`));
            const found = contents[volume];
            expect({ volume, markerIsAWriters: writers.includes(found?.marker ?? "") }).toEqual({ volume, markerIsAWriters: true });
            const writer = /service=(\S+)/.exec(found.marker)?.[1] as string;
            expect(parseEnvOutput(found.env)).toMatchObject(expectedEnvironment(compose.services[writer], dotEnv));
          }

          // 4d. One network, shared by every container.
          const networks = (await dockerOk(["network", "ls", "--filter", `label=com.docker.compose.project=${project}`, "--format", "{{.Name}}"])).trim().split("\n");
          expect(networks).toEqual([`${project}_${networkKeys[0]}`]);
          for (const s of services) expect({ service: s, networks: Object.keys(containerOf[s].NetworkSettings.Networks) }).toEqual({ service: s, networks });

          // 4e. Published container ports survive the remap (on free loopback ports).
          for (const plan of plans) {
            const published = containerOf[plan.name].NetworkSettings.Ports ?? {};
            for (const port of plan.containerPorts) {
              expect({ service: plan.name, port, bound: published[port]?.[0]?.HostIp }).toEqual({ service: plan.name, port, bound: "127.0.0.1" });
            }
          }

          // 4f. Environment: what compose resolved from .env is what each container sees.
          const envOf: Record<string, Record<string, string>> = {};
          // A job has ended: its environment is the one it left in its volumes (4c).
          for (const s of services.filter((name) => !jobs.has(name))) {
            envOf[s] = parseEnvOutput(await dockerOk(["exec", containerOf[s].Id, "cat", "/proc/1/environ"], 30_000));
            expect(envOf[s]).toMatchObject(expectedEnvironment(compose.services[s], dotEnv));
          }
          for (const [key, uses] of Object.entries(LINKED_SECRETS)) {
            // The first user owns the variable; without it the bundle has no such key.
            if (!services.includes(uses[0]![0])) continue;
            const present = uses.filter(([s]) => services.includes(s));
            expect(dotEnv[key]).toMatch(/^\S{16,}$/);
            for (const [s, variable] of present) expect({ service: s, variable, value: envOf[s][variable] }).toEqual({ service: s, variable, value: dotEnv[key] });
          }
        } finally {
          await watch?.stop();
          await composeWithStandins(dir, ["down", "-v", "--remove-orphans", "-t", "2"], 60_000);
          await stack.cleanup();
        }
      },
      (UP_TIMEOUT_SECONDS + 60) * 1000,
    );
  }
});
