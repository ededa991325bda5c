// The host ports a bundle publishes, read from its docker-compose.yml as the preview holds it: what
// the stack will really bind (ports moved off a clash included), not the catalog's defaults.
import { parse } from "yaml";

export interface PublishedPort {
  /** The host port (or range, `8000-8010`); null when compose picks a free one at start. */
  host: string | null;
  container: string;
  protocol: "tcp" | "udp" | string;
  /** The host address it is bound to; null for every interface. */
  hostIp: string | null;
  /** Bound to a loopback address: reachable from this machine only. */
  localOnly: boolean;
}

export interface ServicePorts {
  /** The compose service name: a catalog id, `core`, or a sidecar's `<id>-<name>`. */
  service: string;
  ports: PublishedPort[];
}

const isLoopback = (ip: string) => ip === "localhost" || ip === "::1" || ip.startsWith("127.");

function portOf(hostIp: string | null, host: string | null, container: string, protocol: string): PublishedPort {
  const ip = hostIp === null || hostIp === "" || hostIp === "0.0.0.0" || hostIp === "::" ? null : hostIp;
  return { host: host === "" ? null : host, container, protocol, hostIp: ip, localOnly: ip !== null && isLoopback(ip) };
}

/** One entry of a service's `ports`: the short form (`"[ip:][host:]container[/proto]"`, an IPv6
 *  address in brackets) or the long one (`{target, published, host_ip, protocol}`). */
export function parsePortEntry(entry: unknown): PublishedPort | undefined {
  if (typeof entry === "number") return portOf(null, null, String(entry), "tcp");
  if (entry !== null && typeof entry === "object") {
    const long = entry as { target?: unknown; published?: unknown; host_ip?: unknown; protocol?: unknown };
    if (long.target === undefined) return undefined;
    const published = long.published === undefined || long.published === null ? null : String(long.published);
    return portOf(typeof long.host_ip === "string" ? long.host_ip : null, published, String(long.target), typeof long.protocol === "string" ? long.protocol : "tcp");
  }
  if (typeof entry !== "string") return undefined;
  const slash = entry.lastIndexOf("/");
  const mapping = slash >= 0 ? entry.slice(0, slash) : entry;
  const protocol = slash >= 0 ? entry.slice(slash + 1) : "tcp";
  const last = mapping.lastIndexOf(":");
  if (last < 0) return portOf(null, null, mapping, protocol);
  const container = mapping.slice(last + 1);
  const rest = mapping.slice(0, last);
  // What is left is `host` or `ip:host`; the ip may itself hold colons (IPv6, in brackets).
  const hostColon = rest.lastIndexOf(":");
  if (hostColon < 0) return portOf(null, rest, container, protocol);
  const ip = rest.slice(0, hostColon).replace(/^\[(.*)\]$/, "$1");
  return portOf(ip, rest.slice(hostColon + 1), container, protocol);
}

/** Every service of the compose file that publishes a port, in the file's order, with its ports. */
export function publishedPorts(composeText: string): ServicePorts[] {
  const doc = parse(composeText) as { services?: Record<string, { ports?: unknown }> } | null;
  const out: ServicePorts[] = [];
  for (const [service, definition] of Object.entries(doc?.services ?? {})) {
    const entries = Array.isArray(definition?.ports) ? definition.ports : [];
    const ports = entries.map(parsePortEntry).filter((p): p is PublishedPort => p !== undefined);
    if (ports.length) out.push({ service, ports });
  }
  return out;
}
