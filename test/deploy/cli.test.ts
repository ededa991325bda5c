// `stackgen deploy` as a user runs it: a subprocess against the fakes, with a bundle written to a
// temp dir. Besides exit codes and output shape, every run checks that the key never shows up.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { connect, createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { CoolifyFake, destination, usableServer } from "./fakes/coolify-fake.ts";
import { DokployFake } from "./fakes/dokploy-fake.ts";
import { PROJECT, writeBundle } from "./fixtures.ts";

const ROOT = path.resolve(import.meta.dir, "../..");
const BUN = path.join(ROOT, "node_modules/.bin/bun");
const MAIN = path.join(ROOT, "src/main.ts");

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0)) await clean();
});

async function coolify(options?: ConstructorParameters<typeof CoolifyFake>[0]) {
  const fake = await new CoolifyFake({ token: "cli-coolify-secret-7f3a9b", ...options }).start();
  cleanups.push(() => fake.stop());
  return fake;
}
async function dokploy() {
  const fake = await new DokployFake({ apiKey: "cli-dokploy-secret-2c8e1d" }).start();
  cleanups.push(() => fake.stop());
  return fake;
}
function bundle(options?: Parameters<typeof writeBundle>[0]) {
  const b = writeBundle(options);
  cleanups.push(b.cleanup);
  return b.dir;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// bun test sets NODE_ENV and TEST; a user's shell has neither.
const DROPPED_ENV = ["STACKGEN_DEPLOY_API_KEY", "NODE_ENV", "TEST"];

async function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const baseEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !DROPPED_ENV.includes(k)) baseEnv[k] = v;
  const proc = Bun.spawn([BUN, MAIN, "deploy", ...args], {
    cwd: ROOT,
    env: { ...baseEnv, NO_COLOR: "1", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

/** `stackgen deploy --json` to a Coolify fake as a child process, for tests that signal it. */
function spawnDeploy(fake: { url: string; token: string }) {
  const baseEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !DROPPED_ENV.includes(k)) baseEnv[k] = v;
  return Bun.spawn([BUN, MAIN, "deploy", "--provider", "coolify", "--url", fake.url, "--dir", bundle(), "--json"], {
    cwd: ROOT,
    env: { ...baseEnv, NO_COLOR: "1", STACKGEN_DEPLOY_API_KEY: fake.token },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
}

function expectNoKey(run: Run, key: string) {
  expect(run.stdout).not.toContain(key);
  expect(run.stderr).not.toContain(key);
}

const RESULT_KEYS = ["success", "provider", "steps", "projectId", "stackId", "composeId", "dashboardUrl", "changes", "error", "failedStep", "created", "possiblyCreated"];

describe("stackgen deploy (subprocess)", () => {
  test("coolify, key by flag, --json: exactly the DeployResult on stdout, progress on stderr", async () => {
    const fake = await coolify();
    const dir = bundle();
    const run = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", dir, "--json"]);
    expect(run.stderr).not.toContain("error");
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(Object.keys(result).every((k) => RESULT_KEYS.includes(k))).toBe(true);
    expect(result).toMatchObject({ success: true, provider: "coolify", projectId: fake.projects[0]!.uuid, stackId: fake.services[0]!.uuid });
    expect(result.steps.map((s: { step: string }) => s.step)).toContain("Deploy");
    expect(run.stderr).toContain("Discover server");
    expect(run.stderr).toContain("Set env");
    // Plain http to this machine: the key does not cross a network, so no warning.
    expect(run.stderr).not.toContain("unencrypted");
    expect(fake.violations).toEqual([]);
    // Bundle files travelled inline.
    expect(fake.services[0]!.compose).toContain("scrape_interval: 15s");
    expectNoKey(run, fake.token);
  });

  test("files reached through a symbolic link are not sent: they are not the bundle's (a link to a host secret)", async () => {
    const fake = await coolify();
    const dir = bundle();
    const outside = mkdtempSync(path.join(tmpdir(), "stackgen-outside-"));
    cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
    writeFileSync(path.join(outside, "host-secret.txt"), "TOP-SECRET-HOST-FILE\n");
    mkdirSync(path.join(outside, "prom"));
    writeFileSync(path.join(outside, "prom", "prometheus.yml"), "OTHER-SECRET-FOLDER\n");
    // The mounted file itself a link, and a mounted folder that is a link.
    rmSync(path.join(dir, "Caddyfile"));
    symlinkSync(path.join(outside, "host-secret.txt"), path.join(dir, "Caddyfile"));
    rmSync(path.join(dir, "prometheus"), { recursive: true });
    symlinkSync(path.join(outside, "prom"), path.join(dir, "prometheus"));
    const run = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", dir, "--json"]);
    const sent = fake.services[0]?.compose ?? "";
    expect(sent + run.stdout + run.stderr).not.toContain("TOP-SECRET-HOST-FILE");
    expect(sent + run.stdout + run.stderr).not.toContain("OTHER-SECRET-FOLDER");
    expectNoKey(run, fake.token);
  });

  test("dokploy, key from STACKGEN_DEPLOY_API_KEY, text output, project name from the compose file", async () => {
    const fake = await dokploy();
    const dir = bundle({ withStackgenJson: false });
    // A local override file is not part of what the platform runs: the user is told so.
    writeFileSync(path.join(dir, "docker-compose.override.yml"), "services: {}\n");
    const run = await runCli(["--provider", "dokploy", "--url", fake.url, "--dir", dir], { STACKGEN_DEPLOY_API_KEY: fake.apiKey });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Dashboard: ${fake.url}/dashboard/project/`);
    expect(run.stderr).toContain("Compose file adapted for Dokploy");
    expect(run.stderr).toContain("docker-compose.override.yml is not deployed");
    // With COMPOSE_FILE in .env compose skips the override file and loads the listed ones instead.
    writeFileSync(path.join(dir, "gpu.yml"), "services: {}\n");
    writeFileSync(path.join(dir, ".env"), `${readFileSync(path.join(dir, ".env"), "utf8")}COMPOSE_FILE=docker-compose.yml:gpu.yml\n`);
    const listed = await runCli(["--provider", "dokploy", "--url", fake.url, "--dir", dir, "--update"], { STACKGEN_DEPLOY_API_KEY: fake.apiKey });
    expect(listed.code).toBe(0);
    expect(listed.stderr).toContain("gpu.yml is not deployed");
    expect(listed.stderr).not.toContain("docker-compose.override.yml is not deployed");
    // The setting itself names files the platform does not have: it stays on this machine.
    expect(listed.stderr).toContain("COMPOSE_FILE not sent");
    expect(fake.composes[0]!.env).not.toContain("COMPOSE_FILE");
    expect(fake.composes[0]!.env).toContain("POSTGRES_PASSWORD=Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4\n");
    expect(fake.projects.map((p) => p.name)).toEqual([PROJECT]);
    expect(fake.violations).toEqual([]);
    expectNoKey(run, fake.apiKey);
  });

  test("coolify server with several destinations: STACKGEN_COOLIFY_DESTINATION picks one", async () => {
    const server = usableServer();
    const apps = destination("apps");
    const fake = await coolify({ servers: [server], destinations: { [server.uuid]: [destination("db"), apps] } });
    const dir = bundle();
    const args = ["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", dir];
    const refused = await runCli(args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("set STACKGEN_COOLIFY_DESTINATION");
    const run = await runCli([...args, "--update"], { STACKGEN_COOLIFY_DESTINATION: "localhost-apps" });
    expect(run.code).toBe(0);
    expect(fake.services[0]!.destination_uuid).toBe(apps.uuid);
    expect(run.stderr).toContain("on destination localhost-apps (network apps)");
    expect(fake.violations).toEqual([]);
  });

  test("an instance with a self-signed certificate is named as such, and NODE_EXTRA_CA_CERTS, as the message says, lets the deploy through; a name the certificate lacks is named instead", async () => {
    const fake = await coolify();
    const tlsDir = path.join(import.meta.dir, "tls");
    // A TLS front on 127.0.0.1 (the certificate names that address) that hands every call to the fake.
    const front = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { key: Bun.file(path.join(tlsDir, "self-signed.key.pem")), cert: Bun.file(path.join(tlsDir, "self-signed.cert.pem")) },
      fetch: async (req) => {
        const url = new URL(req.url);
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        return fetch(`${fake.url}${url.pathname}${url.search}`, { method: req.method, headers: req.headers, body, redirect: "manual" });
      },
    });
    cleanups.push(() => front.stop(true));
    const args = ["--provider", "coolify", "--url", `https://127.0.0.1:${front.port}`, "--api-key", fake.token, "--dir", bundle(), "--json"];
    const refused = await runCli(args);
    expect(refused.code).toBe(1);
    const result = JSON.parse(refused.stdout);
    expect(result).toMatchObject({ success: false, failedStep: "Test connection" });
    expect(result.error).toContain("has a TLS certificate this machine does not trust");
    expect(result.error).toContain("NODE_EXTRA_CA_CERTS");
    expect(result.error).not.toContain("Cannot reach");
    expect(fake.projects).toHaveLength(0);

    const trusted = await runCli(args, { NODE_EXTRA_CA_CERTS: path.join(tlsDir, "self-signed.cert.pem") });
    expect(trusted.stderr).not.toContain("TLS certificate");
    expect(trusted.code).toBe(0);
    expect(JSON.parse(trusted.stdout)).toMatchObject({ success: true, stackId: fake.services[0]!.uuid });
    // Trusted, but asked by a name the certificate does not hold: the name is what to change.
    const byName = args.map((a) => a.replace("https://127.0.0.1:", "https://localhost:"));
    const mismatch = await runCli([...byName, "--update"], { NODE_EXTRA_CA_CERTS: path.join(tlsDir, "self-signed.cert.pem") });
    expect(mismatch.code).toBe(1);
    const mismatchError = JSON.parse(mismatch.stdout).error;
    expect(mismatchError).toContain("has a TLS certificate that does not name localhost");
    expect(mismatchError).toContain("Give --url the host name the certificate was issued for");
    expect(mismatchError).not.toContain("NODE_EXTRA_CA_CERTS");
    expectNoKey(refused, fake.token);
    expectNoKey(trusted, fake.token);
    expectNoKey(mismatch, fake.token);
  });

  test("Ctrl-C mid-deploy: the call under way finishes, no further step starts, and what was made is named (exit 130)", async () => {
    const fake = await coolify();
    fake.delayMs = 400; // every call takes a while, as over a slow link
    const proc = spawnDeploy(fake);
    // Interrupt once the project exists on the platform.
    let stderr = "";
    const decoder = new TextDecoder();
    const reader = proc.stderr.getReader();
    while (!/Create project: /.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value);
    }
    proc.kill("SIGINT");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value);
    }
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(130);
    expect(stderr).toContain("SIGINT: stopping the deploy at the next safe point; what it made so far is reported");
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ success: false, error: expect.stringContaining("Interrupted before") });
    // Stopped between two steps: none of them failed.
    expect(result.failedStep).toBeUndefined();
    expect(result.steps.every((s: { status: string }) => s.status === "ok")).toBe(true);
    expect(result.created).toEqual([expect.stringContaining(`Coolify project "${PROJECT}"`)]);
    expect(fake.projects).toHaveLength(1);
    expect(fake.services).toHaveLength(0);
    expect(fake.calls.some((c) => c.operationId === "deploy-by-tag-or-uuid" || c.path.includes("/deploy"))).toBe(false);
    expectNoKey({ code, stdout, stderr }, fake.token);
  });

  test("Ctrl-C while a step waits to try a call again ends the run at once: the wait's timer does not keep the process alive", async () => {
    const fake = await coolify();
    // Coolify asks for 15 s between tries, every time.
    fake.injections.push({ operationId: "create-project", reply: { status: 429, headers: { "retry-after": "15" }, body: { message: "Too Many Attempts." } } });
    const proc = spawnDeploy(fake);
    let stderr = "";
    const decoder = new TextDecoder();
    const reader = proc.stderr.getReader();
    while (!/trying again in 15 s/.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += decoder.decode(value);
    }
    expect(stderr).toContain("Create project… Coolify API 429: Too Many Requests; trying again in 15 s");
    proc.kill("SIGINT");
    const drain = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += decoder.decode(value);
      }
    })();
    // Well inside the 15 s the timer had left: the run ends on the interrupt, not on the timer.
    const ended = await Promise.race([proc.exited, Bun.sleep(10_000).then(() => "still running")]);
    if (ended === "still running") proc.kill("SIGKILL");
    expect(ended).toBe(130);
    await drain;
    const result = JSON.parse(await new Response(proc.stdout).text());
    expect(result).toMatchObject({ success: false, failedStep: "Create project", error: "Coolify API 429: Too Many Requests" });
    expect(fake.calls.filter((c) => c.operationId === "create-project")).toHaveLength(1);
  });

  test("plain http to another machine: a warning that the key travels unencrypted (the key itself never printed)", async () => {
    const dir = bundle();
    const key = "plain-http-secret-key-5c1d";
    // A name that does not resolve: the warning comes first, then the unreachable instance.
    const run = await runCli(["--provider", "dokploy", "--url", "http://no-such-host.invalid:3000", "--api-key", key, "--dir", dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("http://no-such-host.invalid:3000 is plain http: the API key crosses the network unencrypted");
    expectNoKey(run, key);
    // A key pasted into the URL itself is not shown back either, nor in a URL that does not parse.
    const inPath = await runCli(["--provider", "dokploy", "--url", `http://no-such-host.invalid:3000/${key}`, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
    expect(inPath.stderr).toContain("http://no-such-host.invalid:3000/[redacted] is plain http");
    expectNoKey(inPath, key);
    const unparsed = await runCli(["--provider", "dokploy", "--url", `http://[::1/${key}`, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
    expect(unparsed.code).toBe(2);
    expect(JSON.parse(unparsed.stdout).error.message).toContain('"http://[::1/[redacted]" is not a URL');
    expectNoKey(unparsed, key);
  });

  test("wrong key: exit 1 with the SPEC message, key not printed", async () => {
    const fake = await coolify();
    const dir = bundle();
    const key = "wrong-but-secret-key-91b2";
    const run = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", key, "--dir", dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Coolify API 401: Unauthorized");
    expect(run.stderr).toContain('step "Test connection"');
    expectNoKey(run, key);
  });

  test("failure mid-way: output names the step and what was created; --json says the same", async () => {
    const fake = await dokploy();
    fake.injections.push({ operationId: "compose-deploy", reply: { status: 500, body: { message: "docker daemon unavailable" } } });
    const dir = bundle();
    const text = await runCli(["--provider", "dokploy", "--url", fake.url, "--api-key", fake.apiKey, "--dir", dir]);
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('Deploy failed at step "Deploy": Dokploy API 500: Internal Server Error');
    expect(text.stderr).toContain("docker daemon unavailable");
    expect(text.stderr).toContain(`Already created on Dokploy: Dokploy project "${PROJECT}" (${fake.projects[0]!.projectId}), Dokploy compose "${PROJECT}" (${fake.composes[0]!.composeId})`);
    expectNoKey(text, fake.apiKey);

    // Re-run with --update: nothing duplicated, the failing step is still named in JSON.
    const json = await runCli(["--provider", "dokploy", "--url", fake.url, "--api-key", fake.apiKey, "--dir", dir, "--update", "--json"]);
    expect(json.code).toBe(1);
    const result = JSON.parse(json.stdout);
    expect(result).toMatchObject({ success: false, failedStep: "Deploy", error: "Dokploy API 500: Internal Server Error", created: [] });
    expect(fake.projects).toHaveLength(1);
    expect(fake.composes).toHaveLength(1);
    expectNoKey(json, fake.apiKey);
  });

  test("a required secret left empty in .env (a bundle generated with --no-secrets): exit 2 naming it, before any call", async () => {
    const fake = await coolify();
    const dir = bundle();
    writeFileSync(path.join(dir, ".env"), readFileSync(path.join(dir, ".env"), "utf8").replace(/^POSTGRES_PASSWORD=.*$/m, "POSTGRES_PASSWORD="));
    const run = await runCli(["--provider", "coolify", "--url", fake.url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: fake.token });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout).error).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("docker-compose.yml refuses to start without POSTGRES_PASSWORD (empty)") });
    expect(run.stdout).not.toContain("Deployed");
    expect(fake.calls).toHaveLength(0);
    expectNoKey(run, fake.token);
  });

  test("a quoted .env value that never closes: exit 2 naming it, before any call, on both platforms (not a deploy without the variables after it)", async () => {
    for (const fake of [await coolify(), await dokploy()]) {
      const dir = bundle();
      // After the variables the compose file needs: only what comes later would have been lost.
      writeFileSync(path.join(dir, ".env"), `${readFileSync(path.join(dir, ".env"), "utf8")}OPENED="never closed\nLATER=1\n`);
      const provider = fake instanceof CoolifyFake ? "coolify" : "dokploy";
      const key = fake instanceof CoolifyFake ? fake.token : (fake as DokployFake).apiKey;
      const run = await runCli(["--provider", provider, "--url", fake.url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
      expect(run.code, provider).toBe(2);
      expect(JSON.parse(run.stdout).error).toMatchObject({ code: "USAGE_ERROR", message: expect.stringMatching(/^\.env has a quoted value that never closes \(OPENED, line \d+\).*nothing was sent\.$/) });
      expect(fake.calls, provider).toHaveLength(0);
      expectNoKey(run, key);
    }
  });

  test("a compose file no platform can run (no services, a service name compose refuses, a service that is not a mapping): exit 2 before any call, so no empty project is left", async () => {
    const cases: [string, RegExp][] = [
      ["name: broken\nservices: []\n", /^docker-compose\.yml has no services/],
      ["name: broken\n", /^docker-compose\.yml has no services/],
      ["name: broken\nservices:\n  'web app':\n    image: busybox\n", /^docker-compose\.yml names a service "web app": a service name holds only letters, digits/],
      ["name: broken\nservices:\n  web:\n", /^docker-compose\.yml's service "web" is not a mapping/],
    ];
    for (const fake of [await coolify(), await dokploy()]) {
      const provider = fake instanceof CoolifyFake ? "coolify" : "dokploy";
      const key = fake instanceof CoolifyFake ? fake.token : (fake as DokployFake).apiKey;
      for (const [compose, message] of cases) {
        const dir = bundle();
        writeFileSync(path.join(dir, "docker-compose.yml"), compose);
        const run = await runCli(["--provider", provider, "--url", fake.url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
        expect(run.code, `${provider}: ${compose}`).toBe(2);
        const error = JSON.parse(run.stdout).error;
        expect(error.code).toBe("USAGE_ERROR");
        expect(error.message).toMatch(message);
        expect(error.message).toEndWith("nothing was sent.");
        expect(fake.calls, provider).toHaveLength(0);
      }
      // Aliases are read as compose reads them: a service that is an alias is a service.
      const dir = bundle();
      writeFileSync(path.join(dir, "docker-compose.yml"), "name: aliased\nx-base: &base\n  image: busybox\nservices:\n  web: *base\n  worker: *base\n");
      const aliased = await runCli(["--provider", provider, "--url", fake.url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
      expect(aliased.code, `${provider}: ${aliased.stdout}`).toBe(0);
    }
  });

  test("the connection drops after a create call was sent: the user is told it may exist and to check, not that nothing was created", async () => {
    const fake = await coolify();
    // A TCP front that passes everything on, but closes the connection instead of relaying
    // the answer to POST /projects (which the fake has carried out by then).
    const front = createServer((client) => {
      const upstream = connect(Number(new URL(fake.url).port), "127.0.0.1");
      let dropAnswer = false;
      client.on("data", (chunk) => {
        if (chunk.toString("latin1").startsWith("POST /api/v1/projects ")) dropAnswer = true;
        upstream.write(chunk);
      });
      upstream.on("data", (chunk) => (dropAnswer ? client.destroy() : client.write(chunk)));
      for (const socket of [client, upstream]) socket.on("error", () => {});
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => front.close(() => resolve())));
    const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    const dir = bundle();
    const text = await runCli(["--provider", "coolify", "--url", url, "--dir", dir], { STACKGEN_DEPLOY_API_KEY: fake.token });
    expect(text.code).toBe(1);
    expect(text.stderr).toContain(`Possibly created on Coolify: Coolify project "${PROJECT}" (the call that creates it ended without saying whether it was made`);
    expect(text.stderr).toContain("run again with --update");
    expect(text.stderr).not.toContain("created nothing");
    expect(fake.projects).toHaveLength(1);
    fake.projects.splice(0);
    const json = await runCli(["--provider", "coolify", "--url", url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: fake.token });
    expect(JSON.parse(json.stdout)).toMatchObject({ success: false, failedStep: "Create project", created: [], possiblyCreated: [`Coolify project "${PROJECT}"`] });
    expectNoKey(text, fake.token);
    expectNoKey(json, fake.token);
  });

  test("existing project without --update: exit 1, SPEC message, hint to use --update", async () => {
    const fake = await coolify();
    fake.addProject(PROJECT);
    const run = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", bundle()]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Coolify API 409: Conflict");
    expect(run.stderr).toContain("--update");
    expect(fake.services).toHaveLength(0);
  });

  test("bad usage without a terminal: exit 2 with a clear message", async () => {
    const fake = await coolify();
    const dir = bundle();
    const noProvider = await runCli(["--url", fake.url, "--api-key", fake.token, "--dir", dir]);
    expect(noProvider.code).toBe(2);
    expect(noProvider.stderr).toContain("--provider is required");

    const badProvider = await runCli(["--provider", "heroku", "--url", fake.url, "--dir", dir]);
    expect(badProvider.code).toBe(2);
    expect(badProvider.stderr).toContain('Unknown provider "heroku"');

    const noUrl = await runCli(["--provider", "coolify", "--api-key", fake.token, "--dir", dir]);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain("--url is required");

    const noKey = await runCli(["--provider", "coolify", "--url", fake.url, "--dir", dir, "--json"]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("No API key");
    expect(JSON.parse(noKey.stdout).error.code).toBe("USAGE_ERROR");

    const badUrl = await runCli(["--provider", "coolify", "--url", "ftp://x", "--api-key", fake.token, "--dir", dir]);
    expect(badUrl.code).toBe(2);
    // A URL that is none is said first, before a key is asked for or found missing.
    const badUrlNoKey = await runCli(["--provider", "coolify", "--url", "notaurl", "--dir", dir]);
    expect(badUrlNoKey.code).toBe(2);
    expect(badUrlNoKey.stderr).toContain('"notaurl" is not a URL');
    expect(badUrlNoKey.stderr).not.toContain("No API key");

    // A key pasted with a line break inside, or a typographic character: named, not "Cannot reach".
    for (const key of [`${fake.token}\nX`, `${fake.token}\u2019`]) {
      const badKey = await runCli(["--provider", "coolify", "--url", fake.url, "--dir", dir, "--json"], { STACKGEN_DEPLOY_API_KEY: key });
      expect(badKey.code).toBe(2);
      expect(JSON.parse(badKey.stdout).error).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("no HTTP header can carry") });
      expectNoKey(badKey, fake.token);
    }
    expect(fake.calls).toHaveLength(0);

    rmSync(path.join(dir, ".env"));
    const noEnv = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", dir]);
    expect(noEnv.code).toBe(2);
    expect(noEnv.stderr).toContain("No .env");

    writeFileSync(path.join(dir, ".env"), "A=1\n");
    writeFileSync(path.join(dir, "stackgen.json"), JSON.stringify({ projectName: "x" }));
    const shortName = await runCli(["--provider", "coolify", "--url", fake.url, "--api-key", fake.token, "--dir", dir]);
    expect(shortName.code).toBe(2);
    expect(shortName.stderr).toContain("3 to 255 characters");

    expect(fake.calls).toHaveLength(0);
    for (const run of [noProvider, noUrl, noKey, noEnv, shortName]) expectNoKey(run, fake.token);
  });
});

// A real terminal is needed to prove the prompts: `script` (util-linux) runs the CLI on a pseudo-terminal.
const SCRIPT = Bun.which("script");

describe("stackgen deploy on a terminal", () => {
  const run = SCRIPT || process.env.CI === "true" ? test : test.skip;
  if (!SCRIPT) console.warn(`skipping terminal prompt test: util-linux "script" is not installed${process.env.CI === "true" ? " (CI: failing)" : ""}`);

  run("asks for provider, URL and key; the key is not echoed", async () => {
    if (!SCRIPT) throw new Error('util-linux "script" is required on CI');
    const fake = await coolify();
    const dir = bundle();
    const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
    // Only test-controlled paths go into this command line.
    const command = [BUN, MAIN, "deploy", "--dir", dir].map(quote).join(" ");
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !DROPPED_ENV.includes(k)) env[k] = v;
    const proc = Bun.spawn([SCRIPT, "-q", "-e", "-c", command, "/dev/null"], {
      env: { ...env, NO_COLOR: "1", TERM: "dumb" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    let output = "";
    const reader = (async () => {
      const decoder = new TextDecoder();
      const stream = proc.stdout.getReader();
      for (;;) {
        const { done, value } = await stream.read();
        if (done) break;
        output += decoder.decode(value, { stream: true });
      }
    })();
    const waitFor = async (text: string) => {
      const deadline = Date.now() + 10_000;
      while (!output.includes(text)) {
        if (Date.now() > deadline) throw new Error(`no prompt "${text}" in: ${output}`);
        await Bun.sleep(20);
      }
    };
    const answer = async (prompt: string, text: string) => {
      await waitFor(prompt);
      proc.stdin.write(`${text}\r`);
      await proc.stdin.flush();
    };
    await answer("Provider (", "coolify");
    await answer("Coolify URL:", fake.url);
    await answer("API key (hidden):", fake.token);
    const code = await proc.exited;
    await reader;
    expect(output).toContain('Deployed "demo-stack" to Coolify');
    expect(code).toBe(0);
    expect(output).not.toContain(fake.token);
    expect(fake.services).toHaveLength(1);
  });
});
