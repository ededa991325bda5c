// The host ports an existing bundle's compose file publishes, for regenerating it without moving
// a service that runs (its users' bookmarks, firewall rules and clients point at those ports).
import { parse } from "yaml";
import { keptPortKey } from "./resolve.ts";

/** `<service>/<protocol>/<container port>` -> host port, for every published port of the file
 *  (short `[ip:]host:container[/protocol]` and long `{target, published, protocol}` forms).
 *  Anything unreadable counts as nothing kept. */
export function keptPortsOf(composeText: string): Record<string, number> {
  let doc: unknown;
  try {
    doc = parse(composeText, { logLevel: "error" }); // no warnings printed for an odd file
  } catch {
    return {};
  }
  const services = (doc as { services?: unknown } | null)?.services;
  if (!services || typeof services !== "object") return {};
  const kept: Record<string, number> = {};
  for (const [name, service] of Object.entries(services as Record<string, unknown>)) {
    const ports = (service as { ports?: unknown } | null)?.ports;
    if (!Array.isArray(ports)) continue;
    for (const entry of ports) {
      const port = readPort(entry);
      if (port) kept[keptPortKey(name, port.protocol, port.container)] = port.host;
    }
  }
  return kept;
}

const SHORT = /^(?:.*:)?(\d{1,5}):(\d{1,5})(?:\/(tcp|udp))?$/;

function readPort(entry: unknown): { host: number; container: number; protocol: string } | undefined {
  if (typeof entry === "string") {
    const m = SHORT.exec(entry);
    return m ? checked(Number(m[1]), Number(m[2]), m[3] ?? "tcp") : undefined;
  }
  if (entry && typeof entry === "object") {
    const { target, published, protocol } = entry as { target?: unknown; published?: unknown; protocol?: unknown };
    return checked(Number(published), Number(target), typeof protocol === "string" ? protocol : "tcp");
  }
  return undefined;
}

const checked = (host: number, container: number, protocol: string) =>
  Number.isInteger(host) && host > 0 && host < 65536 && Number.isInteger(container) && container > 0 ? { host, container, protocol } : undefined;
