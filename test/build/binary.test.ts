// The compiled product: dist/stackgen-linux-{x64,arm64} from `npm run build` and the container
// image from the Dockerfile. Each binary runs from an empty directory with an empty environment,
// so anything it still reads from the source tree or the environment shows up as a failure.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { commitLabel, outfileOf, packageVersion } from "../../build.ts";
import { freePort } from "../support/tools.ts";

const ROOT = join(import.meta.dir, "..", "..");
const IN_CI = process.env.CI === "true";
const X64 = outfileOf({ name: "x64" });
const ARM64 = outfileOf({ name: "arm64" });
// Read once: the build below gets the same commit, so a commit landing mid-run cannot split them.
const COMMIT = commitLabel();
const EXPECTED_VERSION = `stackgen ${packageVersion()} (${COMMIT})`;
const BUILD_TIMEOUT_MS = 5 * 60_000;

const tempDirs: string[] = [];
async function tempDir(label: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `stackgen-build-${label}-`));
  tempDirs.push(dir);
  return dir;
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(cmd: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; stdin?: Uint8Array } = {}): Promise<Ran> {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd ?? tmpdir(),
    env: options.env ?? (process.env as Record<string, string>),
    stdin: options.stdin ?? "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 120_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

function expectSuccess(r: Ran, what: string) {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`);
}

/** Why a tool-dependent group cannot run here, or undefined when it can. */
type Lack = string | undefined;

/** Missing tool: skip with the reason locally; under CI=true the test runs and fails with it. */
function needs(lack: Lack) {
  if (lack && !IN_CI) console.warn(`[skip] ${lack}`);
  return {
    test: (name: string, body: () => Promise<void>, timeoutMs?: number) =>
      test.skipIf(Boolean(lack) && !IN_CI)(name, async () => {
        if (lack) throw new Error(`required in CI: ${lack}`);
        await body();
      }, timeoutMs),
  };
}

// ---------------------------------------------------------------------------------------------
// Build once (reused when dist/ is newer than every input and carries this version and commit).

function newestMtime(path: string): number {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newestMtime(join(path, name))), info.mtimeMs);
}

const BUILD_INPUTS = ["src", "catalog", "package.json", "package-lock.json", "build.ts", "node_modules/bun/package.json", "node_modules/swagger-ui-dist/package.json"]
  .map((p) => join(ROOT, p))
  .filter(existsSync);

async function distIsFresh(): Promise<boolean> {
  if (!existsSync(X64) || !existsSync(ARM64)) return false;
  const inputs = Math.max(...BUILD_INPUTS.map(newestMtime));
  if (Math.min(statSync(X64).mtimeMs, statSync(ARM64).mtimeMs) < inputs) return false;
  if (process.arch !== "x64") return true;
  const version = await run([X64, "--version"], { env: {} });
  return version.code === 0 && version.stdout.trim() === EXPECTED_VERSION;
}

beforeAll(async () => {
  if (await distIsFresh()) return;
  const env = { ...(process.env as Record<string, string>), STACKGEN_COMMIT: COMMIT };
  const build = await run([process.execPath, join(ROOT, "build.ts")], { cwd: ROOT, env, timeoutMs: BUILD_TIMEOUT_MS });
  expectSuccess(build, "bun build.ts");
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
});

// ---------------------------------------------------------------------------------------------
// Serving helpers.

async function waitForHealth(baseUrl: string, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`the server exited before answering ${baseUrl}/v1/health`);
    try {
      const r = await fetch(`${baseUrl}/v1/health`, { signal: AbortSignal.timeout(1000) });
      if (r.status === 200) return;
      last = `status ${r.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await Bun.sleep(100);
  }
  throw new Error(`${baseUrl}/v1/health did not answer within ${timeoutMs} ms (${last})`);
}

const GENERATE_BODY = { projectName: "binary-check", services: ["redis", "postgresql"] };

async function checkGenerate(apiUrl: string) {
  const r = await fetch(`${apiUrl}/v1/generate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(GENERATE_BODY) });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { files: Record<string, string>; metadata: { totalServices: number } };
  expect(Object.keys(body.files)).toContain("docker-compose.yml");
  expect(body.files["docker-compose.yml"]).toContain("name: binary-check");
  expect(body.files["docker-compose.yml"]).toMatch(/^\s{2}redis:/m);
  expect(body.files["docker-compose.yml"]).toMatch(/^\s{2}postgresql:/m);
  expect(body.metadata.totalServices).toBe(2);
}

async function checkHealth(apiUrl: string) {
  const r = await fetch(`${apiUrl}/v1/health`);
  expect(r.status).toBe(200);
  const body = (await r.json()) as { status: string; version: string };
  expect(body.status).toBe("ok");
  expect(body.version).toBe(packageVersion());
}

/** Every script and stylesheet the UI page references must come from the binary too. */
async function checkUiPage(uiUrl: string) {
  const page = await fetch(`${uiUrl}/`);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type") ?? "").toContain("text/html");
  const html = await page.text();
  expect(html.toLowerCase()).toContain("<html");
  const assets = [...html.matchAll(/(?:src|href)="(\/[^"#?]+\.(?:js|css))"/g)].map((m) => m[1]);
  expect(assets.length).toBeGreaterThan(0);
  for (const asset of assets) {
    const r = await fetch(`${uiUrl}${asset}`);
    expect({ asset, status: r.status }).toEqual({ asset, status: 200 });
    expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(0);
  }
  // The UI listener answers the API too (relative URLs from the page).
  await checkHealth(uiUrl);
}

async function checkDocs(apiUrl: string) {
  const docs = await fetch(`${apiUrl}/v1/docs`);
  expect(docs.status).toBe(200);
  const html = await docs.text();
  expect(html).toContain("swagger-ui-bundle.js");
  expect(html).not.toMatch(/https?:\/\/(?:unpkg|cdn|cdnjs|jsdelivr)/);
  const bundle = await fetch(`${apiUrl}/v1/docs/swagger-ui-bundle.js`);
  expect(bundle.status).toBe(200);
  expect(bundle.headers.get("content-type") ?? "").toContain("javascript");
  expect((await bundle.text()).length).toBeGreaterThan(100_000);
  const css = await fetch(`${apiUrl}/v1/docs/swagger-ui.css`);
  expect(css.status).toBe(200);
  const spec = await fetch(`${apiUrl}/v1/openapi.json`);
  expect(spec.status).toBe(200);
  expect(((await spec.json()) as { openapi: string }).openapi).toMatch(/^3\./);
}

// ---------------------------------------------------------------------------------------------

const x64Lack: Lack = process.arch === "x64" ? undefined : `the x64 binary needs an x64 machine (this is ${process.arch})`;

describe("dist/stackgen-linux-x64", () => {
  const x64 = needs(x64Lack);

  x64.test("is a file of its own with version and commit built in", async () => {
    expect(statSync(X64).mode & 0o111).not.toBe(0);
    const cwd = await tempDir("version");
    const r = await run([X64, "--version"], { cwd, env: {} });
    expectSuccess(r, "--version");
    expect(r.stdout.trim()).toBe(EXPECTED_VERSION);
    expect(readdirSync(cwd)).toEqual([]);
  });

  x64.test("--help lists the commands", async () => {
    const r = await run([X64, "--help"], { cwd: await tempDir("help"), env: {} });
    expectSuccess(r, "--help");
    for (const command of ["serve", "generate", "validate", "status", "backup"]) expect(r.stdout).toContain(command);
    const sub = await run([X64, "generate", "--help"], { cwd: await tempDir("help"), env: {} });
    expectSuccess(sub, "generate --help");
    expect(sub.stdout).toContain("--services");
  });

  x64.test("generate --dir writes a bundle with the embedded catalog", async () => {
    const cwd = await tempDir("gen");
    const r = await run([X64, "generate", "--dir", join(cwd, "out"), "--services", "redis", "--name", "t"], { cwd, env: {} });
    expectSuccess(r, "generate");
    const compose = readFileSync(join(cwd, "out", "docker-compose.yml"), "utf8");
    expect(compose).toMatch(/^name: t$/m);
    expect(compose).toContain("redis");
    expect(statSync(join(cwd, "out", ".env")).mode & 0o777).toBe(0o600);
  });

  x64.test("serve: health, generate, UI page and offline docs from an empty directory and environment", async () => {
    const cwd = await tempDir("serve");
    const [apiPort, uiPort] = [await freePort(), await freePort()];
    const proc = Bun.spawn([X64, "serve", "--host", "127.0.0.1", "--port", String(apiPort), "--ui-port", String(uiPort)], {
      cwd,
      env: {},
      stdout: "pipe",
      stderr: "pipe",
    });
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const uiUrl = `http://127.0.0.1:${uiPort}`;
    try {
      await waitForHealth(apiUrl, 15_000, () => proc.exitCode === null);
      await checkHealth(apiUrl);
      await checkGenerate(apiUrl);
      await checkUiPage(uiUrl);
      await checkDocs(apiUrl);
      expect(readdirSync(cwd)).toEqual([]);
    } finally {
      proc.kill("SIGTERM");
      const exited = await Promise.race([proc.exited, Bun.sleep(5000).then(() => "timeout" as const)]);
      if (exited === "timeout") proc.kill("SIGKILL");
      await proc.exited;
    }
    // One JSON line per request on stdout (CONTRACT §1 LOG_LEVEL).
    const logLines = (await new Response(proc.stdout).text()).split("\n").filter((l) => l.startsWith("{"));
    expect(logLines.some((l) => (JSON.parse(l) as { path?: string }).path === "/v1/generate")).toBe(true);
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------

const QEMU = "qemu-aarch64-static";
const ARM_SYSROOT = "/usr/aarch64-linux-gnu";
const qemuLack: Lack =
  Bun.which(QEMU) === null ? `${QEMU} is not installed (apt-get install -y qemu-user-static)` :
  !existsSync(join(ARM_SYSROOT, "lib", "ld-linux-aarch64.so.1")) ? `${ARM_SYSROOT} has no arm64 glibc (apt-get install -y libc6-arm64-cross)` :
  undefined;

describe("dist/stackgen-linux-arm64 (under qemu-user)", () => {
  const arm = needs(qemuLack);
  const qemu = (args: string[], cwd: string) => run([Bun.which(QEMU) ?? QEMU, "-L", ARM_SYSROOT, ARM64, ...args], { cwd, env: {}, timeoutMs: 90_000 });

  arm.test("is an arm64 executable", async () => {
    // ELF header: e_machine at offset 18, 0xB7 = AArch64.
    const header = new Uint8Array(await Bun.file(ARM64).slice(0, 20).arrayBuffer());
    expect([...header.slice(0, 4)]).toEqual([0x7f, 0x45, 0x4c, 0x46]);
    expect(header[18] | (header[19] << 8)).toBe(0xb7);
  });

  arm.test("--version", async () => {
    const r = await qemu(["--version"], await tempDir("arm-version"));
    expectSuccess(r, "arm64 --version");
    expect(r.stdout.trim()).toBe(EXPECTED_VERSION);
  }, 90_000);

  arm.test("generate --dir writes a bundle", async () => {
    const cwd = await tempDir("arm-gen");
    const out = join(cwd, "out");
    const r = await qemu(["generate", "--dir", out, "--services", "redis", "--name", "t"], cwd);
    expectSuccess(r, "arm64 generate");
    const compose = readFileSync(join(out, "docker-compose.yml"), "utf8");
    expect(compose).toMatch(/^name: t$/m);
    expect(compose).toContain("redis");
    expect(existsSync(join(out, ".env"))).toBe(true);
  }, 90_000);
});

// ---------------------------------------------------------------------------------------------
// The container image, built offline on a base made here from this machine's glibc (the
// Dockerfile's default base is pulled from a registry, which CI cannot reach).

async function dockerLackOf(): Promise<Lack> {
  if (process.arch !== "x64") return `the image holds the x64 binary (this is ${process.arch})`;
  if (Bun.which("docker") === null) return "docker is not installed (see .ci/setup-docker.sh)";
  const info = await run(["docker", "info", "--format", "{{.ServerVersion}}"], { timeoutMs: 20_000 });
  return info.code === 0 ? undefined : `the docker engine is not running (see .ci/setup-docker.sh): ${info.stderr.trim().split("\n")[0]}`;
}
const dockerLack = await dockerLackOf();

/** The libraries `ldd` names for the binary (the dynamic loader included). */
async function sharedLibrariesOf(binary: string): Promise<string[]> {
  const r = await run(["ldd", binary]);
  expectSuccess(r, "ldd");
  return [...new Set([...r.stdout.matchAll(/(\/\S+)\s+\(0x/g)].map((m) => m[1]))];
}

/** A rootfs with glibc, /etc/passwd with user 65532, and writable /tmp and home. */
async function baseRootfs(binary: string): Promise<string> {
  const root = await tempDir("rootfs");
  for (const lib of await sharedLibrariesOf(binary)) {
    mkdirSync(join(root, dirname(lib)), { recursive: true });
    cpSync(lib, join(root, lib), { dereference: true });
  }
  mkdirSync(join(root, "etc"));
  writeFileSync(join(root, "etc", "passwd"), "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n");
  writeFileSync(join(root, "etc", "group"), "root:x:0:\nnonroot:x:65532:\n");
  mkdirSync(join(root, "tmp"));
  chmodSync(join(root, "tmp"), 0o1777);
  mkdirSync(join(root, "home", "nonroot"), { recursive: true });
  try {
    chownSync(join(root, "home", "nonroot"), 65532, 65532);
  } catch {
    chmodSync(join(root, "home", "nonroot"), 0o777); // not root: a world-writable home will do
  }
  return root;
}

describe("Dockerfile image", () => {
  const docker = needs(dockerLack);
  const tag = `stackgen-test/stackgen:${process.pid}-${Date.now().toString(36)}`;
  const baseTag = `stackgen-test/glibc-base:${process.pid}-${Date.now().toString(36)}`;
  const containers: string[] = [];
  // The classic builder keeps an untagged image for each `FROM scratch` binary stage (118 MB
  // each): those that appear while this block runs are its own and go with the rest.
  const dangling = async () => (await run(["docker", "image", "ls", "-q", "--no-trunc", "--filter", "dangling=true"])).stdout.split("\n").filter(Boolean);
  let danglingBefore: string[] | undefined;

  afterAll(async () => {
    if (dockerLack) return;
    for (const id of containers) await run(["docker", "rm", "-f", "-v", id]);
    await run(["docker", "image", "rm", "-f", tag]);
    await run(["docker", "image", "rm", "-f", baseTag]);
    if (danglingBefore) for (const id of await dangling()) if (!danglingBefore.includes(id)) await run(["docker", "image", "rm", id]);
  });

  docker.test("builds from the binary, runs as non-root, serves health and generate, and becomes healthy", async () => {
    const rootfs = await baseRootfs(X64);
    const tarPath = join(await tempDir("tar"), "rootfs.tar");
    expectSuccess(await run(["tar", "--numeric-owner", "-C", rootfs, "-cf", tarPath, "."], { timeoutMs: 60_000 }), "tar rootfs");
    expectSuccess(await run(["docker", "import", tarPath, baseTag], { timeoutMs: 120_000 }), "docker import");

    danglingBefore = await dangling();
    // Build context: only what .dockerignore lets through matters, so use the real repo root.
    const build = await run(["docker", "build", "-q", "--build-arg", `BASE_IMAGE=${baseTag}`, "-t", tag, ROOT], { timeoutMs: 300_000 });
    expectSuccess(build, "docker build");

    const config = await run(["docker", "image", "inspect", "--format", "{{json .Config}}", tag]);
    expectSuccess(config, "docker image inspect");
    const image = JSON.parse(config.stdout) as { User: string; ExposedPorts: Record<string, unknown>; Cmd: string[]; Healthcheck?: { Test: string[] } };
    expect(image.User).not.toMatch(/^(|root|0)(:|$)/);
    expect(Object.keys(image.ExposedPorts).sort()).toEqual(["3456/tcp", "3654/tcp"]);
    expect(image.Cmd).toEqual(["serve"]);
    expect(image.Healthcheck?.Test?.join(" ")).toContain("stackgen");

    const started = await run(["docker", "run", "-d", "--health-interval=1s", "--health-start-period=10s", "--health-retries=3",
      "-p", "127.0.0.1::3456", "-p", "127.0.0.1::3654", tag], { timeoutMs: 60_000 });
    expectSuccess(started, "docker run");
    const id = started.stdout.trim();
    containers.push(id);

    const portOf = async (containerPort: number) => {
      const r = await run(["docker", "port", id, `${containerPort}/tcp`]);
      expectSuccess(r, "docker port");
      const line = r.stdout.split("\n").find((l) => l.startsWith("127.0.0.1:"));
      if (!line) throw new Error(`no loopback port for ${containerPort}: ${r.stdout}`);
      return Number(line.split(":")[1]);
    };
    const running = async () => (await run(["docker", "inspect", "--format", "{{.State.Running}}", id])).stdout.trim() === "true";
    const apiUrl = `http://127.0.0.1:${await portOf(3456)}`;
    const uiUrl = `http://127.0.0.1:${await portOf(3654)}`;
    let alive = true;
    const watch = setInterval(async () => { alive = await running(); }, 500);
    try {
      await waitForHealth(apiUrl, 30_000, () => alive);
    } catch (e) {
      const logs = await run(["docker", "logs", id]);
      throw new Error(`${(e as Error).message}\ncontainer logs:\n${logs.stdout}${logs.stderr}`);
    } finally {
      clearInterval(watch);
    }
    await checkHealth(apiUrl);
    await checkGenerate(apiUrl);
    await checkUiPage(uiUrl);

    const top = await run(["docker", "top", id, "-o", "pid,uid,args"]);
    expectSuccess(top, "docker top");
    const serveLine = top.stdout.split("\n").find((l) => l.includes("stackgen serve"));
    expect(serveLine?.trim().split(/\s+/)[1]).toBe("65532");

    // The HEALTHCHECK runs the binary itself (no shell, no curl in the image).
    const deadline = Date.now() + 30_000;
    let health = "";
    while (Date.now() < deadline) {
      health = (await run(["docker", "inspect", "--format", "{{.State.Health.Status}}", id])).stdout.trim();
      if (health === "healthy" || health === "unhealthy") break;
      await Bun.sleep(500);
    }
    if (health !== "healthy") {
      const detail = await run(["docker", "inspect", "--format", "{{json .State.Health}}", id]);
      throw new Error(`container health is "${health}": ${detail.stdout}`);
    }
  }, 420_000);
});
