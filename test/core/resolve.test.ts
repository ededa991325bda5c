// The resolver's rules (SPEC §4 validate rules, §7 codes; CONTRACT §3).
import { describe, expect, test } from "bun:test";
import { getCatalog } from "../../src/catalog/index.ts";
import { toSelection } from "../../src/core/check-input.ts";
import { resolve } from "../../src/core/resolve.ts";
import { keptPortsOf } from "../../src/core/kept-ports.ts";
import { validateSelection } from "../../src/core/validate.ts";
import { StackgenError } from "../../src/errors.ts";

const catalog = getCatalog();
const run = (body: Record<string, unknown>) => resolve(toSelection({ platform: "linux/amd64", ...body }, catalog), catalog);
const codes = (xs: { code: string }[]) => xs.map((x) => x.code);

describe("resolve", () => {
  test("empty selection: valid, empty, 0 MB, one EMPTY_STACK warning", () => {
    const r = run({});
    expect(r).toMatchObject({ valid: true, resolvedServices: [], addedDependencies: [], conflicts: [], estimatedMemoryMB: 0 });
    expect(codes(r.warnings)).toEqual(["EMPTY_STACK"]);
    // A proxy, a domain or GPU support alone select nothing either (generate refuses them so).
    for (const options of [{ proxy: "caddy" }, { proxy: "traefik", domain: "example.com" }, { gpu: true }]) {
      const alone = run(options);
      expect(alone).toMatchObject({ valid: true, resolvedServices: [], addedDependencies: [], conflicts: [], estimatedMemoryMB: 0 });
      expect(codes(alone.warnings)).toEqual(["EMPTY_STACK"]);
    }
  });

  test("dependencies are added before their dependents with requiredBy and a reason", () => {
    const r = run({ services: ["n8n"] });
    expect(r.resolvedServices).toEqual(["postgresql", "n8n"]);
    expect(r.addedDependencies).toEqual([{ service: "postgresql", requiredBy: "n8n", reason: expect.any(String) }]);
  });

  test("transitive dependencies resolve in order", () => {
    const r = run({ services: ["lasuite-meet-frontend"] });
    const idx = (id: string) => r.resolvedServices.indexOf(id);
    expect(idx("lasuite-meet-backend")).toBeLessThan(idx("lasuite-meet-frontend"));
    for (const s of r.services) for (const d of s.dependencies) expect(idx(d)).toBeLessThan(idx(s.id));
    expect(r.addedDependencies.map((d) => d.service)).toContain("lasuite-meet-backend");
  });

  test("a requested dependency is not listed as added, and request order is kept otherwise", () => {
    const r = run({ services: ["redis", "n8n", "postgresql"] });
    expect(r.resolvedServices).toEqual(["redis", "postgresql", "n8n"]);
    expect(r.addedDependencies).toEqual([]);
  });

  test("pack services are added and their dependencies follow as added dependencies", () => {
    const r = run({ skillPacks: ["devops"] });
    for (const id of ["n8n", "redis", "uptime-kuma", "grafana", "prometheus", "postgresql"]) expect(r.resolvedServices).toContain(id);
    expect(r.addedDependencies.find((d) => d.service === "postgresql")?.requiredBy).toBe("n8n");
  });

  test("request aliases research and dev-ops expand to research-agent and devops", () => {
    expect(run({ skillPacks: ["research"] }).resolvedServices).toEqual(expect.arrayContaining(["qdrant", "searxng", "browserless"]));
    expect(run({ skillPacks: ["dev-ops"] }).resolvedServices).toEqual(expect.arrayContaining(["n8n", "uptime-kuma"]));
  });

  test("conflicting services: valid false, SERVICE_CONFLICT naming both", () => {
    const r = run({ services: ["caddy", "traefik"] });
    expect(r.valid).toBe(false);
    const c = r.conflicts.find((x) => x.code === "SERVICE_CONFLICT")!;
    expect(c.services.sort()).toEqual(["caddy", "traefik"]);
  });

  test("a conflict declared on one side only is still found", () => {
    const declaring = catalog.services.find((s) => s.conflicts.some((c) => !catalog.servicesById.get(c)!.conflicts.includes(s.id)));
    if (!declaring) return;
    const other = declaring.conflicts.find((c) => !catalog.servicesById.get(c)!.conflicts.includes(declaring.id))!;
    expect(codes(run({ services: [other, declaring.id] }).conflicts)).toContain("SERVICE_CONFLICT");
  });

  test("a dependency that conflicts with the selection is DEPENDENCY_MISSING", () => {
    const r = run({ services: ["valkey", "outline"] });
    expect(r.valid).toBe(false);
    const c = r.conflicts.find((x) => x.code === "DEPENDENCY_MISSING")!;
    expect(c.services).toEqual(["outline", "redis"]);
    expect(r.resolvedServices).not.toContain("redis");
  });

  test("platform check: a service without the platform is PLATFORM_INCOMPATIBLE", () => {
    const amdOnly = catalog.services.find((s) => !s.platforms.includes("linux/arm64"))!;
    const r = run({ services: [amdOnly.id], platform: "linux/arm64" });
    expect(codes(r.conflicts)).toContain("PLATFORM_INCOMPATIBLE");
    expect(r.conflicts.find((c) => c.code === "PLATFORM_INCOMPATIBLE")!.services).toContain(amdOnly.id);
  });

  test("GPU_REQUIRED when gpu is true; EXPERIMENTAL_SERVICE names the service", () => {
    expect(run({ services: ["redis"], gpu: true }).warnings.find((w) => w.code === "GPU_REQUIRED")).toMatchObject({ service: null });
    // Its message says what uses the GPU, or that nothing here does (nothing is given one).
    expect(run({ services: ["redis"], gpu: true }).warnings.find((w) => w.code === "GPU_REQUIRED")!.message).toContain("no service of this selection uses a GPU");
    expect(run({ services: ["ollama", "redis"], gpu: true }).warnings.find((w) => w.code === "GPU_REQUIRED")!.message).toMatch(/^GPU support is on for Ollama: the host needs an NVIDIA GPU/);
    const exp = catalog.services.find((s) => s.maturity === "experimental" && !s.gpuRequired && s.platforms.includes("linux/amd64"))!;
    expect(run({ services: [exp.id] }).warnings.find((w) => w.code === "EXPERIMENTAL_SERVICE")).toMatchObject({ service: exp.id });
    expect(codes(run({ services: ["redis"] }).warnings)).toEqual([]);
  });

  test("memory is the sum of the resolved services; HIGH_MEMORY above 4 GB", () => {
    const r = run({ services: ["n8n", "redis"] });
    expect(r.estimatedMemoryMB).toBe(r.services.reduce((a, s) => a + s.estimatedMemoryMB, 0));
    expect(codes(r.warnings)).not.toContain("HIGH_MEMORY");
    const big = run({ preset: "full-stack" });
    expect(big.estimatedMemoryMB).toBeGreaterThan(4096);
    expect(codes(big.warnings)).toContain("HIGH_MEMORY");
  });

  test("clashing host ports move deterministically to the next free port", () => {
    const a = catalog.services.find((s) => s.ports.length && !s.dependencies.length && s.platforms.includes("linux/amd64") && ![80, 443].includes(s.ports[0].host))!;
    // Find another service that declares the same host port, or fabricate via a second run order.
    const b = catalog.services.find((s) => s.id !== a.id && !s.conflicts.includes(a.id) && !a.conflicts.includes(s.id) && s.ports.some((p) => p.host === a.ports[0].host));
    if (!b) return; // catalog without clashes: nothing to move
    const r1 = run({ services: [a.id, b.id] });
    const r2 = run({ services: [a.id, b.id] });
    expect(r1.ports.get(b.id)).toEqual(r2.ports.get(b.id)!);
    expect(r1.warnings.find((w) => w.code === "PORT_CONFLICT_RESOLVED")?.service).toBe(b.id);
    expect(r1.ports.get(a.id)![0].host).toBe(a.ports[0].host);
  });

  test("ports an existing bundle publishes are kept: a service added later moves, not the one that runs", () => {
    const withKept = (services: string[], keptPorts: Record<string, number>) => resolve({ ...toSelection({ platform: "linux/amd64", services }, catalog), keptPorts }, catalog);
    const hosts = (r: ReturnType<typeof run>, id: string) => r.ports.get(id)!.map((p) => p.host);
    // Without the bundle, nextcloud (named first) takes 8080 and searxng moves.
    expect(hosts(run({ services: ["nextcloud", "searxng"] }), "searxng")).toEqual([8081]);
    // searxng ran on 8080: it stays, nextcloud gets the next port.
    const kept = withKept(["nextcloud", "searxng"], { "searxng/tcp/8080": 8080 });
    expect(hosts(kept, "searxng")).toEqual([8080]);
    expect(hosts(kept, "nextcloud")).toEqual([8081]);
    expect(kept.warnings.filter((w) => w.code === "PORT_CONFLICT_RESOLVED").map((w) => w.service)).toEqual(["nextcloud"]);
    // A port kept off its usual number stays there, and says why while the clash lasts.
    const moved = withKept(["searxng", "nextcloud"], { "searxng/tcp/8080": 8080, "nextcloud/tcp/80": 8081 });
    expect(hosts(moved, "nextcloud")).toEqual([8081]);
    expect(moved.warnings.find((w) => w.service === "nextcloud")?.message).toBe("Host port 8080 of Nextcloud is used by SearXNG; Nextcloud is published on 8081 instead.");
    const alone = withKept(["nextcloud"], { "nextcloud/tcp/80": 8081 });
    expect(hosts(alone, "nextcloud")).toEqual([8081]);
    expect(codes(alone.warnings)).not.toContain("PORT_CONFLICT_RESOLVED");
    // Fixed ports never follow the file, and two services never share a kept port.
    expect(hosts(withKept(["caddy"], { "caddy/tcp/80": 8000 }), "caddy")).toContain(80);
    const shared = withKept(["nextcloud", "searxng"], { "searxng/tcp/8080": 9999, "nextcloud/tcp/80": 9999 });
    expect(new Set([...hosts(shared, "searxng"), ...hosts(shared, "nextcloud")]).size).toBe(2);
  });

  test("the ports a compose file publishes, in the forms compose takes; anything else keeps nothing", () => {
    const text = `services:
  a:
    ports: ["8080:80", "127.0.0.1:5433:5432", "443:443/udp", {target: 9000, published: "9001", protocol: tcp}, "3000", "x:y"]
  b: {image: x}
`;
    expect(keptPortsOf(text)).toEqual({ "a/tcp/80": 8080, "a/tcp/5432": 5433, "a/udp/443": 443, "a/tcp/9000": 9001 });
    for (const bad of ["", "services: [", "services: 3", "- a", "services:\n  a:\n    ports: {x: 1}\n"]) expect(keptPortsOf(bad)).toEqual({});
  });

  test("two services needing the proxy ports cannot both have them", () => {
    const withEighty = catalog.services.filter((s) => s.ports.some((p) => p.host === 80));
    expect(withEighty.map((s) => s.id).sort()).toEqual(["caddy", "traefik"]);
  });

  test("preset as base: arrays add, scalars override", () => {
    const sel = toSelection({ preset: "minimal", services: ["n8n"], proxy: "traefik", gpu: true }, catalog);
    expect(sel.services).toEqual(["redis", "n8n"]);
    expect(sel.proxy).toBe("traefik");
    expect(sel.gpu).toBe(true);
    expect(toSelection({ preset: "researcher", proxy: "none" }, catalog).proxy).toBeNull();
  });

  test("a request's proxy replaces the preset's, service included, unless the request names that service", () => {
    const fullStack = catalog.presetsById.get("full-stack")!;
    expect(fullStack.services).toContain("caddy");
    const swapped = validateSelection({ preset: "full-stack", proxy: "traefik" }, catalog);
    expect(swapped.valid).toBe(true);
    expect(swapped.resolvedServices).toContain("traefik");
    expect(swapped.resolvedServices).not.toContain("caddy");
    const none = validateSelection({ preset: "full-stack", proxy: "none" }, catalog);
    expect(none.resolvedServices.filter((id) => id === "caddy" || id === "traefik")).toEqual([]);
    expect(validateSelection({ preset: "full-stack", proxy: "caddy" }, catalog).resolvedServices).toContain("caddy");
    const both = validateSelection({ preset: "full-stack", proxy: "traefik", services: ["caddy"] }, catalog);
    expect(both.valid).toBe(false);
    expect(both.conflicts.map((c) => c.code)).toContain("SERVICE_CONFLICT");
  });

  test("unknown ids are VALIDATION_ERROR naming the field and id", () => {
    try {
      validateSelection({ services: ["redis", "nope"], skillPacks: ["zzz"] }, catalog);
      throw new Error("expected a validation error");
    } catch (e) {
      expect(e).toBeInstanceOf(StackgenError);
      const err = e as StackgenError;
      expect(err.code).toBe("VALIDATION_ERROR");
      expect(err.details).toEqual([
        { field: "services.1", message: expect.stringContaining("nope") },
        { field: "skillPacks.0", message: expect.stringContaining("zzz") },
      ]);
    }
  });
});
