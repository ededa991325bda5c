// What every artifact generator receives: the resolved stack plus the generation options.
import type { Catalog } from "../../catalog/index.ts";
import type { CatalogService, Platform, Port, Variable } from "../../schema/catalog.ts";
import type { ResolvedPort, ResolvedStack } from "../resolve.ts";

export type FileMap = Record<string, string>;

export interface GenOptions {
  projectName: string;
  proxy: "caddy" | "traefik" | null;
  domain?: string;
  gpu: boolean;
  /** Set only when the user asked for a platform: compose then pins it per service. */
  platform?: Platform;
  deployment: "docker" | "bare-metal";
  /** The deployment as asked (`local` is docker, and stackgen.json keeps the word: SPEC §9.7). */
  deploymentType: "docker" | "bare-metal" | "local";
  generateSecrets: boolean;
  /** Cap each service's memory at a multiple of its estimate (see compose.ts memoryLimitMB). */
  memoryLimits: boolean;
  coreVersion: string;
  skillPacks: string[];
  preset?: string;
}

export interface GenContext extends GenOptions {
  stack: ResolvedStack;
  catalog: Catalog;
  /** Every `.env` variable of the bundle, in file order, with its value. */
  variables: EnvVariable[];
  /** Services that run natively (bare-metal) instead of in a container. */
  nativeIds: Set<string>;
  version: string;
}

export interface EnvVariable extends Variable {
  owner: string;
  value: string;
}

/** The core gateway plus the resolved services, in compose order. */
export const allServices = (ctx: GenContext): CatalogService[] => [ctx.stack.core, ...ctx.stack.services];
export const has = (ctx: GenContext, id: string) => ctx.stack.resolvedServices.includes(id);

/** A service the reverse proxy serves. `metricsPath`: its Prometheus endpoint when that is on the
 *  web port too; it has no login, so the proxy answers 404 there (Prometheus scrapes it inside
 *  the stack's network). */
export interface WebService { id: string; name: string; port: number; dropForwardedFor: boolean; metricsPath?: string }

/** Services the reverse proxy serves: those with a `web` port (the core gateway included). */
export function webServices(ctx: GenContext): WebService[] {
  return allServices(ctx)
    .filter((s) => !ctx.nativeIds.has(s.id))
    .flatMap((s) => {
      const web = s.ports.find((p) => p.web);
      if (!web) return [];
      const metricsPath = s.metrics?.port === web.container ? s.metrics.path : undefined;
      return [{ id: s.id, name: s.name, port: web.container, dropForwardedFor: web.dropForwardedFor === true, ...(metricsPath ? { metricsPath } : {}) }];
    });
}

/** Host ports a service publishes. A proxy serves HTTPS only under a domain: without one nothing
 *  listens on its 443, and publishing it anyway would only make the stack fail to start on a host
 *  where something else (an existing web server) holds 443. With a domain Caddy also gets UDP 443:
 *  it answers HTTP/3 there and tells browsers so (Alt-Svc), and they would otherwise try a port
 *  nobody published. */
export function publishedPorts(ctx: GenContext, id: string): ResolvedPort[] {
  const ports = ctx.stack.ports.get(id) ?? [];
  const proxy = id === "caddy" || id === "traefik";
  if (!proxy) return ports;
  if (ctx.domain === undefined) return ports.filter((p) => p.container !== 443);
  const https = id === "caddy" ? ports.find((p) => p.container === 443 && p.protocol !== "udp") : undefined;
  return https ? [...ports, { ...https, protocol: "udp", description: "HTTP/3 (QUIC)" }] : ports;
}

/** Whether the stack has a reverse proxy (its Caddyfile or Traefik config routes the web services). */
export const hasProxy = (ctx: GenContext) => has(ctx, "caddy") || has(ctx, "traefik");

/** Whether a selection holds one of the reverse proxies whose config stackgen writes (the only
 *  way `<id>.<domain>` is served). */
export const includesProxy = (services: readonly CatalogService[]) => services.some((s) => s.id === "caddy" || s.id === "traefik");

/** Services whose pages need HTTPS in the browser (catalog `needsHttps`) in a bundle that serves
 *  them over plain HTTP (no proxy serving a domain): they work from this machine only. */
export const httpsMissingFor = (services: readonly CatalogService[], domain: string | undefined) =>
  domain !== undefined && includesProxy(services) ? [] : services.filter((s) => s.needsHttps);

/** Whether a published port binds 127.0.0.1 only: databases, caches and admin ports always; a web
 *  port too once a proxy serves it under a domain, since next to the proxy's HTTPS it would hand
 *  out the same app over plain HTTP on every interface (and Docker's published ports bypass host
 *  firewalls such as ufw). Without a domain `<id>.localhost` works on this machine only, so the
 *  port stays the way in from the network. */
export const publishedOnLoopback = (ctx: GenContext, serviceId: string, port: Port) =>
  port.local === true || (port.web === true && ctx.domain !== undefined && hasProxy(ctx) && !ctx.nativeIds.has(serviceId));

/** Public hostname of a web service: `<id>.<domain>`, or `<id>.localhost` without a domain. */
export const hostnameOf = (ctx: Pick<GenContext, "domain">, id: string) => `${id}.${ctx.domain ?? "localhost"}`;

/** Names no public CA issues certificates for: the special-use ones (RFC 6761, 6762, 8375, 9476,
 *  ICANN's .internal) and the ones home and office networks use by habit. */
const PRIVATE_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "test", "example", "invalid", "alt", "lan", "home", "corp", "intranet", "private", "localdomain"];

/** Wildcard DNS services whose names resolve to the address written in them
 *  (`192.168.1.10.sslip.io`, `10-0-0-5.nip.io`); localtest.me always to 127.0.0.1. */
const ADDRESS_DNS = ["sslip.io", "nip.io", "traefik.me"];

/** Loopback, RFC 1918, shared (CGNAT) and link-local IPv4: Let's Encrypt cannot reach them. */
function isPrivateIPv4([a, b]: number[]): boolean {
  return a === 10 || a === 127 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168) || (a === 100 && b! >= 64 && b! <= 127) || (a === 169 && b === 254);
}

/** A name of a wildcard DNS service that leads to a private address: as unreachable for Let's
 *  Encrypt's HTTP check as a .lan name (it resolves, so the order is tried and fails). */
function namesPrivateAddress(domain: string): boolean {
  if (domain === "localtest.me" || domain.endsWith(".localtest.me")) return true;
  const suffix = ADDRESS_DNS.find((s) => domain.endsWith(`.${s}`));
  if (!suffix) return false;
  const address = /(?:^|[.-])(\d{1,3})[.-](\d{1,3})[.-](\d{1,3})[.-](\d{1,3})$/.exec(domain.slice(0, -suffix.length - 1));
  return address !== null && isPrivateIPv4(address.slice(1).map(Number));
}

/** Whether the proxy must sign the domain's certificates itself: Let's Encrypt would refuse it,
 *  leaving every site without HTTPS while the proxy retries. */
export const hasPrivateDomain = (ctx: Pick<GenContext, "domain">) =>
  ctx.domain !== undefined && (PRIVATE_SUFFIXES.some((s) => ctx.domain === s || ctx.domain!.endsWith(`.${s}`)) || namesPrivateAddress(ctx.domain));

/** The URL the proxy serves a web service at: HTTPS with a domain, plain HTTP on localhost without. */
export const proxiedUrl = (ctx: Pick<GenContext, "domain">, id: string) => `${ctx.domain ? "https" : "http"}://${hostnameOf(ctx, id)}`;
