// Runs `docker compose` (v2 plugin) or, where only it exists, `docker-compose` (v1), always with
// argument arrays. Also reads the normalised project model through `compose config`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import YAML from "yaml";
import { failure } from "../errors.ts";
import { invalidStack, type Stack } from "./stack.ts";
import { bindMountOf, type BindMount } from "../core/bind-mounts.ts";

export interface ComposeCli {
  /** Command prefix: ["docker", "compose"] or ["docker-compose"]. */
  argv: string[];
  v2: boolean;
  /** Whether `up` takes `--pull never|missing` (Compose 2.6 and later; earlier ones refuse the flag). */
  upTakesPull: boolean;
}

/** Whether a Compose version (`2.26.1-4`, `v2.5.0`) takes `up --pull`: 2.6.0 and later. */
export function takesUpPull(version: string): boolean {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 2 || (major === 2 && minor >= 6);
}

/** What a command prints when it runs and exits 0; undefined when it is missing or fails. */
async function outputOf(argv: string[]): Promise<string | undefined> {
  try {
    const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "ignore", stdin: "ignore" });
    const [text, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return code === 0 ? text : undefined;
  } catch {
    return undefined;
  }
}

let detected: Promise<ComposeCli> | undefined;

/** Whether this compose's `pull` takes `--policy` (added in Compose 2.22), by its help; per command. */
const pullPolicyFlag = new Map<string, Promise<boolean>>();
export function pullTakesPolicy(cli: ComposeCli): Promise<boolean> {
  const key = cli.argv.join("\0");
  let known = pullPolicyFlag.get(key);
  if (!known) pullPolicyFlag.set(key, (known = outputOf([...cli.argv, "pull", "--help"]).then((help) => /\s--policy\b/.test(help ?? ""))));
  return known;
}

export function detectCompose(): Promise<ComposeCli> {
  detected ??= (async () => {
    // "Docker Compose version v2.26.1": one call tells both that v2 is there and which it is.
    const v2 = await outputOf(["docker", "compose", "version"]);
    if (v2 !== undefined) return { argv: ["docker", "compose"], v2: true, upTakesPull: takesUpPull(v2) };
    if ((await outputOf(["docker-compose", "--version"])) !== undefined) return { argv: ["docker-compose"], v2: false, upTakesPull: false };
    throw failure("COMPOSE_MISSING", "Neither `docker compose` (v2 plugin) nor `docker-compose` is installed.");
  })();
  return detected;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  /** Stopped because it ran past its `deadlineMs`. */
  overran?: boolean;
}

export class Compose {
  constructor(
    readonly cli: ComposeCli,
    readonly stack: Stack,
    /** Profiles enabled besides those the stack's own settings (COMPOSE_PROFILES) enable. */
    readonly profiles: string[] = [],
  ) {}

  static async for(stack: Stack): Promise<Compose> {
    return new Compose(await detectCompose(), stack);
  }

  /** The same stack with `file` (holding `document`) given to compose after its own files. */
  withFile(file: string, document: Record<string, unknown>): Compose {
    return new Compose(this.cli, { ...this.stack, composeFiles: [...this.stack.composeFiles, file], documents: [...this.stack.documents, document] }, this.profiles);
  }

  /** The same files with these profiles enabled too (`*`: every profile). */
  withProfiles(profiles: string[]): Compose {
    return new Compose(this.cli, this.stack, profiles);
  }

  /** The stack read again from its directory (its files changed), with the same profiles. */
  reloaded(stack: Stack): Compose {
    return new Compose(this.cli, stack, this.profiles);
  }

  private baseArgs(): string[] {
    const args = [...this.cli.argv, "--project-name", this.stack.project];
    for (const file of this.stack.composeFiles) args.push("--file", file);
    args.push("--project-directory", this.stack.dir);
    for (const profile of this.profiles) args.push("--profile", profile);
    if (this.cli.v2) args.push("--ansi", "never");
    return args;
  }

  /** Run a compose subcommand; output is captured (stderr is echoed when `echo` is set). `stopOn`
   *  ends it early when aborted: for work that is safe to cut (a pull), never for a start.
   *  `deadlineMs` ends it after that long: for an `up` whose caller puts things back when it fails
   *  (compose waits for a one-shot job with no limit of its own). */
  async run(args: string[], opts: { echo?: boolean; stopOn?: AbortSignal; deadlineMs?: number } = {}): Promise<RunResult> {
    const proc = Bun.spawn([...this.baseArgs(), ...args], {
      cwd: this.stack.dir,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      // Its own process group: Ctrl-C in the terminal reaches stackgen only, which decides when
      // to stop (see cli/interrupt.ts), instead of killing a `compose up` halfway.
      detached: true,
    });
    // The whole group: `docker compose` runs the compose plugin as a child of its own, which an
    // older docker CLI does not pass the signal to, and which holds the output pipes open.
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-proc.pid, name);
      } catch {
        proc.kill(name); // the group is gone already, or never was one
      }
    };
    const stop = () => signal("SIGINT");
    opts.stopOn?.addEventListener("abort", stop, { once: true });
    let overran = false;
    // SIGINT lets compose cancel cleanly; one that does not end within 10 s more is killed.
    const timers = opts.deadlineMs === undefined ? [] : [
      setTimeout(() => { overran = true; stop(); }, opts.deadlineMs),
      setTimeout(() => signal("SIGKILL"), opts.deadlineMs + 10_000),
    ];
    let stdout: string, stderr: string, code: number;
    try {
      [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    } finally {
      for (const timer of timers) clearTimeout(timer);
      opts.stopOn?.removeEventListener("abort", stop);
    }
    if (opts.echo && stderr.trim()) process.stderr.write(stderr.endsWith("\n") ? stderr : stderr + "\n");
    return { code, stdout, stderr, ...(overran ? { overran } : {}) };
  }

  /** Run and throw a one-line failure when compose exits non-zero. */
  async must(args: string[], what: string, deadlineMs?: number): Promise<RunResult> {
    const result = await this.run(args, { deadlineMs });
    if (result.overran) throw Object.assign(failure("COMPOSE_FAILED", `${what} did not finish within ${deadlineMs! / 1000}s, so it was stopped: compose was still waiting for a one-shot job to end, or a service to become healthy, that another service waits for (--timeout gives it longer)`), { overran: true });
    if (result.code !== 0) throw failure("COMPOSE_FAILED", `${what} failed: ${lastLine(result.stderr) || `exit code ${result.code}`}`);
    return result;
  }

  /** The stack as compose reads it; files compose refuses are bad input (exit 2), not a failure. */
  async config(): Promise<ComposeModel> {
    const result = await this.run(["config"]);
    if (result.code !== 0) throw invalidStack(`docker compose refuses the stack's files: ${lastLine(result.stderr) || `exit code ${result.code}`}`);
    return normaliseModel(YAML.parse(result.stdout) ?? {}, this.stack.project);
  }

  /** Pulls only move tags (update puts them back), so a pull is stopped as soon as `stopOn` aborts.
   *  Always asks the registry: compose's own pull skips an image the engine has when the service
   *  says `pull_policy: missing` (or `if_not_present`), and the update would never update it.
   *  `--policy always` where compose takes it (`pull --help` names it); an older v2 is given a
   *  file of our own setting the service's `pull_policy: always`. v1 pulls whatever the policy. */
  async pull(service: string, stopOn?: AbortSignal): Promise<RunResult> {
    if (!this.cli.v2) return this.run(["pull", "--quiet", service], { stopOn });
    if (await pullTakesPolicy(this.cli)) return this.run(["pull", "--quiet", "--policy", "always", service], { stopOn });
    const dir = mkdtempSync(join(tmpdir(), "stackgen-pull-"));
    try {
      const document = { services: { [service]: { pull_policy: "always" } } };
      const file = join(dir, "pull.compose.yml");
      writeFileSync(file, YAML.stringify(document));
      return await this.withFile(file, document).run(["pull", "--quiet", service], { stopOn });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** `docker compose stop`, tried a second time before it counts as failed: the engine now and
   *  then refuses a container caught between two states for a moment, and a stack left half
   *  stopped by that is worse than a second try. */
  async stop(services: string[] = []): Promise<RunResult> {
    const first = await this.run(["stop", ...services]);
    return first.code === 0 ? first : this.must(["stop", ...services], "docker compose stop");
  }

  start(services: string[] = [], deadlineMs?: number): Promise<RunResult> {
    return this.must(["start", ...services], "docker compose start", deadlineMs);
  }

  /** Create the containers without starting any, from the images the engine has: a restore
   *  pulls what is missing first, itself (see backup-restore.ts pullAbsent). Never pulls: not a
   *  `pull_policy: always` image over the one that ran the data, not a `pull_policy: never` one
   *  the engine lacks (its name may mean another image on a registry). */
  create(): Promise<RunResult> {
    return this.must(["up", "--no-start", ...this.pullNever()], "docker compose up --no-start");
  }

  /** Start the whole stack (images as `create`); `deadlineMs` bounds compose's own wait for the
   *  jobs it runs first. */
  up(deadlineMs?: number): Promise<RunResult> {
    return this.must(["up", "--detach", ...this.pullNever()], "docker compose up", deadlineMs);
  }

  /** `--pull never` where compose takes it: the flag overrides every service's pull_policy. */
  private pullNever(): string[] {
    return this.cli.upTakesPull ? ["--pull", "never"] : [];
  }

  /** Remove the containers (volumes are kept). */
  down(): Promise<RunResult> {
    return this.must(["down"], "docker compose down");
  }
}

/** The last meaningful line of a tool's stderr, for one-line error messages. */
export function lastLine(text: string): string {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  return lines[lines.length - 1] ?? "";
}

export interface ComposeService {
  name: string;
  image?: string;
  dependsOn: string[];
  /** The condition compose waits for on each dependency (`service_started`, `service_healthy`,
   *  `service_completed_successfully`); the list form of depends_on means `service_started`. */
  dependsOnConditions?: Record<string, string>;
  hasBuild: boolean;
  /** Host paths mounted into the service (bind mounts), as compose resolved them. */
  binds: BindMount[];
  /** Its restart policy as written (`unless-stopped`, `no`...), when it has one. */
  restart?: string;
  /** Its `pull_policy` as written (`never`, `build`, `always`...), when it has one. */
  pullPolicy?: string;
  /** The profiles that enable it (none: it always runs). */
  profiles?: string[];
}

/** Whether `docker compose pull` fetches this service's image: not one built here, nor one whose
 *  pull_policy says never to (a local-only image: its name may mean another image on Docker Hub). */
export const pulledFromRegistry = (svc: ComposeService) => svc.image !== undefined && !svc.hasBuild && svc.pullPolicy !== "never" && svc.pullPolicy !== "build";

/** Whether compose keeps this service running for good (`restart: always` or `unless-stopped`): a
 *  server, whose exit means it is down; any other policy (`no`, `on-failure`) may be a job that
 *  finishes. Read by update (which jobs to run again) and restore (which exits are failures). */
export const restartsForGood = (svc: Pick<ComposeService, "restart">) => /^(always|unless-stopped)$/.test(svc.restart ?? "");

/** A service's bind mounts from `compose config`: v2's long form, or v1's `src:dst[:mode]` strings
 *  (v1 writes host paths absolute). */
function bindsOf(volumes: unknown): BindMount[] {
  return Array.isArray(volumes) ? volumes.map(bindMountOf).filter((mount) => mount !== null) : [];
}

export interface ComposeVolume {
  /** Key in the compose file. */
  key: string;
  /** Name of the engine volume. */
  name: string;
  external: boolean;
}

export interface ComposeModel {
  services: ComposeService[];
  volumes: ComposeVolume[];
}

/** Turn `compose config` output (v2 or v1 shapes) into what update/backup need. */
export function normaliseModel(raw: Record<string, any>, project: string): ComposeModel {
  const services: ComposeService[] = Object.entries((raw.services ?? {}) as Record<string, any>).map(([name, svc]) => {
    const deps = svc?.depends_on;
    const dependsOn = Array.isArray(deps) ? deps.map(String) : deps && typeof deps === "object" ? Object.keys(deps) : [];
    const conditionOf = (dep: string) => (Array.isArray(deps) ? undefined : deps[dep]?.condition);
    const dependsOnConditions = Object.fromEntries(dependsOn.map((dep) => [dep, typeof conditionOf(dep) === "string" ? conditionOf(dep) : "service_started"]));
    return { name, image: typeof svc?.image === "string" ? svc.image : undefined, dependsOn, dependsOnConditions, hasBuild: svc?.build !== undefined, binds: bindsOf(svc?.volumes), ...(typeof svc?.restart === "string" ? { restart: svc.restart } : {}), ...(typeof svc?.pull_policy === "string" ? { pullPolicy: svc.pull_policy } : {}), ...(Array.isArray(svc?.profiles) ? { profiles: svc.profiles.map(String) } : {}) };
  });
  const volumes: ComposeVolume[] = Object.entries((raw.volumes ?? {}) as Record<string, any>).map(([key, vol]) => {
    const external = vol?.external === true || (typeof vol?.external === "object" && vol?.external !== null);
    const explicit = typeof vol?.name === "string" ? vol.name : typeof vol?.external?.name === "string" ? vol.external.name : undefined;
    return { key, name: explicit ?? (external ? key : `${project}_${key}`), external };
  });
  return { services, volumes };
}
