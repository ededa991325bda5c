// Pure logic of the day-2 commands: layering, uptime, tar and archive member checks, references.
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, utimesSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { checkMember, checkMembers } from "../../src/docker/archive-safety.ts";
import { backupFileName, bundleFiles, makeWorkDir, readVolumes, removeLeftHelpers, sha256, verifyBackupFile, VolumeCopyFailed, writeArchive, writeVolumes, type ArchiveInput, type VerifiedBackup } from "../../src/docker/backup.ts";
import { LOCK_FILE, removeStale, unfinishedCommand, withStackLock } from "../../src/docker/stack-lock.ts";
import { backupInFlight, liveDatabases, outsideTheBackup, quitBackupNote, volumeCopyProgress } from "../../src/docker/backup-create.ts";
import { listBackups, planPrune, type ListedBackup } from "../../src/docker/backup-list.ts";
import { configTargetProblems, loadVerifiedBackup, unpackConfigInto, writeConfigFiles } from "../../src/docker/backup-restore.ts";
import { Compose, normaliseModel, restartsForGood, takesUpPull, type ComposeCli, type ComposeModel } from "../../src/docker/compose.ts";
import { byteProgress, formatBytes, formatPorts, formatUptime, uptimeOf } from "../../src/docker/format.ts";
import { EngineError, parseDockerHost, unreachableMessage, type Engine } from "../../src/docker/engine.ts";
import { readiness, waitReady } from "../../src/docker/health.ts";
import { awaitedJobs, dependencyLayers, stillStarting } from "../../src/docker/layers.ts";
import { insecureRegistries, parseChallenge, parseImageRef, registryBaseUrl } from "../../src/docker/registry.ts";
import { loadStack, normaliseProjectName, projectNameOf, type Stack } from "../../src/docker/stack.ts";
import { summarise, healthOf, serviceStatus, type Health, type ServiceStatus, type State } from "../../src/docker/status.ts";
import { fileEntry, readTar, TarParser, writeTar, type TarEntry } from "../../src/docker/tar.ts";
import { digestOf, pulledAs, quitUpdateNote, rollbackTag, splitTag, UNFINISHED_UPDATE_FILE, unfinishedUpdateNote } from "../../src/docker/update.ts";
import { timeoutMs } from "../../src/docker/cli-support.ts";
import { diskCheck, diskSpaceOf, ENGINE_DISK_WARN_BYTES, STACK_DISK_WARN_BYTES, type DiskSpace } from "../../src/docker/doctor.ts";

const entry = (name: string, type: TarEntry["type"] = "file", linkname = ""): TarEntry => ({
  ...fileEntry(name, type === "file" ? "x" : ""),
  type,
  linkname,
});

describe("dependencyLayers", () => {
  test("orders services so each layer depends only on earlier ones", () => {
    const layers = dependencyLayers({ web: ["api"], api: ["db", "cache"], db: [], cache: [], worker: ["db"] });
    expect(layers).toEqual([["cache", "db"], ["api", "worker"], ["web"]]);
  });
  test("ignores dependencies outside the set and rejects cycles", () => {
    expect(dependencyLayers({ a: ["ghost"] })).toEqual([["a"]]);
    expect(() => dependencyLayers({ a: ["b"], b: ["a"], c: [] })).toThrow(/cycle among: a, b/);
  });
});

describe("uptime", () => {
  test("formats the two largest units", () => {
    expect(formatUptime(45_000)).toBe("45s");
    expect(formatUptime(12 * 60_000 + 30_000)).toBe("12m30s");
    expect(formatUptime(3 * 3600_000 + 12 * 60_000 + 59_000)).toBe("3h12m");
    expect(formatUptime(2 * 86400_000 + 5 * 3600_000)).toBe("2d5h");
  });
  test("is empty when not running", () => {
    const now = Date.parse("2024-01-01T03:12:00Z");
    expect(uptimeOf(true, "2024-01-01T00:00:00Z", now)).toBe("3h12m");
    expect(uptimeOf(false, "2024-01-01T00:00:00Z", now)).toBe("");
    expect(uptimeOf(true, "0001-01-01T00:00:00Z", now)).toBe("");
  });
});

describe("progress of long copies", () => {
  test("says how far a copy is at most every interval, nothing for a quick one", () => {
    let clock = 1000;
    const said: string[] = [];
    const add = byteProgress((line) => said.push(line), "Writing the archive", 3 * 1024 ** 3, 5000, () => clock);
    add(512 * 1024 ** 2);
    clock += 4999;
    add(512 * 1024 ** 2);
    expect(said).toEqual([]);
    clock += 1;
    add(512 * 1024 ** 2);
    clock += 100;
    add(1024);
    expect(said).toEqual(["Writing the archive: 1.5 GiB of 3.0 GiB"]);
    clock += 5000;
    const copy = byteProgress((line) => said.push(line), "Copying volume proj_data", undefined, 0, () => clock);
    copy(2048);
    expect(said.at(-1)).toBe("Copying volume proj_data: 2.0 KiB");
  });
});

describe("status helpers", () => {
  test("ports are formatted and de-duplicated", () => {
    expect(
      formatPorts([
        { IP: "0.0.0.0", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { IP: "0.0.0.0", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { IP: "::", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { PrivatePort: 6379, Type: "tcp" },
      ]),
    ).toEqual(["0.0.0.0:8080->80/tcp", "[::]:8080->80/tcp", "6379/tcp"]);
  });
  test("health is none unless running, summary counts", () => {
    expect(healthOf({ State: { Status: "exited", Health: { Status: "unhealthy" } } } as any)).toBe("none");
    expect(healthOf({ State: { Status: "running", Health: { Status: "unhealthy" } } } as any)).toBe("unhealthy");
    expect(healthOf({ State: { Status: "running" } } as any)).toBe("none");
    expect(healthOf({ State: { Status: "paused", Health: { Status: "unhealthy" } } } as any)).toBe("unhealthy");
    const status = (Status: string) => serviceStatus(
      { Id: "c1", Names: ["/p-db-1"], Labels: { "com.docker.compose.service": "db" }, Status: Status, Ports: [] } as any,
      { Name: "/p-db-1", Config: { Image: "db:1" }, State: { Status, ExitCode: 0, StartedAt: "2026-11-26T10:00:00Z" } } as any,
    );
    expect(status("paused").exitCode).toBeUndefined();
    expect(status("created").exitCode).toBeUndefined();
    expect(status("exited").exitCode).toBe(0);
    // SPEC §3's states only: a container created but never started (or being removed) is not running.
    expect(status("created").state).toBe("exited");
    expect(status("removing").state).toBe("exited");
    for (const state of ["running", "exited", "restarting", "paused", "dead"]) expect(status(state).state).toBe(state as State);
    expect(status("created").statusText).toBe("created");
    const s = (state: State, health: Health): ServiceStatus => ({ name: "x", container: "x", state, status: health, uptime: "", image: "", ports: [], statusText: "" });
    expect(summarise([s("running", "healthy"), s("running", "unhealthy"), s("exited", "none")])).toEqual({
      total: 3,
      running: 2,
      stopped: 1,
      healthy: 1,
      unhealthy: 1,
    });
  });
  test("readiness", () => {
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "healthy" } }]).ok).toBe(true);
    expect(readiness("a", [{ Status: "running", ExitCode: 0 }]).ok).toBe(true);
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "starting" } }])).toMatchObject({ ok: false, final: false });
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "unhealthy" } }])).toMatchObject({ ok: false, final: true });
    expect(readiness("a", [{ Status: "exited", ExitCode: 0 }]).ok).toBe(true);
    // A service meant to keep running that exits, even cleanly, is down for good.
    expect(readiness("a", [{ Status: "exited", ExitCode: 0 }], 0, Date.now(), false)).toMatchObject({ ok: false, final: true, reason: "exited with code 0" });
    expect(readiness("a", [{ Status: "exited", ExitCode: 2 }])).toMatchObject({ ok: false, final: true });
    expect(readiness("a", [])).toMatchObject({ ok: false, final: false });
    // Without a health check, "running" counts once it has lasted; a crash loop is failure.
    const now = Date.parse("2026-11-26T10:00:10Z");
    const started = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
    expect(readiness("a", [{ Status: "running", ExitCode: 0, StartedAt: started(1) }], 5000, now)).toMatchObject({ ok: false, final: false, reason: "running for 1s" });
    expect(readiness("a", [{ Status: "running", ExitCode: 0, StartedAt: started(6) }], 5000, now).ok).toBe(true);
    expect(readiness("a", [{ Status: "running", ExitCode: 0, StartedAt: started(1), Health: { Status: "healthy" } }], 5000, now).ok).toBe(true);
    expect(readiness("a", [{ Status: "restarting", ExitCode: 3, RestartCount: 1 }], 5000, now)).toMatchObject({ ok: false, final: false, reason: "restarting (last exit code 3)" });
    expect(readiness("a", [{ Status: "running", ExitCode: 3, StartedAt: started(6), RestartCount: 3 }], 5000, now)).toMatchObject({ ok: false, final: true });
    // Caught running again, the engine reports exit code 0: no code is better than a wrong one.
    expect(readiness("a", [{ Status: "running", ExitCode: 0, StartedAt: started(1), RestartCount: 3 }], 5000, now).reason).toBe("restarted 3 times");
    expect(readiness("a", [{ Status: "restarting", ExitCode: 1, RestartCount: 4 }], 5000, now).reason).toBe("restarted 4 times (last exit code 1)");
    // A one-shot job another service waits for is ready once finished, however long it has run.
    expect(readiness("job", [{ Status: "running", ExitCode: 0, StartedAt: started(60) }], 5000, now, true, true)).toMatchObject({ ok: false, final: false, reason: "running (a one-shot job, ready once it has finished)" });
    expect(readiness("job", [{ Status: "exited", ExitCode: 0 }], 5000, now, true, true).ok).toBe(true);
    expect(readiness("job", [{ Status: "exited", ExitCode: 1 }], 5000, now, true, true)).toMatchObject({ ok: false, final: true });
  });

  test("a job is what another container waits for to complete, as compose labels it", () => {
    const container = (service: string, dependsOn?: string) => ({ Id: service, Names: [], Image: "", ImageID: "", State: "running", Status: "", Ports: [], Labels: { "com.docker.compose.service": service, ...(dependsOn === undefined ? {} : { "com.docker.compose.depends_on": dependsOn }) } });
    expect(awaitedJobs([
      container("app", "init:service_completed_successfully:false,db:service_healthy:false"),
      container("worker", "db:service_started:true"),
      container("db"),
      container("init", ""),
    ])).toEqual(new Set(["init"]));
  });

  test("what a start stopped at its limit was waiting on: running jobs and health checks not passed yet", () => {
    const container = (service: string, status: string, state = "running", dependsOn = "") => ({ Id: service, Names: [], Image: "", ImageID: "", State: state, Status: status, Ports: [], Labels: { "com.docker.compose.service": service, "com.docker.compose.depends_on": dependsOn } });
    expect(stillStarting([
      container("app", "Created", "created", "init:service_completed_successfully:false,db:service_healthy:false"),
      container("init", "Up 9 seconds"),
      container("db", "Up 9 seconds (health: starting)"),
      container("cache", "Up 9 seconds (unhealthy)"),
      container("web", "Up 9 seconds (healthy)"),
      container("plain", "Up 9 seconds"),
      container("done", "Exited (0) 3 seconds ago", "exited"),
    ])).toEqual(["cache (unhealthy)", "db (health: starting)", "init (a one-shot job, still running)"]);
  });

  test("a container removed between the engine's list and its inspection is skipped, not a failed wait", async () => {
    const healthy = { State: { Status: "running", ExitCode: 0, Health: { Status: "healthy" } }, RestartCount: 0 };
    const engineWith = (inspect: (id: string) => Promise<unknown>) => ({
      listProjectContainers: async () => ["gone", "new"].map((Id) => ({ Id, Labels: { "com.docker.compose.service": "app" } })),
      inspectContainer: inspect,
    }) as unknown as Engine;
    const removed = engineWith(async (id) => {
      if (id === "gone") throw new EngineError("Docker engine: GET /containers/gone/json failed (404: No such container: gone)", 404);
      return healthy;
    });
    expect(await waitReady(removed, "p", ["app"], { timeoutMs: 1000 })).toEqual([]);
    // Any other engine error still ends the wait as one.
    const broken = engineWith(async () => { throw new EngineError("Docker engine: GET /containers/gone/json failed (500: boom)", 500); });
    await expect(waitReady(broken, "p", ["app"], { timeoutMs: 1000 })).rejects.toThrow("500: boom");
  });
});

/** Runs `body` in a fresh temporary folder, removed afterwards; `put` writes a file there. */
function inTempDir(prefix: string, body: (dir: string, put: (name: string, text: string) => void) => void): void {
  const dir = mkdtempSync(join(tmpdir(), `stackgen-${prefix}-`));
  try {
    body(dir, (name, text) => writeFileSync(join(dir, name), text));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("project names and compose model", () => {
  test("compose name, then stackgen.json, then the directory", () => {
    expect(projectNameOf("fromcompose", "fromconfig", "/x/Dir")).toBe("fromcompose");
    expect(projectNameOf(undefined, "fromconfig", "/x/Dir")).toBe("fromconfig");
    expect(projectNameOf("${NAME}", undefined, "/x/My.Stack")).toBe("mystack");
    expect(normaliseProjectName("_Hello World-1")).toBe("helloworld-1");
  });
  test("the compose file and the override file are the ones plain `docker compose` loads there", () => {
    inTempDir("files", (dir, put) => {
      put("docker-compose.yaml", "name: yaml\nservices: {}\n");
      put("docker-compose.yml", "name: yml\nservices: {}\n");
      expect(loadStack(dir)).toMatchObject({ composeFiles: [join(dir, "docker-compose.yml")], documents: [{ name: "yml", services: {} }], project: "yml" });
      put("compose.yml", "name: short\nservices: {}\n");
      put("docker-compose.override.yaml", "services: {}\n");
      put("docker-compose.override.yml", "services:\n  web: {environment: {A: '1'}}\n");
      const stack = loadStack(dir);
      expect(stack.composeFiles).toEqual([join(dir, "compose.yml"), join(dir, "docker-compose.override.yml")]);
      expect(stack.documents[1]).toEqual({ services: { web: { environment: { A: "1" } } } });
      expect(stack.project).toBe("short");
      // The override's own top-level name wins, as the later file's does in compose.
      put("compose.override.yaml", "name: mine\n");
      expect(loadStack(dir)).toMatchObject({ composeFiles: [join(dir, "compose.yml"), join(dir, "compose.override.yaml")], project: "mine" });
      put("compose.override.yaml", "- not a mapping\n");
      expect(() => loadStack(dir)).toThrow(/compose.override.yaml must hold a YAML mapping/);
    });
  });
  test("COMPOSE_FILE and COMPOSE_PROJECT_NAME are honoured as compose honours them: environment first, then .env", () => {
    inTempDir("settings", (dir, put) => {
      put("docker-compose.yml", "name: bundle\nservices:\n  web: {image: x}\n");
      put("docker-compose.override.yml", "services: {}\n");
      put("gpu.yml", "services:\n  web: {ports: ['8080:80']}\n");
      // The file list replaces the default pair (compose then skips the override file too).
      put(".env", "SECRET=x\nCOMPOSE_FILE=docker-compose.yml:gpu.yml\n");
      let stack = loadStack(dir, {});
      expect(stack.composeFiles).toEqual([join(dir, "docker-compose.yml"), join(dir, "gpu.yml")]);
      expect(stack.documents[1]).toEqual({ services: { web: { ports: ["8080:80"] } } });
      expect(stack.project).toBe("bundle");
      // The environment beats .env; its separator too; a project name beats the files' `name`.
      put(".env", "COMPOSE_FILE=gpu.yml\nCOMPOSE_PROJECT_NAME=fromdotenv\n");
      expect(loadStack(dir, {}).project).toBe("fromdotenv");
      stack = loadStack(dir, { COMPOSE_FILE: `gpu.yml;${join(dir, "docker-compose.yml")}`, COMPOSE_PATH_SEPARATOR: ";", COMPOSE_PROJECT_NAME: "fromenv" });
      expect(stack.composeFiles).toEqual([join(dir, "gpu.yml"), join(dir, "docker-compose.yml")]);
      expect(stack.project).toBe("fromenv");
      // Without the settings: the default pair, and the files' own name.
      put(".env", "A=1\n");
      expect(loadStack(dir, {})).toMatchObject({ composeFiles: [join(dir, "docker-compose.yml"), join(dir, "docker-compose.override.yml")], project: "bundle" });
      // A listed file that is not there is a usage error naming where the list came from.
      put(".env", "COMPOSE_FILE=docker-compose.yml:missing.yml\n");
      expect(() => loadStack(dir, {})).toThrow(`COMPOSE_FILE in ${join(dir, ".env")} names ${join(dir, "missing.yml")}, which is not a file.`);
      expect(() => loadStack(dir, { COMPOSE_FILE: "nope.yml" })).toThrow(`$COMPOSE_FILE names ${join(dir, "nope.yml")}`);
      put(".env", "COMPOSE_PROJECT_NAME=Not Valid\n");
      expect(() => loadStack(dir, {})).toThrow(/"Not Valid" is not a valid compose project name/);
    });
  });
  test("a backup's config unpacked into an empty directory gives its stack, or leaves the directory empty", () => {
    inTempDir("unpack", (root) => {
      const dir = join(root, "newhost");
      mkdirSync(dir);
      const text = (t: string) => new TextEncoder().encode(t);
      const backupOf = (compose: string) =>
        ({
          manifest: { project: "shop" },
          files: [
            { path: "docker-compose.yml", data: text(compose), mode: 0o644 },
            { path: "caddy/Caddyfile", data: text(":80\n"), mode: 0o644 },
          ],
          volumes: [],
        }) as unknown as VerifiedBackup;
      // Without a `name:` the project would be the directory's: not the backup's, so nothing stays.
      expect(() => unpackConfigInto(dir, backupOf("services: {}\n"))).toThrow(/The backup is of project "shop", but .* make the project "newhost" .* restore into a directory named shop/);
      expect(readdirSync(dir)).toEqual([]);
      expect(unpackConfigInto(dir, backupOf("name: shop\nservices: {}\n")).project).toBe("shop");
      expect(readFileSync(join(dir, "caddy/Caddyfile"), "utf8")).toBe(":80\n");
    });
  });
  test("depends_on in list and map form; volume names", () => {
    const m = normaliseModel(
      {
        services: { a: { image: "x", depends_on: ["b"] }, b: { image: "y", depends_on: { c: { condition: "service_healthy" } } }, c: { build: "." } },
        volumes: { data: {}, named: { name: "custom" }, ext: { external: true, name: "outside" } },
      },
      "proj",
    );
    expect(m.services.map((s) => [s.name, s.dependsOn, s.hasBuild])).toEqual([
      ["a", ["b"], false],
      ["b", ["c"], false],
      ["c", [], true],
    ]);
    // The condition compose waits for on each: the list form is service_started.
    expect(m.services.map((s) => s.dependsOnConditions)).toEqual([{ b: "service_started" }, { c: "service_healthy" }, {}]);
    expect(m.volumes).toEqual([
      { key: "data", name: "proj_data", external: false },
      { key: "named", name: "custom", external: false },
      { key: "ext", name: "outside", external: true },
    ]);
  });
  test("bind mounts in compose v2's long form and v1's strings; named volumes are not binds", () => {
    const m = normaliseModel(
      {
        services: {
          v2: { volumes: [{ type: "bind", source: "/srv/a", target: "/a" }, { type: "bind", source: "/srv/b", target: "/b", read_only: true }, { type: "volume", source: "data", target: "/d" }] },
          v1: { volumes: ["/srv/c:/c:rw", "/srv/d:/d:ro,z", "data:/data", "/anonymous"] },
        },
      },
      "proj",
    );
    expect(Object.fromEntries(m.services.map((s) => [s.name, s.binds]))).toEqual({
      v2: [{ source: "/srv/a", target: "/a", readOnly: false }, { source: "/srv/b", target: "/b", readOnly: true }],
      v1: [{ source: "/srv/c", target: "/c", readOnly: false }, { source: "/srv/d", target: "/d", readOnly: true }],
    });
  });
  test("servers are the services compose restarts for good; any other policy may be a job that ends", () => {
    const m = normaliseModel({ services: { a: { restart: "always" }, b: { restart: "unless-stopped" }, c: { restart: "no" }, d: { restart: "on-failure:3" }, e: {} } }, "proj");
    expect(m.services.filter(restartsForGood).map((s) => s.name)).toEqual(["a", "b"]);
  });
});

describe("image references", () => {
  test("parse like the docker CLI", () => {
    expect(parseImageRef("redis")).toEqual({ registry: "docker.io", repository: "library/redis", tag: "latest" });
    expect(parseImageRef("grafana/grafana:11.1")).toEqual({ registry: "docker.io", repository: "grafana/grafana", tag: "11.1" });
    expect(parseImageRef("127.0.0.1:5000/a/b:1")).toEqual({ registry: "127.0.0.1:5000", repository: "a/b", tag: "1" });
    expect(parseImageRef("ghcr.io/o/r@sha256:abc")).toMatchObject({ registry: "ghcr.io", repository: "o/r", digest: "sha256:abc" });
    expect(registryBaseUrl("127.0.0.1:5000")).toBe("http://127.0.0.1:5000");
    expect(registryBaseUrl("docker.io")).toBe("https://registry-1.docker.io");
    expect(registryBaseUrl("ghcr.io")).toBe("https://ghcr.io");
  });
  test("a registry the engine reaches without TLS (daemon insecure-registries, as /info gives them) is asked over HTTP too", () => {
    const info = {
      RegistryConfig: {
        IndexConfigs: { "docker.io": { Secure: true }, "registry.lan:5000": { Secure: false } },
        InsecureRegistryCIDRs: ["127.0.0.0/8", "192.168.1.0/24", "not-a-range", "10.0.0.0/40"],
      },
    };
    const plainHttp = insecureRegistries(info);
    expect(registryBaseUrl("registry.lan:5000", plainHttp)).toBe("http://registry.lan:5000");
    expect(registryBaseUrl("192.168.1.10:5000", plainHttp)).toBe("http://192.168.1.10:5000");
    expect(registryBaseUrl("192.168.2.10:5000", plainHttp)).toBe("https://192.168.2.10:5000");
    expect(registryBaseUrl("10.1.2.3", plainHttp)).toBe("https://10.1.2.3");
    expect(registryBaseUrl("ghcr.io", plainHttp)).toBe("https://ghcr.io");
    expect(registryBaseUrl("docker.io", plainHttp)).toBe("https://registry-1.docker.io");
    // An engine that says nothing (or could not be asked): TLS but for loopback.
    expect(registryBaseUrl("192.168.1.10:5000", insecureRegistries(undefined))).toBe("https://192.168.1.10:5000");
    expect(insecureRegistries({ RegistryConfig: { InsecureRegistryCIDRs: ["0.0.0.0/0"] } })("8.8.8.8")).toBe(true);
  });
  test("bearer challenge", () => {
    expect(parseChallenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/redis:pull"')).toEqual({
      scheme: "bearer",
      params: { realm: "https://auth.docker.io/token", service: "registry.docker.io", scope: "repository:library/redis:pull" },
    });
  });
  test("digests and tags", () => {
    const image = { Id: "sha256:id", RepoTags: [], RepoDigests: ["other/x@sha256:no", "127.0.0.1:5000/a/b@sha256:yes"] };
    expect(digestOf(image, "127.0.0.1:5000/a/b:1")).toBe("sha256:yes");
    expect(digestOf({ ...image, RepoDigests: [] }, "x")).toBe("sha256:id");
    // A tag moved to a new index with this platform's image unchanged: the image holds both digests.
    const twice = { ...image, RepoDigests: ["127.0.0.1:5000/a/b@sha256:old-index", "127.0.0.1:5000/a/b@sha256:new-index"] };
    expect(pulledAs(twice, "127.0.0.1:5000/a/b:1", "sha256:new-index")).toBe(true);
    expect(pulledAs(twice, "127.0.0.1:5000/a/b:1", "sha256:newer")).toBe(false);
    expect(pulledAs(image, "other/x:1", "sha256:yes")).toBe(false);
    expect(pulledAs(undefined, "x", "sha256:id")).toBe(false);
    expect(splitTag("127.0.0.1:5000/a/b:1")).toEqual({ repo: "127.0.0.1:5000/a/b", tag: "1" });
    expect(splitTag("127.0.0.1:5000/a/b")).toEqual({ repo: "127.0.0.1:5000/a/b", tag: "latest" });
    expect(splitTag("a/b@sha256:x")).toBeUndefined();
  });
  test("the rollback tag is a valid image reference for any compose project and service name", () => {
    // Docker's grammar: path components of lower-case letters and digits with single separators;
    // a tag of up to 128 word characters, dots and dashes, not starting with either of the last two.
    const valid = /^stackgen-rollback\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
    expect(rollbackTag("shop", "web")).toBe("stackgen-rollback/shop:web");
    const odd = [["shop", ".hidden"], ["shop", "-x"], ["shop", "x".repeat(129)], ["a_-b", "web"], ["abc-", "web"]] as const;
    for (const [project, service] of odd) expect(rollbackTag(project, service)).toMatch(valid);
    // Two services never share one.
    expect(rollbackTag("shop", ".a")).not.toBe(rollbackTag("shop", ".b"));
    // The repository name stays under Docker's 255 characters.
    expect(rollbackTag("p".repeat(250), "web").split(":")[0]!.length).toBeLessThan(255);
    // The note of a second Ctrl-C names the tag of a service Docker would refuse as a tag.
    expect(quitUpdateNote("shop", ["web", ".hidden"])).toContain(`.hidden: ${rollbackTag("shop", ".hidden")}`);
    expect(quitUpdateNote("shop", ["web"])).not.toContain("web: ");
  });
  test("a work folder left by a killed backup or restore is removed by the next one; a live process's, another kind's or an older name's stay", () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-work-"));
    try {
      // No pid is above 2^22: 4194305 names a process that is gone. Pid 1 always runs.
      const names = [".work-4194305-dead", ".work-1-live", `.work-${process.pid}-mine`, ".restore-4194305-other", ".work-old"];
      for (const name of names) {
        mkdirSync(join(dir, name));
        writeFileSync(join(dir, name, "volume-0.tar"), "x");
      }
      // Written within the hour: maybe a process of another PID namespace or host, left alone.
      const first = makeWorkDir(dir, "work");
      expect(readdirSync(dir).sort()).toEqual([...names, basename(first)].sort());
      const later = Date.now() + 61 * 60 * 1000;
      const made = makeWorkDir(dir, "work", later);
      expect(made).toStartWith(join(dir, `.work-${process.pid}-`));
      expect(readdirSync(dir).sort()).toEqual([...names.filter((n) => n !== ".work-4194305-dead"), basename(first), basename(made)].sort());
      makeWorkDir(dir, "restore", later);
      expect(existsSync(join(dir, ".restore-4194305-other"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("a volume helper a killed run left (created, never started) is removed once an hour old; others stay", async () => {
    const now = Date.now();
    const helper = { "dev.stackgen.role": "volume-helper" };
    const containers = [
      { Id: "left", State: "created", Labels: helper, Created: now / 1000 - 7200 },
      { Id: "young", State: "created", Labels: helper, Created: now / 1000 - 60 },
      { Id: "started", State: "running", Labels: helper, Created: now / 1000 - 7200 },
      { Id: "app", State: "created", Labels: { "com.docker.compose.service": "app" }, Created: now / 1000 - 7200 },
    ];
    const removed: string[] = [];
    const engine = { containersUsingVolume: async () => containers, removeContainer: async (id: string) => void removed.push(id) } as unknown as Engine;
    await removeLeftHelpers(engine, [{ name: "proj_data" }], now);
    expect(removed).toEqual(["left"]);
  });
  test("a second Ctrl-C during backup create: says what it leaves stopped or paused, if anything, and removes the unfinished files", () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-quit-"));
    const compose = { cli: { argv: ["docker", "compose"] }, profiles: ["tools"], stack: { dir } } as unknown as Compose;
    const files = () => [join(dir, ".work-x"), join(dir, "x.tar.gz.partial")];
    const unfinished = () => {
      mkdirSync(files()[0]!);
      writeFileSync(join(files()[0]!, "0.tar"), "x");
      writeFileSync(files()[1]!, "x");
      return files();
    };
    try {
      // A hot backup stops nothing: "the stack may be left stopped" would be wrong.
      expect(quitBackupNote(compose, { ...backupInFlight(), unfinished: unfinished() })).toBe("no backup was written; nothing was left stopped or paused.");
      expect(files().filter((f) => existsSync(f))).toEqual([]);
      expect(quitBackupNote(compose, { stopped: ["app", "db"], paused: [], unfinished: unfinished() })).toBe(
        `no backup was written; app, db may be left stopped; \`docker compose --profile tools start app db\` in ${dir} starts them.`,
      );
      expect(files().filter((f) => existsSync(f))).toEqual([]);
      // app waits for a one-shot job that was not running: `start` would run it again, or refuse
      // if it was pruned; the note starts the stopped ones alone, as the backup itself would.
      const model = { services: [{ name: "app", dependsOn: ["db", "owner"] }, { name: "db", dependsOn: [] }, { name: "owner", dependsOn: [] }] } as unknown as ComposeModel;
      expect(quitBackupNote(compose, { stopped: ["db", "app"], paused: [], unfinished: [] }, model)).toBe(
        `no backup was written; db, app may be left stopped; \`docker compose --profile tools restart --no-deps db app\` in ${dir} starts them.`,
      );
      expect(quitBackupNote(compose, { stopped: ["db", "app", "owner"], paused: [], unfinished: [] }, model)).toContain("`docker compose --profile tools start db app owner`");
      expect(quitBackupNote(compose, { stopped: [], paused: ["db"], unfinished: [] })).toBe(
        `no backup was written; db is left paused, answering nothing; \`docker compose --profile tools unpause db\` in ${dir} unpauses it.`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("--timeout takes decimal seconds only", () => {
    expect(timeoutMs("5")).toBe(5000);
    expect(timeoutMs("1.5")).toBe(1500);
    expect(timeoutMs(undefined)).toBe(300_000);
    for (const bad of ["0", "-5", "abc", "0x10", "1e3", " 5", "Infinity", "5s", "1e400"]) expect(() => timeoutMs(bad), bad).toThrow("--timeout must be a positive number of seconds");
  });
});

describe("tar", () => {
  test("round-trips files, links, directories and long names", () => {
    const long = `dir/${"n".repeat(150)}/file.txt`;
    const entries: TarEntry[] = [
      { ...entry("dir", "dir"), mode: 0o755 },
      fileEntry("dir/a.txt", "hello", 0o600),
      fileEntry(long, "long"),
      entry("dir/link", "symlink", "a.txt"),
    ];
    const back = readTar(writeTar(entries));
    expect(back.map((e) => [e.name, e.type, e.linkname])).toEqual([
      ["dir", "dir", ""],
      ["dir/a.txt", "file", ""],
      [long, "file", ""],
      ["dir/link", "symlink", "a.txt"],
    ]);
    expect(new TextDecoder().decode(back[1].data)).toBe("hello");
    expect(back[1].mode).toBe(0o600);
  });
  test("is readable by the system tar", async () => {
    const tar = writeTar([fileEntry("x/y.txt", "content"), fileEntry(`x/${"z".repeat(120)}`, "long")]);
    const path = `/tmp/stackgen-unit-${process.pid}.tar`;
    await Bun.write(path, tar);
    const out = await new Response(Bun.spawn(["tar", "tf", path]).stdout).text();
    await Bun.$`rm -f ${path}`.quiet();
    expect(out.trim().split("\n")).toEqual(["x/y.txt", `x/${"z".repeat(120)}`]);
  });
  test("the streaming parser gives the same members whatever the chunk size", () => {
    const tar = writeTar([entry("d", "dir"), fileEntry(`d/${"n".repeat(130)}`, "long name"), fileEntry("d/f", new Uint8Array(1500).fill(3)), entry("d/l", "symlink", "f")]);
    for (const size of [1, 7, 512, 513, 4096]) {
      const seen: { name: string; type: string; bytes: number }[] = [];
      const parser = new TarParser((h) => {
        const row = { name: h.name, type: h.type, bytes: 0 };
        seen.push(row);
        return { write: (c) => (row.bytes += c.length), end: () => {} };
      });
      for (let at = 0; at < tar.length; at += size) parser.push(tar.subarray(at, at + size));
      parser.end();
      expect(seen).toEqual(readTar(tar).map((e) => ({ name: e.name, type: e.type, bytes: e.data.length })));
    }
  });

  test("rejects a corrupted header", () => {
    const tar = writeTar([fileEntry("a", "b")]);
    tar[10] ^= 0xff;
    expect(() => readTar(tar)).toThrow(/checksum/);
  });

  /** Edit one 512-byte header in place and make its checksum right again (as a crafted archive would). */
  const editHeader = (tar: Uint8Array, at: number, edit: (h: Uint8Array) => void) => {
    const h = tar.subarray(at, at + 512);
    edit(h);
    h.fill(32, 148, 156);
    const sum = h.reduce((n, b) => n + b, 0);
    h.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  };
  test("members hidden in the declared data of a directory are refused: Docker's extractor would write them", () => {
    // Go's archive/tar reads no data after a directory header and takes the next blocks for more
    // members; a reader that skipped "its data" would never check the device node hidden there.
    const tar = writeTar([entry("vol", "dir"), entry("vol/dev", "char"), fileEntry("vol/hidden", "x")]);
    editHeader(tar, 0, (h) => h.set(new TextEncoder().encode((3 * 512).toString(8).padStart(11, "0") + "\0"), 124));
    expect(() => readTar(tar)).toThrow(/Tar member "vol" \(dir\) declares 1536 bytes of data/);
  });
  test("the name prefix counts as Go reads it: with POSIX's magic whatever the version, never in GNU headers", () => {
    const tar = writeTar([fileEntry("b.txt", "x")]);
    editHeader(tar, 0, (h) => h.set(new TextEncoder().encode("evil"), 345));
    expect(readTar(tar)[0].name).toBe("evil/b.txt");
    // "ustar\0" with another version than "00": Go (and GNU tar) still join the prefix.
    editHeader(tar, 0, (h) => h.set([0, 0], 263));
    expect(readTar(tar)[0].name).toBe("evil/b.txt");
    editHeader(tar, 0, (h) => h.set(new TextEncoder().encode("ustar  \0"), 257));
    expect(readTar(tar)[0].name).toBe("b.txt");
  });
});

describe("tar members readers disagree on", () => {
  const enc = new TextEncoder();
  /** One raw member: a ustar header of `flag` (checksum made right) and its padded data. */
  const raw = (name: string, flag: string, data: Uint8Array): Uint8Array[] => {
    const h = new Uint8Array(512);
    h.set(enc.encode(name), 0);
    h.set(enc.encode("0000644\0"), 100);
    h.set(enc.encode(data.length.toString(8).padStart(11, "0") + "\0"), 124);
    h.set(enc.encode("00000000000\0"), 136);
    h[156] = flag.charCodeAt(0);
    h.set(enc.encode("ustar\0" + "00"), 257);
    h.fill(32, 148, 156);
    h.set(enc.encode(h.reduce((n, b) => n + b, 0).toString(8).padStart(6, "0") + "\0 "), 148);
    return [h, data, new Uint8Array((512 - (data.length % 512)) % 512)];
  };
  const pax = (records: Record<string, string>) =>
    enc.encode(Object.entries(records).map(([k, v]) => {
      const body = ` ${k}=${v}\n`;
      let n = body.length + 1;
      while (`${n}${body}`.length !== n) n++;
      return `${n}${body}`;
    }).join(""));
  const archive = (...members: Uint8Array[][]) => new Uint8Array(Buffer.concat([...members.flat(), new Uint8Array(1024)]));
  const file = raw("vol/safe", "0", enc.encode("x"));

  test("a GNU long name and a PAX path that differ are refused (Go takes the long name)", () => {
    const tar = archive(raw("././@LongLink", "L", enc.encode("vol/l/etc/pwned\0")), raw("pax", "x", pax({ path: "vol/safe" })), file);
    expect(() => readTar(tar)).toThrow(/two different names/);
    // The same name twice is what some writers do: read as it says.
    expect(readTar(archive(raw("././@LongLink", "L", enc.encode("vol/safe\0")), raw("pax", "x", pax({ path: "vol/safe" })), file))[0]!.name).toBe("vol/safe");
  });
  test("a GNU sparse member is refused (Go writes it under GNU.sparse.name)", () => {
    const tar = archive(raw("pax", "x", pax({ path: "vol/safe", "GNU.sparse.major": "0", "GNU.sparse.minor": "1", "GNU.sparse.name": "vol/l/etc/pwned", "GNU.sparse.map": "0,1", "GNU.sparse.size": "1" })), file);
    expect(() => readTar(tar)).toThrow(/GNU sparse file/);
    expect(() => readTar(archive(raw("vol/old-sparse", "S", enc.encode("x"))))).toThrow(/GNU sparse file/);
  });
});

describe("archive member checks", () => {
  const outer = { volume: false };
  const volume = { volume: true, root: "vol" };
  test("rejects absolute paths, .. and links in the outer archive", () => {
    expect(checkMember(entry("/etc/passwd"), outer)).toMatch(/absolute/);
    expect(checkMember(entry("config/../../x"), outer)).toMatch(/'\.\.'/);
    expect(checkMember(entry("a\\..\\b"), outer)).toMatch(/backslash/);
    expect(checkMember(entry("config/l", "symlink", "x"), outer)).toMatch(/link/);
    expect(checkMember(entry("config/ok.txt"), outer)).toBeUndefined();
  });
  test("volume members stay under their root; a symlink is data, whatever it points at", () => {
    expect(checkMember(entry("vol/a"), volume)).toBeUndefined();
    expect(checkMember(entry("other/a"), volume)).toMatch(/outside "vol\/"/);
    // Apps keep links of their own (absolute ones too): they come back as they were, never followed.
    for (const target of ["../vol/a", "../../etc", "/etc/passwd", "..", "/data/marker"]) {
      expect(checkMember(entry("vol/l", "symlink", target), volume)).toBeUndefined();
    }
  });
  test("volume members keep what a Linux file system holds: backslashes in names, device nodes", () => {
    // A volume's file may be named `back\slash` (the engine's extractor takes it as it is), and a
    // backup that holds one must restore; in the bundle's own files it can only be a Windows path.
    expect(checkMember(entry("vol/back\\slash"), volume)).toBeUndefined();
    expect(checkMembers([entry("vol/a\\b"), entry("vol/h", "hardlink", "vol/a\\b")], volume)).toEqual([]);
    expect(checkMember(entry("config/a\\b"), outer)).toMatch(/backslash/);
    for (const type of ["char", "block"] as const) {
      expect(checkMember(entry("vol/dev", type), volume)).toBeUndefined();
      expect(checkMember(entry("config/dev", type), outer)).toMatch(/device node/);
    }
    expect(checkMember(entry("vol/x", "other"), volume)).toMatch(/forbidden type/);
  });
  test("nothing is written through a symlink, in whatever order the members come", () => {
    const through = [entry("vol/l", "symlink", "/etc"), fileEntry("vol/l/passwd", "x")];
    expect(checkMembers(through, volume).join("\n")).toMatch(/vol\/l\/passwd" lies under the symlink "vol\/l"/);
    expect(checkMembers([...through].reverse(), volume).join("\n")).toMatch(/lies under the symlink/);
    const chained = [entry("vol/d", "dir"), entry("vol/d/up", "symlink", ".."), fileEntry("vol/d/up/x", "x")];
    expect(checkMembers(chained, volume).join("\n")).toMatch(/vol\/d\/up\/x/);
    expect(checkMembers([entry("vol/l", "symlink", "/etc"), fileEntry("vol/a", "x"), entry("vol/h", "hardlink", "vol/l/passwd")], volume).join("\n")).toMatch(/hardlink|under the symlink/);
    expect(checkMembers([entry("vol/l", "symlink", "/etc"), entry("vol/d", "dir"), fileEntry("vol/d/f", "x")], volume)).toEqual([]);
    // A hardlink to a symlink is extracted as a second symlink: nothing may be written through it either.
    const twin = [entry("vol/s", "symlink", "../other"), entry("vol/h", "hardlink", "vol/s")];
    expect(checkMembers(twin, volume)).toEqual([]);
    expect(checkMembers([...twin, fileEntry("vol/h/INJECTED", "x")], volume).join("\n")).toMatch(/vol\/h\/INJECTED" lies under the symlink "vol\/h"/);
    expect(checkMembers([twin[0]!, fileEntry("vol/h/INJECTED", "x"), twin[1]!], volume).join("\n")).toMatch(/a member written earlier lies under the symlink "vol\/h"/);
  });
  test("hardlinks must point at an earlier member inside", () => {
    expect(checkMembers([entry("vol/a"), entry("vol/h", "hardlink", "vol/a")], volume)).toEqual([]);
    expect(checkMembers([entry("vol/h", "hardlink", "vol/a"), entry("vol/a")], volume)[0]).toMatch(/not in the archive before/);
    expect(checkMembers([entry("vol/h", "hardlink", "../x")], volume)[0]).toMatch(/'\.\.'/);
  });
});

describe("volume copies are checked as the engine sends them", () => {
  const work = mkdtempSync(join(tmpdir(), "stackgen-volcopy-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  let n = 0;
  const complete = writeTar([{ ...entry("proj_data", "dir"), mode: 0o755 }, fileEntry("proj_data/a.log", "x".repeat(5000)), fileEntry("proj_data/b", "later")]);
  // What the engine sends when a file shrinks while it is read: its stream stops inside that file.
  const cutInFile = complete.subarray(0, 512 * 3);
  // Or right after a member, without the end-of-archive marker: every later file is missing.
  const cutAtMember = complete.subarray(0, 512 * 12);
  /** An engine whose archive endpoint answers with these tars in turn (the last one again after). */
  const engineSending = (...tars: Uint8Array[]) => {
    const calls = { archive: 0, removed: 0 };
    const engine = {
      inspectImage: async () => ({ Id: "sha256:helper" }),
      listImages: async () => [],
      createVolumeHelper: async () => "helper",
      removeContainer: async () => void calls.removed++,
      getArchive: async () => new Blob([tars[Math.min(calls.archive++, tars.length - 1)]!.slice()]).stream(),
    } as unknown as Engine;
    return { engine, calls };
  };
  const copy = (engine: Engine, copied?: (volume: string, bytes: number, attempt: number) => void) => {
    const dir = join(work, String(n++));
    mkdirSync(dir);
    return readVolumes(engine, [{ name: "proj_data", key: "data" }], ["helper"], dir, undefined, copied).then((files) => ({ files, dir }));
  };

  test("a copy cut short (a file changed size while the engine read it) is made again", async () => {
    for (const cut of [cutInFile, cutAtMember]) {
      const { engine, calls } = engineSending(cut, complete);
      const bytes: number[] = [];
      const { files } = await copy(engine, (volume, b) => void bytes.push(b));
      // Every byte the engine sent is told, the first, cut copy's too.
      expect(bytes.reduce((a, b) => a + b, 0)).toBe(cut.length + complete.length);
      expect(calls.archive).toBe(2);
      expect(readFileSync(files[0]!.path).equals(complete)).toBe(true);
      expect(files[0]!.sha256).toBe(sha256(complete));
    }
  });
  test("a copy made again is said as such and counted from zero, not added to the cut one's bytes", async () => {
    const { engine } = engineSending(cutInFile, complete);
    const said: string[] = [];
    // Every 0 ms: a line for each chunk (the CLI's is every five seconds).
    await copy(engine, volumeCopyProgress((line) => void said.push(line), 0));
    const again = said.findIndex((line) => line.startsWith("Copying volume proj_data again (attempt 2 of 3)"));
    expect(again).toBeGreaterThan(0);
    expect(said.slice(0, again)).toEqual([`Copying volume proj_data: ${formatBytes(cutInFile.length)}`]);
    expect(said.slice(again + 1)).toEqual([`Copying volume proj_data: ${formatBytes(complete.length)}`]);
  });
  test("a copy cut short every time fails, and nothing of it is left for an archive", async () => {
    const { engine, calls } = engineSending(cutInFile);
    const dir = join(work, "always-cut");
    mkdirSync(dir);
    const failed = await readVolumes(engine, [{ name: "proj_data", key: "data" }], ["helper"], dir).catch((e) => e);
    expect(failed).toBeInstanceOf(VolumeCopyFailed);
    expect(failed.cut).toBe(true);
    expect(failed.message).toMatch(/proj_data ended early 3 times/);
    expect(calls.archive).toBe(3);
    expect(calls.removed).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });
  test("a copy holding what restore would refuse is not taken", async () => {
    const { engine } = engineSending(writeTar([fileEntry("proj_data/ok", "x"), fileEntry("elsewhere/f", "x")]));
    const failed = await copy(engine).catch((e) => e);
    expect(failed).toBeInstanceOf(VolumeCopyFailed);
    expect(failed.cut).toBe(false);
    expect(failed.message).toMatch(/could not put back: member "elsewhere\/f" lies outside "proj_data\/"/);
  });
  test("names with backslashes and device nodes are copied, and the archive made of them verifies", async () => {
    const odd = writeTar([{ ...entry("proj_data", "dir"), mode: 0o755 }, fileEntry("proj_data/back\\slash", "x"), entry("proj_data/null", "char")]);
    const { files, dir } = await copy(engineSending(odd).engine);
    const file = join(dir, "backup.tar.gz");
    await writeArchive(file, { project: "proj", hot: false, services: [], files: [], volumes: files });
    const verified = await verifyBackupFile(file);
    expect(verified.volumes.map((v) => v.name)).toEqual(["proj_data"]);
  });
  test("a failed copy is told as it failed, not as the helper container's removal failing after it", async () => {
    const gone = new EngineError("container delete: Cannot connect to the Docker daemon", 500);
    const refusingRemoval = (engine: Engine) => Object.assign(engine, { removeContainer: async () => Promise.reject(gone), putArchive: async () => Promise.reject(new EngineError("extracting into the volume: no space left on device", 500)) });
    const read = await copy(refusingRemoval(engineSending(cutInFile).engine)).catch((e) => e);
    expect(read).toBeInstanceOf(VolumeCopyFailed);
    expect(read.message).toMatch(/proj_data ended early 3 times/);
    const written = await writeVolumes(refusingRemoval(engineSending(complete).engine), [{ name: "proj_data", path: join(work, "none.tar") }], ["helper"]).catch((e) => e);
    expect(written.message).toBe("extracting into the volume: no space left on device");
    // A copy that worked still reports the failed removal: the helper holds the volumes.
    const ok = await copy(refusingRemoval(engineSending(complete).engine)).catch((e) => e);
    expect(ok).toBe(gone);
  });
});

describe("backup archive verification", () => {
  const dir = mkdtempSync(join(tmpdir(), "stackgen-archive-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const path = (name: string) => join(dir, `${n++}-${name}`);
  /** A volume's tar in a work file, as readVolumes leaves it. */
  const volumeFile = (name: string, tar: Uint8Array) => {
    const p = path(`${name}.tar`);
    writeFileSync(p, tar);
    return { name, key: name.split("_").pop()!, path: p, size: tar.length, sha256: sha256(tar) };
  };
  const volumeTar = writeTar([{ ...entry("proj_data", "dir"), mode: 0o755 }, fileEntry("proj_data/f.txt", "data")]);
  const input = (over: Partial<ArchiveInput> = {}): ArchiveInput => ({
    project: "proj",
    hot: false,
    services: [{ name: "db", image: "x:1" }],
    files: [{ path: "docker-compose.yml", data: new TextEncoder().encode("services: {}\n"), mode: 0o644 }],
    volumes: [volumeFile("proj_data", volumeTar)],
    ...over,
  });
  const make = async (over: Partial<ArchiveInput> = {}) => {
    const file = path("backup.tar.gz");
    return { file, ...(await writeArchive(file, input(over))) };
  };
  test("a fresh archive verifies, lists its members and extracts its volumes byte for byte", async () => {
    const { file, manifest, size, sha256: sum } = await make();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(size).toBe(statSync(file).size);
    expect(sum).toBe(sha256(readFileSync(file)));
    expect(manifest.members.map((m) => m.path)).toEqual(["config/docker-compose.yml", "volumes/proj_data.tar"]);
    const listed = await verifyBackupFile(file);
    expect(listed.manifest.project).toBe("proj");
    expect(listed.files[0].path).toBe("docker-compose.yml");
    expect(listed.volumes).toEqual([{ name: "proj_data", key: "data" }]);
    const out = mkdtempSync(join(dir, "extract-"));
    const extracted = await verifyBackupFile(file, out);
    expect(sha256(readFileSync(extracted.volumes[0].path!))).toBe(sha256(volumeTar));
  });
  test("checking a backup for a restore says how far it has read", async () => {
    const { file } = await make({ volumes: [volumeFile("proj_data", volumeTar), volumeFile("proj_cache", new Uint8Array(3 * 1024 * 1024))] });
    const said: string[] = [];
    const out = mkdtempSync(join(dir, "extract-"));
    await loadVerifiedBackup(file, "proj", out, (line) => void said.push(line), 0);
    expect(said.length).toBeGreaterThan(0);
    // The whole file is read, and its size is the total.
    const size = formatBytes(statSync(file).size);
    expect(said.at(-1)).toBe(`Checking the backup: ${size} of ${size}`);
  });
  test("writing the archive tells of every volume byte it puts in", async () => {
    const volumes = [volumeFile("proj_data", volumeTar), volumeFile("proj_cache", new Uint8Array(3 * 1024 * 1024))];
    let archived = 0;
    await writeArchive(path("backup.tar.gz"), input({ volumes }), undefined, (bytes) => void (archived += bytes));
    expect(archived).toBe(volumeTar.length + 3 * 1024 * 1024);
  });
  test("checking a volume of many files keeps little per file (real volumes hold millions)", async () => {
    // 400,000 empty files: holding every member's header took 220 MiB at the peak.
    const work = mkdtempSync(join(dir, "many-"));
    const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "many-files-check.ts"), work, "400000"], { stderr: "pipe" });
    expect(child.exitCode, child.stderr.toString()).toBe(0);
    const out = JSON.parse(child.stdout.toString());
    expect(out.volumes).toBe(1);
    expect(out.peakGrowthMiB).toBeLessThan(120);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);
  test("a volume larger than the stream's chunks round-trips through disk", async () => {
    // 6 MiB of incompressible data in several files: many gzip and tar chunks on both sides.
    const big = writeTar([entry("proj_big", "dir"), ...[0, 1, 2].map((i) => fileEntry(`proj_big/blob-${i}`, crypto.getRandomValues(new Uint8Array(2 * 1024 * 1024)) as Uint8Array))]);
    const { file } = await make({ volumes: [volumeFile("proj_big", big)] });
    const out = mkdtempSync(join(dir, "extract-"));
    const { volumes } = await verifyBackupFile(file, out);
    expect(sha256(readFileSync(volumes[0].path!))).toBe(sha256(big));
  });
  const rewrite = async (change: (entries: TarEntry[]) => TarEntry[]) => {
    const file = path("rewritten.tar.gz");
    const original = readFileSync((await make()).file);
    writeFileSync(file, Bun.gzipSync(writeTar(change(readTar(Bun.gunzipSync(original)))) as Uint8Array<ArrayBuffer>));
    return file;
  };
  test("a changed member fails its checksum", async () => {
    const bad = await rewrite((es) => es.map((e) => (e.name === "config/docker-compose.yml" ? fileEntry(e.name, "services: {evil: {}}\n") : e)));
    expect(verifyBackupFile(bad)).rejects.toThrow(/size|sha256/);
  });
  test("a manifest whose project, time or kind is not what create writes is refused (list prints them, prune orders by time)", async () => {
    const withManifest = (change: (m: Record<string, unknown>) => void) => rewrite((es) => es.map((e) => {
      if (e.name !== "manifest.json") return e;
      const m = JSON.parse(new TextDecoder().decode(e.data));
      change(m);
      return fileEntry(e.name, JSON.stringify(m));
    }));
    expect(verifyBackupFile(await withManifest((m) => { m.createdAt = "9999-12-31T00:00:00.000Z\x1b[2J\x1b[31mFAKE"; }))).rejects.toThrow(/no valid creation time/);
    expect(verifyBackupFile(await withManifest((m) => { m.createdAt = 20240101; }))).rejects.toThrow(/no valid creation time/);
    expect(verifyBackupFile(await withManifest((m) => { m.project = "Proj\nX"; }))).rejects.toThrow(/not a Compose project name/);
    expect(verifyBackupFile(await withManifest((m) => { m.kind = "pre-update\x1b]0;x"; }))).rejects.toThrow(/unknown kind/);
    expect((await verifyBackupFile(await withManifest((m) => { m.kind = "pre-update"; }))).manifest.kind).toBe("pre-update");
    // The volume's size and sha256 that verify and list show are its member's, checked.
    type Volume = { size: number; sha256: string };
    await expect(verifyBackupFile(await withManifest((m) => { (m.volumes as Volume[])[0]!.size = 10 * 1024 ** 4; }))).rejects.toThrow(/gives a size or sha256 other than its member's/);
    await expect(verifyBackupFile(await withManifest((m) => { (m.volumes as Volume[])[0]!.sha256 = "0".repeat(64); }))).rejects.toThrow(/gives a size or sha256 other than its member's/);
  });
  test("an unlisted, doubled or escaping member is refused", async () => {
    expect(verifyBackupFile(await rewrite((es) => [...es, fileEntry("config/extra", "x")]))).rejects.toThrow(/not listed/);
    expect(verifyBackupFile(await rewrite((es) => [...es, es[1]]))).rejects.toThrow(/appears twice/);
    expect(verifyBackupFile(await rewrite((es) => [...es, fileEntry("config/../../evil", "x")]))).rejects.toThrow(/'\.\.'/);
    expect(verifyBackupFile(await rewrite((es) => [...es, entry("config/l", "symlink", "/etc")]))).rejects.toThrow(/link/);
  });
  test("a volume tar writing through a link, or no tar at all, is refused; a link alone is kept", async () => {
    const evil = writeTar([entry("proj_data", "dir"), entry("proj_data/l", "symlink", "../../../etc"), fileEntry("proj_data/l/passwd", "x")]);
    expect(verifyBackupFile((await make({ volumes: [volumeFile("proj_data", evil)] })).file)).rejects.toThrow(/volume proj_data: member "proj_data\/l\/passwd" lies under the symlink/);
    const links = writeTar([entry("proj_data", "dir"), entry("proj_data/abs", "symlink", "/data/marker"), entry("proj_data/up", "symlink", "../../etc/hostname")]);
    expect((await verifyBackupFile((await make({ volumes: [volumeFile("proj_data", links)] })).file)).volumes.map((v) => v.name)).toEqual(["proj_data"]);
    const junk = new Uint8Array(1024).fill(7);
    expect(verifyBackupFile((await make({ volumes: [volumeFile("proj_data", junk)] })).file)).rejects.toThrow(/volume proj_data: not a readable tar/);
  });
  test("garbage and truncated archives are refused, and extract nothing", async () => {
    const garbage = path("garbage.tar.gz");
    writeFileSync(garbage, new Uint8Array([1, 2, 3]));
    expect(verifyBackupFile(garbage)).rejects.toThrow(/not a readable/);
    const tar = Bun.gunzipSync(readFileSync((await make()).file));
    const early = path("early.tar.gz");
    writeFileSync(early, Bun.gzipSync(tar.subarray(0, 1500)));
    expect(verifyBackupFile(early)).rejects.toThrow(/missing/);
    // Cut inside the volume's contents.
    const cut = path("cut.tar.gz");
    writeFileSync(cut, Bun.gzipSync(tar.subarray(0, tar.length - 2000)));
    const out = mkdtempSync(join(dir, "extract-"));
    await expect(verifyBackupFile(cut, out)).rejects.toThrow(/not a readable .tar.gz archive \(Truncated tar archive\)/);
    // Whatever was extracted before the cut is only in the folder the caller removes.
    expect(readdirSync(out).every((f) => f.endsWith(".tar"))).toBe(true);
    expect(existsSync(join(dir, "..", "volume-0.tar"))).toBe(false);
  });
  test("a volume member the manifest does not promise, or larger than promised, is refused at its header: nothing of it reaches the disk", async () => {
    const { file } = await make();
    const entries = readTar(Bun.gunzipSync(readFileSync(file)));
    const manifest = JSON.parse(new TextDecoder().decode(entries[0]!.data));
    const bomb = new Uint8Array(8 * 1024 * 1024);
    const forged = (extra: TarEntry[], change: (m: any) => void = () => {}) => {
      const m = structuredClone(manifest);
      change(m);
      const p = path("bomb.tar.gz");
      writeFileSync(p, Bun.gzipSync(writeTar([fileEntry("manifest.json", JSON.stringify(m)), ...entries.slice(1), ...extra]) as Uint8Array<ArrayBuffer>));
      return p;
    };
    const out = mkdtempSync(join(dir, "extract-"));
    await expect(verifyBackupFile(forged([fileEntry("volumes/proj_other.tar", bomb)]), out)).rejects.toThrow(/member "volumes\/proj_other.tar" is not listed in the manifest/);
    const grown = forged([], (m) => {
      m.members[1].size = 10;
    });
    await expect(verifyBackupFile(grown, out)).rejects.toThrow(/has size \d+, manifest says 10/);
    // A volume before any manifest is refused the same way.
    const first = path("first.tar.gz");
    writeFileSync(first, Bun.gzipSync(writeTar([fileEntry("volumes/proj_data.tar", bomb), ...entries]) as Uint8Array<ArrayBuffer>));
    await expect(verifyBackupFile(first, out)).rejects.toThrow(/not listed in a manifest.json before it/);
    const written = readdirSync(out).reduce((n, f) => n + statSync(join(out, f)).size, 0);
    expect(written).toBeLessThan(bomb.length);
    // A second manifest does not move the limits the first one set.
    const second = structuredClone(manifest);
    second.members.push({ path: "volumes/proj_other.tar", size: bomb.length, sha256: "0".repeat(64) });
    const twice = path("twice.tar.gz");
    writeFileSync(twice, Bun.gzipSync(writeTar([...entries, fileEntry("manifest.json", JSON.stringify(second)), fileEntry("volumes/proj_other.tar", bomb)]) as Uint8Array<ArrayBuffer>));
    await expect(verifyBackupFile(twice, mkdtempSync(join(dir, "extract-")))).rejects.toThrow(/member "volumes\/proj_other.tar" is not listed in the manifest/);
    // Volumes promised larger than the disk has free are refused before a byte of them is written.
    const huge = forged([], (m) => {
      m.members[1].size = 2 ** 50;
    });
    const empty = mkdtempSync(join(dir, "extract-"));
    await expect(verifyBackupFile(huge, empty)).rejects.toMatchObject({ code: "ENOSPC", message: expect.stringMatching(/^unpacking its volumes needs 1048576\.0 GiB, and .* free$/) });
    expect(readdirSync(empty)).toEqual([]);
  });
  test("config files that collide (one path twice, a file that another needs as its folder) are refused", async () => {
    const data = new TextEncoder().encode("x");
    const twice = await make({ files: [{ path: "docker-compose.yml", data, mode: 0o644 }, { path: "./docker-compose.yml", data, mode: 0o644 }] });
    await expect(verifyBackupFile(twice.file)).rejects.toThrow(/config file "docker-compose.yml" appears twice/);
    const folder = await make({ files: [{ path: "docker-compose.yml", data, mode: 0o644 }, { path: "x", data, mode: 0o644 }, { path: "x/y", data, mode: 0o644 }] });
    await expect(verifyBackupFile(folder.file)).rejects.toThrow(/config file "x" is also the folder of "x\/y"/);
  });
  test("backup list shows a link to a missing file as invalid, and lists the rest", async () => {
    const listed = mkdtempSync(join(dir, "list-"));
    const { file } = await make();
    copyFileSync(file, join(listed, "proj-20240101T000000000Z.tar.gz"));
    symlinkSync(join(listed, "gone.tar.gz"), join(listed, "dangling.tar.gz"));
    const backups = await listBackups(listed);
    expect(backups.map((b) => [b.name, b.verified, b.problem]).sort()).toEqual([
      ["dangling.tar.gz", false, "a symbolic link to a file that does not exist"],
      ["proj-20240101T000000000Z.tar.gz", true, undefined],
    ]);
  });
  test("backup list says how far its check of each archive is, naming which of how many", async () => {
    const listed = mkdtempSync(join(dir, "list-progress-"));
    const { file } = await make();
    const names = ["proj-20240101T000000000Z.tar.gz", "proj-20240102T000000000Z.tar.gz"];
    for (const name of names) copyFileSync(file, join(listed, name));
    const said: string[] = [];
    // Every 0 ms: a line for each chunk read (the CLI's is every five seconds).
    const backups = await listBackups(listed, (line) => said.push(line), 0);
    expect(backups.every((b) => b.verified)).toBe(true);
    const size = formatBytes(statSync(file).size);
    for (const [at, name] of [...names].sort().entries()) {
      expect(said).toContain(`Checking ${name} (${at + 1} of 2): ${size} of ${size}`);
    }
    // Without a listener nothing is said, and the answer is the same.
    expect(await listBackups(listed)).toEqual(backups);
  });
  test("config files are checked against the stack directory before a restore changes anything", () => {
    const stackDir = mkdtempSync(join(dir, "targets-"));
    const outside = mkdtempSync(join(dir, "outside-"));
    mkdirSync(join(stackDir, "skills"));
    writeFileSync(join(stackDir, "prometheus"), "a file");
    symlinkSync(join(outside, "victim"), join(stackDir, ".env"));
    symlinkSync(outside, join(stackDir, "grafana"));
    symlinkSync(join(outside, "gone"), join(stackDir, "traefik"));
    const data = new TextEncoder().encode("x");
    const files = ["skills", "prometheus/prometheus.yml", ".env", "grafana/dash.json", "traefik/traefik.yml", "docker-compose.yml", "new/dir/file"].map((path) => ({ path, data, mode: 0o644 }));
    expect(configTargetProblems(stackDir, files)).toEqual([
      "skills is a folder where the backup has a file",
      "prometheus is a file where the backup has a folder",
      ".env is a symbolic link (replace it with the file itself)",
      `grafana leads outside ${stackDir}`,
      "traefik is a symbolic link to nothing",
    ]);
    expect(() => writeConfigFiles(stackDir, [files[2]!])).toThrow(/symbolic link/);
    expect(existsSync(join(outside, "victim"))).toBe(false);
    // A hard link gets a file of its own; the other name keeps what it held.
    writeFileSync(join(outside, "linked"), "outside\n");
    linkSync(join(outside, "linked"), join(stackDir, "docker-compose.yml"));
    writeConfigFiles(stackDir, [files[5]!]);
    expect(readFileSync(join(outside, "linked"), "utf8")).toBe("outside\n");
    expect(readFileSync(join(stackDir, "docker-compose.yml"), "utf8")).toBe("x");
  });
  test("restored files keep their modes, but nothing becomes writable by others and .env stays the owner's", () => {
    const stackDir = mkdtempSync(join(dir, "modes-"));
    const data = new TextEncoder().encode("x");
    const modes: [string, number, number][] = [[".env", 0o666, 0o600], ["install.sh", 0o777, 0o755], ["mine/tool", 0o700, 0o700], ["README.md", 0o646, 0o644], ["skills/x.md", 0, 0o644]];
    writeConfigFiles(stackDir, modes.map(([path, mode]) => ({ path, data, mode })));
    for (const [path, , expected] of modes) expect([path, statSync(join(stackDir, path)).mode & 0o777]).toEqual([path, expected]);
  });
  test("folders restored under a strict umask are 0755: other users' containers read the files in them", () => {
    const stackDir = mkdtempSync(join(dir, "umask-"));
    const before = process.umask(0o077);
    try {
      writeConfigFiles(stackDir, [{ path: "postgres/init/01.sql", data: new TextEncoder().encode("x"), mode: 0o644 }]);
    } finally {
      process.umask(before);
    }
    expect(["postgres", "postgres/init"].map((p) => statSync(join(stackDir, p)).mode & 0o777)).toEqual([0o755, 0o755]);
  });
  test("file names sort by time", () => {
    expect(backupFileName("p", new Date("2024-01-02T03:04:05.678Z"))).toBe("p-20240102T030405678Z.tar.gz");
    expect(backupFileName("p", new Date("2024-01-02T03:04:05.678Z"), "pre-restore")).toBe("p-pre-restore-20240102T030405678Z.tar.gz");
  });
});

describe("what a backup cannot hold", () => {
  test("a bare-metal stack's natively installed services: their data is named with how to copy it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-native-"));
    try {
      const { generateBundle } = await import("../../src/core/generate/index.ts");
      const { getCatalog } = await import("../../src/catalog/index.ts");
      const { files } = generateBundle({ projectName: "bm", preset: "devops", deployment: "bare-metal", platform: "linux/amd64" }, getCatalog());
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(join(dir, path, ".."), { recursive: true });
        writeFileSync(join(dir, path), text);
      }
      const stack = loadStack(dir);
      const compose = (await import("yaml")).parse(files["docker-compose.yml"]);
      const model = normaliseModel(compose, stack.project);
      expect(model.services.map((s) => s.name)).not.toContain("postgresql");
      const missing = outsideTheBackup(stack, model);
      expect(missing).toEqual([
        expect.stringMatching(/^postgresql's data, installed on this host.*\/var\/lib\/postgresql.*pg_dumpall/),
        expect.stringMatching(/^redis's data, installed on this host.*\/var\/lib\/redis.*SAVE/),
      ]);
      // The bundle's README says the same before anyone needs it.
      expect(files["README.md"]).toContain("pg_dumpall");
      // A container deployment of the same stack has nothing outside.
      const docker = generateBundle({ projectName: "bm", preset: "devops", platform: "linux/amd64" }, getCatalog()).files;
      writeFileSync(join(dir, "docker-compose.yml"), docker["docker-compose.yml"]);
      writeFileSync(join(dir, "stackgen.json"), docker["stackgen.json"]);
      const containerStack = loadStack(dir);
      expect(outsideTheBackup(containerStack, normaliseModel((await import("yaml")).parse(docker["docker-compose.yml"]), "bm"))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("prune retention", () => {
  const backup = (name: string, createdAt: string, kind?: string): ListedBackup => ({ file: `/b/${name}`, name, size: 1, createdAt, project: "p", verified: true, ...(kind ? { kind } : {}) });
  const at = (day: string, hour = "03") => `${day}T${hour}:00:00.000Z`;
  // Newest first, as listBackups gives them. 2026-11-23 is a Monday.
  const listed = [
    backup("a", at("2026-11-23", "20")),
    backup("b", at("2026-11-23")), // the same day as a
    backup("c", at("2026-11-22")), // Sunday: the week of 16 November, as d and e
    backup("d", at("2026-11-21")),
    backup("e", at("2026-11-16")),
    backup("f", at("2026-11-09")),
    backup("g", at("2026-10-31")),
    backup("h", at("2026-09-30")),
  ];
  const kept = (plan: ReturnType<typeof planPrune>) => Object.fromEntries(plan.kept.map((b) => [b.name, plan.keptBy.get(b)]));

  test("each rule keeps the newest backup of each of its last periods that have one; a backup any rule keeps stays", () => {
    const plan = planPrune(listed, "p", { last: 1, daily: 3, weekly: 3, monthly: 2 });
    expect(kept(plan)).toEqual({ a: ["last", "daily", "weekly", "monthly"], c: ["daily", "weekly"], d: ["daily"], f: ["weekly"], g: ["monthly"] });
    expect(plan.removed.map((b) => b.name)).toEqual(["b", "e", "h"]);
    // --keep alone is the newest n, as before the calendar rules.
    expect(planPrune(listed, "p", { last: 2 }).kept.map((b) => b.name)).toEqual(["a", "b"]);
    // Periods without a backup are not counted: three months reach back to September.
    expect(kept(planPrune(listed, "p", { monthly: 3 }))).toEqual({ a: ["monthly"], g: ["monthly"], h: ["monthly"] });
  });

  test("ISO weeks across the turn of a year; a backup whose time cannot be read is kept", () => {
    const turn = [
      backup("w53-fri", at("2027-01-01")), // Friday 1 January 2027 is in 2026's week 53
      backup("w53-mon", at("2026-12-28")),
      backup("w1-mon", at("2025-12-29")), // Monday 29 December 2025 is in 2026's week 1
      backup("w52-sat", at("2025-12-27")),
      backup("odd", "not a time"),
    ];
    expect(kept(planPrune(turn, "p", { weekly: 10 }))).toEqual({ "w53-fri": ["weekly"], "w1-mon": ["weekly"], "w52-sat": ["weekly"], odd: ["undated"] });
  });

  test("safety backups are counted apart, per kind; other projects' and damaged archives are never counted", () => {
    const mixed = [backup("r2", at("2026-11-24"), "pre-restore"), backup("r1", at("2026-11-24", "01"), "pre-restore"), ...listed.slice(0, 3), { ...backup("x", at("2026-11-25")), project: "other" }, { ...backup("bad", at("2026-11-25")), verified: false }];
    const plan = planPrune(mixed, "p", { daily: 1 });
    expect(kept(plan)).toEqual({ r2: ["daily"], a: ["daily"] });
    expect(plan.removed.map((b) => b.name)).toEqual(["r1", "b", "c"]);
    expect(plan.untouched.map((b) => b.name)).toEqual(["x", "bad"]);
  });
});

describe("doctor's disk check", () => {
  const GiB = 1024 ** 3;
  const engine = (free: number, device = 1): DiskSpace => ({ role: "engine", path: "/var/lib/docker", free, device });
  const stack = (free: number, device = 1): DiskSpace => ({ role: "stack", path: "/srv/lab", free, device });

  test("enough room: said once for one disk, per disk otherwise", () => {
    expect(diskCheck([engine(80 * GiB), stack(80 * GiB)])).toEqual({ id: "disk", status: "ok", message: "80 GiB free for images, volumes and backups (/var/lib/docker and /srv/lab are on one disk)" });
    expect(diskCheck([engine(80 * GiB), stack(20 * GiB, 2)]).message).toBe("80 GiB free for images and volumes (/var/lib/docker), 20 GiB for the stack folder and its backups (/srv/lab)");
    // An engine on another host: its disk is not this machine's to read.
    expect(diskCheck([stack(20 * GiB)])).toEqual({ id: "disk", status: "ok", message: "the engine's disk could not be read from here, 20 GiB for the stack folder and its backups (/srv/lab)" });
  });

  test("little room: a warning naming the place and what frees room, once per disk", () => {
    expect(diskCheck([engine(ENGINE_DISK_WARN_BYTES - 1), stack(ENGINE_DISK_WARN_BYTES - 1)])).toEqual({ id: "disk", status: "warn", message: expect.stringMatching(/^only 5\.0 GiB free where the engine keeps images and volumes \(\/var\/lib\/docker\); `docker system prune`[^;]*$/) });
    const backups = diskCheck([engine(80 * GiB), stack(STACK_DISK_WARN_BYTES - 1, 2)]);
    expect(backups.status).toBe("warn");
    expect(backups.message).toContain("free for the stack folder and its backups (/srv/lab); `stackgen backup prune` removes old backups");
    expect(diskCheck([engine(ENGINE_DISK_WARN_BYTES - 1), stack(GiB, 2)]).message.split("; only ")).toHaveLength(2);
  });

  test("diskSpaceOf reads the file system of a path, and nothing for a path that is not there", () => {
    const here = diskSpaceOf("stack", tmpdir())!;
    expect(here.free).toBeGreaterThan(0);
    expect(here.device).toBe(statSync(tmpdir()).dev);
    expect(diskSpaceOf("engine", "/nonexistent/docker")).toBeUndefined();
  });
});

describe("a compose run with a deadline", () => {
  test("ends with the whole process group: a child holding the output (the compose plugin an older docker CLI does not signal) goes too", async () => {
    // The shell stands in for `docker`, its sleep for the plugin it runs.
    const compose = new Compose({ argv: ["sh", "-c", "sleep 30; :"], v2: false } as unknown as ComposeCli, { dir: tmpdir(), project: "p", composeFiles: [], documents: [] } as unknown as Stack);
    const started = Date.now();
    const r = await compose.run(["up", "--detach"], { deadlineMs: 300 });
    expect(r.overran).toBe(true);
    expect(Date.now() - started).toBeLessThan(8000);
  });
});

describe("compose pull asks the registry whatever the service's pull_policy", () => {
  // A shell stands in for `docker compose`: it prints its arguments and the files given with
  // --file, and answers `pull --help` as a compose with (or without) `pull --policy`.
  const standIn = (help: string) =>
    new Compose({ argv: ["sh", "-c", `case "$*" in *--help*) echo "${help}";; *) for a; do case "$a" in *.yml) cat "$a";; esac; done; echo "args: $*";; esac`, "sh"], v2: true } as unknown as ComposeCli, { dir: tmpdir(), project: "p", composeFiles: [], documents: [] } as unknown as Stack);
  test("--policy always where compose takes it", async () => {
    const r = await standIn("      --policy string   Apply pull policy").pull("app");
    expect(r.stdout).toContain("pull --quiet --policy always app");
  });
  test("an older compose is given a file of ours setting the service's pull_policy to always", async () => {
    const r = await standIn("  -q, --quiet   Pull without printing progress information").pull("app");
    expect(r.stdout).not.toContain("--policy");
    expect(r.stdout).toContain("pull --quiet app");
    expect(r.stdout).toMatch(/services:\s+app:\s+pull_policy: always/);
  });
});

describe("compose versions", () => {
  test("up --pull is passed from Compose 2.6 on (earlier ones refuse the flag)", () => {
    for (const [version, takes] of [["Docker Compose version v2.26.1", true], ["Docker Compose version 2.5.0", false], ["2.26.1-4", true], ["v2.6.0", true], ["2.5.1", false], ["2.0.0-rc.3", false], ["1.29.2", false], ["3.0.0", true], ["", false]] as const) {
      expect([version, takesUpPull(version)]).toEqual([version, takes]);
    }
  });
});

describe("the stack lock", () => {
  test("one command at a time; a lock left by a process that is gone does not block; released after a failure too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-lock-"));
    try {
      const lock = join(dir, LOCK_FILE);
      let inside = "";
      await withStackLock(dir, "update", async () => {
        inside = readFileSync(lock, "utf8");
        // A second command meanwhile (this process is alive): refused, the first one's lock stays.
        await expect(withStackLock(dir, "backup create", async () => "ran")).rejects.toThrow(/update \(process \d+, since .*\) is working on this stack; run this when it is done\. Nothing was changed/);
        expect(existsSync(lock)).toBe(true);
      });
      expect(JSON.parse(inside)).toMatchObject({ pid: process.pid, command: "update" });
      expect(existsSync(lock)).toBe(false);
      // Killed without cleaning up: its lock names a process that no longer runs (no pid is above 2^22).
      writeFileSync(lock, JSON.stringify({ pid: 4194305, command: "update", startedAt: "earlier" }));
      expect(await withStackLock(dir, "backup create", async () => "ran")).toBe("ran");
      // Its pid taken by another process since (a reboot, a container's pid 1): the start tells them apart.
      writeFileSync(lock, JSON.stringify({ pid: process.pid, start: "another-boot:1", command: "update", startedAt: "earlier" }));
      expect(await withStackLock(dir, "backup create", async () => "ran")).toBe("ran");
      // A lock taken over by someone else meanwhile is theirs to remove.
      await withStackLock(dir, "update", async () => writeFileSync(lock, JSON.stringify({ pid: 4194305, command: "other", startedAt: "later" })));
      expect(JSON.parse(readFileSync(lock, "utf8")).command).toBe("other");
      rmSync(lock);
      // Being written right now (nothing readable yet): busy, not stale.
      writeFileSync(lock, "");
      await expect(withStackLock(dir, "update", async () => "ran")).rejects.toThrow(/another stackgen command is working on this stack/);
      rmSync(lock);
      await expect(withStackLock(dir, "update", async () => { throw new Error("failed"); })).rejects.toThrow("failed");
      expect(existsSync(lock)).toBe(false);
      // Never part of a backup.
      writeFileSync(lock, "{}");
      writeFileSync(join(dir, "docker-compose.yml"), "services: {}\n");
      expect(bundleFiles(dir)).toEqual(["docker-compose.yml"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("a stale lock is taken away only while it is the one judged stale: another command's new lock stays", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-lock-"));
    try {
      const lock = join(dir, LOCK_FILE);
      const stale = JSON.stringify({ pid: 4194305, command: "update", startedAt: "earlier" });
      // Two commands found the same stale lock; the first took it away and locked: the second,
      // removing "the stale lock" now, must not remove the first one's.
      const first = JSON.stringify({ pid: process.pid, command: "backup create", startedAt: "now" });
      writeFileSync(lock, first);
      removeStale(lock, stale);
      expect(readFileSync(lock, "utf8")).toBe(first);
      // Still the stale one: gone. Already gone: nothing to do. Nothing is left beside it.
      writeFileSync(lock, stale);
      removeStale(lock, stale);
      expect(existsSync(lock)).toBe(false);
      removeStale(lock, stale);
      expect(readdirSync(dir)).toEqual([]);
      // A stale lock left empty (a writer killed at once) judged by two: the first's new lock is
      // written in full before it appears, so it never matches the empty one judged.
      writeFileSync(lock, "");
      removeStale(lock, "");
      await withStackLock(dir, "update", async () => {
        removeStale(lock, "");
        expect(JSON.parse(readFileSync(lock, "utf8")).command).toBe("update");
      });
      // While another command takes a stale lock away (its guard), nothing is taken away twice;
      // a guard left by a command that died goes once it is old.
      writeFileSync(lock, stale);
      writeFileSync(`${lock}.break`, "");
      removeStale(lock, stale);
      expect(readFileSync(lock, "utf8")).toBe(stale);
      utimesSync(`${lock}.break`, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
      expect(await withStackLock(dir, "backup create", async () => readdirSync(dir).sort())).toEqual([LOCK_FILE]);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("an update's record is read only when it is whole and of ours: a corrupt one is no record, not a crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-record-"));
    try {
      const record = join(dir, UNFINISHED_UPDATE_FILE);
      const good = { startedAt: "2026-11-29T01:00:00.000Z", start: ["db", "app"], mustStayUp: ["db", "app"], paused: [], brokenBefore: [], scales: [["app", 2]], images: { app: { id: "sha256:abc", ranImage: "app:1" } } };
      writeFileSync(record, JSON.stringify(good));
      expect(unfinishedUpdateNote(dir)).toStartWith("The update of 2026-11-29T01:00:00.000Z stopped the stack and did not finish (db, app ran before it)");
      for (const bad of [{ ...good, scales: [1] }, { ...good, scales: [["app", 1e9]] }, { ...good, start: "app" }, { ...good, images: { app: { id: 5 } } }, { ...good, images: [] }, null, [], "x"]) {
        writeFileSync(record, JSON.stringify(bad));
        expect(unfinishedUpdateNote(dir), JSON.stringify(bad)).toBeUndefined();
      }
      writeFileSync(record, "{not json");
      expect(unfinishedUpdateNote(dir)).toBeUndefined();
      // Beside the lock: a backup never holds it.
      expect(bundleFiles(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a lock left by a restore, update or backup that did not finish is said: by status, and by the command taking it over", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-lock-"));
    try {
      const lock = join(dir, LOCK_FILE);
      expect(unfinishedCommand(dir)).toBeUndefined();
      const said: string[] = [];
      writeFileSync(lock, JSON.stringify({ pid: 4194305, command: "backup restore", startedAt: "2026-11-28T03:00:00.000Z" }));
      const note = unfinishedCommand(dir);
      expect(note).toStartWith("The last `backup restore` of this stack (process 4194305, started 2026-11-28T03:00:00.000Z) did not finish (the process is gone): its services may be stopped and its volumes half replaced");
      expect(await withStackLock(dir, "backup create", async () => "ran", (m) => said.push(m))).toBe("ran");
      expect(said).toEqual([note!]);
      for (const command of ["update", "backup create"]) {
        writeFileSync(lock, JSON.stringify({ pid: 4194305, command, startedAt: "earlier" }));
        expect(unfinishedCommand(dir)).toContain(`The last \`${command}\` of this stack`);
      }
      // A prune changes no service: nothing to say. A live holder is at work, not unfinished.
      writeFileSync(lock, JSON.stringify({ pid: 4194305, command: "backup prune", startedAt: "earlier" }));
      expect(unfinishedCommand(dir)).toBeUndefined();
      writeFileSync(lock, JSON.stringify({ pid: process.pid, command: "backup restore", startedAt: "now" }));
      expect(unfinishedCommand(dir)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  test("bundleFiles names what else the stack directory holds: links, empty folders; not what is left out on purpose", () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-files-"));
    try {
      mkdirSync(join(dir, "data", "empty"), { recursive: true });
      writeFileSync(join(dir, "data", "f"), "x");
      symlinkSync("f", join(dir, "data", "link"));
      mkdirSync(join(dir, "archive", "daily"), { recursive: true });
      mkdirSync(join(dir, "backups"));
      const skipped: string[] = [];
      expect(bundleFiles(dir, [join(dir, "archive", "daily")], skipped)).toEqual(["data/f"]);
      // archive/ holds only the excluded output folder: not an empty folder of the user's.
      expect(skipped).toEqual(["data/empty/ (an empty folder)", "data/link (a symbolic link)"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("hot backups", () => {
  test("name the running databases whose files are copied while they write", () => {
    const service = (name: string, image: string) => ({ name, image, dependsOn: [], hasBuild: false, binds: [] });
    const model = {
      services: [service("postgresql", "pgvector/pgvector:pg17"), service("qdrant", "qdrant/qdrant:v1"), service("n8n", "n8nio/n8n:1"), service("appflowy-postgres", "pgvector/pgvector:pg16"), service("redis", "redis:8")],
      volumes: [],
    };
    expect(liveDatabases(model, ["postgresql", "qdrant", "n8n", "appflowy-postgres"])).toEqual(["postgresql", "qdrant", "appflowy-postgres"]);
    expect(liveDatabases(model, ["n8n"])).toEqual([]);
  });
});

describe("engine errors", () => {
  test("a socket this user may not open says how to get access; anything else asks whether dockerd runs", () => {
    expect(unreachableMessage("/var/run/docker.sock", { code: "EACCES", message: "EACCES" })).toContain("sudo usermod -aG docker $USER");
    expect(unreachableMessage("/var/run/docker.sock", { code: "ECONNREFUSED", message: "ECONNREFUSED" })).toEndWith("Is dockerd running?");
    // The runtime's own guess ("a typo in the url or port?") is not passed on for the common codes.
    const refused = unreachableMessage("tcp://127.0.0.1:2375", { code: "ECONNREFUSED", message: "Unable to connect. Is the computer able to access the url?" });
    expect(refused).toBe("Cannot reach the Docker engine at tcp://127.0.0.1:2375 (connection refused). Is dockerd running?");
    expect(unreachableMessage("/nowhere.sock", { code: "ENOENT", message: "whatever" })).toContain("(no socket there)");
    // A password in DOCKER_HOST is never shown.
    expect(parseDockerHost("tcp://user:S3cretPw@127.0.0.1:2375").display).toBe("tcp://***@127.0.0.1:2375");
    expect(() => parseDockerHost("tcp://user:S3cret/Pw@127.0.0.1:2375")).toThrow('DOCKER_HOST "tcp://***@127.0.0.1:2375" is not an address');
    expect(() => parseDockerHost("ssh://admin:s3cret@host")).toThrow('DOCKER_HOST "ssh://***@host" is not supported');
  });
});
