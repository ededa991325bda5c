// Adapt a bundle's compose file for a PaaS. Two things break there:
// - host port bindings: the platform's own proxy owns 80/443 and routes to container ports, so a
//   host binding clashes with it (or with another stack). Container ports stay, as `expose`; the
//   ones that proxy cannot carry (UDP, TCP that is not HTTP) are named, to publish in the platform.
// - bind mounts of bundle files (`./Caddyfile`, `./prometheus/prometheus.yml`): the platform only
//   receives the compose text, so those files do not exist on its host. When their text is known
//   they travel inside the compose file as top-level `configs` with inline `content`.
// - the bundle's own reverse proxy (caddy, traefik): the platform's proxy owns 80/443 and routes
//   domains to container ports itself, so ours would only idle without its ports, and Traefik
//   labels of ours would be read by the platform's Traefik, naming a middleware it lacks. Both go.
// The document API of `yaml` keeps comments and key order for everything left untouched.
import path from "node:path";
import { isMap, isScalar, isSeq, parseDocument, type Document, type YAMLMap, type YAMLSeq } from "yaml";
import { usageError } from "../errors.ts";
import { bindMountOf, isBundleRelative, splitOutsideBraces } from "../core/bind-mounts.ts";
import type { Catalog } from "../catalog/index.ts";
import type { Port as CatalogPort } from "../schema/catalog.ts";
import type { ProviderName } from "./types.ts";

export interface AdaptResult {
  yaml: string;
  /** The adapted file as plain data (what `yaml` reads back as). */
  compose: unknown;
  changes: string[];
}

/** Bundle-relative path -> file text. Keys are normalised (`prometheus/prometheus.yml`, no `./`). */
export type BundleFiles = Record<string, string>;

/** `catalog`: what it says of the services stackgen generated (which of their ports are HTTP). */
export function adaptCompose(composeYaml: string, files: BundleFiles = {}, catalog?: Catalog, provider?: ProviderName): AdaptResult {
  const doc = parseCompose(composeYaml);
  const services = doc.get("services");
  const changes: string[] = [];
  // Judged as compose reads it, aliases expanded (`web: *base` is a service like any other).
  refuseUnrunnableServices((doc.toJS() as { services?: unknown } | null)?.services);
  // A services block that is an alias as a whole is sent as written: nothing in it is adapted.
  if (!isMap(services)) return { yaml: composeYaml, compose: doc.toJS(), changes };
  if (provider === "coolify") changes.push(...excludeJobsFromHealth(services));

  const dropped = dropBundleProxy(services, doc);
  changes.push(...dropped.changes);
  const known = withoutProxyFiles(normaliseFileKeys(files), dropped.kinds);
  const configNames = new Map<string, string>(); // file key -> config name, shared across services
  for (const pair of services.items) {
    const name = String(isScalar(pair.key) ? pair.key.value : pair.key);
    if (!isMap(pair.value)) continue;
    const service = pair.value as YAMLMap;
    // A fixed container name (a hand edit: stackgen writes none) clashes with any other copy of
    // the stack on the platform's server, and the platform names containers itself.
    const fixedName = service.get("container_name");
    if (fixedName !== undefined) {
      service.delete("container_name");
      changes.push(`service "${name}": removed container_name ${JSON.stringify(String(fixedName))} (the platform names the containers; a fixed name clashes with another copy of the stack on its server)`);
    }
    const moved = moveHostPortsToExpose(doc, service);
    if (moved) {
      changes.push(`service "${name}": ${moved.change}`);
      const { never, unlessHttp } = portsBeyondProxy(moved.ports, catalog ? catalogPortsOf(service, catalog) : []);
      if (never.length || unlessHttp.length) {
        const one = (list: string[]) => list.length === 1;
        const cannot = [
          never.length ? `${never.join(", ")}, which ${one(never) ? "is" : "are"} not TCP` : "",
          unlessHttp.length ? `${unlessHttp.join(", ")} unless ${one(unlessHttp) ? "it speaks" : "they speak"} HTTP (not the service's web port)` : "",
        ];
        changes.push(`service "${name}": the platform's proxy carries only HTTP(S) to a domain, so clients cannot reach ${cannot.filter(Boolean).join(", nor ")}, until you publish ${one([...never, ...unlessHttp]) ? "it" : "them"} in the platform and open ${one([...never, ...unlessHttp]) ? "it" : "them"} on its server`);
      }
    }
    changes.push(...inlineBindMounts(doc, service, name, known, configNames));
  }
  return { yaml: doc.toString({ lineWidth: 0 }), compose: doc.toJS(), changes };
}

/** One-shot jobs (a service another waits for with service_completed_successfully) end exited,
 *  which Coolify counts as the whole stack degraded for good; its own key `exclude_from_hc` leaves
 *  them out of its health. Coolify only: plain compose (Dokploy) refuses the key. */
function excludeJobsFromHealth(services: YAMLMap): string[] {
  const jobs = new Set<string>();
  for (const pair of services.items) {
    const deps = isMap(pair.value) ? (pair.value as YAMLMap).get("depends_on") : undefined;
    if (!isMap(deps)) continue;
    for (const dep of deps.items) {
      if (isMap(dep.value) && (dep.value as YAMLMap).get("condition") === "service_completed_successfully") jobs.add(String(isScalar(dep.key) ? dep.key.value : dep.key));
    }
  }
  const changes: string[] = [];
  for (const name of [...jobs].sort()) {
    const service = services.get(name);
    if (!isMap(service) || service.get("exclude_from_hc") === true) continue;
    service.set("exclude_from_hc", true);
    changes.push(`service "${name}": exclude_from_hc set, Coolify's key for a one-shot job: it ends exited once done, which Coolify would show as the stack degraded`);
  }
  return changes;
}

/** Relative bind-mount sources of every service, normalised (what the CLI must read from the bundle). */
export function listBundleMounts(composeYaml: string): string[] {
  const doc = parseCompose(composeYaml);
  const services = doc.get("services");
  const sources = new Set<string>();
  if (!isMap(services)) return [];
  for (const pair of services.items) {
    const volumes = isMap(pair.value) ? (pair.value as YAMLMap).get("volumes") : undefined;
    if (!isSeq(volumes)) continue;
    for (const item of volumes.items) {
      const mount = readMount(item);
      if (mount && isBundleRelative(mount.source)) sources.add(normaliseKey(mount.source));
    }
  }
  return [...sources].filter((s) => !s.startsWith(".."));
}

/** Compose's own rule for a service's name; Coolify also refuses names with shell characters. */
const SERVICE_NAME = /^[a-zA-Z0-9._-]+$/;

/** A compose file no platform can run (no services, a service that is not a mapping, a name
 *  compose refuses) is refused before any call: the platform would refuse it only after the
 *  project was made, leaving an empty project behind. */
function refuseUnrunnableServices(services: unknown): void {
  const fix = "Correct docker-compose.yml (`docker compose config` checks it) and deploy again: nothing was sent.";
  const isMapping = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof Map);
  if (!isMapping(services) || Object.keys(services).length === 0) {
    throw usageError(`docker-compose.yml has no services (a \`services:\` mapping of at least one service is required). ${fix}`);
  }
  for (const [name, service] of Object.entries(services)) {
    if (!SERVICE_NAME.test(name)) throw usageError(`docker-compose.yml names a service ${JSON.stringify(name)}: a service name holds only letters, digits, ".", "_" and "-". ${fix}`);
    if (!isMapping(service)) throw usageError(`docker-compose.yml's service "${name}" is not a mapping of settings. ${fix}`);
  }
}

function parseCompose(text: string): Document {
  const doc = parseDocument(text);
  if (doc.errors.length) throw usageError(`docker-compose.yml is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  return doc;
}

// ---------------------------------------------------------------------------------------------
// The bundle's reverse proxy

const BUNDLE_PROXIES = new Set(["caddy", "traefik"]);

/** The string value of `key` in a service's labels (map or `key=value` list form). */
function labelOf(service: YAMLMap, key: string): string | undefined {
  const labels = service.get("labels");
  if (isMap(labels)) {
    const value = labels.get(key);
    return value === undefined || value === null ? undefined : String(value);
  }
  if (isSeq(labels)) {
    for (const item of labels.items) {
      const text = String(isScalar(item) ? item.value : item);
      if (text.startsWith(`${key}=`)) return text.slice(key.length + 1);
    }
  }
  return undefined;
}

/** Named volumes a service mounts. */
function namedVolumesOf(service: YAMLMap): string[] {
  const volumes = service.get("volumes");
  if (!isSeq(volumes)) return [];
  return volumes.items.flatMap((item) => {
    if (isScalar(item)) {
      const source = splitOutsideBraces(String(item.value), ":")[0]!;
      return /^[A-Za-z0-9][\w.-]*$/.test(source) && splitOutsideBraces(String(item.value), ":").length > 1 ? [source] : [];
    }
    if (isMap(item) && item.get("type") === "volume" && typeof item.get("source") === "string") return [String(item.get("source"))];
    return [];
  });
}

/** Removes the services stackgen generated as the stack's reverse proxy, what depends on them or
 *  points at them (`TRAEFIK_API_URL`), the Traefik labels it routed by, and volumes only it used.
 *  Returns the change lines and which proxies (caddy, traefik) were dropped. */
function dropBundleProxy(services: YAMLMap, doc: Document): { changes: string[]; kinds: string[] } {
  const kindOf = (service: unknown) =>
    isMap(service) && labelOf(service as YAMLMap, "dev.stackgen.sidecar") === undefined ? labelOf(service as YAMLMap, "dev.stackgen.service") : undefined;
  const proxies = services.items.filter((pair) => BUNDLE_PROXIES.has(kindOf(pair.value) ?? ""));
  if (proxies.length === 0) return { changes: [], kinds: [] };
  const names = proxies.map((pair) => String(isScalar(pair.key) ? pair.key.value : pair.key));
  const kinds = proxies.map((pair) => kindOf(pair.value)!);
  const theirVolumes = new Set(proxies.flatMap((pair) => namedVolumesOf(pair.value as YAMLMap)));
  for (const name of names) services.delete(name);
  const droppedTraefik = kinds.includes("traefik");
  const pointsAtProxy = (value: unknown) => names.some((name) => String(value).startsWith(`http://${name}:`));
  const isTraefikLabel = (text: string) => text.startsWith("traefik.");
  const stillUsed = new Set<string>();
  for (const pair of services.items) {
    if (!isMap(pair.value)) continue;
    const service = pair.value as YAMLMap;
    const dependsOn = service.get("depends_on");
    for (const name of names) {
      if (isMap(dependsOn)) dependsOn.delete(name);
      else if (isSeq(dependsOn)) dependsOn.items = dependsOn.items.filter((item) => String(isScalar(item) ? item.value : item) !== name);
    }
    if ((isMap(dependsOn) || isSeq(dependsOn)) && dependsOn.items.length === 0) service.delete("depends_on");
    const labels = service.get("labels");
    if (droppedTraefik && isMap(labels)) labels.items = labels.items.filter((l) => !isTraefikLabel(String(isScalar(l.key) ? l.key.value : l.key)));
    if (droppedTraefik && isSeq(labels)) labels.items = labels.items.filter((l) => !isTraefikLabel(String(isScalar(l) ? l.value : l)));
    const environment = service.get("environment");
    if (isMap(environment)) environment.items = environment.items.filter((e) => !pointsAtProxy(isScalar(e.value) ? e.value.value : e.value));
    if (isSeq(environment)) environment.items = environment.items.filter((e) => !pointsAtProxy(String(isScalar(e) ? e.value : e).replace(/^[^=]*=/, "")));
    for (const volume of namedVolumesOf(service)) stillUsed.add(volume);
  }
  const volumes = doc.get("volumes");
  if (isMap(volumes)) for (const volume of theirVolumes) if (!stillUsed.has(volume)) volumes.delete(volume);
  if (isMap(volumes) && volumes.items.length === 0) doc.delete("volumes");
  const changes = names.map((name) =>
    `service "${name}" left out: the platform's own proxy routes to the services; give each one you open in a browser a domain there, with its container port`);
  return { changes, kinds };
}

/** The bundle's files as the platform gets them without the dropped proxies: no skill of theirs
 *  for the agent (nor its line in the skills index), and no Prometheus job scraping them (a
 *  target that would always be down). */
function withoutProxyFiles(files: BundleFiles, kinds: string[]): BundleFiles {
  if (kinds.length === 0) return files;
  const out: BundleFiles = {};
  for (const [key, text] of Object.entries(files)) {
    if (kinds.some((kind) => key.startsWith(`skills/${kind}/`))) continue;
    if (key === "skills/README.md") out[key] = text.split("\n").filter((line) => !kinds.some((kind) => line.includes(`(${kind}/SKILL.md)`))).join("\n");
    else if (key === "prometheus/prometheus.yml") out[key] = withoutScrapeJobs(text, kinds);
    else out[key] = text;
  }
  return out;
}

function withoutScrapeJobs(text: string, jobs: string[]): string {
  const doc = parseDocument(text);
  const scrapes = doc.get("scrape_configs");
  if (!isSeq(scrapes)) return text;
  scrapes.items = scrapes.items.filter((job) => !(isMap(job) && jobs.includes(String(job.get("job_name")))));
  return doc.toString({ lineWidth: 0 });
}

// ---------------------------------------------------------------------------------------------
// Ports

/** The catalog's ports of a service stackgen generated (its `dev.stackgen.service` label); none
 *  for a sidecar or a service of the user's own. */
function catalogPortsOf(service: YAMLMap, catalog: Catalog): readonly CatalogPort[] {
  if (labelOf(service, "dev.stackgen.sidecar") !== undefined) return [];
  const id = labelOf(service, "dev.stackgen.service");
  if (id === undefined) return [];
  return (catalog.servicesById.get(id) ?? (catalog.core.id === id ? catalog.core : undefined))?.ports ?? [];
}

/**
 * The published ports the platform's proxy, which carries HTTP(S) only, may not stand in for:
 * UDP (never HTTP), and TCP ports the catalog does not give as the service's web port (WebRTC,
 * SSH, but also a second HTTP API: the proxy carries those only if they speak HTTP). A service
 * the catalog does not know gives no such facts, so only its UDP ports are named. Ports bound to
 * this machine's loopback were never reachable from elsewhere: nothing is lost for them.
 */
function portsBeyondProxy(ports: readonly ParsedPort[], known: readonly CatalogPort[]): { never: string[]; unlessHttp: string[] } {
  const never: string[] = [];
  const unlessHttp: string[] = [];
  for (const port of ports) {
    if (port.loopback) continue;
    const entry = known.find((k) => String(k.container) === port.target && (k.protocol ?? "tcp") === port.protocol);
    const shown = entry?.description ? `${port.text} (${entry.description})` : port.text;
    if (port.protocol !== "tcp") never.push(shown);
    else if (known.length && !entry?.web) unlessHttp.push(shown);
  }
  return { never, unlessHttp };
}

/** Remove `ports`, add the container side of each to `expose`. Returns a change line and the
 *  bindings removed, or null. */
function moveHostPortsToExpose(doc: Document, service: YAMLMap): { change: string; ports: ParsedPort[] } | null {
  const ports = service.get("ports");
  if (!isSeq(ports) || ports.items.length === 0) {
    if (ports !== undefined) service.delete("ports");
    return null;
  }
  const removed: ParsedPort[] = [];
  const containerPorts: string[] = [];
  for (const item of ports.items) {
    const parsed = parsePortItem(item);
    if (!parsed) continue;
    removed.push(parsed);
    containerPorts.push(parsed.container);
  }
  service.delete("ports");

  const existing = service.get("expose");
  const present = new Set<string>(isSeq(existing) ? existing.items.map((i) => String(isScalar(i) ? i.value : i)) : []);
  const added = containerPorts.filter((p, i) => !present.has(p) && containerPorts.indexOf(p) === i);
  if (added.length) {
    if (isSeq(existing)) for (const p of added) existing.add(doc.createNode(p));
    else service.set("expose", doc.createNode([...present, ...added]));
  }
  const kept = [...new Set(containerPorts)];
  return { change: `removed host port bindings ${removed.map((p) => p.text).join(", ")} (container ports ${kept.join(", ")} kept as expose)`, ports: removed };
}

interface ParsedPort {
  /** How the binding was written, for the change log. */
  text: string;
  /** Container side with a non-tcp protocol suffix: `80`, `53/udp`, `3000-3005`. */
  container: string;
  /** Container side alone, and its protocol (`tcp` when none is written). */
  target: string;
  protocol: string;
  /** Published on a loopback address only (`127.0.0.1:9090:9090`). */
  loopback: boolean;
}

const isLoopback = (hostIp: string) => /^(127\.|localhost$|\[?::1\]?$)/.test(hostIp);

function parsePortItem(item: unknown): ParsedPort | null {
  if (isScalar(item)) {
    const text = String(item.value);
    const [spec, protocol] = splitProtocol(text);
    const segments = splitOutsideBraces(spec, ":");
    const container = segments[segments.length - 1]!;
    const loopback = segments.length === 3 && isLoopback(segments[0]!);
    return { text, container: withProtocol(container, protocol), target: container, protocol: protocol ?? "tcp", loopback };
  }
  if (isMap(item)) {
    const target = item.get("target");
    if (target === undefined) return null;
    const published = item.get("published");
    const protocol = item.get("protocol") === undefined ? "tcp" : String(item.get("protocol")).toLowerCase();
    const container = withProtocol(String(target), protocol);
    const hostIp = item.get("host_ip");
    return { text: published === undefined ? container : `${published}:${container}`, container, target: String(target), protocol, loopback: hostIp !== undefined && isLoopback(String(hostIp)) };
  }
  return null;
}

function splitProtocol(text: string): [string, string | undefined] {
  const m = /^(.*)\/(tcp|udp|sctp)$/i.exec(text);
  return m ? [m[1]!, m[2]!.toLowerCase()] : [text, undefined];
}

const withProtocol = (port: string, protocol?: string) => (protocol && protocol !== "tcp" ? `${port}/${protocol}` : port);

// ---------------------------------------------------------------------------------------------
// Bind mounts -> configs

/** A bind mount's entry as the YAML document holds it. */
const readMount = (item: unknown) => bindMountOf(isScalar(item) ? item.value : isMap(item) ? item.toJSON() : undefined);

const normaliseKey = (p: string) => path.posix.normalize(p.replace(/\\/g, "/")).replace(/^\.\//, "").replace(/\/$/, "");

function normaliseFileKeys(files: BundleFiles): BundleFiles {
  const out: BundleFiles = {};
  for (const [key, text] of Object.entries(files)) out[normaliseKey(key)] = text;
  return out;
}

function inlineBindMounts(
  doc: Document,
  service: YAMLMap,
  serviceName: string,
  files: BundleFiles,
  configNames: Map<string, string>,
): string[] {
  const volumes = service.get("volumes");
  if (!isSeq(volumes)) return [];
  const changes: string[] = [];
  const keep: unknown[] = [];
  for (const item of volumes.items) {
    const mount = readMount(item);
    if (!mount || !isBundleRelative(mount.source)) {
      keep.push(item);
      continue;
    }
    const key = normaliseKey(mount.source);
    const members = key.startsWith("..") ? [] : filesUnder(files, key);
    if (members.length === 0) {
      keep.push(item);
      changes.push(
        `service "${serviceName}": bind mount ${mount.source} kept as is; its content is not available, so the platform host will not have it`,
      );
      continue;
    }
    for (const member of members) {
      const target = member === key ? mount.target : path.posix.join(mount.target, member.slice(key.length + 1));
      const configName = configFor(doc, member, files[member]!, configNames);
      addServiceConfig(doc, service, configName, target);
    }
    changes.push(
      `service "${serviceName}": bind mount ${mount.source} -> ${mount.target} replaced by inline config${members.length > 1 ? "s" : ""} ${members
        .map((m) => configNames.get(m))
        .join(", ")}`,
    );
  }
  if (keep.length === 0) service.delete("volumes");
  else (volumes as YAMLSeq).items = keep;
  return changes;
}

/** The file itself, or every known file below it when the mount is a directory. */
function filesUnder(files: BundleFiles, key: string): string[] {
  if (key in files) return [key];
  const prefix = key === "." ? "" : `${key}/`;
  return Object.keys(files)
    .filter((k) => k.startsWith(prefix))
    .sort();
}

/** Create (once) the top-level config holding one file's text. */
function configFor(doc: Document, fileKey: string, text: string, names: Map<string, string>): string {
  const existing = names.get(fileKey);
  if (existing) return existing;
  let configs = doc.get("configs");
  if (!isMap(configs)) {
    configs = doc.createNode({});
    doc.set("configs", configs);
  }
  const map = configs as YAMLMap;
  const base = fileKey.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[._-]+/, "") || "config";
  let name = base;
  for (let n = 2; map.has(name); n++) name = `${base}_${n}`;
  // Compose interpolates `$` in every string, `content` included; `$$` keeps the file text literal.
  map.set(name, doc.createNode({ content: text.replace(/\$/g, "$$$$") }));
  names.set(fileKey, name);
  return name;
}

function addServiceConfig(doc: Document, service: YAMLMap, source: string, target: string): void {
  const entry = doc.createNode({ source, target });
  const list = service.get("configs");
  if (isSeq(list)) list.add(entry);
  else service.set("configs", doc.createNode([entry]));
}
