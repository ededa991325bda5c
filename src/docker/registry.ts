// Asking a registry (HTTP API v2) which digest a tag points at now, without pulling. Docker
// Hub-style registries answer 401 with a WWW-Authenticate Bearer challenge: fetch a token from
// its realm (anonymously, or with credentials from ~/.docker/config.json) and retry.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { EngineInfo } from "./engine.ts";

export interface ImageRef {
  /** Registry host as written (docker.io for Docker Hub). */
  registry: string;
  /** Repository path inside the registry (library/redis). */
  repository: string;
  tag: string;
  digest?: string;
}

const MANIFEST_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
];

/** Split an image reference the way the docker CLI does. */
export function parseImageRef(ref: string): ImageRef {
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const slash = rest.indexOf("/");
  const first = slash >= 0 ? rest.slice(0, slash) : "";
  const hasRegistry = slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost");
  const registry = hasRegistry ? first : "docker.io";
  let path = hasRegistry ? rest.slice(slash + 1) : rest;
  let tag = "latest";
  const colon = path.lastIndexOf(":");
  if (colon >= 0 && !path.slice(colon).includes("/")) {
    tag = path.slice(colon + 1);
    path = path.slice(0, colon);
  }
  if (registry === "docker.io" && !path.includes("/")) path = `library/${path}`;
  return { registry, repository: path, tag, ...(digest ? { digest } : {}) };
}

/** Which registries the engine reaches over plain HTTP (the daemon's `insecure-registries`), as
 *  its `/info` says: by name, or by an IPv4 address in one of its ranges. The engine pulls from
 *  them over HTTP, so asking them for a digest over TLS would fail where the pull works. */
export function insecureRegistries(info: Pick<EngineInfo, "RegistryConfig"> | undefined): (registry: string) => boolean {
  const byName = new Set(Object.entries(info?.RegistryConfig?.IndexConfigs ?? {}).filter(([, c]) => c?.Secure === false).map(([name]) => name));
  const ranges = (info?.RegistryConfig?.InsecureRegistryCIDRs ?? []).flatMap((cidr) => {
    const [address, bits] = cidr.split("/");
    const base = ipv4(address ?? "");
    const size = Number(bits);
    return base === undefined || !Number.isInteger(size) || size < 0 || size > 32 ? [] : [{ base, mask: size === 0 ? 0 : (~0 << (32 - size)) >>> 0 }];
  });
  return (registry) => {
    if (byName.has(registry)) return true;
    const address = ipv4(registry.replace(/:\d+$/, ""));
    return address !== undefined && ranges.some((r) => ((address & r.mask) >>> 0) === ((r.base & r.mask) >>> 0));
  };
}

/** An IPv4 address as a number, or undefined for anything else (a name, IPv6). */
function ipv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

/** Where to send API calls for a registry; loopback registries, and those the engine is told to
 *  reach without TLS (`plainHttp`), speak plain HTTP. */
export function registryBaseUrl(registry: string, plainHttp: (registry: string) => boolean = () => false): string {
  if (registry === "docker.io" || registry === "index.docker.io") return "https://registry-1.docker.io";
  const host = registry.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127\./.test(host);
  return `${loopback || plainHttp(registry) ? "http" : "https"}://${registry}`;
}

/** How the registries are reached: which of them speak plain HTTP (see insecureRegistries). */
export interface RegistryAccess {
  plainHttp?: (registry: string) => boolean;
  timeoutMs?: number;
}

/** Parse `Bearer realm="...",service="...",scope="..."`. */
export function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const space = header.indexOf(" ");
  const scheme = (space >= 0 ? header.slice(0, space) : header).trim().toLowerCase();
  const params: Record<string, string> = {};
  const re = /([a-zA-Z_]+)=(?:"([^"]*)"|([^,\s]*))/g;
  for (const m of header.slice(space + 1).matchAll(re)) params[m[1].toLowerCase()] = m[2] ?? m[3] ?? "";
  return { scheme, params };
}

/** What the docker CLI's config.json says about credentials. */
interface DockerConfig {
  auths?: Record<string, { auth?: string }>;
  credsStore?: string;
  credHelpers?: Record<string, string>;
}

/** A credential helper's name: a `docker-credential-<name>` program on PATH, nothing else. */
const HELPER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Basic credentials for a registry as the docker CLI finds them (what `docker login` stored):
 * the registry's own credential helper (`credHelpers`), else the default store (`credsStore`,
 * Docker Desktop's and most keychains' way), else the `auth` kept in config.json itself.
 */
async function storedAuth(registry: string): Promise<string | undefined> {
  const configDir = process.env.DOCKER_CONFIG ?? join(homedir(), ".docker");
  const file = join(configDir, "config.json");
  if (!existsSync(file)) return undefined;
  let config: DockerConfig;
  try {
    config = JSON.parse(readFileSync(file, "utf8")) as DockerConfig;
  } catch {
    return undefined; // unreadable config: anonymous
  }
  const keys = registry === "docker.io" ? ["https://index.docker.io/v1/", "docker.io", "index.docker.io"] : [registry, `https://${registry}`, `http://${registry}`];
  const helper = keys.map((k) => config.credHelpers?.[k]).find((h) => h !== undefined) ?? config.credsStore;
  if (typeof helper === "string" && HELPER_NAME.test(helper)) {
    const fromHelper = await helperAuth(helper, registry === "docker.io" ? keys[0]! : registry);
    if (fromHelper) return fromHelper;
  }
  for (const k of keys) if (typeof config.auths?.[k]?.auth === "string") return config.auths[k].auth;
  return undefined;
}

/** `docker-credential-<helper> get` for a server, as Basic credentials; undefined when the helper
 *  is missing, fails, has nothing for it, or holds an identity token (OAuth: not Basic). Its
 *  arguments are fixed and the server goes on stdin, never through a shell. */
async function helperAuth(helper: string, server: string): Promise<string | undefined> {
  // Looked up on the PATH of now, as the docker CLI would (Bun's own lookup keeps its start-up PATH).
  const program = Bun.which(`docker-credential-${helper}`, { PATH: process.env.PATH ?? "" });
  if (!program) return undefined;
  try {
    const proc = Bun.spawn([program, "get"], { stdin: new TextEncoder().encode(server), stdout: "pipe", stderr: "ignore" });
    const timer = setTimeout(() => proc.kill(), 10_000);
    const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    clearTimeout(timer);
    if (code !== 0) return undefined;
    const { Username, Secret } = JSON.parse(out) as { Username?: unknown; Secret?: unknown };
    if (typeof Username !== "string" || typeof Secret !== "string" || Username === "<token>" || Secret === "") return undefined;
    return Buffer.from(`${Username}:${Secret}`).toString("base64");
  } catch {
    return undefined;
  }
}

export class RegistryError extends Error {}

async function fetchToken(challenge: Record<string, string>, ref: ImageRef, timeoutMs: number): Promise<string> {
  if (!challenge.realm) throw new RegistryError("registry sent a Bearer challenge without realm");
  const url = new URL(challenge.realm);
  if (challenge.service) url.searchParams.set("service", challenge.service);
  url.searchParams.set("scope", challenge.scope ?? `repository:${ref.repository}:pull`);
  const basic = await storedAuth(ref.registry);
  const res = await fetch(url, { headers: basic ? { Authorization: `Basic ${basic}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new RegistryError(`token request to ${url.host} answered ${res.status}`);
  const body = (await res.json()) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw new RegistryError(`token response from ${url.host} had no token`);
  return token;
}

/** Sends manifest requests for `reference` (a tag or digest) in `ref`'s repository; a 401 is
 *  answered once with a token (Bearer challenge) or stored credentials (Basic), kept for later calls. */
function manifestRequests(ref: ImageRef, reference: string, timeoutMs: number, plainHttp?: (registry: string) => boolean): (method: string) => Promise<Response> {
  const url = `${registryBaseUrl(ref.registry, plainHttp)}/v2/${ref.repository}/manifests/${encodeURIComponent(reference)}`;
  const headers: Record<string, string> = { Accept: MANIFEST_TYPES.join(", ") };
  const attempt = (method: string) => fetch(url, { method, headers, signal: AbortSignal.timeout(timeoutMs) });
  return async (method) => {
    const res = await attempt(method);
    if (res.status !== 401 || headers.Authorization) return res;
    const challenge = parseChallenge(res.headers.get("www-authenticate") ?? "");
    if (challenge.scheme === "bearer") headers.Authorization = `Bearer ${await fetchToken(challenge.params, ref, timeoutMs)}`;
    else if (challenge.scheme === "basic") {
      const basic = await storedAuth(ref.registry);
      if (!basic) throw new RegistryError(`${ref.registry} needs credentials (docker login)`);
      headers.Authorization = `Basic ${basic}`;
    }
    return attempt(method);
  };
}

/** `work`, with a failure to reach the registry said as a RegistryError. */
async function reaching<T>(ref: ImageRef, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof RegistryError) throw e;
    throw new RegistryError(`cannot reach ${ref.registry}: ${(e as Error).message}`);
  }
}

const sha256Of = (body: Uint8Array) => `sha256:${new Bun.CryptoHasher("sha256").update(body).digest("hex")}`;

/** The digest the registry has for `ref`'s tag now (index digest for multi-arch images). */
export async function remoteDigest(image: string, { timeoutMs = 20000, plainHttp }: RegistryAccess = {}): Promise<string> {
  const ref = parseImageRef(image);
  if (ref.digest) return ref.digest;
  const send = manifestRequests(ref, ref.tag, timeoutMs, plainHttp);
  return reaching(ref, async () => {
    const res = await send("HEAD");
    if (res.ok && res.headers.get("docker-content-digest")) return res.headers.get("docker-content-digest")!;
    // Some registries omit the digest on HEAD: fetch the manifest and hash it ourselves.
    if (res.ok || res.status === 405) {
      const full = await send("GET");
      if (!full.ok) throw new RegistryError(`${ref.registry} answered ${full.status} for ${ref.repository}:${ref.tag}`);
      const header = full.headers.get("docker-content-digest");
      const body = new Uint8Array(await full.arrayBuffer());
      return header ?? sha256Of(body);
    }
    if (res.status === 404) throw new RegistryError(`${ref.repository}:${ref.tag} not found on ${ref.registry}`);
    throw new RegistryError(`${ref.registry} answered ${res.status} for ${ref.repository}:${ref.tag}`);
  });
}

export interface RemoteManifest {
  /** Its digest: the one asked for, else the registry's header, else the hash of the body. */
  digest: string;
  /** The body's mediaType, else the Content-Type header. */
  mediaType: string;
  /** The parsed body: an index's `manifests`, or an image manifest's `config`. */
  body: { schemaVersion?: number; mediaType?: string; manifests?: { digest: string; platform?: { os?: string; architecture?: string; variant?: string } }[]; config?: { digest?: string } };
}

/** The manifest (or index) of `image`'s repository under `reference` (a digest; by default the
 *  reference's own tag or digest), fetched with the same credentials as remoteDigest. */
export async function remoteManifest(image: string, reference?: string, { timeoutMs = 20000, plainHttp }: RegistryAccess = {}): Promise<RemoteManifest> {
  const ref = parseImageRef(image);
  const wanted = reference ?? ref.digest ?? ref.tag;
  const send = manifestRequests(ref, wanted, timeoutMs, plainHttp);
  return reaching(ref, async () => {
    const res = await send("GET");
    if (res.status === 404) throw new RegistryError(`${ref.repository}@${wanted} not found on ${ref.registry}`);
    if (!res.ok) throw new RegistryError(`${ref.registry} answered ${res.status} for ${ref.repository}@${wanted}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    let body: RemoteManifest["body"];
    try {
      body = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new RegistryError(`${ref.registry} sent a manifest for ${ref.repository}@${wanted} that is not JSON`);
    }
    // A registry's answer is read field by field below: another shape is no manifest.
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw new RegistryError(`${ref.registry} sent a manifest for ${ref.repository}@${wanted} that is not a JSON object`);
    const digest = wanted.startsWith("sha256:") ? wanted : (res.headers.get("docker-content-digest") ?? sha256Of(bytes));
    return { digest, mediaType: body.mediaType ?? res.headers.get("content-type") ?? "", body };
  });
}
