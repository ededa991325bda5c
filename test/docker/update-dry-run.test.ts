// `update --dry-run` against a registry played on 127.0.0.1 and an engine of test doubles: what
// the dry run says of a local image that has no registry digest (loaded, or built and tagged
// here), which the real update, comparing image ids after its pull, may well call unchanged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renderUpdate } from "../../src/cli/update.ts";
import type { Compose, ComposeModel } from "../../src/docker/compose.ts";
import type { ContainerSummary, Engine, ImageInspect } from "../../src/docker/engine.ts";
import type { Stack } from "../../src/docker/stack.ts";
import { dryRunUpdate, normalPlatform, pullPlatform } from "../../src/docker/update.ts";

const sha = (text: string) => `sha256:${new Bun.CryptoHasher("sha256").update(text).digest("hex")}`;
const INDEX = "application/vnd.oci.image.index.v1+json";
const MANIFEST = "application/vnd.oci.image.manifest.v1+json";

/** Manifests by repository and reference (tag or digest); a tag names the digest of one of them. */
class FakeRegistry {
  private readonly blobs = new Map<string, { mediaType: string; body: string }>();
  private readonly tags = new Map<string, string>();
  private server?: ReturnType<typeof Bun.serve>;

  start() {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.answer(req) });
  }
  stop() {
    this.server?.stop(true);
  }
  ref(repository: string, tag: string) {
    return `127.0.0.1:${this.server!.port}/${repository}:${tag}`;
  }

  /** Store a manifest (its body as the registry serves it); returns its digest. */
  put(repository: string, mediaType: string, document: Record<string, unknown>, tag?: string): string {
    const body = JSON.stringify(document);
    const digest = sha(body);
    this.blobs.set(`${repository}@${digest}`, { mediaType, body });
    if (tag) this.tags.set(`${repository}:${tag}`, digest);
    return digest;
  }
  /** An image manifest whose config (the engine's image id) is `configDigest`. */
  image(repository: string, configDigest: string, tag?: string): string {
    return this.put(repository, MANIFEST, { schemaVersion: 2, mediaType: MANIFEST, config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: configDigest, size: 1 }, layers: [] }, tag);
  }

  private answer(req: Request): Response {
    const m = /^\/v2\/(.+)\/manifests\/(.+)$/.exec(new URL(req.url).pathname);
    if (!m) return new Response("{}", { status: new URL(req.url).pathname === "/v2/" ? 200 : 404 });
    const [repository, reference] = [m[1]!, decodeURIComponent(m[2]!)];
    const digest = reference.startsWith("sha256:") ? reference : this.tags.get(`${repository}:${reference}`);
    const blob = digest && this.blobs.get(`${repository}@${digest}`);
    if (!blob) return new Response("not found", { status: 404 });
    const headers = { "docker-content-digest": digest!, "content-type": blob.mediaType };
    return new Response(req.method === "HEAD" ? null : blob.body, { headers });
  }
}

/** An engine whose containers run these images, by service (one container each; `app` when one
 *  image is given); this host is linux/amd64. */
function engineRunning(image: ImageInspect | Record<string, ImageInspect>, statuses: Record<string, string> = {}): Engine {
  const byService: Record<string, ImageInspect> = "Id" in image ? { app: image as ImageInspect } : image;
  const containers = Object.entries(byService).map(([service, img]) => ({ Id: `c-${service}`, ImageID: img.Id, State: "running", Status: statuses[service] ?? "Up 1 hour", Labels: { "com.docker.compose.project": "p", "com.docker.compose.service": service } }) as unknown as ContainerSummary);
  const images = Object.values(byService);
  return {
    listProjectContainers: async () => containers,
    inspectContainer: async (id: string) => ({ Config: { Image: byService[id.slice(2)]?.RepoTags?.[0] }, State: { StartedAt: new Date(0).toISOString() }, RestartCount: 0 }),
    inspectImage: async (ref: string) => images.find((img) => ref === img.Id || img.RepoTags?.includes(ref)),
    info: async () => ({ OSType: "linux", Architecture: "x86_64" }),
  } as unknown as Engine;
}

const stack = { dir: "/nonexistent", composeFiles: [], documents: [], project: "p" } as Stack;
/** Read only for the commands the messages give. */
const compose = { cli: { argv: ["docker", "compose"] }, profiles: [], stack } as unknown as Compose;
const modelOf = (image: string): ComposeModel => ({ services: [{ name: "app", image, dependsOn: [], hasBuild: false, binds: [] }], volumes: [] });
const dryRun = (image: string, local: Omit<ImageInspect, "RepoTags">) =>
  dryRunUpdate(engineRunning({ ...local, RepoTags: [image] }), stack, compose, modelOf(image), { timeoutMs: 1000, progress: () => {} });

describe("update --dry-run of an image without a registry digest", () => {
  const registry = new FakeRegistry();
  beforeAll(() => registry.start());
  afterAll(() => registry.stop());

  test("the same image as the registry's for this platform is unchanged, as the update's pull finds", async () => {
    const id = sha("config-v1");
    const image = registry.ref("team/loaded", "1");
    registry.image("team/loaded", id, "1");
    const out = await dryRun(image, { Id: id, RepoDigests: [] });
    expect(out).toMatchObject({ updated: [], unchanged: ["app"], restarted: [] });
    expect(out.unknown).toBeUndefined();
    expect(out.failed).toBeUndefined();
  });

  test("another image is an update, from the local id to the registry's digest", async () => {
    const image = registry.ref("team/loaded", "2");
    const digest = registry.image("team/loaded", sha("config-v2"), "2");
    const local = sha("config-v1");
    const out = await dryRun(image, { Id: local, RepoDigests: null });
    expect(out.updated).toEqual([{ service: "app", image, oldDigest: local, newDigest: digest }]);
    expect(out.restarted).toEqual(["app"]);
  });

  test("a multi-platform index is read for this platform's entry", async () => {
    const id = sha("amd64-config");
    const entries = [
      { mediaType: MANIFEST, digest: registry.image("team/multi", sha("arm64-config")), size: 1, platform: { os: "linux", architecture: "arm64", variant: "v8" } },
      { mediaType: MANIFEST, digest: registry.image("team/multi", id), size: 1, platform: { os: "linux", architecture: "amd64" } },
    ];
    registry.put("team/multi", INDEX, { schemaVersion: 2, mediaType: INDEX, manifests: entries }, "1");
    expect((await dryRun(registry.ref("team/multi", "1"), { Id: id, RepoDigests: [] })).unchanged).toEqual(["app"]);
    // Pulled once under another repository: that digest is not this tag's, the id still tells.
    expect((await dryRun(registry.ref("team/multi", "1"), { Id: id, RepoDigests: ["127.0.0.1:1/elsewhere@sha256:" + "0".repeat(64)] })).unchanged).toEqual(["app"]);
    // An index without this platform: the update's pull would fail, and the dry run says so.
    registry.put("team/multi", INDEX, { schemaVersion: 2, mediaType: INDEX, manifests: entries.slice(0, 1) }, "arm-only");
    const armOnly = await dryRun(registry.ref("team/multi", "arm-only"), { Id: id, RepoDigests: [] });
    expect(armOnly.failed).toEqual([{ service: "app", image: registry.ref("team/multi", "arm-only"), error: expect.stringContaining("no image for linux/amd64, so a pull would fail") }]);
    expect(armOnly.updated).toEqual([]);
  });

  test("what only a pull could tell is listed as unknown with the reason, not as an update", async () => {
    const image = registry.ref("team/old", "1");
    const digest = registry.put("team/old", "application/vnd.docker.distribution.manifest.v1+prettyjws", { schemaVersion: 1, name: "team/old", tag: "1", fsLayers: [] }, "1");
    const out = await dryRun(image, { Id: sha("config"), RepoDigests: [] });
    expect(out).toMatchObject({ updated: [], unchanged: [], restarted: [] });
    expect(out.unknown).toEqual([{ service: "app", image, digest, reason: expect.stringContaining("schema 1 manifest") }]);
    expect(renderUpdate(out)).toContain(`Cannot tell without pulling whether app (${image}) changed: the local image was not pulled as the registry's digest`);
  });
});

test("the dry run lists the services it would restart in the order the update starts them, and ones unhealthy before only when it would", async () => {
  const registry = new FakeRegistry();
  registry.start();
  try {
    const [web, db] = [registry.ref("team/web", "1"), registry.ref("team/zdb", "1")];
    registry.image("team/web", sha("web-v2"), "1");
    registry.image("team/zdb", sha("db-v1"), "1");
    const engine = engineRunning({ web: { Id: sha("web-v1"), RepoTags: [web], RepoDigests: [] }, zdb: { Id: sha("db-v1"), RepoTags: [db], RepoDigests: [] } });
    const model: ComposeModel = { services: [{ name: "web", image: web, dependsOn: ["zdb"], hasBuild: false, binds: [] }, { name: "zdb", image: db, dependsOn: [], hasBuild: false, binds: [] }], volumes: [] };
    const out = await dryRunUpdate(engine, stack, compose, model, { timeoutMs: 1000, progress: () => {} });
    expect(out.updated.map((u) => u.service)).toEqual(["web"]);
    expect(out.restarted).toEqual(["zdb", "web"]); // not alphabetical: zdb is started first
    // A service unhealthy before is named only when the update would start it again, as the update names it.
    const zdbUnhealthy = { zdb: "Up 1 hour (unhealthy)" };
    const images = { web: { Id: sha("web-v1"), RepoTags: [web], RepoDigests: [] }, zdb: { Id: sha("db-v1"), RepoTags: [db], RepoDigests: [] } };
    expect((await dryRunUpdate(engineRunning(images, zdbUnhealthy), stack, compose, model, { timeoutMs: 1000, progress: () => {} })).unhealthyBefore).toEqual(["zdb"]);
    const current = { ...images, web: { ...images.web, Id: sha("web-v2") } };
    const quiet = await dryRunUpdate(engineRunning(current, zdbUnhealthy), stack, compose, model, { timeoutMs: 1000, progress: () => {} });
    expect(quiet).toMatchObject({ updated: [], restarted: [] });
    expect(quiet.unhealthyBefore).toBeUndefined();
    // Waited for as healthy, the unhealthy zdb would make the update refuse: the dry run says so now.
    expect(out.wouldRefuse).toBeUndefined();
    const waiting: ComposeModel = { ...model, services: model.services.map((svc) => (svc.name === "web" ? { ...svc, dependsOnConditions: { zdb: "service_healthy" } } : svc)) };
    const refused = await dryRunUpdate(engineRunning(images, zdbUnhealthy), stack, compose, waiting, { timeoutMs: 1000, progress: () => {} });
    expect(refused.updated.map((u) => u.service)).toEqual(["web"]);
    expect(refused.wouldRefuse).toEqual({ code: "DEPENDENCY_UNHEALTHY", message: expect.stringContaining("zdb was unhealthy or restarting before the update") });
    expect(refused.wouldRefuse!.message).toContain("The update would pull the new images, then stop nothing and put the old tags back. `docker compose logs zdb` in /nonexistent shows why");
    // A dependency whose new image only a pull can tell about may be its fix: neither named as
    // unhealthy on the same image nor foreseen as a refusal.
    const db2 = registry.ref("team/zdb", "2");
    registry.put("team/zdb", "application/vnd.docker.distribution.manifest.v1+prettyjws", { schemaVersion: 1, name: "team/zdb", tag: "2", fsLayers: [] }, "2");
    const unsure = { ...waiting, services: waiting.services.map((svc) => (svc.name === "zdb" ? { ...svc, image: db2 } : svc)) };
    const unknownDb = await dryRunUpdate(engineRunning({ ...images, zdb: { ...images.zdb, RepoTags: [db2] } }, zdbUnhealthy), stack, compose, unsure, { timeoutMs: 1000, progress: () => {} });
    expect([unknownDb.updated.map((u) => u.service), unknownDb.unknown?.map((u) => u.service)]).toEqual([["web"], ["zdb"]]);
    expect([unknownDb.unhealthyBefore, unknownDb.wouldRefuse]).toEqual([undefined, undefined]);
  } finally {
    registry.stop();
  }
});

describe("update --dry-run against a registry answering nonsense", () => {
  const registry = new FakeRegistry();
  beforeAll(() => registry.start());
  afterAll(() => registry.stop());

  test("a manifest that is not an object, or an index of broken entries, is said as the registry's fault, never a crash", async () => {
    registry.put("team/odd", INDEX, null as unknown as Record<string, unknown>, "null");
    registry.put("team/odd", INDEX, { schemaVersion: 2, mediaType: INDEX, manifests: [null, 5, { platform: null }, { digest: 7, platform: { os: "linux", architecture: "amd64" } }] }, "broken");
    for (const tag of ["null", "broken"]) {
      const out = await dryRun(registry.ref("team/odd", tag), { Id: sha("config"), RepoDigests: [] });
      expect(out.updated).toEqual([]);
      expect(out.failed?.[0]?.error ?? out.unknown?.[0]?.reason, tag).not.toMatch(/TypeError|is not an object|undefined/);
      expect([...(out.failed ?? []), ...(out.unknown ?? [])]).toHaveLength(1);
    }
  });
});

describe("the platform a pull picks", () => {
  test("the engine's kernel architecture, in the form image indexes use", () => {
    expect(pullPlatform({ OSType: "linux", Architecture: "x86_64" }, "")).toEqual({ os: "linux", architecture: "amd64" });
    expect(pullPlatform({ OSType: "linux", Architecture: "aarch64" }, "")).toEqual({ os: "linux", architecture: "arm64" });
    expect(pullPlatform({ OSType: "linux", Architecture: "armv7l" }, "")).toEqual({ os: "linux", architecture: "arm", variant: "v7" });
    expect(pullPlatform({ OSType: "linux", Architecture: "x86_64" }, "linux/arm64/v8")).toEqual({ os: "linux", architecture: "arm64" });
    expect(normalPlatform({ os: "linux", architecture: "arm" })).toEqual({ os: "linux", architecture: "arm", variant: "v7" });
  });
});
