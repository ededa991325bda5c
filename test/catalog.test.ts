// Catalog-wide properties: the data files fit the schemas and every reference resolves.
import { describe, expect, test } from "bun:test";
import { getCatalog } from "../src/catalog/index.ts";
import { readTextTree } from "../src/catalog/read-files.ts" with { type: "macro" };
import { loadCatalog, CatalogError, referencedVars } from "../src/catalog/load.ts";
import { CATEGORY_IDS } from "../src/schema/catalog.ts";
import { resolve } from "../src/core/resolve.ts";
import { toSelection } from "../src/core/check-input.ts";
import { PORT_TOKEN } from "../src/core/generate/skills.ts";

const catalog = getCatalog();
const catalogFiles: Record<string, string> = readTextTree("catalog");
const CONTRACT_IDS = `redis postgresql valkey supabase convex neo4j qdrant chromadb weaviate milvus n8n temporal
  homeassistant cal-com xyops ffmpeg remotion motion-canvas immich jellyfin minio nextcloud caddy
  traefik uptime-kuma grafana prometheus loki signoz browserless playwright-server lightpanda
  steel-browser scrapling searxng meilisearch ollama whisper stable-diffusion comfyui gotify ntfy
  matrix-synapse rocketchat mattermost usesend livekit lasuite-meet-backend lasuite-meet-frontend
  lasuite-meet-agents outline docsgpt paperless-ngx nocodb appflowy open-webui librechat
  anything-llm dify flowise litellm vaultwarden authentik crowdsec hexstrike solidityguard pentagi
  pentestagent jenkins gitea code-server portainer watchtower dozzle beszel convex-dashboard
  mission-control coolify dokploy tailscale headscale ghost postiz mixpost claude-code opencode
  codex gemini-cli kimi matomo umami openpanel desktop-environment stream-gateway`.split(/\s+/);

describe("catalog", () => {
  test("each entry's maturity is the reference data's (maturity filters and EXPERIMENTAL_SERVICE read it)", async () => {
    // Its categories are not SPEC's ids (`ai`, `dev-tools`): those are the contract's own.
    const facts = (await Bun.file(new URL("./reference/catalog-facts.json", import.meta.url)).json()) as { services: { id: string; maturity: string }[] };
    expect(facts.services).toHaveLength(94);
    expect(facts.services.map((f) => [f.id, catalog.servicesById.get(f.id)!.maturity])).toEqual(facts.services.map((f) => [f.id, f.maturity]));
    expect(catalog.services.filter((s) => s.maturity === "experimental").map((s) => s.id).sort()).toEqual(
      ["comfyui", "desktop-environment", "hexstrike", "kimi", "motion-canvas", "pentagi", "pentestagent", "stable-diffusion", "stream-gateway"]);
  });

  test("has exactly the 94 contract services, 9 presets and 20 categories", () => {
    expect(catalog.services.map((s) => s.id).sort()).toEqual([...CONTRACT_IDS].sort());
    expect(catalog.presets.map((p) => p.id).sort()).toEqual(
      ["ai-playground", "coding-team", "content-creator", "creator", "devops", "full-stack", "minimal", "researcher", "videoconf"]);
    expect(new Set(catalog.services.map((s) => s.category))).toEqual(new Set(CATEGORY_IDS));
  });

  test("the text files and the build-time data describe the same catalog", () => {
    const fromText = loadCatalog(catalogFiles);
    expect(fromText.services).toEqual(catalog.services);
    expect(fromText.presets).toEqual(catalog.presets);
    expect([...fromText.skills.keys()]).toEqual([...catalog.skills.keys()]);
  });

  test("ids are unique across files", () => {
    const ids = catalog.services.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("presets carry the values CONTRACT §2 fixes", () => {
    const p = (id: string) => catalog.presetsById.get(id)!;
    expect(p("minimal")).toMatchObject({ services: ["redis"], proxy: null, gpu: false, estimatedMemoryMB: 1024 });
    expect(p("researcher")).toMatchObject({ proxy: "caddy", gpu: false, estimatedMemoryMB: 2560 });
    expect(p("devops")).toMatchObject({ proxy: "caddy", gpu: false, estimatedMemoryMB: 3072 });
    expect(p("ai-playground")).toMatchObject({ proxy: "caddy", gpu: true, estimatedMemoryMB: 6144 });
    expect(p("full-stack")).toMatchObject({ proxy: "caddy", gpu: true, estimatedMemoryMB: 8192 });
    expect(p("creator")).toMatchObject({ proxy: "caddy", estimatedMemoryMB: 2048 });
    expect(p("content-creator")).toMatchObject({ proxy: "caddy", gpu: true, estimatedMemoryMB: 4096 });
    expect(p("coding-team")).toMatchObject({ proxy: "caddy", estimatedMemoryMB: 3072 });
    expect(p("videoconf")).toMatchObject({ proxy: "caddy", estimatedMemoryMB: 4096 });
  });

  test("each preset names one service per kind SPEC §2.2 lists for it (packs bring their own)", () => {
    const kinds: Record<string, number> = { minimal: 1, researcher: 4, devops: 6, "ai-playground": 5, "full-stack": 10, creator: 4, "content-creator": 5, "coding-team": 4, videoconf: 6 };
    for (const [id, count] of Object.entries(kinds)) expect(catalog.presetsById.get(id)!.services.length, id).toBe(count);
    // The coding team's git server comes with its pack.
    expect(catalog.packsById.get("coding-team")!.services).toContain("gitea");
  });

  test("postgresql health check uses 10s / 5s / 5 retries", () => {
    expect(catalog.servicesById.get("postgresql")!.healthCheck).toMatchObject({ interval: "10s", timeout: "5s", retries: 5 });
  });

  test("required skill packs exist with their services", () => {
    const pack = (id: string) => catalog.packsById.get(id)!;
    expect([...pack("research-agent").services].sort()).toEqual(["browserless", "qdrant", "searxng"]);
    expect([...pack("devops").services].sort()).toEqual(["grafana", "n8n", "prometheus", "redis", "uptime-kuma"]);
    expect([...pack("video-creator").services].sort()).toEqual(["ffmpeg", "minio", "remotion"]);
    expect([...pack("knowledge-base").services].sort()).toEqual(["meilisearch", "postgresql", "qdrant"]);
    expect([...pack("local-ai").services].sort()).toEqual(["ollama", "whisper"]);
    expect([...pack("social-media").services].sort()).toEqual(["ffmpeg", "minio", "redis"]);
    expect(catalog.packs.length).toBeGreaterThanOrEqual(12);
  });

  test("every skill of every pack and service has a SKILL.md with URL, auth and 2+ calls", () => {
    const ids = new Set([...catalog.packs.flatMap((p) => p.skills), ...catalog.services.flatMap((s) => s.skills)]);
    for (const id of ids) {
      const skill = catalog.skills.get(id);
      expect(skill, id).toBeDefined();
      const body = skill!.markdown.replace(/^---[\s\S]*?---\n/, "");
      expect(body.length, `${id} is too short`).toBeGreaterThan(400);
      const calls = body.match(/```/g)?.length ?? 0;
      expect(calls, `${id} needs at least 2 code blocks of concrete calls`).toBeGreaterThanOrEqual(2);
    }
  });

  test("a skill that calls a service reachable only inside the stack names one whose every port is on 127.0.0.1", () => {
    const wrong: string[] = [];
    for (const [id, skill] of catalog.skills) {
      for (const row of skill.markdown.split("\n").filter((line) => /reachable only (on|inside) the stack/i.test(line))) {
        for (const [, service] of row.matchAll(/`https?:\/\/([a-z0-9-]+):\d+/g)) {
          if (catalog.servicesById.get(service!)?.ports.some((p) => !p.local)) wrong.push(`${id}: ${service}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  test("a skill names a host port only as a {{port <service> <container>}} token, of a port that service publishes", () => {
    const wrong: string[] = [];
    for (const [id, skill] of catalog.skills) {
      for (const [, service, container] of skill.markdown.matchAll(PORT_TOKEN)) {
        if (!catalog.servicesById.get(service!)?.ports.some((p) => p.container === Number(container))) wrong.push(`${id}: {{port ${service} ${container}}}`);
      }
      // A literal host port of a service whose port a clash may move (any but the fixed 53/80/443).
      for (const [literal, port] of skill.markdown.matchAll(/(?:127\.0\.0\.1|localhost):(\d+)/g)) {
        const published = catalog.services.filter((s) => s.ports.some((p) => p.host === Number(port)));
        if (published.length > 1) wrong.push(`${id}: ${literal} (published by ${published.map((s) => s.id).join(", ")})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("a command a skill runs on the host gets no value only the gateway has, and no skill replaces a value the gateway is given with a placeholder", () => {
    const gateway = new Set(catalog.services.flatMap((s) => Object.keys(s.coreEnv ?? {})));
    const wrong: string[] = [];
    for (const [id, skill] of catalog.skills) {
      const assigned = new Set<string>();
      for (const line of skill.markdown.split("\n")) {
        // `docker compose exec` runs from the bundle folder on the host: its shell expands every
        // $NAME outside single quotes, so one must be set on a line before (`NAME=$(...)`).
        if (line.includes("docker compose exec")) {
          for (const [, name] of line.replace(/'[^']*'/g, "''").matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g)) if (!assigned.has(name!)) wrong.push(`${id}: $${name} in ${line.trim().slice(0, 80)}`);
        }
        for (const [, name] of line.matchAll(/(?:^|\s|export\s+)([A-Z_][A-Z0-9_]*)=/g)) assigned.add(name!);
        for (const [, name, value] of line.matchAll(/\bexport\s+(?:[A-Z_][A-Z0-9_]*=\S*\s+)*?([A-Z_][A-Z0-9_]*)=('?<[^>]*>'?)/g)) if (gateway.has(name!)) wrong.push(`${id}: export ${name}=${value}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("images are pinned; a floating tag only where upstream publishes nothing else, with the reason", () => {
    const unexplained: string[] = [];
    for (const s of catalog.services) {
      // Sidecars too: the update pulls them like the service's own image.
      for (const [name, image] of [[s.id, s.image], ...(s.sidecars ?? []).map((c) => [`${s.id}/${c.name}`, c.image])] as const) {
        const tag = image.includes(":") ? image.slice(image.lastIndexOf(":") + 1) : "";
        expect(tag, `${name} has no tag`).not.toBe("");
        // A major version alone (`:1`, `:v2`) moves as far as `latest` within it.
        if (/^(latest|nightly|stable|edge|main|v?\d+)$/.test(tag) && !s.floatingTag) unexplained.push(name);
      }
    }
    expect(unexplained).toEqual([]);
    expect(catalog.services.filter((s) => s.floatingTag).length).toBeLessThan(12);
    // Released together upstream: an update must never pair a dashboard with another backend.
    const tagOf = (id: string) => catalog.servicesById.get(id)!.image.split(":").at(-1);
    expect(tagOf("convex-dashboard")).toBe(tagOf("convex")!);
  });

  test("a MinIO container's health check uses mc: MinIO images dropped curl (late 2023), so a curl check never passes", () => {
    const checks: [string, string[] | undefined][] = [];
    for (const s of catalog.services) {
      if (s.image.startsWith("minio/minio:")) checks.push([s.id, s.healthCheck?.test]);
      for (const c of s.sidecars ?? []) if (c.image.startsWith("minio/minio:")) checks.push([`${s.id}/${c.name}`, c.healthCheck?.test]);
    }
    expect(checks.filter(([, check]) => check).length).toBeGreaterThanOrEqual(2);
    for (const [name, check] of checks) if (check) expect(check.slice(0, 2), name).toEqual(["CMD", "mc"]);
  });

  test("an entrypoint that writes into the image's own folders runs as the user owning them", () => {
    // Meet's frontend writes its routing server into /etc/nginx/conf.d (owned 101:0 in the
    // nginx-unprivileged base); its published image's user (1001) cannot, and nginx never started.
    const writers = catalog.services.filter((s) => s.entrypoint?.some((a) => /> *\/etc\/nginx\//.test(a)));
    expect(writers.map((s) => s.id)).toEqual(["lasuite-meet-frontend"]);
    for (const s of writers) expect(s.user, s.id).toBe("101:0");
  });

  test("a PostgreSQL health check asks over TCP: the first start's setup server listens on the socket only, so a socket probe passes too early", () => {
    const checks: [string, string[]][] = [];
    for (const s of catalog.services) {
      // The stack's own PostgreSQL gets its TCP check from the generator (postgres-init).
      if (s.healthCheck && s.id !== "postgresql") checks.push([s.id, s.healthCheck.test]);
      for (const c of s.sidecars ?? []) if (c.healthCheck) checks.push([`${s.id}-${c.name}`, c.healthCheck.test]);
    }
    const postgres = checks.filter(([, test]) => test.some((a) => /pg_isready/.test(a)));
    expect(postgres.length).toBeGreaterThanOrEqual(4);
    for (const [name, test] of postgres) expect({ name, host: test[test.indexOf("-h") + 1] }).toEqual({ name, host: expect.stringMatching(/^(127\.0\.0\.1|localhost)$/) });
  });

  test("every variable a service refers to is declared by it or a dependency, and namespaced", () => {
    // loadCatalog enforces both; this checks the rule itself catches a bad file.
    const broken = { ...catalogFiles, "services/redis.yaml": catalogFiles["services/redis.yaml"].replace("REDISCLI_AUTH: ${REDIS_PASSWORD}", "REDISCLI_AUTH: ${UNDECLARED_THING}") };
    expect(() => loadCatalog(broken)).toThrow(CatalogError);
    for (const s of catalog.services) expect(referencedVars(s).size).toBeGreaterThanOrEqual(0);
  });

  test("no password, secret or token is written into the catalog: each comes from a generated variable", () => {
    // A literal would be the same on every install (research §9); S3 access keys are user names.
    const literals: string[] = [];
    for (const service of catalog.services) {
      const envs: [string, Record<string, string>][] = [[service.id, service.env ?? {}], ...(service.sidecars ?? []).map((c): [string, Record<string, string>] => [`${service.id}/${c.name}`, c.env ?? {}])];
      for (const [where, env] of envs) {
        for (const [key, value] of Object.entries(env)) {
          if (/(PASSWORD|PASSWD|SECRET|TOKEN|KEY|SALT)$/i.test(key) && !/ACCESS_KEY$/.test(key) && value !== "" && !value.includes("${")) literals.push(`${where} ${key}`);
        }
      }
    }
    expect(literals).toEqual([]);
    // Nor as a variable's default in .env: a credential variable is generated or left to fill in.
    const defaults = catalog.services.flatMap((s) => (s.variables ?? []).filter((v) => /(PASSWORD|PASSWD|SECRET|TOKEN|_KEY|SALT)$/.test(v.name) && !v.secret && v.default).map((v) => `${s.id} ${v.name}`));
    expect(defaults).toEqual([]);
  });

  test("no secret is passed on a command line, where docker inspect and ps show it", () => {
    const secrets = new Set(catalog.services.flatMap((s) => (s.variables ?? []).filter((v) => v.secret).map((v) => v.name)));
    const exposed: string[] = [];
    for (const service of catalog.services) {
      const commands: [string, readonly string[] | undefined][] = [[service.id, service.command], ...(service.sidecars ?? []).map((c): [string, readonly string[] | undefined] => [`${service.id}/${c.name}`, c.command])];
      for (const [where, command] of commands) {
        for (const m of (command ?? []).join(" ").matchAll(/\$\{([A-Za-z0-9_]+)/g)) if (secrets.has(m[1]!)) exposed.push(`${where} ${m[1]}`);
      }
    }
    expect(exposed).toEqual([]);
  });

  test("a service holding the Docker socket publishes nothing on every interface beside its proxied web port", () => {
    // Such a service is root on the host: a second port next to the proxy would bypass its TLS
    // and, for apps that hand the admin account to the first visitor, give the host away.
    // The reverse proxies themselves must listen on 80/443.
    const open: string[] = [];
    for (const s of catalog.services) {
      if (s.category === "proxy" || !JSON.stringify([s.volumes, s.sidecars ?? []]).includes("docker.sock")) continue;
      for (const p of s.ports) if (!p.web && !p.local) open.push(`${s.id}:${p.container}`);
    }
    expect(open).toEqual([]);
  });

  test("a Redis database index named by one service is named by no other (a cache clear empties the whole index)", () => {
    const owners = new Map<string, Set<string>>();
    for (const s of catalog.services) {
      for (const env of [s.env, ...(s.sidecars ?? []).map((c) => c.env ?? {})]) {
        for (const [key, value] of Object.entries(env)) {
          const indices = [...value.matchAll(/@redis:6379\/(\d+)/g)].map((m) => m[1]!);
          if (/^REDIS_(CACHE_)?DB$/.test(key)) indices.push(value);
          for (const index of indices) owners.set(index, new Set([...(owners.get(index) ?? []), s.id]));
        }
      }
    }
    expect(owners.size).toBeGreaterThan(5);
    const shared = [...owners].filter(([index, ids]) => index !== "0" && ids.size > 1).map(([index, ids]) => `${index}: ${[...ids].join(", ")}`);
    expect(shared).toEqual([]);
    for (const index of owners.keys()) expect(Number(index)).toBeLessThan(16); // Redis's default number of databases
  });

  test("every publicUrl variable is the service's own address on the host", () => {
    const urls = catalog.services.flatMap((s) => (s.variables ?? []).filter((v) => v.publicUrl).map((v) => ({ s, v })));
    expect(urls.length).toBeGreaterThan(20);
    for (const { s, v } of urls) {
      const m = /^https?:\/\/(localhost|127\.0\.0\.1):(\d+)(\/.*)?$/.exec(v.default ?? "");
      expect(m, `${s.id} ${v.name}`).not.toBeNull();
      const owner = v.publicUrlOf ? catalog.servicesById.get(v.publicUrlOf) : s;
      expect(owner, `${s.id} ${v.name}: publicUrlOf names a catalog service`).toBeDefined();
      expect(owner!.ports.map((p) => p.host), `${s.id} ${v.name}`).toContain(Number(m![2]));
      expect(v.secret, `${s.id} ${v.name}`).toBeFalsy();
    }
  });

  test("a public URL of an unknown service fails the load", () => {
    const file = "services/lasuite-meet-backend.yaml";
    const bad = { ...catalogFiles, [file]: catalogFiles[file].replace("publicUrlOf: livekit", "publicUrlOf: livekat") };
    expect(() => loadCatalog(bad)).toThrow(/names unknown service livekat/);
  });

  test("a key the schema does not know fails the load (an unquoted comma in a flow mapping makes one)", () => {
    const text = catalogFiles["services/redis.yaml"];
    const port = /- \{ container: 6379, [^\n]*\}/.exec(text)![0];
    const bad = { ...catalogFiles, "services/redis.yaml": text.replace(port, "- { container: 6379, host: 6379, local: true, description: Cache, queues and locks }") };
    expect(() => loadCatalog(bad)).toThrow(/services\/redis.yaml: \/ports\/0\/queues and locks Unexpected property/);
  });

  test("a native recipe's install variables are plain words: they go before apt-get in a root script", () => {
    const text = catalogFiles["services/postgresql.yaml"];
    expect(text).toContain("LC_ALL: C.UTF-8");
    const bad = { ...catalogFiles, "services/postgresql.yaml": text.replace("LC_ALL: C.UTF-8", "LC_ALL: \"C.UTF-8; curl x | sh\"") };
    expect(() => loadCatalog(bad)).toThrow(/services\/postgresql.yaml: \/native\/installEnv\/LC_ALL/);
    // The names too: they are written before apt-get as they are.
    for (const name of ["lc_all", "X=1; touch /tmp/pwned; Y"]) {
      const badName = { ...catalogFiles, "services/postgresql.yaml": text.replace("LC_ALL: C.UTF-8", `${JSON.stringify(name)}: C.UTF-8`) };
      expect(() => loadCatalog(badName)).toThrow(/services\/postgresql.yaml: \/native\/installEnv/);
    }
  });

  test("a value the user must fill in before the start cannot also have one", () => {
    const text = catalogFiles["services/tailscale.yaml"];
    const bad = { ...catalogFiles, "services/tailscale.yaml": text.replace("name: TAILSCALE_AUTHKEY, beforeStart: true,", "name: TAILSCALE_AUTHKEY, beforeStart: true, default: tskey,") };
    expect(() => loadCatalog(bad)).toThrow(/variable TAILSCALE_AUTHKEY is beforeStart but has a value/);
  });

  test("a value's pattern compiles, covers the whole value and admits the default", () => {
    const text = catalogFiles["services/caddy.yaml"];
    const pattern = 'pattern: "^([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+)?$"';
    expect(text).toContain(pattern);
    const withPattern = (replacement: string) => ({ ...catalogFiles, "services/caddy.yaml": text.replace(pattern, replacement) });
    expect(() => loadCatalog(withPattern('pattern: "^(unclosed$"'))).toThrow(/CADDY_ACME_EMAIL has a pattern that is not a regular expression/);
    expect(() => loadCatalog(withPattern('pattern: "@"'))).toThrow(/CADDY_ACME_EMAIL's pattern must cover the whole value/);
    expect(() => loadCatalog(withPattern('pattern: "^.+@.+$"'))).toThrow(/CADDY_ACME_EMAIL's default does not match its pattern/);
  });

  test("a signed API key must be a secret signed with a drawn secret of its own service", () => {
    const file = "services/supabase.yaml";
    const text = catalogFiles[file];
    const notSecret = text.replace("name: SUPABASE_ANON_KEY, secret: true,", "name: SUPABASE_ANON_KEY,");
    expect(() => loadCatalog({ ...catalogFiles, [file]: notSecret })).toThrow(/variable SUPABASE_ANON_KEY is a jwt but not secret/);
    const signedWithSetting = text.replace("jwt: { secret: SUPABASE_JWT_SECRET, role: anon", "jwt: { secret: SUPABASE_PUBLIC_URL, role: anon");
    expect(() => loadCatalog({ ...catalogFiles, [file]: signedWithSetting })).toThrow(/SUPABASE_ANON_KEY must be signed with a drawn secret variable of supabase, not SUPABASE_PUBLIC_URL/);
    const signedWithKey = text.replace("jwt: { secret: SUPABASE_JWT_SECRET, role: anon", "jwt: { secret: SUPABASE_SERVICE_ROLE_KEY, role: anon");
    expect(() => loadCatalog({ ...catalogFiles, [file]: signedWithKey })).toThrow(/must be signed with a drawn secret/);
  });

  test("a dangling dependency or skill fails the load", () => {
    const bad = { ...catalogFiles, "services/n8n.yaml": catalogFiles["services/n8n.yaml"].replace("dependencies: [postgresql]", "dependencies: [postgresql, mongodb]") };
    expect(() => loadCatalog(bad)).toThrow(/unknown dependency mongodb/);
  });

  test("a sidecar that reaches a sibling with a health check waits for it (after); a bad after list fails the load", () => {
    const missing: string[] = [];
    for (const s of catalog.services) {
      for (const sc of s.sidecars ?? []) {
        const text = JSON.stringify([sc.env ?? {}, sc.command ?? []]);
        for (const other of s.sidecars ?? []) {
          const reaches = other !== sc && new RegExp(`\\b${s.id}-${other.name}\\b`).test(text);
          if (reaches && other.healthCheck && !sc.after?.includes(other.name)) missing.push(`${s.id}-${sc.name} -> ${s.id}-${other.name}`);
        }
      }
    }
    expect(missing).toEqual([]);
    const appflowy = catalogFiles["services/appflowy.yaml"];
    const withAfter = (after: string) => ({ ...catalogFiles, "services/appflowy.yaml": appflowy.replace("    after: [postgres]\n", `    after: [${after}]\n`) });
    expect(withAfter("postgres")["services/appflowy.yaml"]).toBe(appflowy);
    expect(() => loadCatalog(withAfter("mysql"))).toThrow(/sidecar gotrue waits for mysql, not another sidecar of appflowy/);
    expect(() => loadCatalog(withAfter("gotrue"))).toThrow(/sidecar gotrue waits for gotrue/);
    expect(() => loadCatalog(withAfter("cloud"))).toThrow(/waits for itself through its after list/);
  });

  test("no two services of a preset publish one host port after resolution, and every preset validates", () => {
    for (const preset of catalog.presets) {
      const stack = resolve(toSelection({ preset: preset.id, platform: "linux/amd64" }, catalog), catalog);
      expect(stack.conflicts, preset.id).toEqual([]);
      const seen = new Set<string>();
      for (const ports of stack.ports.values()) for (const p of ports) {
        const key = `${p.protocol ?? "tcp"}/${p.host}`;
        expect(seen.has(key), `${preset.id}: ${key}`).toBe(false);
        seen.add(key);
      }
    }
  });

  test("every service resolves alone on the platforms it claims", () => {
    for (const s of catalog.services) {
      for (const platform of s.platforms) {
        const stack = resolve(toSelection({ services: [s.id], platform }, catalog), catalog);
        expect(stack.conflicts, `${s.id} on ${platform}`).toEqual([]);
      }
    }
  });
});
