// Who is calling: the socket address (or, behind a trusted proxy, the client its X-Forwarded-For
// chain names), reduced to the unit a client cannot cheaply multiply (an IPv6 /64).
import type { Server } from "bun";

export type AddressSource = Pick<Server<unknown>, "requestIP">;

const IP_TEXT = /^[0-9A-Fa-f:.]{2,45}$/;

/** An address as proxies write it, without brackets, port or quotes; undefined when it is not one. */
function bareAddress(entry: string): string | undefined {
  let text = entry.trim().replace(/^"(.*)"$/, "$1");
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) text = bracketed[1];
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(text)) text = text.slice(0, text.lastIndexOf(":"));
  return IP_TEXT.test(text) ? text : undefined;
}

/** Private, loopback, link-local and shared (CGNAT) ranges: where proxies of one's own network sit. */
const INTERNAL = /^(10\.|127\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|169\.254\.|100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.|::1$|f[cd][0-9a-f]{2}:|fe[89ab][0-9a-f]:|::ffff:(10|127|192\.168)\.)/i;

/** The client an X-Forwarded-For chain names: the right-most public address, since each proxy
 *  appends the address it saw and a client can only prepend (a left-most entry is whatever the
 *  client wrote). Internal hops (private ranges) are skipped; a chain of internal addresses
 *  only gives its left-most. Ports and brackets are removed; undefined when nothing is an address. */
export function forwardedClient(header: string | null): string | undefined {
  if (!header) return undefined;
  const addresses = header.split(",").map(bareAddress).filter((a): a is string => a !== undefined);
  for (let i = addresses.length - 1; i >= 0; i--) if (!INTERNAL.test(addresses[i]!)) return addresses[i];
  return addresses[0];
}

/** Single-address headers proxies and CDNs set for the client they saw. */
const CLIENT_HEADERS = ["x-real-ip", "cf-connecting-ip", "true-client-ip", "x-client-ip"];

/** Every hop a request says it was forwarded for (X-Forwarded-For, X-Real-IP and its kin,
 *  Forwarded `for=`), as written; an entry that is not an address (`unknown`, a hidden name) is
 *  kept as its text. */
export function forwardedHops(headers: Headers): string[] {
  const hops: string[] = [];
  const add = (entry: string) => hops.push(bareAddress(entry) ?? entry.trim());
  for (const entry of headers.get("x-forwarded-for")?.split(",") ?? []) add(entry);
  for (const name of CLIENT_HEADERS) {
    const value = headers.get(name);
    if (value !== null) add(value);
  }
  for (const element of headers.get("forwarded")?.split(",") ?? []) {
    for (const pair of element.split(";")) {
      const [name, value] = pair.split("=", 2);
      if (name?.trim().toLowerCase() === "for" && value !== undefined) add(value);
    }
  }
  return hops;
}

/** Expands an IPv6 address to 8 hextets; undefined when it is not one. */
function ipv6Hextets(ip: string): string[] | undefined {
  const halves = ip.toLowerCase().split("::");
  if (halves.length > 2) return undefined;
  const split = (s: string) => (s === "" ? [] : s.split(":"));
  const head = split(halves[0]);
  const tail = halves.length === 2 ? split(halves[1]) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  return all.every((h) => /^[0-9a-f]{1,4}$/.test(h)) ? all.map((h) => h.replace(/^0+(?=.)/, "")) : undefined;
}

/** The counter key for an address: IPv4 as is (IPv4-mapped IPv6 unwrapped), IPv6 by its /64. */
export function clientKey(ip: string): string {
  let key = clientKeys.get(ip);
  if (key === undefined) {
    if (clientKeys.size >= 10_000) clientKeys.clear(); // bounded: a flood of addresses cannot grow it
    clientKeys.set(ip, (key = computeClientKey(ip)));
  }
  return key;
}

/** Recent addresses and their keys (the same callers come back request after request). */
const clientKeys = new Map<string, string>();

function computeClientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!ip.includes(":")) return ip;
  const hextets = ipv6Hextets(ip);
  return hextets ? `${hextets.slice(0, 4).join(":")}::/64` : ip;
}

/** The caller's address as given: the socket's, or behind a trusted proxy the forwarded one. */
export function clientAddressOf(request: Request, trustProxy: boolean, server?: AddressSource | null): string | undefined {
  const forwarded = trustProxy ? forwardedClient(request.headers.get("x-forwarded-for")) : undefined;
  return forwarded ?? server?.requestIP(request)?.address ?? undefined;
}
