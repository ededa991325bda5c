// A small JSON client shared by the deployers. Rules (CONTRACT §5): one timeout per call,
// redirects are never followed (a 3xx would resend the key to another host), every failure is a
// one-line message, and the API key never appears in any message.
import type { DeployTarget, FetchLike } from "./types.ts";

export const DEFAULT_TIMEOUT_MS = 30_000;
/** The most of an answer that is read. These APIs answer in kilobytes (a long list of services
 *  stays well below a MiB); a bigger answer comes from something else at --url, and reading it
 *  all would only fill memory. */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Seconds to wait from a Retry-After header: a number of seconds or an HTTP date. */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\s*\d+\s*$/.test(header)) return Number(header);
  if (!/[a-z]/i.test(header)) return undefined; // "1.5", "-1": neither form
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** An answer that says the platform did not carry the call out: a redirect, a refusal of the
 *  request (4xx), "not implemented" or "unavailable". Any other 5xx may come after the platform
 *  wrote its change (an error while answering), and a gateway's 502 or 504 only says the
 *  platform's own answer was lost. */
const isRefusal = (status: number) => (status >= 300 && status < 500) || status === 501 || status === 503;

/** A failed call. `message` is short and stable; `detail` carries what the server said. */
export class DeployError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly detail?: string,
    /** Parsed error body, for callers that branch on it. */
    readonly body?: unknown,
    /** A 429's Retry-After, in seconds. */
    readonly retryAfterSeconds?: number,
    /** The platform certainly did not do what the call asked: it refused it, or the call never
     *  reached it. Otherwise (a timeout, a dropped connection, an answer that cannot be read) it
     *  may have. */
    readonly notDone = status !== undefined && isRefusal(status),
  ) {
    super(message);
    this.name = "DeployError";
  }
}

// Fixed reason phrases: `Response.statusText` is empty over HTTP/2 and on some servers.
const REASONS: Record<number, string> = {
  300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
  307: "Temporary Redirect", 308: "Permanent Redirect",
  400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
  413: "Payload Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Entity", 429: "Too Many Requests",
  500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
  504: "Gateway Timeout",
};

export const reasonPhrase = (status: number, fallback = ""): string => REASONS[status] ?? (fallback || "Error");

/** A function that replaces the secret wherever it shows up (a server may echo a header back);
 *  its patterns are built once, for every text of a deployment. */
export function redactor(secret: string): (text: string) => string {
  const key = secret.trim();
  if (key === "") return (text) => text;
  if (key.length < 4) {
    // Too short to hide inside other words ("401", "Bearer"): hidden where it stands alone.
    const alone = new RegExp(`(?<![A-Za-z0-9])${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![A-Za-z0-9])`, "gi");
    return (text) => text.replace(alone, "[redacted]");
  }
  // A platform may echo the key in another form than it was sent: URL-encoded (a query string, a
  // redirect), JSON-escaped, base64 (of the key or of the Authorization header), another case.
  // Base64 forms without their padding (the text may cut or re-pad it); each form matched with any.
  const base64 = (s: string) => Buffer.from(s).toString("base64").replace(/=+$/, "");
  const forms = new Set([key, encodeURIComponent(key), JSON.stringify(key).slice(1, -1), base64(key), base64(`Bearer ${key}`), base64(`:${key}`)]);
  const patterns = [...forms].filter((f) => f.length >= 4).sort((a, b) => b.length - a.length)
    .map((form) => new RegExp(`${form.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}=*`, "gi"));
  return (text) => patterns.reduce((out, pattern) => out.replace(pattern, "[redacted]"), text);
}

export interface JsonClientOptions {
  /** Display name: "Coolify", "Dokploy". */
  provider: string;
  /** Prefix of every path, e.g. `https://host/api/v1`. */
  baseUrl: string;
  /** Authentication and other fixed headers. */
  headers: Record<string, string>;
  /** Redacted from every message. */
  secret: string;
  fetch?: FetchLike;
  timeoutMs?: number;
  /** Waits between tries of a call (tests pass a clock of their own). */
  sleep?: (ms: number) => Promise<unknown>;
  /** Aborted: a call the platform asked to slow down is not tried again (nor waited for). */
  signal?: AbortSignal;
  /** Told before each wait for another try (progress: the step would look stuck otherwise). */
  onWait?: (seconds: number, refusal: DeployError) => void;
}

export interface CallOptions {
  query?: Record<string, string>;
  body?: unknown;
  /** "text" for endpoints that answer plain text (Coolify /version). */
  expect?: "json" | "text";
}

export interface JsonClient {
  call<T = unknown>(method: string, path: string, options?: CallOptions): Promise<T>;
}

/** What every call of a deployment takes from its target: the key to send and hide, the transport,
 *  the timeout, the waits between tries and the interrupt. */
export const callSettingsOf = (t: Pick<DeployTarget, "apiKey" | "fetch" | "timeoutMs" | "sleep" | "signal" | "onWait">) =>
  ({ secret: t.apiKey, fetch: t.fetch, timeoutMs: t.timeoutMs, sleep: t.sleep, signal: t.signal, onWait: t.onWait });

export function createJsonClient(opts: JsonClientOptions): JsonClient {
  const doFetch: FetchLike = opts.fetch ?? ((input, init) => fetch(input, init));
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const clean = redactor(opts.secret);

  return {
    async call<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const answer = await once<T>(method, path, options, attempt);
        if (answer.again === undefined) return answer.value;
        // Interrupted (Ctrl-C, a supervisor's SIGTERM): no wait and no further try; the refusal
        // stands as the call's outcome.
        if (opts.signal?.aborted) throw answer.refusal;
        opts.onWait?.(answer.again, answer.refusal);
        await waitUnlessAborted(answer.again * 1000);
        if (opts.signal?.aborted) throw answer.refusal;
      }
    },
  };

  /** `ms` (or the injected `sleep`), ended early by the signal. The timer is cleared then: a
   *  pending one would keep an interrupted CLI alive until it ran out. */
  function waitUnlessAborted(ms: number): Promise<void> {
    return new Promise<void>((done) => {
      const signal = opts.signal;
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", finish);
        done();
      };
      const timer = opts.sleep ? undefined : setTimeout(finish, ms);
      void opts.sleep?.(ms).then(finish);
      signal?.addEventListener("abort", finish, { once: true });
    });
  }

  /** One try of a call: its value, or (`again`) the seconds to wait before the next try, with the
   *  refusal that stands if there is none. */
  async function once<T>(method: string, path: string, options: CallOptions, attempt: number): Promise<{ value: T; again?: undefined } | { again: number; refusal: DeployError }> {
    const url = buildUrl(opts.baseUrl, path, options.query);
    const headers: Record<string, string> = { Accept: "application/json", ...opts.headers };
    const init: RequestInit = { method, headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) };
    // A POST, PATCH or PUT always goes as JSON (`{}` when the call has no body: Coolify's deploy),
    // which is what both platforms' APIs take; a proxy or server may refuse another type.
    if (options.body !== undefined || method === "POST" || method === "PATCH" || method === "PUT") {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body ?? {});
    }

    let res: Response;
    try {
      res = await doFetch(url, init);
    } catch (e) {
      const code = (e as { code?: string })?.code ?? "";
      throw new DeployError(clean(transportMessage(e, opts.provider, opts.baseUrl, timeoutMs)), undefined, undefined, undefined, undefined, NOT_SENT.test(code) || TLS_CODE.test(code));
    }

    let text: string | undefined;
    try {
      text = await readAtMost(res, MAX_ANSWER_BYTES);
    } catch (e) {
      throw new DeployError(clean(transportMessage(e, opts.provider, opts.baseUrl, timeoutMs)), undefined, undefined, undefined, undefined, isRefusal(res.status));
    }
    if (text === undefined) {
      throw new DeployError(
        clean(`${opts.provider} API ${res.status}: the answer is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB, so it was not read; check that --url points at the ${opts.provider} instance`),
        res.status,
      );
    }
    const head = `${opts.provider} API ${res.status}: ${reasonPhrase(res.status, res.statusText)}`;

    // fetch reports an opaque redirect as status 0 in browsers; Bun and Node give the real 3xx.
    if ((res.status >= 300 && res.status < 400) || res.type === "opaqueredirect") {
      const to = res.headers.get("location");
      throw new DeployError(
        clean(head),
        res.status,
        clean(`redirect${to ? ` to ${redirectTarget(to, url)}` : ""} not followed; check --url (scheme, host and port of the instance)`),
      );
    }
    if (res.status >= 400) {
      // Hidden before anything is cut short: a cut can leave most of the key, unmatched.
      const shown = clean(text);
      const body = tryJson(shown);
      const retryAfter = retryAfterSeconds(res.headers.get("retry-after"));
      const refusal = new DeployError(clean(head), res.status, serverMessage(body, shown), body, res.status === 429 ? retryAfter : undefined);
      const again = retryWait(method, res.status, retryAfter, attempt);
      if (again !== undefined) return { again, refusal };
      throw refusal;
    }
    if (options.expect === "text") return { value: clean(text) as T };
    if (text.trim() === "") return { value: null as T };
    const parsed = tryJson(text);
    if (parsed === undefined) {
      const type = (res.headers.get("content-type") ?? "no content type").split(";")[0]!.trim();
      // A JSON type on a body that does not parse: cut short, or not what it says.
      const why = /json/i.test(type) ? `its ${type} answer is not valid JSON` : `expected JSON, got ${type}`;
      throw new DeployError(
        clean(`${opts.provider} API ${res.status}: ${why}`),
        res.status,
        snippet(clean(text)),
      );
    }
    return { value: parsed as T };
  }
}

/** Tries of one call at most, and the longest wait between two that is worth making: a platform
 *  that asks for longer is answered with the hint to run again later. */
export const MAX_ATTEMPTS = 3;
export const MAX_RETRY_WAIT_SECONDS = 15;

/**
 * Seconds to wait before trying a call again, or undefined to fail now. A 429 or a 503 says the
 * platform did nothing (its limiter, maintenance mode or a proxy without a live upstream answered
 * before any work: isRefusal), so any call is tried again after the Retry-After it asks (a second,
 * then two, when it names none). A gateway's 502 or 504 may come after the platform did the work
 * and only its answer was lost: tried again for a read only.
 */
export function retryWait(method: string, status: number, retryAfter: number | undefined, attempt: number): number | undefined {
  if (attempt >= MAX_ATTEMPTS) return undefined;
  const transient = status === 429 || status === 503 || (method === "GET" && (status === 502 || status === 504));
  if (!transient) return undefined;
  const wait = retryAfter ?? attempt;
  return wait <= MAX_RETRY_WAIT_SECONDS ? wait : undefined;
}

/** The body's text, or undefined once it passes `limit` bytes (the rest is not fetched). */
async function readAtMost(res: Response, limit: number): Promise<string | undefined> {
  if (Number(res.headers.get("content-length")) > limit) {
    await res.body?.cancel().catch(() => {});
    return undefined;
  }
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

function buildUrl(base: string, path: string, query?: Record<string, string>): string {
  const qs = query ? new URLSearchParams(query).toString() : "";
  return `${base}${path}${qs ? `?${qs}` : ""}`;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Where a redirect pointed, without its query or fragment (a login page may carry a token there). */
function redirectTarget(location: string, from: string): string {
  try {
    const to = new URL(location, from);
    return `${to.origin}${to.pathname}${to.search || to.hash ? " (query left out)" : ""}`;
  } catch {
    return "an address that is not a URL";
  }
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** The human part of an error body: Coolify `{message, errors}`, Dokploy `{message, code}`. */
export function serverMessage(body: unknown, raw: string): string {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    const parts: string[] = [];
    if (typeof b.message === "string") parts.push(b.message);
    if (b.errors && typeof b.errors === "object") {
      for (const [field, msgs] of Object.entries(b.errors as Record<string, unknown>)) {
        parts.push(`${field}: ${Array.isArray(msgs) ? msgs.join(" ") : String(msgs)}`);
      }
    }
    if (typeof b.error === "string") parts.push(b.error);
    // Dokploy (tRPC + zod): `issues` holds one `{path, message}` per refused field.
    if (Array.isArray(b.issues)) {
      for (const issue of b.issues as { path?: unknown; message?: unknown }[]) {
        if (typeof issue?.message !== "string") continue;
        const path = Array.isArray(issue.path) ? issue.path.join(".") : "";
        parts.push(path ? `${path}: ${issue.message}` : issue.message);
      }
    }
    if (parts.length) return snippet(parts.join("; "));
  }
  return snippet(raw);
}

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS_CERT_ALTNAME_INVALID/;
/** Failures before a request could reach the platform: no connection, no address. */
const NOT_SENT = /^(ECONNREFUSED|ConnectionRefused|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/;
/** Whether a fetch rejection happened before the request left this machine: only then may it be
 *  sent again (to another address of the host) without risking a second copy of what it makes. */
export const neverSent = (e: unknown) => NOT_SENT.test((e as { code?: string })?.code ?? "");

/** Turn a fetch rejection into one line: timeout, untrusted certificate or unreachable host. */
function transportMessage(e: unknown, provider: string, baseUrl: string, timeoutMs: number): string {
  const err = e as { name?: string; message?: string; code?: string };
  if (err?.name === "TimeoutError" || err?.name === "AbortError") {
    return `${provider} did not answer within ${formatSeconds(timeoutMs)}`;
  }
  const message = err?.message ?? String(e);
  const why = err?.code && !message.includes(err.code) ? `${err.code}: ${message}` : message;
  // The server answered, but with a certificate this machine does not trust (self-signed, a
  // private CA, another name): "cannot reach" would send the user looking at the network.
  // A certificate for another name: trusting its CA would not help, the address must change.
  if (err?.code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `${provider} at ${partOf(baseUrl, "origin")} has a TLS certificate that does not name ${partOf(baseUrl, "hostname")} (${why}). Give --url the host name the certificate was issued for (an IP address or another name of the same server does not match it).`;
  }
  if (TLS_CODE.test(err?.code ?? "")) {
    return `${provider} at ${partOf(baseUrl, "origin")} has a TLS certificate this machine does not trust (${why}). If it is self-signed or from a private CA, put that CA's certificate (PEM) in a file and name it in NODE_EXTRA_CA_CERTS.`;
  }
  return `Cannot reach ${provider} at ${partOf(baseUrl, "origin")} (${why})`;
}

/** A part of a URL, for messages; the text as it is when it is no URL. */
function partOf(url: string, part: "origin" | "hostname"): string {
  try {
    return new URL(url)[part];
  } catch {
    return url;
  }
}

const formatSeconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`);

// ---------------------------------------------------------------------------------------------
// Version checks shared by the deployers (semver order: a pre-release sorts below its release,
// so Coolify's `4.0.0-beta.474` < `4.0.0`).

export interface ParsedVersion {
  core: [number, number, number];
  pre: (string | number)[];
}

export function parseVersion(text: string): ParsedVersion | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(text.trim());
  if (!m) return null;
  const pre = m[4] ? m[4].split(".").map((p) => (/^\d+$/.test(p) ? Number(p) : p)) : [];
  return { core: [Number(m[1]), Number(m[2]), Number(m[3])], pre };
}

export function compareVersions(a: ParsedVersion, b: ParsedVersion): number {
  for (let i = 0; i < 3; i++) if (a.core[i] !== b.core[i]) return a.core[i]! - b.core[i]!;
  if (a.pre.length === 0 || b.pre.length === 0) return b.pre.length - a.pre.length;
  for (let i = 0; i < Math.max(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i];
    const y = b.pre[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return x - y;
    if (typeof x === "number") return -1; // numeric identifiers sort below alphanumeric ones
    if (typeof y === "number") return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Check a version answer against a minimum. Throws a one-line error naming the minimum;
 * an answer that is not a version at all usually means --url points at something else.
 */
export function requireMinimumVersion(provider: string, answer: string, minimum: string, why: string): string {
  const shown = answer.trim().replace(/^"|"$/g, "");
  const parsed = parseVersion(shown);
  if (!parsed) {
    throw new DeployError(
      `${provider} did not report a version (got "${snippet(shown).slice(0, 60)}"); check that --url points at the ${provider} instance`,
    );
  }
  if (compareVersions(parsed, parseVersion(minimum)!) < 0) {
    throw new DeployError(`${provider} ${shown} is too old: stackgen needs ${provider} ${minimum} or later (${why})`);
  }
  return shown;
}
