// Generation: every service alone, every preset and 200 seeded random selections produce sound
// bundles; caddy and promtool accept the generated configs; each input field takes effect.
import { asciiJson } from "../../src/core/ascii-json.ts";
import { generatedSecretNames } from "../../src/core/generate/env.ts";
import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { unzipSync, strFromU8 } from "fflate";
import { parse as parseYaml } from "yaml";
import { getCatalog } from "../../src/catalog/index.ts";
import { loadCatalog } from "../../src/catalog/load.ts";
import { readTextTree } from "../../src/catalog/read-files.ts";
import type { Sidecar } from "../../src/schema/catalog.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { cryptoSecrets, fixedSecrets } from "../../src/core/generate/secrets.ts";
import { zipBundle } from "../../src/core/bundle.ts";
import { escapeDollars } from "../../src/core/generate/compose.ts";
import { publicUrl } from "../../src/core/generate/variables.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { parseEnvText } from "../../src/core/parse-env.ts";
import type { FileMap, GenContext } from "../../src/core/generate/context.ts";
import { StackgenError } from "../../src/errors.ts";
import { bundleProblems, composeOf } from "../support/bundle-checks.ts";
import { hasTool, run, seeded } from "../support/tools.ts";

const catalog = getCatalog();
const gen = (body: Record<string, unknown>) => generateBundle({ projectName: "t", platform: "linux/amd64", ...body }, catalog, { secrets: fixedSecrets(), now: () => new Date(0) });

const bundles: { label: string; files: FileMap }[] = [];
const collect = (label: string, body: Record<string, unknown>) => {
  const g = gen(body);
  bundles.push({ label, files: g.files });
  return g;
};

describe("bundle properties", () => {
  test("every service alone generates a sound bundle", () => {
    for (const s of catalog.services) {
      const g = collect(`service ${s.id}`, { projectName: `svc-${s.id}`, services: [s.id], platform: s.platforms[0] });
      expect(bundleProblems(g.files), s.id).toEqual([]);
    }
  });

  test("a container whose PID 1 may idle ignoring SIGTERM (sleep infinity, a shell's sleep loop) runs under Docker's init, so a stop does not wait out the grace period; no other does (an s6 /init must stay PID 1)", () => {
    const idle: string[] = [];
    for (const s of catalog.services) {
      const g = collect(`service ${s.id}`, { projectName: `svc-${s.id}`, services: [s.id], platform: s.platforms[0] });
      const doc = parseYaml(g.files["docker-compose.yml"]!) as { services: Record<string, { init?: boolean; entrypoint?: string[]; command?: string[] }> };
      for (const [name, service] of Object.entries(doc.services)) {
        const sleeps = /\bsleep\b/.test([...(service.entrypoint ?? []), ...(service.command ?? [])].join(" "));
        expect([name, service.init === true], name).toEqual([name, sleeps || name === "core"]);
        if (sleeps && !idle.includes(name)) idle.push(name);
      }
    }
    // The tools the catalog keeps up this way (jobs run in them with `docker compose exec`).
    expect(idle.sort()).toEqual(["claude-code", "codex", "ffmpeg", "gemini-cli", "kimi", "motion-canvas", "pentestagent", "remotion", "solidityguard"]);
    // Home Assistant's shell execs s6-overlay's /init, which refuses to run as anything but PID 1.
    const homeassistant = parseYaml(collect("homeassistant", { projectName: "ha", services: ["homeassistant"] }).files["docker-compose.yml"]!) as { services: Record<string, { init?: boolean; entrypoint?: string[] }> };
    expect(homeassistant.services.homeassistant!.entrypoint!.join(" ")).toContain("exec /init");
    expect(homeassistant.services.homeassistant!.init).toBeUndefined();
  });

  test("every preset generates a sound bundle", () => {
    for (const p of catalog.presets) {
      const g = collect(`preset ${p.id}`, { projectName: p.id, preset: p.id });
      expect(bundleProblems(g.files), p.id).toEqual([]);
      expect(Object.keys(g.files)).toContain("Caddyfile".repeat(p.proxy === "caddy" ? 1 : 0) || "docker-compose.yml");
    }
  });

  test("200 seeded random selections across proxy/domain/gpu/platform/deployment", () => {
    const rand = seeded(20261125);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
    let generated = 0;
    for (let i = 0; generated < 200 && i < 2000; i++) {
      const platform = pick(["linux/amd64", "linux/arm64"] as const);
      const pool = catalog.services.filter((s) => s.platforms.includes(platform));
      const services = [...new Set(Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pick(pool).id))];
      const body = {
        projectName: `r${i}`,
        services,
        skillPacks: rand() < 0.3 ? [pick(catalog.packs).id] : [],
        proxy: pick(["caddy", "traefik", undefined]),
        domain: rand() < 0.5 ? pick(["example.com", "lab.home.arpa", "stack.example.org", "home.lan"]) : undefined,
        gpu: rand() < 0.3,
        platform,
        deployment: pick(["docker", "bare-metal"]),
        generateSecrets: rand() < 0.8,
        // Not drawn: a draw more would change every selection after the first.
        memoryLimits: i % 3 === 0,
      };
      try {
        const g = collect(`random ${i} ${JSON.stringify(body)}`, body);
        expect(bundleProblems(g.files), JSON.stringify(body)).toEqual([]);
        generated++;
      } catch (e) {
        // Conflicting random selections are refused with 409, which is the right answer.
        if (!(e instanceof StackgenError && e.code === "CONFLICT_ERROR")) throw e;
      }
    }
    expect(generated).toBe(200);
  });

  async function checkFiles(name: string, pathOf: (files: FileMap) => string | undefined, cmd: (file: string) => string[]) {
    const dir = mkdtempSync(join(tmpdir(), `stackgen-${name}-`));
    try {
      const candidates = bundles.filter((b) => pathOf(b.files));
      expect(candidates.length).toBeGreaterThan(0);
      for (let i = 0; i < candidates.length; i += 8) {
        await Promise.all(candidates.slice(i, i + 8).map(async (b, j) => {
          const root = join(dir, String(i + j));
          for (const [p, text] of Object.entries(b.files)) {
            mkdirSync(dirname(join(root, p)), { recursive: true });
            writeFileSync(join(root, p), text);
          }
          const r = await run(cmd(join(root, pathOf(b.files)!)), { cwd: root });
          if (r.code !== 0) throw new Error(`${name} rejected ${b.label}:\n${r.stderr}${r.stdout}`);
        }));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  test("caddy adapt accepts every generated Caddyfile", async () => {
    if (!hasTool("caddy")) return;
    await checkFiles("caddy", (f) => (f.Caddyfile ? "Caddyfile" : undefined), (file) => ["caddy", "adapt", "--config", file, "--adapter", "caddyfile"]);
  }, 180_000);

  test("every generated shell script parses (bash -n)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-sh-"));
    try {
      const scripts = new Map<string, string>();
      for (const b of bundles) for (const [p, text] of Object.entries(b.files)) if (p.endsWith(".sh")) scripts.set(text, `${b.label}: ${p}`);
      expect(scripts.size).toBeGreaterThan(3);
      let i = 0;
      for (const [text, label] of scripts) {
        const file = join(dir, `${i++}.sh`);
        writeFileSync(file, text);
        const r = await run(["bash", "-n", file]);
        expect(r.code, `${label}\n${r.stderr}`).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test("promtool accepts every generated prometheus.yml", async () => {
    if (!hasTool("promtool")) return;
    await checkFiles("promtool", (f) => (f["prometheus/prometheus.yml"] ? "prometheus/prometheus.yml" : undefined), (file) => ["promtool", "check", "config", file]);
  }, 180_000);
});

describe("compose escaping", () => {
  test("${NAME} stays a reference; any other $ is doubled exactly once", () => {
    expect(escapeDollars("pw=${REDIS_PASSWORD}")).toBe("pw=${REDIS_PASSWORD}");
    expect(escapeDollars('exec redis-server --requirepass "$REDISCLI_AUTH"')).toBe('exec redis-server --requirepass "$$REDISCLI_AUTH"');
    expect(escapeDollars("${A:-x} ${B:?set B} cost $5")).toBe("${A:-x} ${B:?set B} cost $$5");
  });

  test("a shell variable in a command reaches the container as written", () => {
    const compose = composeOf(gen({ services: ["redis"] }).files);
    const cmd = (compose.services.redis.command as string[]).join(" ");
    expect(cmd).toContain('"$$REDISCLI_AUTH"');
    expect(cmd).not.toContain("$$$");
  });
});

describe("signed API keys", () => {
  /** The claims of an HS256 token when `secret` signed it, else undefined (checked with node:crypto). */
  const claimsIf = (token: string, secret: string) => {
    const [header, payload, signature] = token.split(".");
    const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
    if (signature !== expected || JSON.parse(Buffer.from(header!, "base64url").toString()).alg !== "HS256") return undefined;
    return JSON.parse(Buffer.from(payload!, "base64url").toString());
  };

  test("Supabase's anon and service_role keys are tokens signed with the stack's own JWT secret, fresh with it", () => {
    for (const source of [fixedSecrets(), cryptoSecrets]) {
      const env = parseEnvValues(generateBundle({ projectName: "sb", services: ["supabase"] }, catalog, { secrets: source }).files[".env"]);
      const secret = env.get("SUPABASE_JWT_SECRET")!;
      expect(secret).toMatch(/^[A-Za-z0-9]{40}$/);
      expect(claimsIf(env.get("SUPABASE_ANON_KEY")!, secret)).toEqual({ role: "anon", iss: "supabase" });
      expect(claimsIf(env.get("SUPABASE_SERVICE_ROLE_KEY")!, secret)).toEqual({ role: "service_role", iss: "supabase" });
    }
    const [a, b] = [1, 2].map(() => parseEnvValues(generateBundle({ projectName: "sb", services: ["supabase"] }, catalog).files[".env"]));
    expect(a!.get("SUPABASE_SERVICE_ROLE_KEY")).not.toBe(b!.get("SUPABASE_SERVICE_ROLE_KEY"));
  });

  test("the compose file hands them to Studio and the agents; without generated secrets they are empty and required", () => {
    const g = gen({ services: ["supabase"] });
    const compose = composeOf(g.files);
    expect(compose.services.supabase.environment).toMatchObject({ SUPABASE_ANON_KEY: "${SUPABASE_ANON_KEY}", SUPABASE_SERVICE_KEY: "${SUPABASE_SERVICE_ROLE_KEY}" });
    expect(compose.services.core.environment?.SUPABASE_SERVICE_ROLE_KEY).toBe("${SUPABASE_SERVICE_ROLE_KEY}");
    expect(g.derivedSecrets.map((d) => d.name)).toEqual(["SUPABASE_ANON_KEY", "SUPABASE_SERVICE_ROLE_KEY"]);
    const unsecured = gen({ services: ["supabase"], generateSecrets: false });
    expect(composeOf(unsecured.files).services.supabase.environment?.SUPABASE_ANON_KEY).toBe("${SUPABASE_ANON_KEY:?SUPABASE_ANON_KEY is empty - set it in .env}");
    const bare = parseEnvValues(unsecured.files[".env"]);
    expect([bare.get("SUPABASE_JWT_SECRET"), bare.get("SUPABASE_ANON_KEY"), bare.get("SUPABASE_SERVICE_ROLE_KEY")]).toEqual(["", "", ""]);
  });
});

describe("input fields take effect", () => {
  test("secrets: CSPRNG, 32+ alnum, one per variable, referenced as ${VAR}", () => {
    const original = Math.random;
    Math.random = () => { throw new Error("Math.random must not be used for secrets"); };
    try {
      const g = generateBundle({ projectName: "s", preset: "devops" }, catalog);
      const env = parseEnvValues(g.files[".env"]);
      const secrets = catalog.services.flatMap((s) => s.variables ?? []).filter((v) => v.secret).map((v) => v.name).filter((n) => env.has(n));
      expect(secrets.length).toBeGreaterThan(3);
      const values = secrets.map((n) => env.get(n)!);
      for (const v of values) expect(v).toMatch(/^[A-Za-z0-9]{32,}$/);
      expect(new Set(values).size).toBe(values.length);
      for (const n of secrets) expect(g.files[".env.example"]).toContain(`${n}=\n`);
      expect(g.files["docker-compose.yml"]).not.toContain(values[0]);
    } finally {
      Math.random = original;
    }
  });

  test("the CSPRNG source: exact lengths, only its alphabet, no value twice, every character about equally often", () => {
    // 3,000 values cross the blocks the source draws at a time (4 KiB of bytes, 2,048 characters) many times over.
    const counts = new Map<string, number>();
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const format = i % 3 === 0 ? "hex" : "alnum";
      const length = 16 + (i % 40);
      const value = cryptoSecrets("X", format, length);
      expect(value).toHaveLength(length);
      expect(value).toMatch(format === "hex" ? /^[0-9a-f]+$/ : /^[A-Za-z0-9]+$/);
      expect(seen.has(value)).toBe(false);
      seen.add(value);
      if (format === "alnum") for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    // ~71,000 alnum characters: each of the 62 is expected ~1,150 times; a biased or stuck
    // source lands far outside ±25 %.
    expect(counts.size).toBe(62);
    const mean = [...counts.values()].reduce((a, b) => a + b, 0) / 62;
    for (const n of counts.values()) expect(Math.abs(n - mean) / mean).toBeLessThan(0.25);
    // Longer than a block of characters, and earlier values left untouched by later ones.
    const long = cryptoSecrets("X", "alnum", 5000);
    expect(long).toMatch(/^[A-Za-z0-9]{5000}$/);
    const first = cryptoSecrets("X", "hex", 32);
    const copy = String(first);
    cryptoSecrets("X", "hex", 32);
    expect(first).toBe(copy);
  });

  test("the password format has every character class apps demand, from both sources", () => {
    const classes = [/[A-Z]/, /[a-z]/, /[0-9]/, /[-_.]/];
    for (const source of [cryptoSecrets, fixedSecrets("pw")]) {
      for (const length of [32, 48]) {
        const value = source("COOLIFY_ROOT_PASSWORD", "password", length);
        // The length every secret has in letters and digits (CONTRACT §4), then one of each class.
        expect(value).toHaveLength(length + classes.length);
        expect(value).toMatch(new RegExp(`^[A-Za-z0-9]{${length}}[A-Z][a-z][0-9][-_.]$`));
        for (const re of classes) expect(value).toMatch(re);
      }
    }
    // Coolify's root user takes it (it creates none from a password without each class).
    expect(parseEnvValues(gen({ services: ["coolify"] }).files[".env"]).get("COOLIFY_ROOT_PASSWORD")).toMatch(/[-_.]/);
  });

  test("generateSecrets false leaves secrets empty and compose fails fast on them", () => {
    const g = gen({ services: ["n8n"], generateSecrets: false });
    expect(parseEnvValues(g.files[".env"]).get("N8N_DB_PASSWORD")).toBe("");
    expect(g.files["docker-compose.yml"]).toContain("${N8N_DB_PASSWORD:?");
  });

  test("Caddy leaves X-Forwarded-For out for Home Assistant (it answers 400 to forwarded requests) and only there; others get the client in X-Real-IP", async () => {
    const g = gen({ services: ["homeassistant"], proxy: "caddy" });
    if (!hasTool("caddy")) return;
    const seen: Record<string, string | null> = {};
    const realIp: Record<string, string | null> = {};
    await throughLocalCaddy(g.files.Caddyfile!, (r) => {
      const path = new URL(r.url).pathname;
      seen[path] = r.headers.get("x-forwarded-for");
      realIp[path] = r.headers.get("x-real-ip");
      return new Response("ok");
    }, async (ask) => {
      // A client's own X-Real-IP is replaced, not passed on.
      const headers = { "x-real-ip": "203.0.113.9" };
      expect((await ask("homeassistant.localhost", "/ha", headers)).status).toBe(200);
      expect((await ask("core.localhost", "/core", headers)).status).toBe(200);
      expect(seen["/ha"]).toBeNull();
      expect(seen["/core"]).toBe("127.0.0.1");
      expect(realIp["/core"]).toBe("127.0.0.1");
      expect(realIp["/ha"]).toBe("127.0.0.1");
    });
  });

  test("metrics without a login on a web port (Gitea, ntfy, Grafana) answer 404 through the proxy, the app's pages do not; Prometheus scrapes them inside the stack", async () => {
    const input = { services: ["gitea", "ntfy", "grafana", "prometheus"], domain: "example.com" };
    const traefik = composeOf(gen({ ...input, proxy: "traefik" }).files).services;
    for (const id of ["gitea", "ntfy", "grafana"]) {
      expect((traefik[id]!.labels as Record<string, string>)[`traefik.http.routers.${id}.rule`]).toBe(`Host(\`${id}.example.com\`) && !(Path(\`/metrics\`) || PathPrefix(\`/metrics/\`))`);
    }
    expect((traefik.core!.labels as Record<string, string>)["traefik.http.routers.core.rule"]).toBe("Host(`core.example.com`)");
    const caddy = gen({ ...input, proxy: "caddy" });
    expect(caddy.files["prometheus/prometheus.yml"]).toContain("gitea:3000");
    if (!hasTool("caddy")) return;
    // Served as without a domain (no certificates here); the sites are the same.
    const caddyfile = gen({ ...input, domain: undefined, proxy: "caddy" }).files.Caddyfile!;
    expect(caddyfile.match(/respond @metrics 404/g)).toHaveLength(3);
    await throughLocalCaddy(caddyfile, () => new Response("app"), async (ask) => {
      for (const host of ["gitea.localhost", "ntfy.localhost", "grafana.localhost"]) {
        for (const path of ["/metrics", "/metrics/", "/metrics/x", "/METRICS"]) expect((await ask(host, path)).status, `${host}${path}`).toBe(404);
        for (const path of ["/", "/metricsboard", "/api/metrics"]) expect((await ask(host, path)).status, `${host}${path}`).toBe(200);
      }
      expect((await ask("core.localhost", "/metrics")).status).toBe(200);
    });
  });

  test("with a domain, Caddy gets its ACME email from compose, never empty, and the Caddyfile takes it", async () => {
    const g = gen({ services: ["n8n"], proxy: "caddy", domain: "example.com" });
    expect(parseEnvValues(g.files[".env"]).get("CADDY_ACME_EMAIL")).toBe("");
    const reference = composeOf(g.files).services.caddy?.environment?.CADDY_ACME_EMAIL ?? "";
    expect(reference).toBe("${CADDY_ACME_EMAIL:-admin@example.com}");
    if (!hasTool("caddy")) return;
    const dir = mkdtempSync(join(tmpdir(), "stackgen-acme-"));
    try {
      writeFileSync(join(dir, "Caddyfile"), g.files.Caddyfile);
      // What compose hands the container for the .env value as generated (empty) and as a user sets it.
      for (const [inEnv, expected] of [["", "admin@example.com"], ["ops@example.org", "ops@example.org"]]) {
        const value = inEnv || reference.slice(reference.indexOf(":-") + 2, -1);
        const r = await run(["caddy", "adapt", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], { env: { ...process.env, CADDY_ACME_EMAIL: value } });
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain(`"email":"${expected}"`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a private domain (home.lan) gets certificates the proxy signs itself, not a Let's Encrypt order that cannot succeed", async () => {
    const caddy = gen({ services: ["n8n"], proxy: "caddy", domain: "home.lan" });
    expect(caddy.files.Caddyfile).toContain("\tlocal_certs\n");
    expect(caddy.files.Caddyfile).not.toContain("email");
    expect(caddy.files.Caddyfile).toContain("n8n.home.lan {");
    expect(composeOf(caddy.files).services.caddy?.environment?.CADDY_ACME_EMAIL).toBeUndefined();
    expect(caddy.files["README.md"]).toContain("Caddy's local CA");
    const traefik = gen({ services: ["n8n"], proxy: "traefik", domain: "lab.home.arpa" });
    const staticConfig = parseYaml(traefik.files["traefik/traefik.yml"]);
    expect(staticConfig.certificatesResolvers).toBeUndefined();
    expect(staticConfig.entryPoints.websecure).toMatchObject({ address: ":443" });
    // Uploads longer than Traefik's 60 s default read timeout (since 2.11.2) are not cut off.
    for (const entry of ["web", "websecure"]) expect(staticConfig.entryPoints[entry].transport.respondingTimeouts.readTimeout).toBe("1h");
    // Its health check asks /ping on the local entry point, which the same file turns on.
    expect(composeOf(traefik.files).services.traefik?.healthcheck?.test).toEqual(["CMD", "traefik", "healthcheck", "--ping"]);
    expect(staticConfig.ping).toEqual({ entryPoint: "traefik" });
    expect(staticConfig.entryPoints.traefik).toMatchObject({ address: ":8080" });
    // Only this stack's containers are routed: another stack's labels on the engine are not read.
    expect(staticConfig.providers.docker.constraints).toBe("Label(`dev.stackgen.project`,`t`) || Label(`com.docker.compose.project`,`t`)");
    // Every routed service carries the stack's own label, whatever project name compose runs it under.
    const routed = Object.entries(composeOf(traefik.files).services as Record<string, { labels?: Record<string, string> }>).filter(([, svc]) => svc.labels?.["traefik.enable"] === "true");
    expect(routed.map(([name]) => name)).toContain("n8n");
    for (const [name, svc] of routed) expect(svc.labels!["dev.stackgen.project"], name).toBe("t");
    const labels = composeOf(traefik.files).services.n8n?.labels as Record<string, string>;
    expect(labels["traefik.http.routers.n8n.tls"]).toBe("true");
    expect(labels["traefik.http.routers.n8n.entrypoints"]).toBe("websecure");
    expect(Object.keys(labels).some((k) => k.endsWith("certresolver"))).toBe(false);
    expect(traefik.files["README.md"]).toContain("Traefik's self-signed certificate");
    // Wildcard DNS names that lead to a private address resolve, but Let's Encrypt cannot reach them.
    for (const domain of ["192.168.1.10.sslip.io", "lab.10-0-0-5.nip.io", "172.20.0.1.traefik.me", "localtest.me"]) {
      expect([domain, gen({ services: ["n8n"], proxy: "caddy", domain }).files.Caddyfile]).toEqual([domain, expect.stringContaining("\tlocal_certs\n")]);
    }
    for (const domain of ["203.0.113.5.sslip.io", "172.32.0.1.nip.io", "sslip.io.example.com"]) {
      expect([domain, gen({ services: ["n8n"], proxy: "caddy", domain }).files.Caddyfile]).toEqual([domain, expect.not.stringContaining("local_certs")]);
    }
    // A public name that merely ends in the same letters is still public.
    const pub = gen({ services: ["n8n"], proxy: "traefik", domain: "myhome.lanparty.com" });
    expect((composeOf(pub.files).services.n8n?.labels as Record<string, string>)["traefik.http.routers.n8n.tls.certresolver"]).toBe("letsencrypt");
    if (!hasTool("caddy")) return;
    const dir = mkdtempSync(join(tmpdir(), "stackgen-local-ca-"));
    try {
      writeFileSync(join(dir, "Caddyfile"), caddy.files.Caddyfile);
      const r = await run(["caddy", "adapt", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('"module":"internal"');
      expect(r.stdout).not.toContain('"module":"acme"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a service's public URL follows the proxy and domain, in .env and .env.example", () => {
    const urlOf = (body: Record<string, unknown>) => {
      const g = gen({ services: ["searxng", "gitea", "pentagi"], ...body });
      return (file: ".env" | ".env.example", name: string) => parseEnvValues(g.files[file]).get(name);
    };
    const withDomain = urlOf({ proxy: "caddy", domain: "example.com" });
    for (const file of [".env", ".env.example"] as const) {
      expect(withDomain(file, "SEARXNG_BASE_URL")).toBe("https://searxng.example.com/");
      expect(withDomain(file, "GITEA_ROOT_URL")).toBe("https://gitea.example.com/");
    }
    // A loopback-only port is not proxied: the address on the host stays.
    expect(withDomain(".env", "PENTAGI_PUBLIC_URL")).toBe("https://localhost:8443");
    expect(urlOf({ proxy: "traefik" })(".env", "SEARXNG_BASE_URL")).toBe("http://searxng.localhost/");
    // The proxy as a chosen service routes like the proxy option: the URL follows the Caddyfile.
    const g = gen({ services: ["searxng", "caddy"], domain: "example.com" });
    expect(g.files.Caddyfile).toContain("searxng.example.com");
    expect(parseEnvValues(g.files[".env"]).get("SEARXNG_BASE_URL")).toBe("https://searxng.example.com/");
    expect(urlOf({})(".env", "SEARXNG_BASE_URL")).toBe("http://127.0.0.1:8080/");
  });

  test("an app that wants the host name or scheme of its public URL gets that part (Nextcloud's trusted domain)", () => {
    const values = (body: Record<string, unknown>) => parseEnvValues(gen({ services: ["nextcloud"], ...body }).files[".env"]);
    const proxied = values({ proxy: "caddy", domain: "example.com" });
    expect([proxied.get("NEXTCLOUD_PUBLIC_URL"), proxied.get("NEXTCLOUD_PUBLIC_HOST"), proxied.get("NEXTCLOUD_PUBLIC_SCHEME")]).toEqual(["https://nextcloud.example.com", "nextcloud.example.com", "https"]);
    const direct = values({});
    expect([direct.get("NEXTCLOUD_PUBLIC_URL"), direct.get("NEXTCLOUD_PUBLIC_HOST"), direct.get("NEXTCLOUD_PUBLIC_SCHEME")]).toEqual(["http://localhost:8080", "localhost", "http"]);
    const compose = gen({ services: ["nextcloud"], proxy: "caddy", domain: "example.com" }).files["docker-compose.yml"];
    expect(compose).toContain("NEXTCLOUD_TRUSTED_DOMAINS: ${NEXTCLOUD_TRUSTED_DOMAINS} ${NEXTCLOUD_PUBLIC_HOST}");
  });

  test("the README shows how to reach a port bound to 127.0.0.1 from another machine: an SSH tunnel to one the proxy does not serve", () => {
    const readme = gen({ services: ["qdrant", "searxng"], proxy: "caddy", domain: "example.com" }).files["README.md"]!;
    // The gateway and SearXNG are served at their names; Qdrant's dashboard has no login and is not.
    expect(readme).toContain("`ssh -L 6333:127.0.0.1:6333 <you>@<this host>`");
    expect(readme).toContain("`localhost:6333` reaches qdrant");
  });

  test("the README says which apps hand their admin account to the first visitor, with their URL", () => {
    const readme = gen({ services: ["portainer", "redis"], proxy: "caddy", domain: "example.com" }).files["README.md"]!;
    expect(readme).toContain("## Right after the first start");
    expect(readme).toContain("- **Portainer CE** (https://portainer.example.com): Open it within five minutes");
    // Apps with a known login say where it is; a stack of only Redis has just the gateway's token step.
    const logins = gen({ services: ["grafana", "n8n"] }).files["README.md"]!;
    expect(logins).toMatch(/- \*\*Grafana\*\*[^\n]*GRAFANA_ADMIN_PASSWORD/);
    expect(logins).toMatch(/- \*\*n8n\*\*[^\n]*owner account/);
    const redisOnly = gen({ services: ["redis"] }).files["README.md"]!.split("## Right after the first start")[1]!.split("\n## ")[0]!;
    expect(redisOnly.match(/^- \*\*[^*]+\*\*/gm)).toEqual(["- **OpenClaw gateway**"]);
    expect(redisOnly).toContain("CORE_GATEWAY_TOKEN");
  });

  test("the README and .env name the values only the user can supply: before the first start, and keys for later", () => {
    const g = gen({ services: ["tailscale", "n8n"] });
    const readme = g.files["README.md"]!;
    const before = readme.indexOf("## Before the first start");
    expect(before).toBeGreaterThan(-1);
    expect(before).toBeLessThan(readme.indexOf("## Start"));
    const beforeSection = readme.slice(before, readme.indexOf("## Start"));
    expect(beforeSection).toContain("- `TAILSCALE_AUTHKEY` (Tailscale): Auth key");
    expect(beforeSection).not.toContain("N8N_API_KEY");
    const secrets = readme.slice(readme.indexOf("## Secrets and settings"), readme.indexOf("## Day-2"));
    expect(secrets).toContain("- `N8N_API_KEY` (n8n): API key for the agent");
    expect(secrets).not.toContain("TAILSCALE_AUTHKEY");
    expect(g.files[".env"]).toContain("(required: fill in before the first start)\nTAILSCALE_AUTHKEY=\n");
    expect(g.files[".env"]).toContain("(optional, fill in if you use it)\nN8N_API_KEY=\n");
    // Outline has no password login: without its sign-in provider nobody gets in, not even the first user.
    const outline = gen({ services: ["outline"] }).files["README.md"]!;
    const beforeFirstStart = outline.slice(outline.indexOf("## Before the first start"), outline.indexOf("## Start"));
    for (const name of ["CLIENT_ID", "CLIENT_SECRET", "AUTH_URI", "TOKEN_URI", "USERINFO_URI"]) expect(beforeFirstStart).toContain(`\`OUTLINE_OIDC_${name}\``);
    // Nothing to supply: neither list.
    const plain = gen({ services: ["redis"] }).files["README.md"]!;
    expect(plain).not.toContain("Before the first start");
    expect(plain).not.toContain("Values only you can supply");
  });

  test("the README names every container of the compose file: each helper with the service it belongs to, a job as one", () => {
    const g = gen({ services: ["dify", "immich", "redis"] });
    const readme = g.files["README.md"]!;
    const compose = parseYaml(g.files["docker-compose.yml"]!) as { services: Record<string, unknown> };
    for (const name of Object.keys(compose.services)) expect(readme, name).toContain(`\`${name}\``);
    expect(readme).toContain("- `dify` (Dify): `dify-sandbox`, `dify-storage-owner` (a one-shot job: it exits with code 0 once done, before the app starts), `dify-api`");
    expect(readme).toContain("- `immich` (Immich): `immich-postgres`, `immich-machine-learning`");
    expect(gen({ services: ["redis"] }).files["README.md"]).not.toContain("more than one container");
  });
  test("the bundle README names the known limits of the entries in it (Meet needs a domain)", () => {
    const readme = gen({ preset: "videoconf" }).files["README.md"]!;
    const limits = readme.slice(readme.indexOf("## Known limits"));
    expect(limits).toContain("**La Suite Meet (Backend)**: Meet needs a domain");
    expect(gen({ services: ["redis"] }).files["README.md"]).not.toContain("## Known limits");
  });

  test("Headscale gets the configuration file it needs to start, mounted where it reads it", () => {
    const g = gen({ services: ["headscale"] });
    const config = parseYaml(g.files["headscale/config.yaml"]!) as Record<string, any>;
    expect(config.noise.private_key_path).toStartWith("/var/lib/headscale/");
    expect(config.prefixes.allocation).toBe("sequential");
    expect(config.unix_socket).toStartWith("/var/lib/headscale/");
    expect(composeOf(g.files).services.headscale.volumes).toContain("./headscale/config.yaml:/etc/headscale/config.yaml:ro");
  });

  test("the gateway gets the configuration it needs to start on the container network: local mode and its Control UI origins", () => {
    // Without gateway.mode it exits ("Missing config"); bound to `lan` without allowed origins it
    // exits too ("non-loopback Control UI requires gateway.controlUi.allowedOrigins").
    const config = (body: Record<string, unknown>) => JSON.parse(gen(body).files["openclaw/openclaw.json"]!) as Record<string, any>;
    const plain = config({ services: ["redis"] });
    expect(plain.gateway.mode).toBe("local");
    expect(plain.gateway.bind).toBe("lan");
    expect(plain.gateway.controlUi.allowedOrigins).toEqual(["http://localhost:18789", "http://127.0.0.1:18789"]);
    expect(config({ services: ["redis"], proxy: "caddy", domain: "example.com" }).gateway.controlUi.allowedOrigins).toContain("https://core.example.com");
    expect(config({ services: ["redis"], proxy: "traefik" }).gateway.controlUi.allowedOrigins).toContain("http://core.localhost");
    // Only settings the gateway documents: it refuses a configuration with keys it does not know.
    expect(Object.keys(plain)).toEqual(["gateway"]);
    expect(Object.keys(plain.gateway).sort()).toEqual(["bind", "controlUi", "mode", "port"]);
    const core = composeOf(gen({ services: ["redis"] }).files).services.core;
    expect(core.volumes).toContain("./openclaw/openclaw.json:/etc/openclaw/openclaw.json:ro");
    expect(core.environment?.OPENCLAW_CONFIG_PATH).toBe("/etc/openclaw/openclaw.json");
    // The port in the file is the one the gateway is told to listen on.
    const command = core.command as string[];
    expect(command[command.indexOf("--port") + 1]).toBe(String(plain.gateway.port));
  });

  test("Synapse's server name, baked into every id on the first start, is the host users reach it at", () => {
    const name = (body: Record<string, unknown>) => parseEnvValues(gen({ services: ["matrix-synapse"], ...body }).files[".env"]).get("MATRIX_SYNAPSE_SERVER_NAME");
    expect(name({ proxy: "caddy", domain: "example.com" })).toBe("matrix-synapse.example.com");
    expect(name({})).toBe("localhost");
  });

  test("a variable can hold another service's public URL (Meet's backend: its frontend and LiveKit)", () => {
    const values = (body: Record<string, unknown>) => parseEnvValues(gen(body).files[".env"]);
    const meet = values({ preset: "videoconf", domain: "example.com" });
    expect(meet.get("LASUITE_MEET_BACKEND_PUBLIC_URL")).toBe("https://lasuite-meet-frontend.example.com");
    expect(meet.get("LASUITE_MEET_BACKEND_PUBLIC_HOST")).toBe("lasuite-meet-frontend.example.com");
    expect(meet.get("LASUITE_MEET_BACKEND_LIVEKIT_URL")).toBe("https://livekit.example.com");
    // The backend without its frontend: the frontend's address as declared; LiveKit on its host port.
    const alone = values({ services: ["lasuite-meet-backend"] });
    expect(alone.get("LASUITE_MEET_BACKEND_PUBLIC_URL")).toBe("http://localhost:8083");
    expect(alone.get("LASUITE_MEET_BACKEND_LIVEKIT_URL")).toBe("http://localhost:7880");
  });

  test("publicUrl: the proxy's hostname, the port a clash moved the service to, or the address as declared", () => {
    const svc = { id: "svc", name: "Svc", ports: [{ container: 80, host: 9000, web: true }, { container: 81, host: 9001 }] };
    const ports = new Map([["svc", [
      { container: 80, host: 9100, declaredHost: 9000, web: true, description: "web" },
      { container: 81, host: 9001, declaredHost: 9001, description: "api" },
    ]]]);
    /** A context as render() builds it; `proxy` puts that proxy service in the stack. */
    const at = (extra: { proxy?: string; domain?: string; native?: string[] } = {}) => ({
      domain: extra.domain,
      nativeIds: new Set(extra.native ?? []),
      stack: { core: { id: "core", ports: [] }, services: [svc], resolvedServices: ["svc", ...(extra.proxy ? [extra.proxy] : [])], ports },
    }) as unknown as GenContext;
    expect(publicUrl(at(), "svc", "http://localhost:9000/app/")).toBe("http://localhost:9100/app/");
    expect(publicUrl(at(), "svc", "http://127.0.0.1:9001")).toBe("http://127.0.0.1:9001");
    expect(publicUrl(at({ proxy: "caddy", domain: "ex.org" }), "svc", "http://localhost:9000")).toBe("https://svc.ex.org");
    expect(publicUrl(at({ proxy: "caddy", domain: "ex.org" }), "svc", "http://localhost:9001")).toBe("http://localhost:9001");
    expect(publicUrl(at({ proxy: "caddy", native: ["svc"] }), "svc", "http://localhost:9000")).toBe("http://localhost:9100");
    expect(publicUrl(at(), "svc", "https://api.example.com/v1")).toBe("https://api.example.com/v1");
    expect(publicUrl(at(), "other", "http://localhost:9000")).toBe("http://localhost:9000");
  });

  test("coreVersion sets CORE_VERSION in .env and the gateway image tag", () => {
    const g = gen({ services: ["redis"], coreVersion: "2026.11.1" });
    expect(parseEnvValues(g.files[".env"]).get("CORE_VERSION")).toBe("2026.11.1");
    expect(composeOf(g.files).services.core.image).toBe("${CORE_IMAGE:-ghcr.io/openclaw/openclaw}:${CORE_VERSION:-2026.11.1}");
  });

  test("gpu adds NVIDIA reservations to GPU-capable services only", () => {
    const gpuService = catalog.services.find((s) => s.gpu && s.platforms.includes("linux/amd64"))!;
    const g = gen({ services: [gpuService.id, "redis"], gpu: true });
    const c = composeOf(g.files);
    expect(JSON.stringify(c.services[gpuService.id].deploy)).toContain('"driver":"nvidia"');
    expect(c.services.redis.deploy).toBeUndefined();
    expect(JSON.stringify(composeOf(gen({ services: [gpuService.id] }).files))).not.toContain("nvidia");
  });

  test("memoryLimits caps every container with an estimate at twice it (at least 256 MiB), beside GPU reservations; off, nothing is capped", () => {
    const gpuService = catalog.services.find((s) => s.gpu && s.platforms.includes("linux/amd64") && s.estimatedMemoryMB >= 1024)!;
    const withSidecar = catalog.services.find((s) => s.platforms.includes("linux/amd64") && s.sidecars?.some((sc) => sc.estimatedMemoryMB !== undefined))!;
    const body = { services: [gpuService.id, withSidecar.id, "redis"], gpu: true, memoryLimits: true };
    const g = gen(body);
    expect(bundleProblems(g.files)).toEqual([]);
    const c = composeOf(g.files);
    const cap = (name: string) => (c.services[name].deploy as any)?.resources?.limits?.memory;
    expect(cap(gpuService.id)).toBe(`${Math.ceil((gpuService.estimatedMemoryMB * 2) / 64) * 64}M`);
    expect(JSON.stringify(c.services[gpuService.id].deploy)).toContain('"driver":"nvidia"');
    expect(catalog.servicesById.get("redis")!.estimatedMemoryMB * 2).toBeLessThanOrEqual(256);
    expect(cap("redis")).toBe("256M");
    expect(cap("core")).toBe(`${Math.max(256, catalog.core.estimatedMemoryMB * 2)}M`);
    for (const sc of withSidecar.sidecars!) {
      expect(cap(`${withSidecar.id}-${sc.name}`)).toBe(sc.estimatedMemoryMB === undefined ? undefined : `${Math.max(256, Math.ceil((sc.estimatedMemoryMB * 2) / 64) * 64)}M`);
    }
    // Recorded for the next generate and said in the bundle's README, service by service.
    expect(JSON.parse(g.files["stackgen.json"]).memoryLimits).toBe(true);
    expect(g.files["README.md"]).toContain("deploy.resources.limits.memory");
    expect(g.files["README.md"]).toContain(`| ${catalog.servicesById.get("redis")!.estimatedMemoryMB} MB, at most 256 MB |`);

    const off = gen({ ...body, memoryLimits: false });
    expect(off.files["docker-compose.yml"]).not.toContain("limits:");
    expect(JSON.stringify(composeOf(off.files).services[gpuService.id].deploy)).toContain('"driver":"nvidia"');
    expect("memoryLimits" in JSON.parse(off.files["stackgen.json"])).toBe(false);
    expect(off.files["README.md"]).not.toContain("at most");
    expect(() => gen({ services: ["redis"], memoryLimits: "yes" })).toThrow("Invalid generation input");
  });

  test("platform pins every service when asked, and not otherwise", () => {
    const c = composeOf(gen({ services: ["redis"], platform: "linux/arm64" }).files);
    for (const s of Object.values(c.services)) expect(s.platform).toBe("linux/arm64");
    const d = composeOf(generateBundle({ projectName: "p", services: ["redis"] }, catalog, { secrets: fixedSecrets() }).files);
    expect(d.services.redis.platform).toBeUndefined();
  });

  test("browsers and desktops get a /dev/shm Chromium does not fill (Docker gives 64 MB), and nothing else gets one", () => {
    const c = composeOf(gen({ services: ["desktop-environment", "playwright-server", "steel-browser", "redis"] }).files);
    expect(c.services["desktop-environment"].shm_size).toBe("512m");
    expect(c.services["playwright-server"].shm_size).toBe("1g");
    expect(c.services["steel-browser"].shm_size).toBe("1g");
    expect(c.services.redis.shm_size).toBeUndefined();
  });

  test("databases and caches are not published on all interfaces", () => {
    const c = composeOf(gen({ services: ["postgresql", "redis"] }).files);
    expect(c.services.postgresql.ports).toEqual(["127.0.0.1:5432:5432"]);
    expect(c.services.redis.ports).toEqual(["127.0.0.1:6379:6379"]);
  });

  test("behind a proxy with a domain, web ports are bound to 127.0.0.1: the apps are not also served over plain HTTP", () => {
    const ports = (body: Record<string, unknown>) => composeOf(gen({ services: ["n8n", "gitea"], ...body }).files).services;
    for (const proxy of ["caddy", "traefik"]) {
      const c = ports({ proxy, domain: "example.com" });
      expect(c.n8n.ports).toEqual(["127.0.0.1:5678:5678"]);
      // Only the web port: Gitea's SSH is not served by the proxy and stays reachable.
      expect(c.gitea.ports).toContain("2222:22");
      expect(c.gitea.ports!.filter((p: string) => p.startsWith("127.0.0.1:"))).toHaveLength(1);
      expect(c[proxy].ports).toEqual(expect.arrayContaining(["80:80", "443:443"]));
    }
    // n8n is told about its one proxy hop only when a proxy is in front of it.
    expect(ports({ proxy: "caddy" }).n8n.environment?.N8N_PROXY_HOPS).toBe("1");
    expect(ports({}).n8n.environment?.N8N_PROXY_HOPS).toBeUndefined();
    // Without a domain <id>.localhost works on this machine only, and without a proxy the port is the way in.
    expect(ports({ proxy: "caddy" }).n8n.ports).toEqual(["5678:5678"]);
    expect(ports({ domain: "example.com" }).n8n.ports).toEqual(["5678:5678"]);
  });

  test("Caddy serving HTTPS publishes UDP 443 too: it offers HTTP/3 there, and browsers try it", () => {
    const proxyPorts = (body: Record<string, unknown>) => composeOf(gen({ services: ["n8n"], ...body }).files).services;
    for (const domain of ["example.com", "home.lan"]) {
      const g = gen({ services: ["n8n"], proxy: "caddy", domain });
      expect(composeOf(g.files).services.caddy.ports).toEqual(["80:80", "443:443", "443:443/udp"]);
      expect(g.files["README.md"]).toContain("| Caddy | `caddy` | container | 80, 443, 443/udp |");
    }
    // Traefik does not turn HTTP/3 on.
    expect(proxyPorts({ proxy: "traefik", domain: "example.com" }).traefik.ports).toEqual(["80:80", "443:443", "127.0.0.1:8085:8080"]);
    // Other UDP ports say so in the README's table as well.
    expect(gen({ services: ["livekit"] }).files["README.md"]).toMatch(/\| `livekit` \|[^\n]*7882\/udp/);
  });

  test("without a domain a proxy serves plain HTTP only, so it leaves the host's 443 to whatever already holds it", () => {
    const proxyPorts = (body: Record<string, unknown>) => composeOf(gen({ services: ["n8n"], ...body }).files).services;
    expect(proxyPorts({ proxy: "caddy" }).caddy.ports).toEqual(["80:80"]);
    expect(proxyPorts({ proxy: "traefik" }).traefik.ports).toEqual(["80:80", "127.0.0.1:8085:8080"]);
    expect(gen({ services: ["n8n"], proxy: "caddy" }).files["README.md"]).toContain("| Caddy | `caddy` | container | 80 |");
  });

  test("apps that need HTTPS in the browser are said to work from this machine only until a proxy serves them under a domain", () => {
    const readme = (body: Record<string, unknown>) => gen({ services: ["vaultwarden"], ...body }).files["README.md"]!;
    for (const body of [{}, { proxy: "caddy" }, { domain: "example.com" }]) {
      expect(readme(body)).toContain("Vaultwarden needs HTTPS in the browser");
      expect(readme(body)).toContain("`--proxy caddy --domain <your domain>`");
    }
    for (const body of [{ proxy: "caddy", domain: "example.com" }, { proxy: "traefik", domain: "home.lan" }]) expect(readme(body)).not.toContain("HTTPS in the browser");
    expect(gen({ services: ["n8n"] }).files["README.md"]).not.toContain("HTTPS in the browser");
  });

  test("the README gives each web service's address on its port when no proxy serves it, and says a domain needs a proxy", () => {
    const plain = gen({ services: ["n8n"] }).files["README.md"]!;
    expect(plain).toContain("| n8n | `n8n` | container | 5678 | http://localhost:5678 |");
    expect(plain).toContain("From another machine, use this host's address in place of `localhost`");
    const unused = gen({ services: ["n8n"], domain: "example.com" }).files["README.md"]!;
    expect(unused).toContain("The domain `example.com` is not used: without a reverse proxy nothing serves `<id>.example.com`");
    expect(unused).toContain("http://localhost:5678");
    // Served by the proxy under the domain: its address, and no word about localhost.
    const proxied = gen({ services: ["n8n"], proxy: "caddy", domain: "example.com" }).files["README.md"]!;
    expect(proxied).toContain("| https://n8n.example.com |");
    expect(proxied).not.toContain("From another machine");
    expect(proxied).not.toContain("is not used");
  });

  test("services that share a default host port get the later one moved, and its URLs and skill follow it", () => {
    const g = gen({ services: ["searxng", "nextcloud"] });
    expect(g.metadata.warnings).toContainEqual({ code: "PORT_CONFLICT_RESOLVED", message: "Host port 8080 of Nextcloud is used by SearXNG; Nextcloud is published on 8081 instead.", service: "nextcloud" });
    const c = composeOf(g.files).services;
    expect(c.searxng.ports).toEqual(["8080:8080"]);
    expect(c.nextcloud.ports).toEqual(["8081:80"]);
    expect(parseEnvValues(g.files[".env"]!).get("NEXTCLOUD_PUBLIC_URL")).toBe("http://localhost:8081");
    expect(g.files["skills/nextcloud/SKILL.md"]).toContain("`http://127.0.0.1:8081`");
    expect(g.files["skills/searxng/SKILL.md"]).toContain("`http://127.0.0.1:8080`");
    // Alone, each keeps its own default; no token is ever left in a skill.
    expect(gen({ services: ["nextcloud"] }).files["skills/nextcloud/SKILL.md"]).toContain("`http://127.0.0.1:8080`");
    for (const files of [g.files, gen({ preset: "content-creator" }).files]) {
      for (const [path, text] of Object.entries(files)) if (path.startsWith("skills/")) expect(text, path).not.toContain("{{port");
    }
  });

  test("depends_on waits for healthy dependencies", () => {
    const c = composeOf(gen({ services: ["n8n"] }).files);
    expect(c.services.n8n.depends_on).toEqual({ postgresql: { condition: "service_healthy" } });
    expect(c.services.postgresql.healthcheck).toBeDefined();
  });

  test("a sidecar waits for what its service waits for (a worker uses the same database), and for the siblings it uses", () => {
    const c = composeOf(gen({ services: ["authentik"] }).files);
    expect(c.services["authentik-worker"].depends_on).toEqual({ postgresql: { condition: "service_healthy" } });
    // Every sidecar of every service: the same services, with the same conditions, as its service,
    // plus the sibling sidecars its after list names (healthy when they have a check).
    for (const service of getCatalog().services.filter((s) => s.sidecars?.length && s.id !== "core")) {
      const all = composeOf(gen({ services: [service.id], platform: service.platforms[0] }).files).services;
      const own = Object.fromEntries(Object.entries(all[service.id].depends_on ?? {}).filter(([name]) => !name.startsWith(`${service.id}-`)));
      for (const sc of service.sidecars!) {
        const waitFor = (x: Sidecar) => (x.runsOnce ? "service_completed_successfully" : x.healthCheck ? "service_healthy" : "service_started");
        const siblings = Object.fromEntries((sc.after ?? []).map((name) => [`${service.id}-${name}`, { condition: waitFor(service.sidecars!.find((x) => x.name === name)!) }]));
        expect(all[`${service.id}-${sc.name}`].depends_on ?? {}, `${service.id}-${sc.name}`).toEqual({ ...own, ...siblings });
      }
    }
    // AppFlowy's auth server starts once AppFlowy's own PostgreSQL answers, not before.
    expect(composeOf(gen({ services: ["appflowy"] }).files).services["appflowy-gotrue"].depends_on?.["appflowy-postgres"]).toEqual({ condition: "service_healthy" });
  });

  test("a job sidecar runs once, before its service and the siblings that name it: it hands a new volume to a non-root image's user", () => {
    const jobs = getCatalog().services.flatMap((s) => (s.sidecars ?? []).filter((sc) => sc.runsOnce).map((sc) => [s, sc] as const));
    expect(jobs.map(([s, sc]) => `${s.id}-${sc.name}`).sort()).toEqual(["coolify-volume-owner", "dify-storage-owner", "flowise-data-owner", "pentestagent-loot-owner"]);
    for (const [s, sc] of jobs) {
      const all = composeOf(gen({ services: [s.id], platform: s.platforms[0] }).files).services;
      const job = `${s.id}-${sc.name}`;
      // Restarted by a policy, a finished job would run for ever; its service would wait for ever.
      expect(all[job].restart, job).toBe("no");
      expect(all[job].healthcheck, job).toBeUndefined();
      expect(all[s.id].depends_on?.[job], job).toEqual({ condition: "service_completed_successfully" });
      for (const sibling of (s.sidecars ?? []).filter((x) => x.after?.includes(sc.name))) {
        expect(all[`${s.id}-${sibling.name}`].depends_on?.[job], sibling.name).toEqual({ condition: "service_completed_successfully" });
      }
      expect(sc.volumes?.length, job).toBeGreaterThan(0);
    }
    // Coolify's six folders, and Dify's storage for its api and worker (uid 1001 since Dify 1.10).
    const coolify = composeOf(gen({ services: ["coolify"] }).files).services;
    const sources = (volumes: string[] = []) => volumes.map((v) => v.split(":")[0]).filter((v) => v.startsWith("coolify-")).sort();
    expect(sources(coolify["coolify-volume-owner"]!.volumes as string[])).toEqual(sources(coolify.coolify!.volumes as string[]));
    const dify = composeOf(gen({ services: ["dify"] }).files).services;
    for (const worker of ["dify-api", "dify-worker"]) expect(dify[worker]!.depends_on?.["dify-storage-owner"], worker).toEqual({ condition: "service_completed_successfully" });
    // The loader refuses a job with a health check: compose waits for its exit, never reads it.
    const files = readTextTree("catalog");
    const pentest = files["services/pentestagent.yaml"];
    const checked = pentest.replace("    runsOnce: true\n", "    runsOnce: true\n    healthCheck: { test: [\"CMD\", \"true\"], interval: 5s, timeout: 2s, retries: 3 }\n");
    expect(checked).not.toBe(pentest);
    expect(() => loadCatalog({ ...files, "services/pentestagent.yaml": checked })).toThrow(/sidecar loot-owner runs once and cannot have a health check/);
  });

  test("caddy with a domain maps <service>.<domain> to container:port with automatic TLS", () => {
    const g = gen({ services: ["n8n"], proxy: "caddy", domain: "example.com" });
    expect(g.files.Caddyfile).toContain("n8n.example.com {");
    expect(g.files.Caddyfile).toContain("reverse_proxy n8n:5678");
    expect(g.files.Caddyfile).not.toContain("auto_https off");
    expect(composeOf(g.files).services.caddy.volumes).toContain("./Caddyfile:/etc/caddy/Caddyfile:ro");
    const local = gen({ services: ["n8n"], proxy: "caddy" });
    expect(local.files.Caddyfile).toContain("http://n8n.localhost {");
  });

  test("traefik gets static + dynamic config and router labels", () => {
    const g = gen({ services: ["n8n"], proxy: "traefik", domain: "example.com" });
    expect(g.files["traefik/traefik.yml"]).toContain("letsencrypt");
    // The ACME account e-mail cannot come from .env (Traefik reads one static source): the file
    // and the bundle README say where to put one's own.
    expect(parseYaml(g.files["traefik/traefik.yml"]!).certificatesResolvers.letsencrypt.acme.email).toBe("admin@example.com");
    expect(g.files["traefik/traefik.yml"]).toContain("# Let's Encrypt account e-mail: certificatesResolvers.letsencrypt.acme.email below");
    expect(g.files["README.md"]).toContain("Let's Encrypt knows you by the e-mail in `traefik/traefik.yml`");
    expect(gen({ services: ["n8n"], proxy: "caddy", domain: "example.com" }).files["README.md"]).toContain("Let's Encrypt knows you by `CADDY_ACME_EMAIL` in `.env`");
    expect(gen({ services: ["n8n"], proxy: "traefik" }).files["traefik/traefik.yml"]).not.toContain("account e-mail");
    const middlewares = parseYaml(g.files["traefik/dynamic/middlewares.yml"]!) as any;
    // nosniff and HSTS for every app; framing and referrer policy stay each app's own (Traefik
    // would replace what the app sends: a blanket DENY blanks same-origin previews and embeds).
    expect(middlewares.http.middlewares["security-headers"].headers).toEqual({ contentTypeNosniff: true, stsSeconds: 31536000 });
    const labels = composeOf(g.files).services.n8n.labels as Record<string, string>;
    expect(labels["traefik.http.routers.n8n.rule"]).toBe("Host(`n8n.example.com`)");
    expect(labels["traefik.http.services.n8n.loadbalancer.server.port"]).toBe("5678");
  });

  test("prometheus and grafana provisioning are written and mounted", () => {
    const g = gen({ preset: "devops" });
    expect(g.files["prometheus/prometheus.yml"]).toContain("job_name: prometheus");
    expect(g.files["grafana/provisioning/datasources/datasources.yml"]).toContain("http://prometheus:9090");
    expect(JSON.parse(g.files["grafana/dashboards/stack-overview.json"]).panels.length).toBeGreaterThan(0);
    const c = composeOf(g.files);
    expect(c.services.prometheus.volumes).toContain("./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro");
    expect(c.services.grafana.volumes).toContain("./grafana/provisioning:/etc/grafana/provisioning:ro");
  });

  test("skills of packs and services are written and mounted into the gateway", () => {
    const g = gen({ skillPacks: ["research"] });
    for (const k of catalog.packsById.get("research-agent")!.skills) expect(g.files[`skills/${k}/SKILL.md`]).toBeDefined();
    expect(composeOf(g.files).services.core.volumes).toContain("./skills:/home/node/.openclaw/skills:ro");
  });

  test("every $VARIABLE a skill's calls read from the gateway is one the gateway is given", () => {
    // The variables of the gateway in a bundle of these services, and what their skills use.
    const g = gen({ services: ["code-server", "lasuite-meet-frontend", "n8n", "open-webui"], skillPacks: ["devops", "ai-playground"] });
    const coreEnv = composeOf(g.files).services.core.environment as Record<string, string>;
    for (const [skill, name] of [["code-server", "CODE_SERVER_PUBLIC_URL"], ["lasuite-meet-frontend", "LASUITE_MEET_PUBLIC_URL"], ["devops-workflow", "N8N_API_KEY"], ["ai-playground-workflow", "OPEN_WEBUI_API_KEY"]]) {
      expect(g.files[`skills/${skill}/SKILL.md`], skill).toContain(`$${name}`);
      expect(coreEnv[name], name).toBeDefined();
    }
    // No skill builds a link from a $DOMAIN nobody sets.
    for (const [path, text] of Object.entries(g.files)) if (path.startsWith("skills/")) expect(text, path).not.toContain("$DOMAIN");
    // The index says which clients besides curl the calls need, and that docker compose calls are the host's.
    expect(g.files["skills/README.md"]).toContain("Besides curl, the calls in these skills use `jq`");
    expect(g.files["skills/README.md"]).toContain("the gateway has no Docker access");
    // Each note stands on its own: a skill with docker compose calls only still gets the host note,
    // and a client after a variable prefix on a continuation line counts.
    const ffmpeg = gen({ services: ["ffmpeg"] }).files["skills/README.md"]!;
    expect(ffmpeg).toContain("the gateway has no Docker access");
    expect(ffmpeg).not.toContain("Besides curl");
    expect(gen({ services: ["minio"] }).files["skills/README.md"]).toContain("use `mc`, `aws`");
    // git, ffmpeg and temporal in the gateway's own calls are clients too.
    expect(gen({ services: ["temporal"] }).files["skills/README.md"]).toContain("`temporal`");
    expect(gen({ services: ["stream-gateway"] }).files["skills/README.md"]).toContain("`ffmpeg`");
    expect(gen({ services: ["gitea"] }).files["skills/README.md"]).toContain("`git`");
    // With PostgreSQL on the host, what a skill's new database or user needs to be let in.
    const native = gen({ services: ["n8n"], deployment: "bare-metal" }).files["skills/README.md"]!;
    expect(native).toContain("PostgreSQL runs on the host here");
    expect(native).toContain("host <database> <user> 172.16.0.0/12 scram-sha-256");
    expect(gen({ services: ["n8n"] }).files["skills/README.md"]).not.toContain("PostgreSQL runs on the host");
  });

  test("bare-metal writes install scripts; native services leave compose and are reached through host-gateway", () => {
    const g = gen({ services: ["redis", "n8n"], deployment: "bare-metal" });
    expect(g.files["install.sh"]).toContain("bash ./native/redis.sh");
    expect(g.files["native/redis.sh"]).toMatch(/apt-get install -y --no-install-recommends .*redis-server$/m);
    const c = composeOf(g.files);
    expect(c.services.redis).toBeUndefined();
    expect(c.services.n8n.extra_hosts).toContain("redis:host-gateway");
    expect(bundleProblems(g.files)).toEqual([]);
  });

  test("bare-metal: every container, sidecars included, reaches the native services by name", () => {
    // dify-api and dify-worker talk to Redis, openpanel's API and worker to PostgreSQL and Redis,
    // authentik's worker to PostgreSQL.
    for (const services of [["dify", "openpanel"], ["authentik"]]) {
      const g = gen({ services, deployment: "bare-metal" });
      const c = composeOf(g.files);
      const native = ["postgresql", "redis"].filter((id) => g.files[`native/${id}.sh`] !== undefined);
      expect(native.length).toBeGreaterThan(0);
      for (const id of native) expect(c.services[id]).toBeUndefined();
      const names = Object.keys(c.services);
      expect(names.some((n) => (c.services[n].labels as Record<string, string>)["dev.stackgen.sidecar"] !== undefined)).toBe(true);
      for (const name of names) expect({ name, hosts: c.services[name].extra_hosts }).toEqual({ name, hosts: native.map((id) => `${id}:host-gateway`) });
    }
  });

  test("bare-metal skills call the natively installed services on the host, not in containers compose does not have", () => {
    let rewritten = 0;
    for (const preset of catalog.presets) {
      const g = gen({ preset: preset.id, deployment: "bare-metal" });
      const native = ["postgresql", "redis"].filter((id) => g.files[`native/${id}.sh`] !== undefined);
      for (const [path, text] of Object.entries(g.files)) {
        if (!path.startsWith("skills/")) continue;
        for (const id of native) expect({ path, call: text.includes(`docker compose exec -T ${id} `) }).toEqual({ path, call: false });
        if (native.includes("redis") && text.includes(`REDISCLI_AUTH="$(sed -n 's/^REDIS_PASSWORD=//p' .env)" redis-cli`)) rewritten++;
        if (native.includes("postgresql") && text.includes("sudo -u postgres psql")) rewritten++;
      }
    }
    expect(rewritten).toBeGreaterThan(1);
    // In containers, as written.
    expect(gen({ preset: "devops" }).files["skills/postgresql/SKILL.md"]).toContain("docker compose exec -T postgresql psql -U postgres");
  });

  test("the native install scripts read .env as data: a value never runs as shell code, and only the variables they need are set", async () => {
    const g = gen({ services: ["redis", "n8n"], deployment: "bare-metal" });
    const script = g.files["native/redis.sh"]!;
    expect(script).not.toMatch(/^\s*(\.|source)\s+\S*\.env/m);
    const loader = script.slice(script.indexOf("# The values this script needs"), script.indexOf("done < ./.env") + "done < ./.env".length);
    const dir = mkdtempSync(join(tmpdir(), "stackgen-envloader-"));
    try {
      const pwned = join(dir, "pwned");
      // An export shared as a template keeps its .env values: they may be hostile.
      writeFileSync(join(dir, ".env"), [
        "# comment",
        `SCHED_TZ=$(touch ${pwned})`,
        `OTHER=\`touch ${pwned}\``,
        "PATH=/tmp/evil",
        `REDIS_PASSWORD='pa$(touch ${pwned})ss"word'`,
        "",
      ].join("\n"));
      const r = await run(["bash", "-c", `set -euo pipefail; cd "${dir}"; ${loader}; printf '%s\\n' "$REDIS_PASSWORD" "$PATH" "\${SCHED_TZ:-unset}"`]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split("\n").slice(0, 3)).toEqual([`pa$(touch ${pwned})ss"word`, process.env.PATH ?? "", "unset"]);
      expect(existsSync(pwned)).toBe(false);
      // A $ compose would read as a variable (unquoted, or unescaped in double quotes): the
      // containers would get another value, so the script stops and says how to write it.
      // An escaped backslash before a $ leaves the $ unescaped: "a\\$b" is a\ and $b to compose.
      for (const value of [`"pa$(touch ${pwned})ss"`, "Pa$sw0rd", '"ab$HOME"', '"a\\\\$b"', '"x\\\\\\\\$HOME"', '"octal\\0044HOME"']) {
        writeFileSync(join(dir, ".env"), `REDIS_PASSWORD=${value}\n`);
        const refused = await run(["bash", "-c", `set -euo pipefail; cd "${dir}"; ${loader}; echo read`]);
        expect(refused.code, value).toBe(1);
        expect(refused.stdout).toBe("");
        expect(refused.stderr).toContain("REDIS_PASSWORD in .env holds a $ that Docker Compose reads as a variable");
        expect(existsSync(pwned)).toBe(false);
      }
      // An assignment after a closing quote, which compose reads and this script would not: refused.
      writeFileSync(join(dir, ".env"), 'REDIS_PASSWORD=first\nOTHER="x" REDIS_PASSWORD=smuggled\n');
      const smuggled = await run(["bash", "-c", `set -euo pipefail; cd "${dir}"; ${loader}; echo read`]);
      expect([smuggled.code, smuggled.stdout]).toEqual([1, ""]);
      expect(smuggled.stderr).toContain("OTHER in .env is followed on its line by more than a comment");
      // The values as compose reads them (parseEnvText), quoting, escapes and comments included.
      const lines = [
        `REDIS_PASSWORD="it's \\"x\\" \\$y\\\\z"`,
        "REDIS_PASSWORD=abc # my note",
        "REDIS_PASSWORD='q w' # note",
        "REDIS_PASSWORD=plain\r",
        "export REDIS_PASSWORD=exported",
        'REDIS_PASSWORD="with # hash"',
        // Escapes back to back, at the start and the end; a long value (a certificate) read whole.
        'REDIS_PASSWORD="\\$\\\\\\"x\\"\\\\"',
        // Every escape compose reads: control characters, and octal bytes (three digits up to 377).
        'REDIS_PASSWORD="\\t tab\\r\\a\\b\\f\\v\\q"',
        'REDIS_PASSWORD="\\0101\\08x\\0\\0400\\01234\\0351\\0377\\0200"',
        // Trailing line breaks are the value's; only a space before # starts a comment.
        'REDIS_PASSWORD="ends in breaks\\n\\n"',
        "REDIS_PASSWORD=tab\t#not-a-comment # a comment",
        // A backslash before a single quote keeps it and is dropped; any other stays.
        "REDIS_PASSWORD='it\\'s a \\\\ and \\x'",
        // `export` with a tab or spaces, and `:` for `=`, as compose takes them.
        "export\t  REDIS_PASSWORD=tabbed",
        "REDIS_PASSWORD: colon-separated",
        'REDIS_PASSWORD="quoted" # a comment after the quote',
        `REDIS_PASSWORD="${"k3y-\\$".repeat(5000)}end"`,
        // A quoted value over several lines is read whole, and a line inside another variable's
        // value that looks like an assignment is that value's text, not an assignment.
        'REDIS_PASSWORD="first\nsecond \\" still\nlast"',
        "REDIS_PASSWORD='one\ntwo'",
        'REDIS_PASSWORD=kept\nCERT="-----BEGIN-----\nREDIS_PASSWORD=smuggled\n-----END-----"',
        "  REDIS_PASSWORD = spaced",
        "REDIS_PASSWORD=set\n# REDIS_PASSWORD=\"commented\nREDIS_PASSWORD",
      ];
      for (const line of lines) {
        writeFileSync(join(dir, ".env"), `${line}\n`);
        const read = await run(["bash", "-c", `set -euo pipefail; cd "${dir}"; ${loader}; printf '%s' "$REDIS_PASSWORD"`]);
        expect(read.code, read.stderr).toBe(0);
        expect(read.stdout, line).toBe(parseEnvText(line.replace(/\r$/, "")).find((v) => v.key === "REDIS_PASSWORD")!.value);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("bare-metal PostgreSQL admits password logins from both of Docker's default address pools for the stack's own databases and users only, once each", async () => {
    const g = gen({ services: ["n8n"], deployment: "bare-metal" });
    const lines = g.files["native/postgresql.sh"]!.split("\n");
    const hba = lines.filter((line) => line.includes("pg_hba.conf"));
    expect(hba).toHaveLength(3);
    const dir = mkdtempSync(join(tmpdir(), "stackgen-pghba-"));
    try {
      mkdirSync(join(dir, "postgres", "init"), { recursive: true });
      writeFileSync(join(dir, "postgres", "init", "10-databases.sh"), g.files["postgres/init/10-databases.sh"]!);
      // An earlier stackgen's lines let every user in: they go. The file's last line lacks its
      // line break (edited by hand): the first line added must not be joined onto it.
      writeFileSync(join(dir, "pg_hba.conf"), "host all all 172.16.0.0/12 scram-sha-256\nhost all all 192.168.0.0/16 scram-sha-256\nlocal all postgres peer\nhost all all 127.0.0.1/32 scram-sha-256");
      // Run twice: a second install must not add the lines again.
      for (let i = 0; i < 2; i++) {
        const r = await run(["bash", "-c", `set -euo pipefail; cd "${dir}"; CONF="${dir}"; ${hba.join("\n")}`]);
        expect(r.code, r.stderr).toBe(0);
      }
      const written = (await Bun.file(join(dir, "pg_hba.conf")).text()).trim().split("\n");
      expect(written).toEqual([
        "local all postgres peer", "host all all 127.0.0.1/32 scram-sha-256",
        ...["172.16.0.0/12", "192.168.0.0/16"].flatMap((net) => ["agent agent", "n8n n8n"].map((pair) => `host ${pair} ${net} scram-sha-256`)),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Roles get SCRAM passwords, which those lines check, also where the server defaults to md5.
    expect(lines.find((line) => line.includes("conf.d/stackgen.conf"))).toContain("password_encryption = 'scram-sha-256'");
  });

  test("the README says what the bundle holds: caps over all of a service's containers, the secrets a --no-secrets bundle lacks, moving tags, and only the native services it installs", () => {
    const capped = gen({ services: ["dify"], memoryLimits: true });
    const compose = composeOf(capped.files);
    const difyContainers = Object.entries(compose.services).filter(([name]) => name === "dify" || name.startsWith("dify-"));
    const sum = difyContainers.reduce((total, [, svc]) => total + parseInt(String((svc as { deploy?: { resources?: { limits?: { memory?: string } } } }).deploy?.resources?.limits?.memory ?? "0"), 10), 0);
    expect(difyContainers.length).toBeGreaterThan(1);
    expect(capped.files["README.md"]).toContain(`at most ${sum} MB over its ${difyContainers.length} containers`);

    const bare = gen({ services: ["supabase"], generateSecrets: false });
    const readme = bare.files["README.md"]!;
    const before = readme.slice(readme.indexOf("## Before the first start"), readme.indexOf("## Start"));
    for (const [name, value] of parseEnvValues(bare.files[".env"]!)) {
      if (/PASSWORD|SECRET|TOKEN|_KEY$/.test(name) && value === "") expect(before, name).toContain(`\`${name}\``);
    }
    expect(before).toContain("stackgen generate --from stackgen.json --dir . --secrets");
    // Each in the form it needs: a hex key of its length, a password with every class.
    const forms = gen({ services: ["librechat", "nocodb"], generateSecrets: false }).files["README.md"]!;
    expect(forms).toContain("`LIBRECHAT_CREDS_KEY` (64 hex digits)");
    expect(forms).toContain("`LIBRECHAT_CREDS_IV` (32 hex digits)");
    expect(forms).toMatch(/`NOCODB_ADMIN_PASSWORD` \(32 or more letters and digits, with an upper-case letter/);

    const floating = catalog.services.find((svc) => svc.floatingTag)!;
    const moving = gen({ services: [floating.id] }).files["README.md"]!;
    expect(moving).toContain(`except ${floating.name} (upstream publishes only a moving tag`);
    expect(moving).toContain("CORE_VERSION=latest");
    expect(gen({ services: ["redis"], coreVersion: "2026.1.1" }).files["README.md"]).toContain("the gateway is pinned by `CORE_VERSION`");
    expect(gen({ services: ["redis"], coreVersion: "main" }).files["README.md"]).toContain("`CORE_VERSION=main` in `.env`, a moving tag");

    const redisOnly = gen({ services: ["redis"], deployment: "bare-metal" }).files["README.md"]!;
    expect(redisOnly).toContain("an existing Redis is changed");
    expect(redisOnly).not.toMatch(/PostgreSQL|5432|pg_hba/);
    expect(redisOnly).toContain("to any port 6379 proto tcp");
    expect(redisOnly).toContain("tail -n 100 /var/log/redis/redis-server.log");
    const both = gen({ services: ["redis", "n8n"], deployment: "bare-metal" }).files["README.md"]!;
    expect(both).toContain("to any port 5432,6379 proto tcp");
    expect(both).toContain("tail -n 100 /var/log/postgresql/postgresql-*-main.log");

    // First-start steps sit under "Right after the first start": none says "before"; a proxy is named
    // only as the stack's, whichever it is.
    for (const svc of catalog.services) expect(svc.firstStart ?? "", svc.id).not.toMatch(/^Before the first start/);
    expect(catalog.servicesById.get("homeassistant")!.knownLimits).not.toContain("Traefik");
  });

  test("the gateway's calls to Ghost behind an https domain are asked as if over HTTPS (a plain-HTTP call is redirected there)", () => {
    const ghost = gen({ services: ["ghost"], proxy: "caddy", domain: "example.com" }).files["skills/ghost/SKILL.md"]!;
    const calls = ghost.split("\n").filter((line) => line.startsWith("curl ") && line.includes("$GHOST_URL"));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const call of calls) expect(call).toContain("-H 'X-Forwarded-Proto: https'");
  });

  test("bare-metal scripts check the host before anything is installed, ask nothing, make a UTF8 cluster, and psql reaches this host's cluster whatever PG* the caller set", async () => {
    const g = gen({ services: ["n8n", "redis"], deployment: "bare-metal" });
    for (const id of ["postgresql", "redis"]) {
      const script = g.files[`native/${id}.sh`]!;
      const checkExit = script.indexOf('[ "${1:-}" != "--check" ] || exit 0');
      // docker0's address and the tools the install uses are checked by --check (install.sh runs
      // every script so first): a host without them is refused before a package is installed.
      for (const needed of ["GW=$(ip", "docker0 has no IPv4 address", "command -v \"$TOOL\""]) {
        expect(script.indexOf(needed), `${id}: ${needed}`).toBeGreaterThan(-1);
        expect(script.indexOf(needed), `${id}: ${needed}`).toBeLessThan(checkExit);
      }
      expect(script.indexOf("apt-get install")).toBeGreaterThan(checkExit);
      expect(script).toContain("DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l ");
    }
    const pg = g.files["native/postgresql.sh"]!;
    expect(pg).toMatch(/LC_ALL=C.UTF-8 apt-get install -y --no-install-recommends .*postgresql$/m);
    const unsetLine = pg.split("\n").find((line) => line.startsWith("unset "))!;
    const unset = pg.indexOf(unsetLine);
    expect(unset).toBeGreaterThan(0);
    expect(unset).toBeLessThan(pg.indexOf("psql"));
    // Every PG* variable goes (PGHOST steers psql elsewhere, PGCHANNELBINDING=require fails it), none other.
    const left = await run(["bash", "-c", `set -euo pipefail; export PGHOST=db.example PGCHANNELBINDING=require PGSSLNEGOTIATION=direct KEEP=1; ${unsetLine}; env | grep -E '^(PG|KEEP)' | sort || true`]);
    expect(left.code, left.stderr).toBe(0);
    expect(left.stdout.trim()).toBe("KEEP=1");
    // Nothing set at all is fine too (set -u, no PG* in the environment).
    expect((await run(["env", "-i", "bash", "-c", `set -euo pipefail; ${unsetLine}; echo done`])).stdout.trim()).toBe("done");
    // An upgrade of a package whose config file the script edited keeps the edited file, unasked.
    expect(pg).toContain("-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold");
    expect(g.files["install.sh"]).toContain("DEBIAN_FRONTEND=noninteractive apt-get update");
    // Redis's include is not joined onto a last line without its line break, and is added once.
    const include = g.files["native/redis.sh"]!.split("\n").find((line) => line.includes("include /etc/redis/stackgen.conf"))!;
    const dir = mkdtempSync(join(tmpdir(), "stackgen-redisconf-"));
    try {
      writeFileSync(join(dir, "redis.conf"), "appendonly no");
      for (let i = 0; i < 2; i++) {
        const r = await run(["bash", "-c", `set -euo pipefail\n${include.replaceAll("/etc/redis/redis.conf", join(dir, "redis.conf"))}`]);
        expect(r.code, r.stderr).toBe(0);
      }
      expect(readFileSync(join(dir, "redis.conf"), "utf8")).toBe("appendonly no\ninclude /etc/redis/stackgen.conf\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("bare-metal PostgreSQL configures the cluster on port 5432, where its roles are made, when a host has two", async () => {
    const lines = gen({ services: ["n8n"], deployment: "bare-metal" }).files["native/postgresql.sh"]!.split("\n");
    const pick = lines.filter((line) => line.startsWith("CONF=") || line.startsWith('[ -n "$CONF" ]'));
    expect(pick).toHaveLength(2);
    const etc = mkdtempSync(join(tmpdir(), "stackgen-pgclusters-"));
    try {
      const cluster = (version: string, port: number | undefined) => {
        mkdirSync(join(etc, version, "main"), { recursive: true });
        writeFileSync(join(etc, version, "main", "postgresql.conf"), `data_directory = '/var/lib/postgresql/${version}/main'\n${port === undefined ? "" : `port = ${port}\t\t\t\t# (change requires restart)\n`}`);
      };
      const chosen = async () => {
        const r = await run(["bash", "-c", `set -euo pipefail\n${pick.join("\n").replaceAll("/etc/postgresql", etc)}\necho "$CONF"`]);
        expect(r.code, r.stderr).toBe(0);
        return r.stdout.trim();
      };
      cluster("15", 5432);
      cluster("17", 54321);
      expect(await chosen()).toBe(join(etc, "15", "main"));
      // None on 5432 (a port set elsewhere): the newest, as before.
      rmSync(join(etc, "15"), { recursive: true });
      cluster("16", undefined);
      expect(await chosen()).toBe(join(etc, "17", "main"));
    } finally {
      rmSync(etc, { recursive: true, force: true });
    }
  });

  test("stackgen.json is the v2 config file", () => {
    const cfg = JSON.parse(gen({ services: ["n8n"], deployment: "bare-metal" }).files["stackgen.json"]);
    expect(cfg).toMatchObject({ configVersion: 2, projectName: "t", services: ["postgresql", "n8n"], deploymentType: "bare-metal" });
  });

  test("the cached JSON of the files is JSON.stringify of the files, in ASCII (\\u escapes past it), and its pieces join to it", async () => {
    for (const body of [{ services: ["redis"] }, { preset: "devops", domain: "example.com" }, { services: ["n8n"], generateSecrets: false }]) {
      const first = gen(body);
      const again = gen(body); // served from the render cache
      for (const g of [first, again]) {
        expect(g.filesJson()).toBe(asciiJson(JSON.stringify(g.files)));
        // The server sends the pieces (cached bytes and this generation's secrets) one after another.
        expect(await new Blob(g.filesJsonPieces()).text()).toBe(g.filesJson());
        expect(JSON.parse(g.filesJson())).toEqual(g.files);
        expect(/[^\x00-\x7f]/.test(g.filesJson())).toBe(false);
      }
    }
    // The devops preset's skills README holds a "…": the escape is really there.
    expect(JSON.stringify(gen({ preset: "devops" }).files)).toContain("…");
  });

  test("generation is deterministic apart from secrets and generatedAt", () => {
    const a = generateBundle({ projectName: "d", preset: "researcher" }, catalog);
    const b = generateBundle({ projectName: "d", preset: "researcher" }, catalog);
    for (const path of Object.keys(a.files)) if (path !== ".env") expect(b.files[path], path).toBe(a.files[path]);
    expect(a.files[".env"]).not.toBe(b.files[".env"]);
  });

  test("zip: every entry under <projectName>/, scripts 0755, .env 0600", () => {
    const g = gen({ services: ["n8n", "redis"], deployment: "bare-metal" });
    const zip = zipBundle("demo", g.files);
    const entries = unzipSync(zip);
    expect(Object.keys(entries).sort()).toEqual(Object.keys(g.files).map((p) => `demo/${p}`).sort());
    expect(strFromU8(entries["demo/docker-compose.yml"])).toBe(g.files["docker-compose.yml"]);
    // Modes come from the central directory's external attributes.
    const modes = zipModes(zip);
    expect(modes.get("demo/install.sh")).toBe(0o755);
    expect(modes.get("demo/.env")).toBe(0o600);
    expect(modes.get("demo/README.md")).toBe(0o644);
  });
});

describe("config migrations", () => {
  test("a v1 config is migrated to v2 (deploymentType defaults to docker)", () => {
    const g = gen({ configVersion: 1, services: ["redis"] });
    expect(JSON.parse(g.files["stackgen.json"])).toMatchObject({ configVersion: 2, deploymentType: "docker" });
    const bm = gen({ configVersion: 1, services: ["redis"], deploymentType: "bare-metal" });
    expect(bm.files["install.sh"]).toBeDefined();
  });

  test("the existing deploymentType is kept, local included (SPEC §9.7), and local builds what docker builds", () => {
    const docker = gen({ services: ["redis"], deployment: "docker" });
    for (const asked of [{ configVersion: 1, deploymentType: "local" }, { configVersion: 2, deploymentType: "local" }, { deployment: "local" }]) {
      const g = gen({ services: ["redis"], ...asked });
      expect(JSON.parse(g.files["stackgen.json"]).deploymentType, JSON.stringify(asked)).toBe("local");
      expect(g.files["install.sh"]).toBeUndefined();
      expect(g.files["docker-compose.yml"]).toBe(docker.files["docker-compose.yml"]);
    }
  });

  test("an unknown version has no migration path", () => {
    expect(() => gen({ configVersion: 7, services: ["redis"] })).toThrow(/^No migration path from config version 7/);
  });

  test("a migrated config is validated per field", () => {
    try {
      gen({ configVersion: 1, services: "redis", deploymentType: "cloud" });
      throw new Error("expected failure");
    } catch (e) {
      const fields = (e as StackgenError).details!.map((d) => d.field).sort();
      expect(fields).toEqual(["deploymentType", "services"]);
    }
  });
});

/** Unix modes of a zip's entries (central directory, external attributes >> 16). */
function zipModes(zip: Uint8Array): Map<string, number> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const out = new Map<string, number>();
  let eocd = zip.length - 22;
  while (view.getUint32(eocd, true) !== 0x06054b50) eocd--;
  let p = view.getUint32(eocd + 16, true);
  const count = view.getUint16(eocd + 10, true);
  for (let i = 0; i < count; i++) {
    const nameLen = view.getUint16(p + 28, true), extraLen = view.getUint16(p + 30, true), commentLen = view.getUint16(p + 32, true);
    const attrs = view.getUint32(p + 38, true);
    out.set(new TextDecoder().decode(zip.subarray(p + 46, p + 46 + nameLen)), (attrs >>> 16) & 0o777);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

describe("reading a generated .env without its stack", () => {
  test("the generated secrets are the ones its comments call generated, for every preset", () => {
    for (const preset of getCatalog().presets) {
      const g = generateBundle({ projectName: "s", preset: preset.id }, getCatalog());
      expect([...generatedSecretNames(g.files[".env"]!)].sort()).toEqual([...g.secretNames].sort());
    }
  });
});

describe("Watchtower", () => {
  test("watches this stack only, leaves the databases to stackgen update and keeps old images", () => {
    const { files } = generateBundle({ projectName: "wt", services: ["watchtower", "n8n", "qdrant"] }, getCatalog());
    const compose = parseYaml(files["docker-compose.yml"]!) as { services: Record<string, { labels: Record<string, string>; environment?: Record<string, string> }> };
    const scope = "com.centurylinklabs.watchtower.scope";
    const optOut = "com.centurylinklabs.watchtower.enable";
    for (const [name, service] of Object.entries(compose.services)) expect([name, service.labels[scope]]).toEqual([name, "wt"]);
    expect(compose.services.watchtower!.environment).toMatchObject({ WATCHTOWER_SCOPE: "wt", WATCHTOWER_CLEANUP: "false" });
    expect(compose.services.postgresql!.labels[optOut]).toBe("false");
    expect(compose.services.qdrant!.labels[optOut]).toBe("false");
    expect(compose.services.n8n!.labels[optOut]).toBeUndefined();
    // An app's own database sidecar is left alone too; the app itself is updated.
    const chat = parseYaml(generateBundle({ projectName: "wt", services: ["watchtower", "rocketchat"] }, getCatalog()).files["docker-compose.yml"]!) as typeof compose;
    expect(chat.services["rocketchat-mongodb"]!.labels[optOut]).toBe("false");
    expect(chat.services.rocketchat!.labels[optOut]).toBeUndefined();
    // Stores filed under other categories: Meilisearch (search) and SigNoz's ZooKeeper sidecar.
    const stores = parseYaml(generateBundle({ projectName: "wt", services: ["watchtower", "meilisearch", "signoz"] }, getCatalog()).files["docker-compose.yml"]!) as typeof compose;
    expect(stores.services.meilisearch!.labels[optOut]).toBe("false");
    expect(stores.services["signoz-zookeeper"]!.labels[optOut]).toBe("false");
    expect(stores.services.signoz!.labels[optOut]).toBeUndefined();
    // Without Watchtower no container carries its labels.
    expect(generateBundle({ projectName: "plain", services: ["n8n"] }, getCatalog()).files["docker-compose.yml"]).not.toContain("watchtower");
  });
});

/** Runs `caddyfile` (sites without a domain) with caddy on this machine: its sites on a free
 *  port, every upstream on a local server answering with `upstream`. `ask(host, path)` waits for
 *  caddy to listen, then answers what it sends back. */
async function throughLocalCaddy(
  caddyfile: string,
  upstream: (r: Request) => Response,
  work: (ask: (host: string, path: string, headers?: Record<string, string>) => Promise<Response>) => Promise<void>,
): Promise<void> {
  const app = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: upstream });
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  const dir = mkdtempSync(join(tmpdir(), "stackgen-caddy-"));
  // The generated file, pointed at this machine: sites on a free port, upstreams on the local server.
  writeFileSync(join(dir, "Caddyfile"), caddyfile
    .replace("auto_https off", "auto_https off\n\tadmin off")
    .replaceAll(/^(http:\/\/[a-z0-9-]+\.localhost) \{/gm, `$1:${port} {`)
    .replaceAll(/reverse_proxy [a-z0-9-]+:\d+/g, `reverse_proxy 127.0.0.1:${app.port}`));
  const caddy = Bun.spawn(["caddy", "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], { stdout: "ignore", stderr: "pipe" });
  const ask = async (host: string, path: string, headers: Record<string, string> = {}) => {
    for (let i = 0; i < 100; i++) {
      try {
        return await fetch(`http://127.0.0.1:${port}${path}`, { headers: { ...headers, host: `${host}:${port}` } });
      } catch {
        await Bun.sleep(50); // not listening yet
      }
    }
    throw new Error(`caddy did not answer for ${host}`);
  };
  try {
    await work(ask);
  } finally {
    caddy.kill();
    await caddy.exited;
    await app.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
}
