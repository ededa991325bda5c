// Pure helpers of the bundle start-up test: read the generated compose file, plan what each
// stand-in container must check, and write the test-only override that swaps in the stand-ins.
import { posix } from "node:path";

export const OVERRIDE_FILE = "docker-compose.standin.yml";
/** Seconds a stand-in waits before it reports ready; long enough that starting a dependent too early shows. */
export const READY_AFTER_SECONDS = 2;
export const MARKER_FILE = ".standin-marker";
export const ENV_SNAPSHOT_FILE = ".standin-env";

type Scalar = string | number | boolean | null;

export interface ComposeService {
  image?: string;
  ports?: (string | number | Record<string, Scalar>)[];
  volumes?: (string | Record<string, unknown>)[];
  environment?: Record<string, Scalar> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: unknown;
  networks?: string[] | Record<string, unknown>;
  [key: string]: unknown;
}

export interface ComposeDoc {
  name?: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, unknown>;
}

export interface BindMount {
  /** Path relative to the bundle root, without "./". */
  source: string;
  target: string;
  readOnly: boolean;
}

export interface VolumeMount {
  volume: string;
  target: string;
  readOnly: boolean;
}

export interface FileCheck {
  /** Where the container must see the file. */
  path: string;
  sha256: string;
}

export interface ServicePlan {
  name: string;
  binds: BindMount[];
  volumes: VolumeMount[];
  files: FileCheck[];
  /** "port/proto" the base file publishes, e.g. "5432/tcp". */
  containerPorts: string[];
  /** Dependencies by condition. */
  dependsOn: Record<string, string>;
  /** A one-shot job (another service waits for it to complete): its stand-in exits 0 when done. */
  job: boolean;
}

/** Split a short-syntax volume entry ("src:dst[:mode]") or read a long-syntax one. */
export function parseMount(entry: string | Record<string, unknown>): { source: string; target: string; readOnly: boolean; bind: boolean } {
  if (typeof entry === "string") {
    const [source, target, mode = ""] = entry.split(":");
    if (target === undefined) return { source: "", target: source, readOnly: false, bind: false }; // anonymous volume
    const bind = source.startsWith(".") || source.startsWith("/") || source.startsWith("~");
    return { source, target, readOnly: mode.split(",").includes("ro"), bind };
  }
  const source = String(entry.source ?? "");
  return { source, target: String(entry.target), readOnly: entry.read_only === true, bind: entry.type === "bind" };
}

/** Container side of a published port ("127.0.0.1:80:8080/tcp" -> "8080/tcp"). */
export function containerPort(entry: string | number | Record<string, Scalar>): string {
  if (typeof entry === "object" && entry !== null) return `${entry.target}/${entry.protocol ?? "tcp"}`;
  const text = String(entry);
  const [spec, proto = "tcp"] = text.split("/");
  const parts = spec.split(":");
  return `${parts[parts.length - 1]}/${proto}`;
}

export function dependencies(svc: ComposeService): Record<string, string> {
  const deps = svc.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((d) => [d, "service_started"]));
  return Object.fromEntries(Object.entries(deps).map(([d, spec]) => [d, spec?.condition ?? "service_started"]));
}

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

/**
 * Everything the stand-in of each service must find and do. Throws when the compose file binds a
 * path the bundle does not contain (a generator bug: docker would mount an empty directory).
 */
export function planServices(compose: ComposeDoc, files: Record<string, string>): ServicePlan[] {
  const jobs = new Set(Object.values(compose.services).flatMap((svc) => Object.entries(dependencies(svc)).filter(([, c]) => c === "service_completed_successfully").map(([d]) => d)));
  return Object.entries(compose.services).map(([name, svc]) => {
    const binds: BindMount[] = [];
    const volumes: VolumeMount[] = [];
    const checks: FileCheck[] = [];
    for (const entry of svc.volumes ?? []) {
      const mount = parseMount(entry);
      if (!mount.bind) {
        if (mount.source) volumes.push({ volume: mount.source, target: mount.target, readOnly: mount.readOnly });
        continue;
      }
      if (!mount.source.startsWith("./")) throw new Error(`${name} binds ${mount.source}, outside the bundle`);
      const source = posix.normalize(mount.source.slice(2)).replace(/\/$/, "");
      const inside = Object.keys(files).filter((f) => f === source || f.startsWith(`${source}/`));
      if (inside.length === 0) throw new Error(`${name} binds ./${source}, which the bundle does not contain`);
      binds.push({ source, target: mount.target, readOnly: mount.readOnly });
      for (const f of inside.sort()) {
        const path = f === source ? mount.target : posix.join(mount.target, f.slice(source.length + 1));
        checks.push({ path, sha256: sha256(files[f]) });
      }
    }
    return { name, binds, volumes, files: checks, containerPorts: (svc.ports ?? []).map(containerPort), dependsOn: dependencies(svc), job: jobs.has(name) };
  });
}

/** Argument vector of standin.sh for one service. */
export function standinArgs(project: string, plan: ServicePlan): string[] {
  return [
    project,
    plan.name,
    ...plan.files.flatMap((f) => ["file", f.path, f.sha256]),
    ...plan.volumes.filter((v) => !v.readOnly).flatMap((v) => ["volume", v.target]),
    "ready-after",
    String(READY_AFTER_SECONDS),
    ...(plan.job ? ["then-exit"] : []),
  ];
}

/** JSON is YAML flow syntax; `$` is doubled so compose does not interpolate test data. */
const flow = (value: unknown) => JSON.stringify(value).replace(/\$/g, "$$$$");

/**
 * The override: per service a local stand-in image, its script as entrypoint, a health check the
 * stand-in answers (a one-shot job's stand-in exits 0 instead), no restarts (a failing check should fail `up --wait` at once, not loop) and
 * the published ports moved to free loopback ports. Everything else (environment, volumes,
 * networks, depends_on, init) comes from the generated file unchanged.
 */
export function standinOverride(project: string, image: string, plans: ServicePlan[]): string {
  const lines = [`# Test-only: replaces every image of ${project} with a local busybox stand-in.`, "services:"];
  for (const plan of plans) {
    lines.push(
      `  ${plan.name}:`,
      `    image: ${flow(image)}`,
      "    pull_policy: never",
      '    restart: "no"',
      `    entrypoint: !override ${flow(["/bin/sh", "/standin.sh"])}`,
      `    command: !override ${flow(standinArgs(project, plan))}`,
      // A job is waited for by its exit, as compose waits for the real one: no health check.
      `    healthcheck: !override ${flow(plan.job ? { disable: true } : { test: ["CMD", "test", "-f", "/tmp/ready"], interval: "1s", timeout: "2s", retries: 3, start_period: "60s" })}`,
    );
    if (plan.containerPorts.length > 0) lines.push(`    ports: !override ${flow(plan.containerPorts.map((p) => `127.0.0.1::${p}`))}`);
  }
  return `${lines.join("\n")}\n`;
}

/** KEY=VALUE lines of a .env file (comments and blanks skipped, one level of quotes removed). */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    let value = line.slice(eq + 1);
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) value = value.slice(1, -1);
    out[line.slice(0, eq).trim()] = value;
  }
  return out;
}

/** Compose's variable substitution for the forms generated bundles use; unset without default is an error. */
export function interpolate(text: string, vars: Record<string, string>): string {
  return text.replace(/\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_m, all, braced, op, arg, bare) => {
    if (all === "$") return "$";
    const name = braced ?? bare;
    const value = vars[name];
    const set = value !== undefined;
    const nonEmpty = set && value !== "";
    switch (op) {
      case ":-":
        return nonEmpty ? value : arg;
      case "-":
        return set ? value : arg;
      case ":+":
        return nonEmpty ? arg : "";
      case "+":
        return set ? arg : "";
      case ":?":
      case "?":
        if (op === ":?" ? !nonEmpty : !set) throw new Error(`variable ${name} is required: ${arg}`);
        return value;
      default:
        if (!set) throw new Error(`variable ${name} is not set in .env`);
        return value;
    }
  });
}

/** The environment a service's container should have, as compose resolves it from .env. */
export function expectedEnvironment(svc: ComposeService, dotEnv: Record<string, string>): Record<string, string> {
  const env = svc.environment ?? {};
  const pairs: [string, string | undefined][] = Array.isArray(env)
    ? env.map((e) => {
        const eq = e.indexOf("=");
        return eq < 0 ? [e, dotEnv[e]] : [e.slice(0, eq), e.slice(eq + 1)];
      })
    : Object.entries(env).map(([k, v]) => [k, v === null ? dotEnv[k] : String(v)]);
  return Object.fromEntries(pairs.filter((p): p is [string, string] => p[1] !== undefined).map(([k, v]) => [k, interpolate(v, dotEnv)]));
}

/** `NAME=value` entries, NUL-separated as in /proc/<pid>/environ (values may span lines). */
export function parseEnvOutput(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\0")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

/** RFC 3339 time with up to nanosecond digits (docker's StartedAt) as nanoseconds since the epoch. */
export function nanosOf(time: string): bigint {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(time);
  if (!m) throw new Error(`not an RFC 3339 time: ${time}`);
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(seconds)) throw new Error(`not an RFC 3339 time: ${time}`);
  return BigInt(seconds) * 1_000_000n + BigInt((m[2] ?? "").padEnd(9, "0").slice(0, 9));
}
