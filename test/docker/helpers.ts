// Helpers for the docker end-to-end tests: the real engine, the local registry on 127.0.0.1:5000
// and the busybox base image that .ci/setup-docker.sh prepares.
import { test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Compose } from "../../src/docker/compose.ts";
import { loadStack } from "../../src/docker/stack.ts";

export const REPO = resolve(import.meta.dir, "../..");
export const BUN = join(REPO, "node_modules/.bin/bun");
export const MAIN = join(REPO, "src/main.ts");
export const REGISTRY = "127.0.0.1:5000";
export const BASE_IMAGE = "stackgen-test/busybox:latest";

// consola hides info lines when it thinks it runs under a test runner; the CLI subprocess should
// log as it does for users.
const QUIET_FREE = { NODE_ENV: "production", TEST: "" };

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  /** With `measurePeak`: the largest resident set the process reached (VmHWM, sampled), in MiB. */
  peakMiB?: number;
}

/** The process's peak resident set so far, in MiB (undefined once it has exited). */
function peakOf(pid: number): number | undefined {
  try {
    const kib = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kib === undefined ? undefined : Number(kib) / 1024;
  } catch {
    return undefined;
  }
}

export async function run(argv: string[], opts: { cwd?: string; env?: Record<string, string>; measurePeak?: boolean } = {}): Promise<Ran> {
  const proc = Bun.spawn(argv, { cwd: opts.cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1", ...QUIET_FREE, ...opts.env } });
  let peakMiB: number | undefined;
  const sampler = opts.measurePeak
    ? setInterval(() => {
        peakMiB = Math.max(peakMiB ?? 0, peakOf(proc.pid) ?? 0);
      }, 20)
    : undefined;
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearInterval(sampler);
  return { code, stdout, stderr, ...(opts.measurePeak ? { peakMiB } : {}) };
}

/** The CLI as a subprocess. */
export const cli = (args: string[], env?: Record<string, string>) => run([BUN, MAIN, ...args], { env });
/** The CLI as a subprocess, sampling its peak memory. */
export const cliMeasured = (args: string[]) => run([BUN, MAIN, ...args], { measurePeak: true });

/** A `docker` put ahead of the real one on PATH (`env`, for the CLI) whose `docker compose …
 *  stop` fails as an engine now and then makes it fail: after stopping (what compose stops), it
 *  exits 1 with the engine's error. Only the first one, or every one. `refuse` names further
 *  compose subcommands that fail so; those of `runFirst` do their work before failing (`stop` by
 *  default), the others fail without doing anything. Everything else is the real docker's.
 *  `refused()`: whether a refused command has run. */
export function dockerRefusingStops(mode: "once" | "always", refuse: readonly string[] = ["stop"], runFirst: readonly string[] = ["stop"]) {
  const dir = mkdtempSync(join(tmpdir(), "stackgen-docker-shim-"));
  const mark = join(dir, "refused");
  writeFileSync(join(dir, "docker"), `#!/bin/sh
compose=; hit=
for a in "$@"; do [ "$a" = compose ] && compose=1; case " ${refuse.join(" ")} " in *" $a "*) hit=$a;; esac; done
if [ -n "$compose" ] && [ -n "$hit" ] && { [ ${mode} = always ] || [ ! -e "${mark}" ]; }; then
  touch "${mark}"
  case " ${runFirst.join(" ")} " in *" $hit "*) ${Bun.which("docker")} "$@" >/dev/null 2>&1;; esac
  echo "Error response from daemon: cannot $hit container: it is being removed" >&2
  exit 1
fi
exec ${Bun.which("docker")} "$@"
`, { mode: 0o755 });
  return { env: { PATH: `${dir}:${process.env.PATH}` }, refused: () => existsSync(mark), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function docker(...args: string[]): Promise<string> {
  const r = await run(["docker", ...args]);
  if (r.code !== 0) throw new Error(`docker ${args.join(" ")} failed: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** Why the docker suite cannot run here, or undefined when it can. */
export async function dockerUnavailable(): Promise<string | undefined> {
  try {
    if ((await run(["docker", "info"])).code !== 0) return "no Docker engine (run .ci/setup-docker.sh as root)";
    if ((await run(["docker", "compose", "version"])).code !== 0) return "no docker compose v2 plugin (run .ci/setup-docker.sh)";
    if ((await run(["docker", "image", "inspect", BASE_IMAGE])).code !== 0) return `no ${BASE_IMAGE} image (run .ci/setup-docker.sh)`;
    const reg = await fetch(`http://${REGISTRY}/v2/`).catch(() => undefined);
    if (!reg || reg.status !== 200) return `no registry on ${REGISTRY} (run .ci/setup-docker.sh)`;
  } catch (e) {
    return `docker not usable: ${(e as Error).message}`;
  }
  return undefined;
}

/** `test` when docker is usable; otherwise a visible skip locally and a failure under CI. */
export async function dockerTest(): Promise<typeof test> {
  const reason = await dockerUnavailable();
  if (!reason) return test;
  if (process.env.CI === "true") {
    test("docker end-to-end environment", () => {
      throw new Error(`docker suite cannot run: ${reason}`);
    });
  } else {
    console.warn(`[skip] docker end-to-end tests: ${reason}`);
  }
  return test.skip as unknown as typeof test;
}

/** A stack directory plus everything a test creates, removed again in cleanup(). */
export class TestStack {
  readonly dir: string;
  readonly images = new Set<string>();

  constructor(readonly project: string) {
    this.dir = mkdtempSync(join(tmpdir(), `stackgen-${project}-`));
  }

  static unique(prefix: string): TestStack {
    return new TestStack(`sgt${prefix}${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`);
  }

  write(name: string, content: string): void {
    writeFileSync(join(this.dir, name), content);
  }

  /** Image ref in the local registry for this stack. */
  ref(name: string, tag = "1"): string {
    return `${REGISTRY}/${this.project}/${name}:${tag}`;
  }

  /** Build an image FROM the busybox base with extra Dockerfile lines; returns its id. */
  async build(ref: string, lines: string[]): Promise<string> {
    const ctx = mkdtempSync(join(tmpdir(), "stackgen-build-"));
    try {
      writeFileSync(join(ctx, "Dockerfile"), [`FROM ${BASE_IMAGE}`, `LABEL stackgen.test=${this.project}`, ...lines, ""].join("\n"));
      this.images.add(ref);
      const r = await run(["docker", "build", "-q", "-t", ref, ctx]);
      if (r.code !== 0) throw new Error(`docker build failed: ${r.stderr}`);
      return await this.imageId(ref);
    } finally {
      rmSync(ctx, { recursive: true, force: true });
    }
  }

  /** Build (as `build`) and push to the local registry; returns the image id. */
  async publish(ref: string, lines: string[]): Promise<string> {
    const id = await this.build(ref, lines);
    await docker("push", "-q", ref);
    return id;
  }

  async imageId(ref: string): Promise<string> {
    return docker("image", "inspect", "-f", "{{.Id}}", ref);
  }

  /** Publish a new image under `ref` in the registry while the local tag keeps pointing at the old one. */
  async pushNewVersion(ref: string, lines: string[]): Promise<{ oldId: string; newId: string }> {
    const oldId = await this.imageId(ref);
    const newId = await this.publish(ref, lines);
    await docker("tag", oldId, ref);
    return { oldId, newId };
  }

  /** The stack, its compose and the model compose reads, as the CLI opens them: for calling a
   *  day-2 operation in-process (with an engine that fails on purpose, or a progress interval). */
  async opened() {
    const stack = loadStack(this.dir);
    const compose = await Compose.for(stack);
    return { stack, compose, model: await compose.config() };
  }

  /** `docker compose` on this stack, with the override file when one is there (as plain `docker compose` would). */
  compose(...args: string[]): Promise<Ran> {
    const files = ["docker-compose.yml", "docker-compose.override.yml"].filter((f) => existsSync(join(this.dir, f)));
    return run(["docker", "compose", "-p", this.project, "--project-directory", this.dir, ...files.flatMap((f) => ["-f", join(this.dir, f)]), ...args]);
  }

  async up(): Promise<void> {
    const r = await this.compose("up", "-d", "--wait");
    if (r.code !== 0) throw new Error(`compose up failed: ${r.stderr}`);
  }

  /** Write and start a stack of `main` (volume mdata at /m) and `worker`, a service of the profile
   *  `extra` (volume wdata at /w, holding the file /w/job), both running. */
  async upWithProfiledWorker(mainImage: string): Promise<void> {
    this.write("docker-compose.yml", `name: ${this.project}
services:
  main:
    image: ${mainImage}
    init: true
    command: ["sleep", "3600"]
    volumes: ["mdata:/m"]
  worker:
    image: ${BASE_IMAGE}
    init: true
    command: ["sleep", "3600"]
    profiles: ["extra"]
    volumes: ["wdata:/w"]
volumes:
  mdata: {}
  wdata: {}
`);
    const up = await this.compose("--profile", "extra", "up", "-d", "--wait");
    if (up.code !== 0) throw new Error(`compose up failed: ${up.stderr}`);
    await this.exec("worker", "sh", "-c", "echo queued > /w/job");
  }

  async container(service: string): Promise<any> {
    const id = await docker("ps", "-aq", "--filter", `label=com.docker.compose.project=${this.project}`, "--filter", `label=com.docker.compose.service=${service}`);
    return JSON.parse(await docker("inspect", id.split("\n")[0]))[0];
  }

  /** Run a command in a service's container. */
  async exec(service: string, ...cmd: string[]): Promise<string> {
    const r = await this.compose("exec", "-T", service, ...cmd);
    if (r.code !== 0) throw new Error(`exec failed: ${r.stderr}`);
    return r.stdout;
  }

  async cleanup(): Promise<void> {
    await this.compose("down", "-v", "--remove-orphans", "-t", "0");
    // Anything left with the project label (containers from a failed step, recreated volumes).
    const containers = (await run(["docker", "ps", "-aq", "--filter", `label=com.docker.compose.project=${this.project}`])).stdout.trim();
    if (containers) await run(["docker", "rm", "-f", ...containers.split("\n")]);
    const volumes = (await run(["docker", "volume", "ls", "-q", "--filter", `label=com.docker.compose.project=${this.project}`])).stdout.trim();
    if (volumes) await run(["docker", "volume", "rm", "-f", ...volumes.split("\n")]);
    // A network whose `down` did not see every container (one of a profile it was not given).
    const networks = (await run(["docker", "network", "ls", "-q", "--filter", `label=com.docker.compose.project=${this.project}`])).stdout.trim();
    if (networks) await run(["docker", "network", "rm", ...networks.split("\n")]);
    const images = (await run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", `${REGISTRY}/${this.project}/*`])).stdout.trim();
    // Compose names an image it builds for a service without one `<project>-<service>`.
    const built = (await run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", `reference=${this.project}-*`])).stdout.trim();
    const all = new Set([...this.images, ...(images ? images.split("\n") : []), ...(built ? built.split("\n") : [])]);
    if (all.size > 0) await run(["docker", "rmi", "-f", ...all]);
    // Untagged leftovers of this test (old or new versions after re-tagging).
    const dangling = (await run(["docker", "images", "-q", "--filter", "dangling=true", "--filter", `label=stackgen.test=${this.project}`])).stdout.trim();
    if (dangling) await run(["docker", "rmi", "-f", ...new Set(dangling.split("\n"))]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
