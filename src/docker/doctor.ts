// `stackgen doctor`: will this stack start here? Checks the host before `docker compose up` finds
// out the hard way: engine and compose present, every published host port free (or held by this
// stack itself), memory against the estimate, platform, NVIDIA runtime for GPU reservations, and
// the .env file. Each check is independent, so one missing piece does not hide the others.
import { existsSync, readdirSync, readFileSync, statfsSync, statSync } from "node:fs";
import { createSocket } from "node:dgram";
import { createServer } from "node:net";
import os from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { getCatalog } from "../catalog/index.ts";
import { hostPlatform } from "../core/check-input.ts";
import { FIXED_PORTS } from "../core/resolve.ts";
import { validateSelection } from "../core/validate.ts";
import { valuesToFill } from "../core/generate/env.ts";
import { requiredByCompose, requiredByNativeScripts } from "../core/required-variables.ts";
import { Compose, detectCompose } from "./compose.ts";
import { SOCKET_FORBIDDEN, type ContainerSummary, type Engine, type EngineInfo } from "./engine.ts";
import { formatBytes } from "./format.ts";
import { COMPOSE_FILES_READ_FIRST, REPLACES } from "./stack.ts";
import type { Stack } from "./stack.ts";
import { isWithin, shellWord } from "../core/paths.ts";
import { bindMountOf, isBundleRelative } from "../core/bind-mounts.ts";
import { isJsonObject } from "../schema/json-kind.ts";

export type CheckStatus = "ok" | "warn" | "fail";
export interface DoctorCheck {
  id: string;
  status: CheckStatus;
  message: string;
}
export interface DoctorReport {
  project: string;
  dir: string;
  /** False when any check failed (warnings do not count). */
  ok: boolean;
  checks: DoctorCheck[];
}

export interface PublishedPort {
  service: string;
  /** Host address the port is published on ("0.0.0.0" when the compose file names none). */
  host: string;
  port: number;
  protocol: "tcp" | "udp";
  /** The container side, as written (`5678`), for the override a clash suggests. */
  container: string;
}

/** Host ports a compose file publishes, short and long syntax. Entries it cannot check are
 *  returned as `unchecked` (what it says of each): ${VAR} or ranges, whose value only compose
 *  knows, and SCTP, which no probe here binds. A number that is no port is `invalid`. */
export function publishedPorts(compose: unknown): { ports: PublishedPort[]; unchecked: string[]; invalid: string[] } {
  const ports: PublishedPort[] = [];
  const unchecked: string[] = [];
  const invalid: string[] = [];
  const add = (service: string, text: string, published: string, protocol: unknown, host: string, container: string) => {
    const port = Number(published);
    if (!/^-?\d+$/.test(published) || !Number.isInteger(port)) unchecked.push(`${service}: ${text}: set through a variable or a range, not checked`);
    else if (port === 0) return; // the engine picks a free one, as for a bare container port
    else if (port < 0 || port > 65535) invalid.push(`${service}: ${text}: ${published} is not a port number (1 to 65535)`);
    else if (protocol !== undefined && protocol !== "tcp" && protocol !== "udp") unchecked.push(`${service}: ${text}: ${String(protocol)}, not checked`);
    else ports.push({ service, host, port, protocol: protocol === "udp" ? "udp" : "tcp", container });
  };
  const services = (compose as { services?: Record<string, { ports?: unknown[] }> } | null)?.services ?? {};
  for (const [service, def] of Object.entries(services)) {
    for (const entry of Array.isArray(def?.ports) ? def.ports : []) {
      if (entry !== null && typeof entry === "object") {
        const long = entry as { published?: unknown; host_ip?: unknown; protocol?: unknown; target?: unknown };
        if (long.published === undefined) continue; // not published: an ephemeral host port
        add(service, String(long.published), String(long.published), long.protocol, typeof long.host_ip === "string" ? long.host_ip : "0.0.0.0", String(long.target ?? ""));
        continue;
      }
      const text = String(entry);
      const [spec, proto] = text.split("/");
      // [ip:]host:container, the ip maybe an [ipv6]; a bare container port publishes nothing fixed.
      const match = /^(?:(\[[^\]]+\]|[^:]+):)?([^:]+):([^:]+)$/.exec(spec!);
      if (!match) continue;
      add(service, text, match[2]!, proto, match[1]?.replace(/^\[|\]$/g, "") ?? "0.0.0.0", match[3]!);
    }
  }
  return { ports, unchecked, invalid };
}

/** One entry per host address, port and protocol (an override may repeat the compose file's). */
function uniquePorts(ports: PublishedPort[]): PublishedPort[] {
  const seen = new Map<string, PublishedPort>();
  for (const p of ports) {
    const key = `${p.host}|${p.port}|${p.protocol}`;
    if (!seen.has(key)) seen.set(key, p);
  }
  return [...seen.values()];
}

/** Tries to take the port as compose would; the error code when something else holds it. */
export function tryBind(p: Pick<PublishedPort, "host" | "port" | "protocol">): Promise<string | undefined> {
  return new Promise((settle) => {
    if (p.protocol === "udp") {
      const socket = createSocket(p.host.includes(":") ? "udp6" : "udp4");
      socket.once("error", (e: NodeJS.ErrnoException) => {
        socket.close();
        settle(e.code ?? e.message);
      });
      socket.bind({ port: p.port, address: p.host, exclusive: true }, () => socket.close(() => settle(undefined)));
      return;
    }
    const server = createServer();
    server.once("error", (e: NodeJS.ErrnoException) => settle(e.code ?? e.message));
    server.listen({ port: p.port, host: p.host, exclusive: true }, () => server.close(() => settle(undefined)));
  });
}

/** The stack's own service publishing this port, if one of its containers does. */
function ownHolder(p: PublishedPort, containers: ContainerSummary[]): string | undefined {
  const holder = containers.find((c) => c.State === "running" && c.Ports?.some((q) => q.PublicPort === p.port && q.Type === p.protocol));
  return holder?.Labels["com.docker.compose.service"];
}

/** Each service's port entries once compose has merged its files: a later file adds to them,
 *  unless it replaces them (`!override`, `!reset`). */
export function mergedPortEntries(documents: unknown[]): Map<string, unknown[]> {
  const entries = new Map<string, unknown[]>();
  for (const doc of documents) {
    const services = (doc as { services?: Record<string, { ports?: unknown }> } | null)?.services ?? {};
    for (const [service, def] of Object.entries(services)) {
      const ports = def?.ports;
      if (!Array.isArray(ports)) continue;
      entries.set(service, REPLACES in ports ? [...ports] : [...(entries.get(service) ?? []), ...ports]);
    }
  }
  return entries;
}

/** A port entry as compose's short syntax. */
function entryText(entry: unknown): string {
  if (entry === null || typeof entry !== "object") return String(entry);
  const e = entry as { host_ip?: unknown; published?: unknown; target?: unknown; protocol?: unknown };
  const host = typeof e.host_ip === "string" ? `${e.host_ip.includes(":") ? `[${e.host_ip}]` : e.host_ip}:` : "";
  const published = e.published === undefined ? "" : `${String(e.published)}:`;
  return `${host}${published}${String(e.target)}${e.protocol && e.protocol !== "tcp" ? `/${String(e.protocol)}` : ""}`;
}

/** A clashing port moved to a free one: its new entry, and how to find the entry it replaces. */
interface Move {
  port: number;
  moved: string;
  replaces: (entry: unknown) => boolean;
}

/** A free port for `p` near its own (`taken`: the stack's own published ports and those already
 *  offered, never offered again), or why there is none. */
async function freePortFor(p: PublishedPort, taken: Set<number>): Promise<Move | string> {
  if (FIXED_PORTS.has(p.port)) return `stop that program: clients expect ${p.service} on ${p.port}, so it cannot move`;
  for (let port = p.port + 1; port <= Math.min(p.port + 100, 65535); port++) {
    if (taken.has(port) || (await tryBind({ ...p, port })) !== undefined) continue;
    taken.add(port);
    const host = p.host === "0.0.0.0" ? "" : `${p.host.includes(":") ? `[${p.host}]` : p.host}:`;
    const replaces = (entry: unknown) => {
      const parsed = publishedPorts({ services: { s: { ports: [entry] } } }).ports[0];
      return parsed !== undefined && parsed.host === p.host && parsed.port === p.port && parsed.protocol === p.protocol;
    };
    return { port, moved: `${host}${port}:${p.container}${p.protocol === "udp" ? "/udp" : ""}`, replaces };
  }
  return `publish ${p.service} on another port in docker-compose.override.yml (generate never writes it), with ports: !override [...] listing all of its ports`;
}

/** How to publish a service's clashing ports on free ones, where a regeneration never overwrites
 *  it: the override file, whose `!override` (compose 2.24 or later) replaces the service's whole
 *  list, so the one line carries all of its ports with every clashing one moved. */
function overrideLine(service: string, entries: unknown[], moves: Move[]): string {
  const list = entries.map((entry) => moves.find((m) => m.replaces(entry))?.moved ?? entryText(entry));
  const ports = moves.map((m) => m.port).join(", ");
  return `publish ${service} on ${ports}, which ${moves.length === 1 ? "is" : "are"} free, in docker-compose.override.yml (generate never writes it; compose 2.24 or later): services: {${service}: {ports: !override [${list.map((e) => JSON.stringify(e)).join(", ")}]}}`;
}

/** `engineHidden`: the engine runs but this user may not ask it (so its containers are unknown). */
async function portChecks(ports: PublishedPort[], entries: Map<string, unknown[]>, containers: ContainerSummary[], engineHidden: boolean): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const taken = new Set(ports.map((p) => p.port));
  // Each service's moved ports, so that every line of its clashes offers the one override line
  // that moves them all (one per port, each pasted over the other, left the rest taken).
  const moves = new Map<string, Move[]>();
  const clashes: { check: DoctorCheck; p: PublishedPort; fix: Move | string }[] = [];
  for (const p of ports) {
    const id = `port ${p.port}/${p.protocol}`;
    const own = ownHolder(p, containers);
    if (own) {
      checks.push({ id, status: "ok", message: `held by this stack's ${own}` });
      continue;
    }
    const error = await tryBind(p);
    if (error === undefined) checks.push({ id, status: "ok", message: `free on ${p.host} for ${p.service}` });
    // An engine this user may not ask: this stack's own running container cannot be told from
    // another program. (An engine that is down runs no container: then it is another program.)
    else if (error === "EADDRINUSE" && engineHidden) checks.push({ id, status: "warn", message: `${p.port} on ${p.host} (${p.service}) is in use; without access to the engine it could not be checked whether this stack's own container holds it` });
    else if (error === "EADDRINUSE") {
      const fix = await freePortFor(p, taken);
      if (typeof fix !== "string") moves.set(p.service, [...(moves.get(p.service) ?? []), fix]);
      const check: DoctorCheck = { id, status: "fail", message: "" };
      clashes.push({ check, p, fix });
      checks.push(check);
    }
    else if (error === "EACCES") checks.push({ id, status: "warn", message: `could not check ${p.port} for ${p.service} without root (ports below 1024); the engine itself may still bind it` });
    else if (error === "EADDRNOTAVAIL") checks.push({ id, status: "fail", message: `${p.service} publishes ${p.port} on ${p.host}, an address this host does not have` });
    else checks.push({ id, status: "warn", message: `could not check ${p.port} for ${p.service}: ${error}` });
  }
  for (const { check, p, fix } of clashes) {
    const how = typeof fix === "string" ? fix : overrideLine(p.service, entries.get(p.service) ?? [], moves.get(p.service)!);
    check.message = `${p.service} publishes ${p.port} on ${p.host}, but another program already uses it; stop that program, or ${how}`;
  }
  return checks;
}

/** `linux/amd64`-style name for an engine's kernel architecture. */
const PLATFORM_OF_ARCH: Record<string, string> = { x86_64: "linux/amd64", amd64: "linux/amd64", aarch64: "linux/arm64", arm64: "linux/arm64" };

function usesNvidia(compose: unknown): boolean {
  const services = (compose as { services?: Record<string, unknown> } | null)?.services ?? {};
  return Object.values(services).some((s) => {
    const devices = (s as { deploy?: { resources?: { reservations?: { devices?: { driver?: string; capabilities?: string[] }[] } } } })?.deploy?.resources?.reservations?.devices;
    return Array.isArray(devices) && devices.some((d) => d?.driver === "nvidia" || d?.capabilities?.includes("gpu"));
  });
}

function memoryCheck(config: Record<string, unknown> | undefined, info: EngineInfo | undefined): DoctorCheck {
  const id = "memory";
  if (!config) return { id, status: "ok", message: "no stackgen.json, so no estimate to compare" };
  let estimate: number;
  try {
    const catalog = getCatalog();
    estimate = validateSelection(config, catalog).estimatedMemoryMB + catalog.core.estimatedMemoryMB;
  } catch {
    return { id, status: "warn", message: "stackgen.json does not describe a selection this version knows; no estimate" };
  }
  const totalMB = Math.round((info?.MemTotal ?? os.totalmem()) / 1024 / 1024);
  const where = info?.MemTotal ? "the engine's host" : "this machine";
  if (estimate > totalMB) return { id, status: "warn", message: `the stack needs about ${estimate} MB, more than the ${totalMB} MB ${where} has; expect swapping or services killed for memory` };
  if (estimate > totalMB * 0.9) return { id, status: "warn", message: `the stack needs about ${estimate} MB of the ${totalMB} MB ${where} has; little is left for anything else` };
  return { id, status: "ok", message: `about ${estimate} MB needed, ${totalMB} MB on ${where}` };
}

/** Below this much free space doctor warns: pulled images and the volumes' data need room where
 *  the engine keeps them, and a backup is about as large as the volumes beside the stack. */
export const ENGINE_DISK_WARN_BYTES = 5 * 1024 ** 3;
export const STACK_DISK_WARN_BYTES = 2 * 1024 ** 3;

/** A file system doctor looks at: the engine's data root or the stack folder (where backups go). */
export interface DiskSpace {
  role: "engine" | "stack";
  path: string;
  free: number;
  /** The file system's device, to say so once when both are on one disk. */
  device: number;
}

/** The free space of the file system holding `path`, or undefined when it cannot be read here
 *  (an engine on another host, or one in a VM: its data root is not on this machine). */
export function diskSpaceOf(role: DiskSpace["role"], path: string): DiskSpace | undefined {
  try {
    const fs = statfsSync(path);
    return { role, path, free: fs.bavail * fs.bsize, device: statSync(path).dev };
  } catch {
    return undefined;
  }
}

export function diskCheck(spaces: DiskSpace[]): DoctorCheck {
  const id = "disk";
  const engine = spaces.find((s) => s.role === "engine");
  const stack = spaces.find((s) => s.role === "stack");
  const low: string[] = [];
  if (engine && engine.free < ENGINE_DISK_WARN_BYTES) low.push(`only ${formatBytes(engine.free)} free where the engine keeps images and volumes (${engine.path}); \`docker system prune\` removes unused images and stopped containers`);
  if (stack && stack.free < STACK_DISK_WARN_BYTES && !(engine && engine.device === stack.device && low.length)) {
    low.push(`only ${formatBytes(stack.free)} free for the stack folder and its backups (${stack.path}); \`stackgen backup prune\` removes old backups, \`backup create --output\` writes them to another disk`);
  }
  if (low.length) return { id, status: "warn", message: low.join("; ") };
  const parts = engine && stack && engine.device === stack.device
    ? [`${formatBytes(engine.free)} free for images, volumes and backups (${engine.path} and ${stack.path} are on one disk)`]
    : [engine ? `${formatBytes(engine.free)} free for images and volumes (${engine.path})` : "the engine's disk could not be read from here", stack ? `${formatBytes(stack.free)} for the stack folder and its backups (${stack.path})` : ""];
  return { id, status: "ok", message: parts.filter(Boolean).join(", ") };
}

function envCheck(stack: Stack): DoctorCheck {
  const id = "env";
  const file = join(stack.dir, ".env");
  if (!existsSync(file)) {
    // The parsed documents keep every `${VAR}` as written (loadStack does not interpolate).
    const referring = stack.composeFiles.filter((_, i) => /\$\{[A-Za-z_]/.test(JSON.stringify(stack.documents[i]))).map((f) => basename(f));
    return referring.length
      ? { id, status: "fail", message: `${referring.join(" and ")} ${referring.length === 1 ? "refers" : "refer"} to \${VAR}s but there is no .env; regenerate the bundle or restore .env from a backup` }
      : { id, status: "ok", message: "no .env, and the compose files need none" };
  }
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) return { id, status: "warn", message: `.env holds the stack's secrets but is readable by others (mode ${mode.toString(8)}); run chmod 600 .env` };
  return { id, status: "ok", message: ".env present, mode 600" };
}

/** Values the stack's services do not start (or cannot do their job) without, still empty in
 *  .env: compose starts them anyway, and they crash-loop or sit idle. With the check, the
 *  variables it names that compose refuses to start without (compose's own refusal names one). */
function fillCheck(config: Record<string, unknown> | undefined, stack: Stack): { check?: DoctorCheck; composeRequired: string[] } {
  const none = { composeRequired: [] };
  const file = join(stack.dir, ".env");
  if (!config || !existsSync(file)) return none;
  const catalog = getCatalog();
  let services;
  try {
    services = validateSelection(config, catalog).resolvedServices.flatMap((id) => catalog.servicesById.get(id) ?? []);
  } catch {
    return none; // the memory check already says stackgen.json is not understood
  }
  const envText = readFileSync(file, "utf8");
  const empty = valuesToFill(services, envText);
  // Secrets of a bundle made without them: compose refuses to start at all (`${VAR:?...}`), and a
  // bare-metal bundle's install.sh stops before the native installs.
  const required = requiredByCompose(stack.documents, envText);
  const native = requiredByNativeScripts(nativeScripts(stack.dir), envText).filter((name) => !required.includes(name));
  if (required.length || native.length) {
    const refusals = [
      ...(required.length ? [`compose refuses to start without them: ${required.join(", ")}`] : []),
      ...(native.length ? [`install.sh stops before the native install without them: ${native.join(", ")}`] : []),
    ];
    const message = `empty in .env, and ${refusals.join("; ")}${empty.length ? `; also empty: ${empty.map((v) => `${v.name} (${v.service})`).join(", ")}` : ""}. Fill them in, or have the secrets made: stackgen generate --dir ${shellWord(stack.dir)} --from ${shellWord(join(stack.dir, "stackgen.json"))} --secrets`;
    return { check: { id: "values", status: "fail", message }, composeRequired: required };
  }
  if (!services.some((s) => s.variables?.some((v) => v.beforeStart))) return none;
  if (empty.length === 0) return { check: { id: "values", status: "ok", message: "every value to fill in before the first start is set in .env" }, composeRequired: [] };
  return {
    check: {
      id: "values",
      status: "warn",
      message: `empty in .env: ${empty.map((v) => `${v.name} (${v.service})`).join(", ")}; these services do not start, or cannot do their job, until they are filled in (the bundle's README says where to get each)`,
    },
    composeRequired: [],
  };
}

/** The texts of a bare-metal bundle's native install scripts (none for a container-only one). */
function nativeScripts(dir: string): string[] {
  const folder = join(dir, "native");
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith(".sh")).map((e) => readFileSync(join(folder, e.name), "utf8"));
}

/** Containers of the project whose service the compose files no longer name (a service taken out
 *  on regeneration): they run on, hold their ports, and their volumes are not backed up. */
function orphanCheck(stack: Stack, containers: ContainerSummary[]): DoctorCheck | undefined {
  const named = new Set(stack.documents.flatMap((doc) => Object.keys((doc as { services?: Record<string, unknown> } | null)?.services ?? {})));
  const orphans = [...new Set(containers.map((c) => c.Labels["com.docker.compose.service"]).filter((s): s is string => s !== undefined && !named.has(s)))].sort();
  if (orphans.length === 0) return undefined;
  return {
    id: "orphans",
    status: "warn",
    message: `containers of ${orphans.join(", ")}, which the compose files no longer name, are still there; \`docker compose up -d --remove-orphans\` removes them (their volumes stay, but stackgen backup no longer copies them)`,
  };
}

/** A bundle beside compose.yaml (or compose.yml): docker compose, and so `up`, reads that file
 *  and not the bundle's docker-compose.yml. */
function shadowedBundleCheck(stack: Stack): DoctorCheck | undefined {
  // Files named by COMPOSE_FILE are the user's choice; only compose's own lookup can shadow.
  const read = stack.composeFiles[0]!;
  if (!stack.config || !existsSync(join(stack.dir, "docker-compose.yml")) || !COMPOSE_FILES_READ_FIRST.some((name) => read === join(stack.dir, name))) return undefined;
  return { id: "compose-file", status: "fail", message: `docker compose reads ${basename(read)} in ${stack.dir}, not the bundle's docker-compose.yml: \`docker compose up\` there starts that file's services; move it out of the folder` };
}

/** The files the bundle wrote that containers read through bind mounts (`./postgres/init`,
 *  `./skills`), found closed to other users: a bundle written under umask 077 had 0700 folders,
 *  and the postgres, node or grafana user in the container could not read its config. Only what
 *  stackgen.json records as written, and the folders between the mount and it: a data folder of
 *  the user's own (a database's, 0700 on purpose) is theirs, and is never listed or read. */
export function mountModesCheck(stack: Stack): DoctorCheck | undefined {
  const written = Object.keys(isJsonObject(stack.config?.files) ? stack.config.files : {});
  const sources = new Set<string>();
  for (const document of stack.documents) {
    for (const service of Object.values((document.services ?? {}) as Record<string, { volumes?: unknown }>)) {
      for (const volume of Array.isArray(service?.volumes) ? service.volumes : []) {
        const source = bindMountOf(volume)?.source;
        if (source && isBundleRelative(source)) sources.add(resolve(stack.dir, source));
      }
    }
  }
  const closed = new Set<string>();
  const check = (path: string, needed: number) => {
    let mode: number | undefined;
    try {
      mode = statSync(path, { throwIfNoEntry: false })?.mode;
    } catch {
      return; // not ours to read either (another user's closed folder above it)
    }
    if (mode !== undefined && (mode & needed) !== needed) closed.add(`${relative(stack.dir, path)} (${(mode & 0o777).toString(8)})`);
  };
  for (const source of sources) {
    if (!isWithin(stack.dir, source) || source === stack.dir) continue;
    for (const file of written.map((name) => join(stack.dir, name)).filter((path) => isWithin(source, path))) {
      for (let folder = dirname(file); isWithin(source, folder); folder = dirname(folder)) check(folder, 0o005);
      check(file, 0o004);
    }
  }
  if (closed.size === 0) return undefined;
  const list = [...closed].sort();
  return {
    id: "mount-modes",
    status: "warn",
    message: `containers read these through bind mounts, but other users may not read them, so a service that runs as its own user cannot: ${list.slice(0, 8).join(", ")}${list.length > 8 ? ` and ${list.length - 8} more` : ""}; \`chmod -R a+rX\` on them opens them for reading (a bundle written under umask 077)`,
  };
}

export async function runDoctor(stack: Stack, engine: Engine): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  const shadowed = shadowedBundleCheck(stack);
  if (shadowed) checks.push(shadowed);
  const closedMounts = mountModesCheck(stack);
  if (closedMounts) checks.push(closedMounts);
  const { config } = stack;
  // Compose merges a later file's ports and devices into the earlier ones': check every file.
  const files = stack.documents;
  // Read first, said later: it decides whether compose's own refusal is said too.
  const fill = fillCheck(config, stack);

  let info: EngineInfo | undefined;
  let containers: ContainerSummary[] = [];
  try {
    await engine.ping();
    info = await engine.info();
    containers = await engine.listProjectContainers(stack.project);
    checks.push({ id: "engine", status: "ok", message: `Docker ${info.ServerVersion ?? "(version unknown)"} at ${engine.endpoint.display}` });
  } catch (e) {
    checks.push({ id: "engine", status: "fail", message: (e as Error).message });
  }
  try {
    const cli = await detectCompose();
    checks.push({ id: "compose", status: cli.v2 ? "ok" : "warn", message: cli.v2 ? "docker compose (v2 plugin)" : "only docker-compose v1, which is no longer maintained; install the compose v2 plugin" });
    // Files compose refuses (a `ports: "80"` where a list belongs, an override that cannot merge)
    // would pass every other check and still not start. Compose stops at the first empty required
    // secret: when the values check names them all, that refusal is not said a second time.
    await new Compose(cli, stack).config().then(
      () => checks.push({ id: "compose-config", status: "ok", message: `${stack.composeFiles.map((f) => relative(stack.dir, f) || f).join(", ")} read by compose` }),
      (e: Error) => {
        const missing = /required variable (\S+) is missing a value/.exec(e.message)?.[1];
        if (!missing || !fill.composeRequired.includes(missing)) checks.push({ id: "compose-config", status: "fail", message: e.message });
      },
    );
  } catch (e) {
    checks.push({ id: "compose", status: "fail", message: (e as Error).message });
  }

  // Compose merges a later file's ports into the earlier ones', or replaces them (`!override`).
  const entries = mergedPortEntries(files);
  const found = publishedPorts({ services: Object.fromEntries([...entries].map(([service, list]) => [service, { ports: list }])) });
  const ports = uniquePorts(found.ports);
  const unchecked = found.unchecked;
  const engineHidden = checks.some((c) => c.id === "engine" && c.status === "fail" && c.message.startsWith(SOCKET_FORBIDDEN));
  checks.push(...(await portChecks(ports, entries, containers, engineHidden)));
  for (const message of unchecked) checks.push({ id: "port", status: "warn", message });
  for (const message of found.invalid) checks.push({ id: "port", status: "fail", message });

  checks.push(memoryCheck(config, info));
  // The engine's data root is on this machine only when the engine is reached by a local socket.
  const engineDisk = info?.DockerRootDir && engine.endpoint.socket ? diskSpaceOf("engine", info.DockerRootDir) : undefined;
  const stackDisk = diskSpaceOf("stack", stack.dir);
  checks.push(diskCheck([engineDisk, stackDisk].filter((s): s is DiskSpace => s !== undefined)));

  const wanted = typeof config?.platform === "string" ? config.platform : undefined;
  const here = info?.Architecture ? (PLATFORM_OF_ARCH[info.Architecture] ?? info.Architecture) : hostPlatform();
  if (wanted && wanted !== here) checks.push({ id: "platform", status: "warn", message: `the stack was generated for ${wanted} but the engine runs ${here}: images run under emulation, if at all` });
  else checks.push({ id: "platform", status: "ok", message: here });

  if (files.some(usesNvidia)) {
    const runtimes = Object.keys(info?.Runtimes ?? {});
    if (!info) checks.push({ id: "gpu", status: "warn", message: "the stack reserves NVIDIA GPUs; without the engine it could not be checked that they are available" });
    else if (runtimes.includes("nvidia")) checks.push({ id: "gpu", status: "ok", message: "NVIDIA runtime registered with the engine" });
    else checks.push({ id: "gpu", status: "warn", message: "the stack reserves NVIDIA GPUs, but the engine has no nvidia runtime; install the NVIDIA Container Toolkit, or regenerate with --no-gpu (a preset can turn GPU support on)" });
  }

  checks.push(envCheck(stack));
  if (fill.check) checks.push(fill.check);
  const orphans = orphanCheck(stack, containers);
  if (orphans) checks.push(orphans);
  return { project: stack.project, dir: stack.dir, ok: !checks.some((c) => c.status === "fail"), checks };
}
