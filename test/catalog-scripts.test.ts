// Start scripts that catalog entries put in front of an image's own entrypoint, run with the host's
// POSIX shell against a directory laid out like the container (its paths moved into a temporary
// directory, the image's entrypoint replaced by a stand-in that does what the app does).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, lstatSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { getCatalog } from "../src/catalog/index.ts";
import { generateBundle } from "../src/core/generate/index.ts";
import { parseEnvValues } from "../src/core/env-merge.ts";
import { hasTool } from "./support/tools.ts";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** The generated compose file of a selection, parsed (tests read whichever keys they check). */
const composeFor = (body: Record<string, unknown>): any => parse(generateBundle({ projectName: "scripts", ...body }, getCatalog()).files["docker-compose.yml"]!);

/** Runs a compose entrypoint `[shell, "-c", script]` as the container would (compose hands it `$`
 *  for each `$$`), with container paths replaced by local ones. */
function runStartScript(entrypoint: string[], replacements: [from: string, to: string][], env?: Record<string, string>) {
  const [shell, flag, script] = entrypoint;
  let local = script!.replaceAll("$$", "$");
  for (const [from, to] of replacements) local = local.replaceAll(from, to);
  return Bun.spawnSync([shell!, flag!, local], env ? { env } : {});
}

describe("AnythingLLM keeps the settings its UI writes to /app/server/.env", () => {
  const entrypoint: string[] = composeFor({ services: ["anything-llm"] }).services["anything-llm"].entrypoint;
  const [shell, flag, script] = entrypoint;
  const IMAGE_ENTRYPOINT = "exec /bin/bash /usr/local/bin/docker-entrypoint.sh";

  /** A fresh container filesystem (the image's own .env) over the storage volume of `root`. */
  function freshContainer(root: string, imageEnv: string | undefined) {
    const app = join(root, "container", "app", "server");
    rmSync(join(root, "container"), { recursive: true, force: true });
    mkdirSync(app, { recursive: true });
    if (imageEnv !== undefined) writeFileSync(join(app, ".env"), imageEnv);
    const storage = join(root, "volume");
    mkdirSync(storage, { recursive: true });
    // The storage volume is mounted inside the app directory, as in the compose file.
    rmSync(join(app, "storage"), { force: true });
    Bun.spawnSync(["ln", "-s", storage, join(app, "storage")]);
    return { app, storage };
  }

  /** Runs the start script; the stand-in entrypoint prints the .env the app reads, then writes
   *  `write` into it the way the app's settings page does (a whole-file write through the path). */
  function start(root: string, app: string, write?: string) {
    const standIn = join(root, "image-entrypoint.sh");
    writeFileSync(standIn, `cd ${app}\ncat .env\n${write === undefined ? "" : `printf '%s\\n' '${write}' > .env\n`}`);
    expect(script).toContain("cd /app/server");
    expect(script).toEndWith(IMAGE_ENTRYPOINT);
    const run = runStartScript(entrypoint, [["cd /app/server", `cd ${app}`], [IMAGE_ENTRYPOINT, `exec sh ${standIn}`]]);
    return { code: run.exitCode, read: run.stdout.toString() };
  }

  test("the compose entrypoint is a shell script handing over to the image's entrypoint", () => {
    expect([shell, flag]).toEqual(["/bin/sh", "-c"]);
  });

  test("a setting chosen in the UI survives a recreated container", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-anythingllm-"));
    roots.push(root);
    const first = freshContainer(root, "SERVER_PORT=3001\n");
    const firstRun = start(root, first.app, "LLM_PROVIDER=ollama");
    expect(firstRun.code).toBe(0);
    // First start: the app read the image's defaults, seeded into the volume.
    expect(firstRun.read).toBe("SERVER_PORT=3001\n");
    expect(lstatSync(join(first.app, ".env")).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(first.storage, ".env"), "utf8")).toBe("LLM_PROVIDER=ollama\n");

    // `stackgen update` recreates the container: the image's .env is back, the volume stays.
    const second = freshContainer(root, "SERVER_PORT=3001\n");
    const secondRun = start(root, second.app);
    expect(secondRun.code).toBe(0);
    expect(secondRun.read).toBe("LLM_PROVIDER=ollama\n");
  });

  test("an image without its .env still starts, with an empty settings file in the volume", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-anythingllm-"));
    roots.push(root);
    const { app, storage } = freshContainer(root, undefined);
    const run = start(root, app, "EMBEDDING_ENGINE=native");
    expect(run.code).toBe(0);
    expect(run.read).toBe("");
    expect(readFileSync(join(storage, ".env"), "utf8")).toBe("EMBEDDING_ENGINE=native\n");
  });

  test("when the link cannot be made, the app still starts", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-anythingllm-"));
    roots.push(root);
    const { app } = freshContainer(root, "SERVER_PORT=3001\n");
    // No storage volume at all: seeding fails, the image's entrypoint runs regardless.
    rmSync(join(app, "storage"), { force: true });
    const run = start(root, app);
    expect(run.code).toBe(0);
    expect(run.read).toBe("SERVER_PORT=3001\n");
    expect(existsSync(join(app, "storage"))).toBe(false);
  });
});

/** Named volumes mounted into `service` in the generated compose file, by container path. */
function mountsOf(service: string): { env: Record<string, string>; mounted: (path: string) => boolean } {
  const compose = composeFor({ services: [service.split("/")[0]!] });
  const definition = compose.services[service.replace("/", "-")];
  const targets: string[] = (definition.volumes ?? [])
    .map((v: string | { type: string; source: string; target: string }) => (typeof v === "string" ? v : `${v.source}:${v.target}`))
    .filter((v: string) => !v.startsWith("/") && !v.startsWith("."))
    .map((v: string) => v.split(":")[1]);
  return { env: definition.environment ?? {}, mounted: (path) => targets.some((t) => path === t || path.startsWith(`${t}/`)) };
}

// Where apps write state at runtime, found by auditing upstream code and docs: each must land in
// a named volume, or an update (which recreates containers) loses it.
describe("state an app writes at runtime lands in a volume", () => {
  const cases: { service: string; path: string; why: string; env?: [string, string] }[] = [
    { service: "anything-llm", path: "/app/server/storage/.env", why: "settings saved in the UI (linked by the start script)" },
    { service: "authentik", path: "/media", why: "uploaded icons and backgrounds (2025.10)" },
    { service: "authentik/worker", path: "/media", why: "the worker writes the same uploads" },
    { service: "claude-code", path: "/root/.claude/.claude.json", why: "account and trusted projects", env: ["CLAUDE_CONFIG_DIR", "/root/.claude"] },
    { service: "comfyui", path: "/workspace/ComfyUI", why: "models, custom nodes, outputs", env: ["WORKSPACE", "/workspace"] },
    { service: "stable-diffusion", path: "/workspace/stable-diffusion-webui", why: "models, outputs, settings", env: ["WORKSPACE", "/workspace"] },
    { service: "dozzle", path: "/data", why: "alert rules and user settings" },
    { service: "coolify", path: "/var/www/html/storage/app/webhooks-during-maintenance", why: "webhooks held during an upgrade" },
    { service: "mattermost", path: "/mattermost/client/plugins", why: "web-app halves of plugins" },
    { service: "opencode", path: "/root/.config/opencode", why: "global settings, agents, plugins" },
    { service: "opencode", path: "/root/.local/state/opencode", why: "history" },
    { service: "supabase", path: "/app/snippets", why: "saved SQL queries", env: ["SNIPPETS_MANAGEMENT_FOLDER", "/app/snippets"] },
    { service: "xyops", path: "/opt/xyops/data/overrides.json", why: "Configuration page changes", env: ["XYOPS_config_overrides_file", "/opt/xyops/data/overrides.json"] },
  ];
  for (const { service, path, why, env } of cases) {
    test(`${service}: ${why} (${path})`, () => {
      const { env: environment, mounted } = mountsOf(service);
      if (env) expect(environment[env[0]]).toBe(env[1]);
      expect(mounted(path)).toBe(true);
    });
  }
});

test("Dokploy shares the host's /etc/dokploy: the containers it starts bind-mount host paths there", () => {
  const compose = composeFor({ services: ["dokploy"] });
  expect(compose.services.dokploy.volumes).toContain("/etc/dokploy:/etc/dokploy");
});

// Variables each pinned app reads under that exact name (found by auditing upstream settings
// code): a setting under another name is silently ignored, a secret then falls back to a default.
describe("apps get their settings under the names they read", () => {
  const cases: { service: string; container?: string; name: string; value: string; why: string }[] = [
    { service: "appflowy", container: "appflowy-cloud", name: "APPFLOWY_WEB_URL", value: "${APPFLOWY_BASE_URL}", why: "the server refuses to start without it" },
    { service: "codex", name: "CODEX_API_KEY", value: "${CODEX_OPENAI_API_KEY}", why: "codex exec reads only this key" },
    { service: "kimi", name: "KIMI_MODEL_NAME", value: "${KIMI_MODEL_NAME}", why: "without a model the CLI creates no LLM" },
    { service: "docsgpt", name: "ENCRYPTION_SECRET_KEY", value: "${DOCSGPT_ENCRYPTION_KEY}", why: "else a key every install shares" },
    { service: "docsgpt", container: "docsgpt-worker", name: "ENCRYPTION_SECRET_KEY", value: "${DOCSGPT_ENCRYPTION_KEY}", why: "the worker decrypts the same credentials" },
    { service: "lasuite-meet-agents", name: "DEEPGRAM_API_KEY", value: "${LASUITE_MEET_AGENTS_DEEPGRAM_API_KEY}", why: "the transcriber's default provider" },
    { service: "coolify", name: "PUSHER_BACKEND_HOST", value: "coolify-realtime", why: "the server's own route to the realtime server" },
    { service: "matomo", name: "MATOMO_DATABASE_ADAPTER", value: "PDO\\MYSQL", why: "one of the installer's adapter names" },
    { service: "stable-diffusion", name: "WEB_TOKEN", value: "${STABLE_DIFFUSION_TOKEN}", why: "browsers sign in with ?token= (the login page is not published)" },
    { service: "comfyui", name: "WEB_TOKEN", value: "${COMFYUI_TOKEN}", why: "browsers sign in with ?token= (the login page is not published)" },
  ];
  for (const { service, container, name, value, why } of cases) {
    test(`${container ?? service}: ${name} (${why})`, () => {
      const compose = composeFor({ services: [service] });
      const environment = compose.services[container ?? service].environment ?? {};
      expect(environment[name]).toBe(value);
      // A host name in a setting is a service of the same file.
      if (name.endsWith("_HOST")) expect(Object.keys(compose.services)).toContain(value);
    });
  }

  test("DocsGPT's encryption key is a generated secret of its own", () => {
    const env = generateBundle({ projectName: "names", services: ["docsgpt"] }, getCatalog()).files[".env"]!;
    expect(env).toMatch(/\nDOCSGPT_ENCRYPTION_KEY=[A-Za-z0-9]{32}\n/);
  });

  test("Mission Control is not handed Convex's admin key, which its image never reads", () => {
    const compose = composeFor({ services: ["mission-control"] });
    expect(JSON.stringify(compose.services["mission-control"].environment)).not.toContain("CONVEX_ADMIN_KEY");
  });
});

// Connection strings name other containers as host:port; a typo or a port the service does not
// listen on only shows up when the stack runs, so every generated bundle is checked here.
test("every host:port an environment value names is a service of the bundle, at a port it declares", () => {
  const catalog = getCatalog();
  const declared = new Map([catalog.core, ...catalog.services].map((s) => [s.id, s.ports.map((p) => p.container)]));
  // Open WebUI is told where Ollama would be; it runs without it (documented in its entry).
  const optional = new Set(["open-webui OLLAMA_BASE_URL ollama"]);
  const selections = [...catalog.services.map((s) => ({ services: [s.id] })), ...catalog.presets.map((p) => ({ preset: p.id }))];
  const problems: string[] = [];
  for (const selection of selections) {
    const compose = composeFor(selection);
    const names = new Set(Object.keys(compose.services));
    for (const [service, definition] of Object.entries<{ environment?: Record<string, string> }>(compose.services)) {
      for (const [name, value] of Object.entries(definition.environment ?? {})) {
        for (const [, host, port] of String(value).matchAll(/(?:\/\/|@|^)([a-z0-9][a-z0-9-]*):(\d{2,5})\b/g)) {
          if (host === "localhost" || optional.has(`${service} ${name} ${host}`)) continue;
          if (!names.has(host!)) problems.push(`${JSON.stringify(selection)} ${service} ${name}: no service ${host}`);
          else if (declared.has(host!) && !declared.get(host!)!.includes(Number(port))) problems.push(`${service} ${name}: ${host} declares no port ${port}`);
        }
      }
    }
  }
  expect([...new Set(problems)]).toEqual([]);
});

test("every PostgreSQL URL in a generated environment names a database, user and password the init script creates", () => {
  const catalog = getCatalog();
  const created = catalog.services.flatMap((s) => (s.databases ?? []).map((d) => `${d.user}:\${${d.passwordVar}}/${d.name}`));
  const problems: string[] = [];
  let urls = 0;
  for (const service of catalog.services) {
    const compose = composeFor({ services: [service.id] });
    for (const [name, definition] of Object.entries<{ environment?: Record<string, string> }>(compose.services)) {
      for (const value of Object.values(definition.environment ?? {})) {
        for (const [, user, password, database] of String(value).matchAll(/postgres(?:ql)?:\/\/([^:@/]+):([^@]+)@postgresql:5432\/([A-Za-z0-9_]+)/g)) {
          urls++;
          if (!created.includes(`${user}:${password}/${database}`)) problems.push(`${name}: ${user}@${database}`);
        }
      }
    }
  }
  expect(urls).toBeGreaterThan(5);
  expect(problems).toEqual([]);
});

describe("Synapse's first start writes a config for running behind the stack's proxy", () => {
  const compose = composeFor({ services: ["matrix-synapse", "caddy"], domain: "example.com" });
  const entrypoint: string[] = compose.services["matrix-synapse"].entrypoint;

  function run(root: string) {
    // A stand-in for the image's /start.py: migrate_config renders the image's template (whose
    // listener does not trust forwarded headers); without arguments it "runs" the server.
    const start = join(root, "start.py");
    writeFileSync(start, `#!/bin/sh\nif [ "$1" = migrate_config ]; then printf 'listeners:\\n  - port: 8008\\n    x_forwarded: false\\n' > ${root}/data/homeserver.yaml; else echo started; fi\n`);
    Bun.spawnSync(["chmod", "+x", start]);
    return runStartScript(entrypoint, [["/data/", `${root}/data/`], ["/start.py", start]], { PATH: process.env.PATH!, SYNAPSE_PUBLIC_BASEURL: "https://matrix-synapse.example.com" });
  }

  test("trusts the proxy's X-Forwarded-For, knows its public URL and serves the federation well-known", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-synapse-"));
    roots.push(root);
    mkdirSync(join(root, "data"));
    expect(entrypoint.slice(0, 2)).toEqual(["/bin/sh", "-c"]);
    expect(compose.services["matrix-synapse"].environment.SYNAPSE_PUBLIC_BASEURL).toBe("${MATRIX_SYNAPSE_PUBLIC_URL}");
    const first = run(root);
    expect(first.exitCode).toBe(0);
    expect(first.stdout.toString()).toBe("started\n");
    const config = parse(readFileSync(join(root, "data", "homeserver.yaml"), "utf8"));
    expect(config.listeners[0].x_forwarded).toBe(true);
    expect(config.public_baseurl).toBe("https://matrix-synapse.example.com");
    expect(config.serve_server_wellknown).toBe(true);
  });

  test("a later start leaves the user's config as it is", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-synapse-"));
    roots.push(root);
    mkdirSync(join(root, "data"));
    writeFileSync(join(root, "data", "homeserver.yaml"), "server_name: mine\n");
    const again = run(root);
    expect(again.exitCode).toBe(0);
    expect(readFileSync(join(root, "data", "homeserver.yaml"), "utf8")).toBe("server_name: mine\n");
  });
});

// Behind the proxy an app builds links, redirects, origin checks and clone URLs from what it is
// told, not from the request (found by auditing each web app's reverse-proxy documentation).
test("behind the proxy with a domain, apps are told the address users reach them at", () => {
  const cases: [service: string, container: string, name: string, value: string][] = [
    ["grafana", "grafana", "GF_SERVER_ROOT_URL", "https://grafana.example.com"],
    ["litellm", "litellm", "PROXY_BASE_URL", "https://litellm.example.com"],
    ["dify", "dify-api", "SERVICE_API_URL", "https://dify.example.com"],
    ["dify", "dify-api", "APP_WEB_URL", "https://dify.example.com"],
    ["dify", "dify-worker", "ENDPOINT_URL_TEMPLATE", "https://dify.example.com/e/{hook_id}"],
    ["gitea", "gitea", "GITEA__server__SSH_DOMAIN", "gitea.example.com"],
    ["matrix-synapse", "matrix-synapse", "SYNAPSE_PUBLIC_BASEURL", "https://matrix-synapse.example.com"],
  ];
  for (const [service, container, name, value] of cases) {
    const files = generateBundle({ projectName: "proxied", services: [service], proxy: "caddy", domain: "example.com" }, getCatalog()).files;
    const env = parseEnvValues(files[".env"]!);
    const raw = String(parse(files["docker-compose.yml"]!).services[container].environment[name]);
    expect(raw.replace(/\$\{([A-Z0-9_]+)\}/g, (_, v: string) => env.get(v) ?? `<${v} undefined>`), `${container} ${name}`).toBe(value);
  }
});

describe("Home Assistant's first start trusts the stack's proxy", () => {
  const compose = composeFor({ services: ["homeassistant", "traefik"] });
  const entrypoint: string[] = compose.services.homeassistant.entrypoint;
  const includeTag = { tag: "!include", resolve: (file: string) => ({ include: file }) };

  function run(root: string) {
    const init = join(root, "init");
    writeFileSync(init, "#!/bin/sh\necho s6-started\n");
    Bun.spawnSync(["chmod", "+x", init]);
    return runStartScript(entrypoint, [["/config/", `${root}/config/`], ["exec /init", `exec ${init}`]]);
  }

  test("writes a configuration with its includes and an http: block trusting Docker's networks", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-ha-"));
    roots.push(root);
    mkdirSync(join(root, "config"));
    const first = run(root);
    expect(first.exitCode).toBe(0);
    expect(first.stdout.toString()).toBe("s6-started\n");
    const config = parse(readFileSync(join(root, "config", "configuration.yaml"), "utf8"), { customTags: [includeTag] });
    expect(config).toEqual({
      default_config: null,
      automation: { include: "automations.yaml" },
      script: { include: "scripts.yaml" },
      scene: { include: "scenes.yaml" },
      http: { use_x_forwarded_for: true, trusted_proxies: ["172.16.0.0/12"] },
    });
    // Every included file exists, as Home Assistant's own first start would leave them.
    expect(readFileSync(join(root, "config", "automations.yaml"), "utf8")).toBe("[]\n");
    expect(readFileSync(join(root, "config", "scripts.yaml"), "utf8")).toBe("");
    expect(readFileSync(join(root, "config", "scenes.yaml"), "utf8")).toBe("");
  });

  test("an existing configuration is left as it is", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-ha-"));
    roots.push(root);
    mkdirSync(join(root, "config"));
    writeFileSync(join(root, "config", "configuration.yaml"), "homeassistant:\n  name: Mine\n");
    expect(run(root).exitCode).toBe(0);
    expect(readFileSync(join(root, "config", "configuration.yaml"), "utf8")).toBe("homeassistant:\n  name: Mine\n");
    expect(existsSync(join(root, "config", "automations.yaml"))).toBe(false);
  });
});

// Skills run in the gateway: a `.env` or gateway variable a skill's calls use must reach the
// gateway in a bundle with that service (else the agent's call goes out with an empty value).
test("every catalog variable a skill's calls use reaches the gateway", () => {
  const catalog = getCatalog();
  const known = new Set(catalog.services.flatMap((s) => [...(s.variables ?? []).map((v) => v.name), ...Object.keys(s.coreEnv ?? {})]));
  const skillsDir = join(import.meta.dir, "..", "catalog", "skills");
  const problems: string[] = [];
  for (const service of catalog.services) {
    const compose = composeFor({ services: [service.id] });
    const gateway = new Set(Object.keys(compose.services.core.environment ?? {}));
    for (const skill of service.skills) {
      const text = readFileSync(join(skillsDir, skill, "SKILL.md"), "utf8");
      const calls = [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]).join("\n");
      for (const [, name] of calls.matchAll(/\$\{?([A-Z][A-Z0-9_]+)/g)) {
        if (known.has(name!) && !gateway.has(name!)) problems.push(`${skill}: ${name}`);
      }
    }
  }
  expect([...new Set(problems)]).toEqual([]);
});

test("every service address a skill names is that service at a port it serves", () => {
  const catalog = getCatalog();
  const served = new Map([catalog.core, ...catalog.services].map((s) => [s.id, [...s.ports.map((p) => p.container), ...(s.metrics ? [s.metrics.port] : [])]]));
  const sidecars = new Set(catalog.services.flatMap((s) => (s.sidecars ?? []).map((c) => `${s.id}-${c.name}`)));
  const skillsDir = join(import.meta.dir, "..", "catalog", "skills");
  const problems: string[] = [];
  // Service skills and the packs' workflow skills alike.
  for (const skill of readdirSync(skillsDir)) {
    const text = readFileSync(join(skillsDir, skill, "SKILL.md"), "utf8");
    for (const [, host, port] of text.matchAll(/\/\/([a-z0-9][a-z0-9-]*):(\d{2,5})\b/g)) {
      if (host === "localhost" || sidecars.has(host!)) continue;
      if (!served.has(host!)) problems.push(`${skill}: no service ${host}`);
      else if (!served.get(host!)!.includes(Number(port))) problems.push(`${skill}: ${host} serves no port ${port}`);
    }
  }
  expect(problems).toEqual([]);
});

describe("Matomo trusts the proxy's forwarded headers while the proxy serves it", () => {
  const start = (body: Record<string, unknown>, root: string) => {
    const command: string[] = composeFor({ services: ["matomo"], ...body }).services.matomo.command;
    const environment: Record<string, string> = composeFor({ services: ["matomo"], ...body }).services.matomo.environment;
    const run = runStartScript(command, [["/var/www/html/config", root], ["exec apache2-foreground", "echo started"]], {
      PATH: process.env.PATH!,
      ...(environment.TRUST_PROXY_HEADERS ? { TRUST_PROXY_HEADERS: environment.TRUST_PROXY_HEADERS } : {}),
    });
    expect(run.stdout.toString()).toBe("started\n");
  };
  const file = (root: string) => join(root, "common.config.ini.php");

  test("written behind the proxy, removed without it, and a file of the user's own is never touched", () => {
    const root = mkdtempSync(join(tmpdir(), "stackgen-matomo-"));
    roots.push(root);
    start({ proxy: "caddy", domain: "example.com" }, root);
    expect(readFileSync(file(root), "utf8")).toContain("proxy_scheme_headers[] = HTTP_X_FORWARDED_PROTO");
    start({}, root);
    expect(existsSync(file(root))).toBe(false);
    writeFileSync(file(root), "[General]\nmy_setting = 1\n");
    start({ proxy: "caddy", domain: "example.com" }, root);
    start({}, root);
    expect(readFileSync(file(root), "utf8")).toBe("[General]\nmy_setting = 1\n");
  });
});

describe("the bare-metal Redis config carries any password as one value", () => {
  const haveRedis = hasTool("redis-server") && hasTool("redis-cli");
  const script = generateBundle({ projectName: "native", services: ["redis"], deployment: "bare-metal" }, getCatalog()).files["native/redis.sh"]!;
  const lines = script.split("\n");
  // The lines that make the password's form, choose the persistence and write the file, with the
  // file and Redis's data folder moved here.
  const line = (start: string) => lines.find((l) => l.startsWith(start))!;
  const writeConfig = (conf: string, data: string) =>
    [line("PW="), `REDIS_DATA=${data}`, line("AOF="), line("printf 'bind").replace("/etc/redis/stackgen.conf", conf)].join("\n");

  for (const [what, password, gateway] of [
    ["spaces and quotes", `a b "c" \\d'`, "127.0.0.3"],
    ["line breaks that would be directives of their own", "x\nprotected-mode no\nbind 0.0.0.0", "127.0.0.2"],
    ["a final line break", "ends\n", "127.0.0.4"],
  ] as const) {
    test.skipIf(!haveRedis)(`${what}, listening on the gateway too`, async () => {
      const root = mkdtempSync(join(tmpdir(), "stackgen-redis-"));
      roots.push(root);
      const conf = join(root, "stackgen.conf");
      const written = Bun.spawnSync(["bash", "-c", `set -euo pipefail\nGW=${gateway}\n${writeConfig(conf, root)}`], { env: { PATH: process.env.PATH!, REDIS_PASSWORD: password } });
      expect(written.exitCode, written.stderr.toString()).toBe(0);
      const port = 20000 + Math.floor(Math.random() * 20000);
      const server = Bun.spawn(["redis-server", conf, "--port", String(port), "--dir", root, "--save", ""], { stdout: "pipe", stderr: "pipe" });
      try {
        const cli = (...args: string[]) => Bun.spawnSync(["redis-cli", "-p", String(port), ...args], { env: { PATH: process.env.PATH!, REDISCLI_AUTH: password } });
        let pong = "";
        for (let i = 0; i < 50 && pong !== "PONG"; i++) {
          pong = cli("ping").stdout.toString().trim();
          if (pong !== "PONG") await Bun.sleep(100);
        }
        expect(pong).toBe("PONG");
        expect(cli("config", "get", "bind").stdout.toString()).toContain(`127.0.0.1 ${gateway}`);
        expect(cli("config", "get", "appendonly").stdout.toString()).toContain("yes");
        expect(cli("config", "get", "protected-mode").stdout.toString()).toContain("yes");
        // The exact password, nothing less.
        const wrong = Bun.spawnSync(["redis-cli", "-p", String(port), "ping"], { env: { PATH: process.env.PATH!, REDISCLI_AUTH: password.trim() + "x" } });
        expect(wrong.stdout.toString() + wrong.stderr.toString()).toMatch(/WRONGPASS|NOAUTH|invalid/i);
      } finally {
        server.kill();
        await server.exited;
      }
    });
  }
});

describe("the bare-metal Redis over a Redis that already holds data", () => {
  const script = generateBundle({ projectName: "native", services: ["redis"], deployment: "bare-metal" }, getCatalog()).files["native/redis.sh"]!;
  const line = (start: string) => script.split("\n").find((l) => l.startsWith(start))!;
  const decide = (data: string) => Bun.spawnSync(["bash", "-c", `set -euo pipefail\nREDIS_DATA=${data}\n${line("AOF=")}\necho "$AOF"`]);

  test("data only in dump.rdb keeps append-only off (switched on, Redis would start empty), said on stderr; otherwise it is on", () => {
    const data = mkdtempSync(join(tmpdir(), "stackgen-redis-data-"));
    roots.push(data);
    expect(decide(data).stdout.toString().trim()).toBe("yes");
    writeFileSync(join(data, "dump.rdb"), "REDIS0011...");
    const kept = decide(data);
    expect(kept.stdout.toString().trim()).toBe("no");
    expect(kept.stderr.toString()).toContain("append-only persistence stays off, so that data is kept");
    // Once an append-only file exists (a run before turned it on), it stays on.
    mkdirSync(join(data, "appendonlydir"));
    expect(decide(data).stdout.toString().trim()).toBe("yes");
  });

  test("without an address on docker0 the script stops, saying why, before it writes anything", () => {
    const check = script.split("\n").find((l) => l.startsWith('[ -n "$GW" ]'))!;
    const r = Bun.spawnSync(["bash", "-c", `set -euo pipefail\nGW=\n${check}\necho wrote`]);
    expect(r.exitCode).toBe(1);
    expect(r.stdout.toString()).toBe("");
    expect(r.stderr.toString()).toContain("docker0 has no IPv4 address");
  });
});

describe("a bare-metal install with an empty secret", () => {
  /** The bundle on disk, with apt-get, systemctl, docker and id stubs that record what ran. */
  function bundleWithStubs(body: Record<string, unknown>, editEnv = (env: string) => env) {
    const root = mkdtempSync(join(tmpdir(), "stackgen-native-"));
    roots.push(root);
    const { files } = generateBundle({ projectName: "native", deployment: "bare-metal", ...body }, getCatalog());
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(root, path, ".."), { recursive: true });
      writeFileSync(join(root, path), path === ".env" ? editEnv(text) : text);
    }
    const stubs = join(root, "stubs");
    mkdirSync(stubs);
    for (const tool of ["apt-get", "systemctl", "docker"]) writeFileSync(join(stubs, tool), `#!/bin/sh\necho ${tool} >> ${join(root, "ran")}\n`, { mode: 0o755 });
    writeFileSync(join(stubs, "id"), "#!/bin/sh\necho 0\n", { mode: 0o755 });
    const run = (script: string) => Bun.spawnSync(["bash", join(root, script)], { env: { PATH: `${stubs}:/usr/bin:/bin` } });
    const ran = () => (existsSync(join(root, "ran")) ? readFileSync(join(root, "ran"), "utf8").trim().split("\n") : []);
    return { run, ran };
  }

  test("a native script stops before it installs anything, naming the variable", () => {
    const { run, ran } = bundleWithStubs({ services: ["redis"], generateSecrets: false });
    const r = run("native/redis.sh");
    expect(r.exitCode).toBe(1);
    expect(r.stderr.toString()).toContain("REDIS_PASSWORD is empty in .env: fill it in, then run this again");
    expect(ran()).toEqual([]);
  });

  test("install.sh checks every native script before the first package: PostgreSQL is not set up when Redis cannot be", () => {
    const { run, ran } = bundleWithStubs({ services: ["redis", "n8n"] }, (env) => env.replace(/^REDIS_PASSWORD=.*$/m, "REDIS_PASSWORD="));
    const r = run("install.sh");
    expect(r.exitCode).toBe(1);
    expect(r.stderr.toString()).toContain("REDIS_PASSWORD is empty in .env");
    // Only the engine checks ran: no apt-get, no systemctl.
    expect(ran().filter((tool) => tool !== "docker")).toEqual([]);
  });
});

describe("coding CLIs are installed on the first start only", () => {
  // Images that are only a language runtime, given their CLI by the compose command.
  const installing = getCatalog().services.filter((s) => s.command?.[0] === "sh" && /\b(npm|pip) install\b/.test(s.command[2] ?? ""));
  /** The compose command of a service, its shell by path (the PATH holds only the stand-ins). */
  const commandOf = (id: string) => ["/bin/sh", ...(composeFor({ services: [id] }).services[id].command as string[]).slice(1)];

  /** A PATH of stand-ins that log their calls: npm and python answer the "is it installed?" check
   *  as `installed` says, everything else (the install, sleep, the CLI's server) succeeds. */
  function standIns(root: string, installed: boolean): { path: string; log: string } {
    const bin = join(root, "bin");
    const log = join(root, "calls.log");
    mkdirSync(bin, { recursive: true });
    const check = installed ? 0 : 1;
    const stands: Record<string, string> = {
      npm: `[ "$1" = ls ] && exit ${check}; exit 0`,
      python: `exit ${check}`,
      pip: "exit 0",
      sleep: "exit 0",
      opencode: "exit 0",
    };
    for (const [name, body] of Object.entries(stands)) writeFileSync(join(bin, name), `#!/bin/sh\necho "${name} $*" >> "${log}"\n${body}\n`, { mode: 0o755 });
    return { path: bin, log };
  }

  test("the claude-code, codex, gemini-cli, opencode and kimi containers install their CLI", () => {
    expect(installing.map((s) => s.id).sort()).toEqual(["claude-code", "codex", "gemini-cli", "kimi", "opencode"]);
  });

  for (const s of installing) {
    test(`${s.id}: the pinned version is installed when missing, and a restart with it in place installs nothing`, () => {
      const command = commandOf(s.id);
      const pinned = /(?:@|=)(\d+\.\d+\.\d+)\b/.exec(command[2]!)![1]!;
      for (const installed of [false, true]) {
        const root = mkdtempSync(join(tmpdir(), "stackgen-cli-install-"));
        roots.push(root);
        mkdirSync(join(root, "workspace"));
        const { path, log } = standIns(root, installed);
        const r = runStartScript(command, [["/workspace", join(root, "workspace")]], { PATH: path });
        expect(r.exitCode, r.stderr.toString()).toBe(0);
        const installs = readFileSync(log, "utf8").split("\n").filter((line) => /^(npm|pip) install /.test(line));
        if (installed) expect(installs).toEqual([]);
        else {
          expect(installs).toHaveLength(1);
          expect(installs[0]).toContain(pinned);
        }
      }
    });
  }

  test("an install that fails stops the container (restart policy tries again) instead of idling without the CLI", () => {
    const command = commandOf("codex");
    const root = mkdtempSync(join(tmpdir(), "stackgen-cli-install-"));
    roots.push(root);
    const { path, log } = standIns(root, false);
    writeFileSync(join(path, "npm"), `#!/bin/sh\necho "npm $*" >> "${log}"\nexit 1\n`, { mode: 0o755 });
    const r = runStartScript(command, [], { PATH: path });
    expect(r.exitCode).toBe(1);
    expect(readFileSync(log, "utf8")).not.toContain("sleep");
  });
});
