// Unit tests of the UI's pure logic: request bodies, presets, import, secret masking, file tree.
import { describe, expect, test } from "bun:test";
import {
  applyPreset, chooseProxy, toggleService, fieldErrors, generateBody, initialState, inputOfDocument, inputOfLink, isDomain,
  linkQuery, linkSearch, localClosure, stateFromInput, toggle, validateBody, whatItAdds, bundleOfDocument, matchesPreset, selectionClosure, isLoopbackHost,
  presetFootprint, handMadeSelection, clashesWith, addedClashes,
} from "../../src/web/model.ts";
import { buildFileTree, firstFile, isEnvFile, maskSecrets, MASK, secretValues } from "../../src/web/secrets.ts";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { formatMB, inPageWords, leftOut, selectionWords } from "../../src/web/explain.ts";
import { resolve } from "../../src/core/resolve.ts";
import { toSelection } from "../../src/core/check-input.ts";
import { ApiError, readNdjson, getPresets, getServices, getSkills, validate } from "../../src/web/api.ts";
import { startTestServer } from "../api/guard-helpers.ts";
import { signJwtInBrowser } from "../../src/web/signed-keys.ts";
import { signJwt } from "../../src/core/generate/secrets.ts";
import { describeChanges, previewChanges } from "../../src/web/changes.ts";
import type { CatalogService, Preset, SkillPack } from "../../src/web/api.ts";

const svc = (id: string, dependencies: string[] = [], estimatedMemoryMB = 100) => ({ id, dependencies, estimatedMemoryMB }) as unknown as CatalogService;
const byId = new Map([svc("n8n", ["postgresql"], 512), svc("postgresql", [], 256), svc("app", ["n8n"], 64), svc("redis", [], 128)].map((s) => [s.id, s]));
const preset: Preset = { id: "devops", name: "DevOps", description: "x".repeat(20), services: ["n8n", "redis"], skillPacks: ["devops"], estimatedMemoryMB: 3072, proxy: "caddy", gpu: false };

describe("form model", () => {
  test("validate body leaves out an empty proxy and an invalid domain", () => {
    const state = { ...initialState(), services: ["redis"], domain: "not a domain" };
    // No platform chosen: the server's own, and no `platform:` lines in the bundle.
    expect(validateBody(state)).toEqual({ services: ["redis"], skillPacks: [], gpu: false });
    expect(validateBody({ ...state, platform: "linux/arm64" }).platform).toBe("linux/arm64");
    expect(validateBody({ ...state, proxy: "caddy", domain: "example.com" })).toMatchObject({ proxy: "caddy", domain: "example.com" });
  });

  test("generate body carries every option", () => {
    const body = generateBody({ ...initialState("linux/arm64"), services: ["redis"], proxy: "traefik", domain: "a.example", deployment: "bare-metal", generateSecrets: false, coreVersion: "1.2.3" });
    expect(body).toEqual({ projectName: "my-stack", services: ["redis"], skillPacks: [], proxy: "traefik", domain: "a.example", gpu: false, platform: "linux/arm64", deployment: "bare-metal", generateSecrets: false, coreVersion: "1.2.3" });
    // Memory caps are sent when on only, so an export without them reads as before they existed.
    expect(generateBody({ ...initialState(), services: ["redis"], memoryLimits: true })).toMatchObject({ memoryLimits: true });
  });

  test("field checks", () => {
    expect(fieldErrors(initialState())).toEqual({});
    const bad = fieldErrors({ ...initialState(), projectName: "../etc", domain: "http://x.com", coreVersion: "" });
    expect(Object.keys(bad).sort()).toEqual(["coreVersion", "domain", "projectName"]);
    expect(isDomain("stack.example.test")).toBe(true);
    expect(isDomain("-bad.example")).toBe(false);
    expect(isDomain("192.168.1.10")).toBe(false);
  });

  test("choosing another proxy drops the old proxy's service, as the API does for a preset", () => {
    const state = { ...initialState(), services: ["postgresql", "caddy", "minio"], proxy: "caddy" as const };
    expect(chooseProxy(state, "traefik")).toEqual({ proxy: "traefik", services: ["postgresql", "minio"] });
    expect(chooseProxy(state, "")).toEqual({ proxy: "", services: ["postgresql", "minio"] });
    expect(chooseProxy(state, "caddy")).toEqual({ proxy: "caddy" });
    expect(chooseProxy({ ...state, services: ["postgresql"] }, "traefik")).toEqual({ proxy: "traefik" });
  });

  test("a preset stays chosen after its proxy is switched away and back (its caddy is the proxy's)", () => {
    const full = { id: "full", name: "Full", services: ["postgresql", "caddy"], skillPacks: [], proxy: "caddy", gpu: false } as unknown as Preset;
    const chosen = { ...initialState(), presetId: "full", services: ["postgresql", "caddy"], proxy: "caddy" as const };
    const away = { ...chosen, ...chooseProxy(chosen, "traefik") };
    expect(matchesPreset(away, full)).toBe(false);
    const back = { ...away, ...chooseProxy(away, "caddy") };
    expect(back.services).toEqual(["postgresql"]);
    expect(matchesPreset(back, full)).toBe(true);
  });

  test("a proxy service and the proxy option are one choice", () => {
    const state = { ...initialState(), services: ["postgresql", "caddy"], proxy: "caddy" as const };
    expect(toggleService(state, "traefik", true)).toEqual({ proxy: "traefik", services: ["postgresql", "traefik"] });
    expect(toggleService(state, "caddy", false)).toEqual({ proxy: "", services: ["postgresql"] });
    expect(toggleService({ ...initialState(), services: ["redis"], proxy: "" }, "caddy", true)).toEqual({ proxy: "caddy", services: ["redis", "caddy"] });
    expect(toggleService(state, "redis", true)).toEqual({ services: ["postgresql", "caddy", "redis"] });
  });

  test("a preset replaces the selection", () => {
    const state = applyPreset({ ...initialState(), services: ["app"], gpu: true }, preset);
    expect(state).toMatchObject({ services: ["n8n", "redis"], skillPacks: ["devops"], proxy: "caddy", gpu: false, presetId: "devops" });
    expect(toggle(state.services, "app", true)).toEqual(["n8n", "redis", "app"]);
    expect(toggle(state.services, "n8n", false)).toEqual(["redis"]);
  });

  test("dependencies and what a choice adds", () => {
    expect([...localClosure(["app"], byId)].sort()).toEqual(["app", "n8n", "postgresql"]);
    expect(whatItAdds(["app"], new Set(["postgresql"]), byId)).toEqual({ added: ["app", "n8n"], memoryMB: 576 });
  });

  test("what a choice adds that conflicts with the stack, its dependencies included, either side declaring it", () => {
    const catalog = getCatalog();
    const real = new Map(catalog.services.map((s) => [s.id, s]));
    const stack = new Set(["valkey"]);
    expect(clashesWith("redis", stack, real)).toEqual(["valkey"]);
    // Outline needs Redis: the card says so before it is chosen (the server then leaves Redis out).
    const { added } = whatItAdds(["outline"], stack, real);
    expect(added).toContain("redis");
    expect(addedClashes(added, stack, real)).toEqual([{ id: "redis", with: ["valkey"] }]);
    expect(addedClashes(whatItAdds(["qdrant"], stack, real).added, stack, real)).toEqual([]);
  });

  test("import fills the form, resolving the preset and pack aliases and dropping unknown ids", () => {
    const known = { services: new Set(byId.keys()), packs: new Set(["devops", "research-agent"]), presets: new Map([["devops", preset]]) };
    const { state, ignored } = stateFromInput(
      { preset: "devops", services: ["app", "ghost-service"], skillPacks: ["research", "nope"], projectName: "imp", proxy: "none", deploymentType: "local", platform: "linux/arm64", generateSecrets: false, coreVersion: "9" },
      known, initialState(),
    );
    expect(state).toMatchObject({ services: ["n8n", "redis", "app"], skillPacks: ["devops", "research-agent"], projectName: "imp", proxy: "", deployment: "docker", platform: "linux/arm64", generateSecrets: false, coreVersion: "9" });
    expect(ignored).toEqual(["ghost-service", "pack nope"]);
  });

  test("import names what it leaves out for its type: a number for a name or domain, an object among the ids", () => {
    const known = { services: new Set(byId.keys()), packs: new Set(["devops"]), presets: new Map<string, Preset>() };
    const { state, ignored } = stateFromInput({ projectName: 42, services: [{ id: "redis" }, "app", null, 5], skillPacks: [7], domain: 7, coreVersion: 3 }, known, { ...initialState(), projectName: "kept" });
    expect(state.projectName).toBe("kept");
    expect(state.services).toEqual(["app"]);
    expect(ignored).toEqual(['{"id":"redis"}', "null", "5", "7", "projectName 42", "domain 7", "coreVersion 3"]);
  });

  test("a proxy's service in an imported or linked list is the proxy: the option shows it, and choosing the other replaces it", () => {
    const known = { services: new Set([...byId.keys(), "caddy", "traefik"]), packs: new Set<string>(), presets: new Map<string, Preset>() };
    for (const input of [{ services: ["app", "caddy"] }, { services: ["app", "caddy"], proxy: "none" }, inputOfLink("?services=app,caddy&domain=example.com")!]) {
      const { state } = stateFromInput(input, known, initialState());
      expect(state.proxy, JSON.stringify(input)).toBe("caddy");
      expect({ ...state, ...chooseProxy(state, "traefik") }).toMatchObject({ proxy: "traefik", services: ["app"] });
    }
    // Both named: a clash the check reports, not a choice the page makes.
    expect(stateFromInput({ services: ["caddy", "traefik"] }, known, initialState()).state.proxy).toBe("");
    // A list of the wrong type is named as left out, as the server would refuse it.
    expect(stateFromInput({ services: "redis", skillPacks: "devops" }, known, initialState()).ignored).toEqual(["services redis", "skillPacks devops"]);
  });

  test("a link carries every choice that differs from a fresh page, and opens the page with them", () => {
    const known = { services: new Set(byId.keys()), packs: new Set(["devops", "research-agent"]), presets: new Map([["devops", preset]]) };
    expect(linkSearch(initialState())).toBe("");
    expect(inputOfLink("")).toBeUndefined();
    expect(inputOfLink("?utm_source=x")).toBeUndefined();
    const chosen = {
      ...initialState(), services: ["app", "redis"], skillPacks: ["devops"], projectName: "shared_1", proxy: "traefik" as const,
      domain: "home.example", gpu: true, platform: "linux/arm64" as const, deployment: "bare-metal" as const, coreVersion: "2026.1.0", generateSecrets: false, memoryLimits: true,
    };
    const query = linkQuery(chosen);
    expect(linkSearch(chosen)).toBe(`?${query}`);
    expect(Object.fromEntries(new URLSearchParams(query))).toEqual({
      services: "app,redis", skillPacks: "devops", projectName: "shared_1", proxy: "traefik", domain: "home.example",
      platform: "linux/arm64", deployment: "bare-metal", coreVersion: "2026.1.0", gpu: "true", generateSecrets: "false", memoryLimits: "true",
    });
    expect(stateFromInput(inputOfLink(`?${query}`)!, known, initialState())).toEqual({ state: chosen, ignored: [] });
    // Only what differs: one service is a short link.
    expect(linkQuery({ ...initialState(), services: ["redis"] })).toBe("services=redis");
  });

  test("a hand-written or hostile link fills text fields as text, drops unknown ids and odd flags", () => {
    const known = { services: new Set(byId.keys()), packs: new Set(["devops"]), presets: new Map([["devops", preset]]) };
    const input = inputOfLink(`?preset=devops&services=app,,%3Cscript%3E,../etc&domain=${encodeURIComponent("x.com\nname: evil")}&gpu=maybe&generateSecrets=0&proxy=evil&platform=linux/s390x&memoryLimits=1`)!;
    expect(input).toEqual({ preset: "devops", services: ["app", "<script>", "../etc"], domain: "x.com\nname: evil", gpu: "maybe", generateSecrets: "0", proxy: "evil", platform: "linux/s390x", memoryLimits: "1" });
    const { state, ignored } = stateFromInput(input, known, initialState());
    expect(state).toMatchObject({ services: ["n8n", "redis", "app"], skillPacks: ["devops"], presetId: "devops", gpu: false, generateSecrets: true, proxy: "caddy", platform: "" });
    // Odd values are named as left out, as unknown ids are, never dropped in silence.
    expect(ignored).toEqual(["<script>", "../etc", "proxy evil", 'domain "x.com\\nname: evil"', "gpu maybe", "platform linux/s390x", "generateSecrets 0", "memoryLimits 1"]);
    // The domain with a line break in it is not taken: the field could not show it as it is.
    expect(state.domain).toBe("");
  });

  test("a value with a line break inside is left out, not shown as another value than the one checked", () => {
    const known = { services: new Set(byId.keys()), packs: new Set<string>(), presets: new Map<string, Preset>() };
    const { state, ignored } = stateFromInput(inputOfLink("?projectName=a%0Ab&domain=example.com%0Aevil.com&coreVersion=1%092&services=redis&proxy=caddy")!, known, initialState());
    expect(state).toMatchObject({ projectName: "my-stack", domain: "", coreVersion: "latest", services: ["redis"], proxy: "caddy" });
    expect(ignored).toEqual(['projectName "a\\nb"', 'domain "example.com\\nevil.com"', 'coreVersion "1\\t2"']);
    expect(fieldErrors(state)).toEqual({});
  });

  test("a proxy of the input's own replaces a preset's, with the preset's proxy service, as the API resolves it", () => {
    const known = { services: new Set([...byId.keys(), "caddy", "traefik"]), packs: new Set(["devops"]), presets: new Map([["devops", preset]]) };
    const withCaddy = { ...preset, services: [...preset.services, "caddy"] };
    const presets = { ...known, presets: new Map([["devops", withCaddy]]) };
    expect(stateFromInput({ preset: "devops", proxy: "traefik" }, presets, initialState()).state).toMatchObject({ proxy: "traefik", services: ["n8n", "redis"] });
    expect(stateFromInput({ preset: "devops", proxy: "none" }, presets, initialState()).state).toMatchObject({ proxy: "", services: ["n8n", "redis"] });
    // Named in the input's services, or the preset's own proxy again: it stays.
    expect(stateFromInput({ preset: "devops", proxy: "traefik", services: ["caddy"] }, presets, initialState()).state.services).toEqual(["n8n", "redis", "caddy"]);
    expect(stateFromInput({ preset: "devops", proxy: "caddy" }, presets, initialState()).state).toMatchObject({ proxy: "caddy", services: ["n8n", "redis", "caddy"] });
    expect(stateFromInput({ preset: "devops" }, presets, initialState()).state).toMatchObject({ proxy: "caddy", services: ["n8n", "redis", "caddy"] });
  });

  test("a domain the API would refuse gets the reason that helps fix it", () => {
    const domainError = (domain: string) => fieldErrors({ ...initialState(), domain }).domain;
    expect(domainError(`${"a".repeat(60)}.`.repeat(4) + "com")).toContain("At most 200 characters (this one has 247)");
    expect(domainError("例え.jp")).toContain("ASCII form (xn--");
    expect(domainError("xn--r8jz45g.jp")).toBeUndefined();
    expect(domainError("192.168.1.10")).toContain("An IP address is not a domain");
    expect(domainError("https://example.com/")).toContain("no https:// in front and no path after it");
    expect(domainError("example.com/app")).toContain("no path after it");
    // Each near miss is named, rather than one message for all.
    expect(domainError("example.com.")).toContain("Leave out the final dot");
    expect(domainError("ex_ample.com")).toContain("Use - instead of _");
    expect(domainError("my domain.com")).toContain("no spaces");
    expect(domainError("-bad.com")).toContain("letters, digits and - between the dots");
    expect(domainError("cafe.de:8080")).toContain("Leave out the port");
    expect(domainError("fd00::1")).toContain("An IP address is not a domain");
    expect(domainError("[::1]")).toContain("An IP address is not a domain");
  });

  test("complete documents, a bundle's stackgen.json and plain inputs are imported; nothing else", () => {
    const config = { configVersion: 2, projectName: "b", services: ["redis"], deploymentType: "docker", files: { "a": "0" } };
    expect(inputOfDocument(config)).toBe(config);
    expect(inputOfDocument({ configVersion: 1, projectName: "old" })).toEqual({ configVersion: 1, projectName: "old" });
    expect(() => inputOfDocument({ configVersion: 9, projectName: "x" })).toThrow("No migration path from config version 9");
    // A hand-written document's number for the version string is named as such.
    expect(() => inputOfDocument({ formatVersion: 1, input: { services: ["redis"] } })).toThrow('formatVersion must be the string "1", not the number 1.');
    expect(() => inputOfDocument({ formatVersion: ["1"], input: { services: ["redis"] } })).toThrow('Unsupported formatVersion ["1"]; this version reads "1".');
    expect(inputOfDocument({ projectName: "p", preset: "minimal" })).toEqual({ projectName: "p", preset: "minimal" });
    expect(() => inputOfDocument({ hello: "world" })).toThrow("neither");
    expect(inputOfDocument({ formatVersion: "1", input: { projectName: "a" } })).toEqual({ projectName: "a" });
    expect(() => inputOfDocument({ formatVersion: "2", input: {} })).toThrow("formatVersion");
    expect(() => inputOfDocument({ formatVersion: "1" })).toThrow("input");
    expect(() => inputOfDocument([])).toThrow();
  });
});

describe("import and selection (found by an audit of the page)", () => {
  const known = { services: new Set(["n8n", "redis", "postgresql", "caddy"]), packs: new Set(["devops"]), presets: new Map([["devops", preset]]) };

  test("an import takes the API's defaults for what its input leaves out, not the form's earlier choices", () => {
    const before = { ...initialState(), deployment: "bare-metal" as const, generateSecrets: false, coreVersion: "2025.1.0", projectName: "mine" };
    const { state } = stateFromInput({ projectName: "from-api", services: ["redis"] }, known, before);
    expect(state).toMatchObject({ projectName: "from-api", deployment: "docker", generateSecrets: true, coreVersion: "latest", services: ["redis"] });
    // Only the project name carries over when the input has none.
    expect(stateFromInput({ services: ["redis"] }, known, before).state.projectName).toBe("mine");
  });

  test("ids left out are named once each, and a long list is cut short", () => {
    const { ignored } = stateFromInput({ services: Array.from({ length: 5000 }, () => "a") }, known, initialState());
    expect(ignored).toEqual(["a"]);
    const many = Array.from({ length: 25 }, (_, i) => `x${i}`);
    expect(leftOut(many)).toBe(` Not in this catalog or not a choice of this page, left out: ${many.slice(0, 10).join(", ")} and 15 more.`);
    expect(leftOut([])).toBe("");
  });

  test("a complete export's bundle is taken only when whole and with plain relative paths", () => {
    const g = generateBundle({ projectName: "imp", services: ["redis"] }, getCatalog());
    const doc = { formatVersion: "1", input: g.input, files: g.files, metadata: g.metadata };
    expect(bundleOfDocument(doc)?.files[".env"]).toBe(g.files[".env"]);
    for (const path of ["../escape.sh", "a/../../b", "/etc/passwd", "skills/./x", "a\\b", ""]) {
      expect(bundleOfDocument({ ...doc, files: { ...g.files, [path]: "x" } }), path).toBeUndefined();
    }
    expect(bundleOfDocument({ ...doc, files: { ...g.files, "README.md": 5 } })).toBeUndefined();
    expect(bundleOfDocument({ ...doc, files: { "docker-compose.yml": "x" } })).toBeUndefined();
    expect(bundleOfDocument({ ...doc, metadata: {} })).toBeUndefined();
    expect(bundleOfDocument({ input: {} })).toBeUndefined();
  });

  test("a preset shows as chosen only while the selection is still the preset's", () => {
    const applied = applyPreset(initialState(), preset);
    expect(matchesPreset(applied, preset)).toBe(true);
    expect(matchesPreset({ ...applied, services: [...applied.services].reverse() }, preset)).toBe(true);
    expect(matchesPreset({ ...applied, services: ["redis"] }, preset)).toBe(false);
    expect(matchesPreset({ ...applied, proxy: "traefik" }, preset)).toBe(false);
    expect(matchesPreset({ ...applied, gpu: true }, preset)).toBe(false);
    expect(matchesPreset({ ...applied, presetId: null }, preset)).toBe(false);
  });

  test("the generation input names the preset while the selection is still the preset's, as the API's own export does", () => {
    const presets = new Map([["devops", preset]]);
    const applied = applyPreset(initialState(), preset);
    expect(generateBody(applied, presets)).toMatchObject({ preset: "devops", services: preset.services, skillPacks: preset.skillPacks, proxy: "caddy" });
    expect(generateBody({ ...applied, services: ["redis"] }, presets)).not.toHaveProperty("preset");
    expect(generateBody(applied)).not.toHaveProperty("preset");
  });

  test("a link names the preset while the selection is still the preset's, and opens with it chosen", () => {
    const presets = new Map([["devops", preset]]);
    const applied = { ...applyPreset(initialState(), preset), projectName: "mine" };
    const query = linkQuery(applied, presets);
    expect(new URLSearchParams(query).get("preset")).toBe("devops");
    const { state } = stateFromInput(inputOfLink(`?${query}`)!, known, initialState());
    expect(state).toEqual(applied);
    expect(matchesPreset(state, preset)).toBe(true);
    // Drifted from the preset (or its catalog unknown): the link is only the choices.
    expect(new URLSearchParams(linkQuery({ ...applied, gpu: true }, presets)).has("preset")).toBe(false);
    expect(new URLSearchParams(linkQuery({ ...applied, services: ["redis"] }, presets)).has("preset")).toBe(false);
    expect(new URLSearchParams(linkQuery(applied)).has("preset")).toBe(false);
  });

  test("a preset card counts what the preset resolves to, not only the services it lists", () => {
    const withCaddy = new Map([...byId, ["caddy", svc("caddy", [], 64)]]);
    const packs = new Map([["devops", { id: "devops", services: ["app"] } as unknown as SkillPack]]);
    // n8n, redis, PostgreSQL for n8n, the pack's app and the proxy, against the preset's own 3072 MB.
    expect(presetFootprint(preset, withCaddy, packs)).toEqual({ services: 5, memoryMB: 512 + 128 + 256 + 64 + 64 });
  });

  test("a preset offers to undo only what it replaces that was made by hand", () => {
    const presets = new Map([[preset.id, preset]]);
    const minimal: Preset = { ...preset, id: "minimal", services: ["redis"], skillPacks: [], proxy: null };
    const handMade = { ...initialState(), services: ["postgresql", "app"], skillPacks: ["devops"], proxy: "traefik" as const, gpu: true };
    expect(handMadeSelection(handMade, preset, presets)).toEqual({ services: ["postgresql", "app"], skillPacks: ["devops"], proxy: "traefik", gpu: true, presetId: null });
    // Nothing chosen, or an untouched preset: nothing of the user's is lost.
    expect(handMadeSelection(initialState(), preset, presets)).toBeUndefined();
    expect(handMadeSelection(applyPreset(initialState(), preset), minimal, presets)).toBeUndefined();
    // A preset changed afterwards is the user's own selection.
    const edited = { ...applyPreset(initialState(), preset), services: ["n8n"] };
    expect(handMadeSelection(edited, minimal, presets)?.services).toEqual(["n8n"]);
    // Already what the preset makes, picked by hand: applying it changes nothing.
    expect(handMadeSelection({ ...initialState(), services: ["redis"] }, minimal, presets)).toBeUndefined();
    // The undo button's words.
    expect(selectionWords(3, 1)).toBe("3 services and 1 skill pack");
    expect(selectionWords(2, 0)).toBe("2 services");
    expect(selectionWords(0, 2)).toBe("2 skill packs");
  });

  test("the proxy chosen in Options is part of the stack the page shows", () => {
    const withCaddy = new Map([...byId, ["caddy", svc("caddy", [], 64)]]);
    expect(selectionClosure({ ...initialState(), services: ["redis"], proxy: "caddy" }, withCaddy, new Map())).toEqual(new Set(["redis", "caddy"]));
    expect(selectionClosure({ ...initialState(), services: ["redis"] }, withCaddy, new Map())).toEqual(new Set(["redis"]));
  });

  test("an API error does not repeat the conflict its message already states", () => {
    const e = new ApiError(409, "CONFLICT_ERROR", "Incompatible selection: Redis and Valkey cannot run in the same stack.", [{ field: "services", message: "SERVICE_CONFLICT: Redis and Valkey cannot run in the same stack." }]);
    expect(e.describe()).toBe("Incompatible selection: Redis and Valkey cannot run in the same stack.");
    const v = new ApiError(400, "VALIDATION_ERROR", "Invalid generation input", [{ field: "domain", message: "Expected a DNS name" }]);
    expect(v.describe()).toBe("Invalid generation input (domain: Expected a DNS name)");
  });

  test("a page opened on the server's own machine is told apart from one opened elsewhere", () => {
    for (const host of ["localhost", "127.0.0.1", "127.1.2.3", "[::1]", "app.localhost", "0.0.0.0"]) expect([host, isLoopbackHost(host)]).toEqual([host, true]);
    for (const host of ["192.168.1.5", "stack.example.com", "[fe80::1]", "127.0.0.1.nip.io", "localhost.example.com"]) expect([host, isLoopbackHost(host)]).toEqual([host, false]);
  });

  test("over the rate limit, the page says who can lift it", () => {
    const e = new ApiError(429, "RATE_LIMITED", "Too many requests; try again in 850 s (about 14 minutes).");
    expect(e.describe()).toStartWith("Too many requests; try again in 850 s (about 14 minutes).");
    expect(e.describe()).toContain("RATE_LIMIT_STANDARD");
  });
});

describe("calls over the rate limit", () => {
  // The page loads its catalog from three routes at once and shows whichever refusal comes first:
  // each must carry the Retry-After, or the page cannot say when it tries again by itself.
  test("every catalog route's refusal carries the server's Retry-After, /v1/skills' flat error shape too", async () => {
    const server = await startTestServer({ logLevel: "silent", anonymousLimits: { standard: 1, generate: 1 }, windowMs: 60_000 });
    const realFetch = globalThis.fetch;
    globalThis.fetch = ((input: string, init?: RequestInit) => realFetch(`${server.base}${input}`, init)) as typeof fetch;
    try {
      await getPresets();
      for (const call of [getServices, getPresets, getSkills]) {
        const refusal = await call().then(() => undefined, (e: unknown) => e);
        expect(refusal).toBeInstanceOf(ApiError);
        expect((refusal as ApiError).code).toBe("RATE_LIMITED");
        expect((refusal as ApiError).retryAfterSeconds).toBeGreaterThan(0);
      }
    } finally {
      globalThis.fetch = realFetch;
      await server.stop();
    }
  });
});

describe("answers cut off on the way", () => {
  test("an answer that is not whole JSON is named as such, not in the parser's words", async () => {
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async () => new Response('{"valid":true,"resolvedSer', { headers: { "content-type": "application/json" } })) as unknown as typeof fetch;
    try {
      const refusal = await validate({ services: ["redis"] }).then(() => undefined, (e: unknown) => e);
      expect(refusal).toBeInstanceOf(ApiError);
      expect((refusal as ApiError).code).toBe("BAD_ANSWER");
      expect((refusal as ApiError).describe()).toStartWith("The server's answer arrived incomplete or is not JSON");
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});

describe("the page's own words", () => {
  test("warnings and known limits name the page's controls, never stackgen's flags or API fields", () => {
    const catalog = getCatalog();
    const texts = [
      ...resolve(toSelection({ services: ["ollama"], gpu: true }, catalog), catalog).warnings.map((w) => w.message),
      ...resolve(toSelection({ services: ["comfyui"], gpu: false }, catalog), catalog).warnings.map((w) => w.message),
      ...catalog.services.flatMap((s) => (s.knownLimits ? [s.knownLimits] : [])),
    ];
    expect(texts.some((t) => /--no-gpu|set gpu to|--domain/.test(t))).toBe(true);
    const flags = texts.map(inPageWords).filter((t) => /--(no-)?(gpu|domain|proxy|platform)\b|set gpu to/.test(t));
    expect(flags).toEqual([]);
    expect(inPageWords("ComfyUI needs an NVIDIA GPU; set gpu to true (--gpu on the command line) and install the NVIDIA Container Toolkit.")).toBe("ComfyUI needs an NVIDIA GPU; tick \u201cUse an NVIDIA GPU\u201d in Options and install the NVIDIA Container Toolkit.");
  });
});

describe("secrets and files", () => {
  const env = "# c\nREDIS_PASSWORD=abcdEFGH12345678\nN8N_ENCRYPTION_KEY='zzzzYYYY'\nTZ=UTC\nAPI_TOKEN=\nexport GW_SECRET=s3cr3tvalue\n";
  test("finds the values of secret-named variables only", () => {
    expect(secretValues(env)).toEqual(["abcdEFGH12345678", "zzzzYYYY", "s3cr3tvalue"]);
  });
  test("every secret the generator makes is found, whatever its name (salts, IVs, app ids)", () => {
    const catalog = getCatalog();
    let checked = 0;
    for (const service of catalog.services) {
      const names = (service.variables ?? []).filter((v) => v.secret).map((v) => v.name);
      if (!names.length) continue;
      const g = generateBundle({ projectName: "m", services: [service.id], platform: service.platforms[0] }, catalog);
      const found = new Set(secretValues(g.files[".env"]));
      const values = parseEnvValues(g.files[".env"]);
      for (const name of names) {
        expect(found.has(values.get(name)!), `${service.id} ${name}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(80);
  });
  test("masks them in any file", () => {
    const masked = maskSecrets(".env", env, secretValues(env));
    expect(masked).toContain(`REDIS_PASSWORD=${MASK}`);
    expect(masked).toContain(`N8N_ENCRYPTION_KEY=${MASK}`);
    expect(masked).toContain("TZ=UTC");
    expect(masked).toContain("API_TOKEN=\n");
    expect(masked).not.toContain("s3cr3tvalue");
    expect(maskSecrets("docker-compose.yml", "url: redis://:abcdEFGH12345678@redis", ["abcdEFGH12345678"])).toBe(`url: redis://:${MASK}@redis`);
  });
  test("a short secret set by hand is masked in .env, and not hunted through other files, where it is also a word", () => {
    const weak = "REDIS_PASSWORD=redis\nPOSTGRES_PASSWORD=abc\n# Signs tokens (generated secret)\nSALT=xy\n";
    const secrets = secretValues(weak);
    expect(maskSecrets(".env", weak, secrets)).toBe(`REDIS_PASSWORD=${MASK}\nPOSTGRES_PASSWORD=${MASK}\n# Signs tokens (generated secret)\nSALT=${MASK}\n`);
    const compose = "REDIS_HOST: redis\nREDIS_URL: redis://:${REDIS_PASSWORD}@redis:6379\n";
    expect(maskSecrets("docker-compose.yml", compose, secrets)).toBe(compose);
  });
  test("env files", () => {
    expect([".env", ".env.example", "a/.env", "x.env.yml", "env"].map(isEnvFile)).toEqual([true, true, true, false, false]);
  });
  test("file tree: main files first, then folders, then the rest", () => {
    const tree = buildFileTree(["stackgen.json", "skills/redis/SKILL.md", ".env", "docker-compose.yml", "README.md", "Caddyfile"]);
    expect(tree.children.map((c) => c.name)).toEqual(["docker-compose.yml", "README.md", ".env", "skills", "Caddyfile", "stackgen.json"]);
    expect(tree.children[3].children[0].children[0].path).toBe("skills/redis/SKILL.md");
    expect(firstFile(["b", "README.md"])).toBe("README.md");
  });
  test("memory formatting", () => {
    expect([512, 1024, 2560, 12288].map(formatMB)).toEqual(["512 MB", "1 GB", "2.5 GB", "12 GB"]);
  });
});

test("NDJSON reader copes with lines split across chunks", async () => {
  const parts = ['{"type":"step","step":"A","sta', 'tus":"ok"}\n{"type":"result","result":{"success":true,"steps":[]}}', "\n"];
  const stream = new ReadableStream<Uint8Array>({ start(c) { for (const p of parts) c.enqueue(new TextEncoder().encode(p)); c.close(); } });
  const events = [];
  for await (const e of readNdjson(stream)) events.push(e);
  expect(events).toEqual([{ type: "step", step: "A", status: "ok" }, { type: "result", result: { success: true, steps: [] } }]);
});

test("the browser signs an API key with WebCrypto exactly as the core signs it", async () => {
  for (const [secret, claims] of [["0123456789abcdefghijklmnopqrstuvwxyz", { role: "anon", iss: "supabase" }], ["sécret-ü-🔑", { role: "service_role" }]] as const) {
    expect(await signJwtInBrowser(secret, claims)).toBe(signJwt(secret, claims));
  }
});

describe("changes since the previous preview", () => {
  const bundle = (body: Record<string, unknown>) => generateBundle({ projectName: "lab", ...body }, getCatalog()).files;

  test("a service added: its files are new, the compose file and .env changed, nothing else; new secrets alone are no change", () => {
    const before = bundle({ services: ["redis"] });
    const after = bundle({ services: ["redis", "qdrant"] });
    const changes = previewChanges(before, after);
    expect(changes.byPath.get("skills/qdrant/SKILL.md")).toBe("new");
    expect(changes.byPath.get("docker-compose.yml")).toBe("changed");
    expect(changes.byPath.get(".env")).toBe("changed");
    expect(changes.byPath.has("skills/redis/SKILL.md")).toBe(false);
    expect(changes.removed).toEqual([]);
    // The same choices again: every secret is new, yet nothing is said to change.
    const again = previewChanges(after, bundle({ services: ["redis", "qdrant"] }));
    expect(again.byPath.size).toBe(0);
    expect(describeChanges(again)).toBe("Since the previous preview: no file changed (only new secrets).");
  });

  test("a service taken out: its files are removed, named; a changed setting in .env is a change", () => {
    const changes = previewChanges(bundle({ services: ["redis", "qdrant"] }), bundle({ services: ["redis"] }));
    expect(changes.removed).toEqual(["skills/qdrant/SKILL.md"]);
    expect(describeChanges(changes)).toMatch(/^Since the previous preview: \d+ changed, 1 removed \(skills\/qdrant\/SKILL\.md\)\.$/);
    const moved = previewChanges({ ".env": "# x (setting)\nN8N_WEBHOOK_URL=http://localhost:5678/\n" }, { ".env": "# x (setting)\nN8N_WEBHOOK_URL=https://n8n.example.com/\n" });
    expect([...moved.byPath]).toEqual([[".env", "changed"]]);
  });
});
