// Entry point of the deployers, shared by `stackgen deploy` and `POST /v1/deploy`.
// deployBundle adapts the compose file, runs one provider step by step, and always answers with
// a DeployResult for platform failures (which step failed, what was already created). Only input
// the platform would refuse anyway throws, before any call, as a usage error.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { usageError, withoutUserPart } from "../errors.ts";
import { adaptCompose, type BundleFiles } from "./adapt-compose.ts";
import { coolify } from "./coolify.ts";
import { dokploy } from "./dokploy.ts";
import { DeployError, neverSent, redactor } from "./http.ts";
import { dotenvText, interpolate, parseEnvText, scanDotenv, type DotenvStatement } from "../core/parse-env.ts";
import { envValue } from "../core/generate/env.ts";
import { requiredReferences } from "../core/required-variables.ts";
import type { DerivedSecret } from "../core/generate/secrets.ts";
import type {
  DeployProvider,
  DeployResult,
  DeployStep,
  DeployTarget,
  EnvVar,
  FetchLike,
  ProviderName,
  StepContext,
  StepHandler,
} from "./types.ts";

export type { DeployResult, DeployStep, ProviderName } from "./types.ts";
export { parseEnvText } from "../core/parse-env.ts";
export { DESTINATION_ENV } from "./coolify.ts";

export const PROVIDERS: Record<ProviderName, DeployProvider> = { coolify, dokploy };
export const PROVIDER_NAMES = Object.keys(PROVIDERS) as ProviderName[];

/** Why `provider` would refuse this project name, or null (deployBundle checks it too). */
export const projectNameProblem = (provider: ProviderName, name: string): string | null =>
  PROVIDERS[provider].checkProjectName?.(name.trim()) ?? null;

export interface DeployOptions {
  provider: string;
  /** Instance URL, e.g. `https://coolify.example.com`. */
  url: string;
  apiKey: string;
  /** Reuse an existing project and stack of the same name instead of failing. */
  update?: boolean;
  projectName: string;
  composeYaml: string;
  envText: string;
  /** Bundle files by relative path, for bind mounts that become inline configs. */
  files?: BundleFiles;
  /** Coolify: the Docker destination (uuid, name or network) to use on a server with several. */
  destination?: string;
  /** On update, keep every value the platform has set: for a bundle generated just now, whose
   *  secrets are new (the API relay). The CLI pushes the user's bundle, which wins. */
  keepExistingValues?: boolean;
  /** With keepExistingValues: the names of the generated secrets (see DeployTarget). */
  freshSecrets?: ReadonlySet<string>;
  /** With keepExistingValues: the signed API keys among them (see DeployTarget). */
  derivedSecrets?: readonly DerivedSecret[];
  fetch?: FetchLike;
  /** Per-call timeout; default 30 s. */
  timeoutMs?: number;
  /** Waits between tries of a call (tests); a timer the interrupt clears by default. */
  sleep?: (ms: number) => Promise<unknown>;
  /** Aborted (Ctrl-C): the call under way finishes, so what it made is known, and no further
   *  step starts. */
  signal?: AbortSignal;
}

/** Compose's own settings for the machine it runs on. Pushed to a platform they would name files
 *  it does not have, or replace the project name it writes into the same .env (Dokploy). */
const LOCAL_COMPOSE_SETTINGS = new Set(["COMPOSE_FILE", "COMPOSE_PATH_SEPARATOR", "COMPOSE_PROJECT_NAME"]);

/** Variable names a platform takes: Coolify's rule (it refuses the whole batch over one other
 *  name; Dokploy's reader drops some of them silently). Compose cannot put any other name into
 *  the compose file either, so nothing the stack uses is lost. */
const PLATFORM_NAME = /^[A-Za-z_][A-Za-z0-9_.]{0,254}$/;

/** `.env` text for a platform: without its local compose settings and names no platform takes,
 *  and what was left out. Read by statement, as Compose reads it (an assignment may follow a
 *  closing quote on the same line); when something is left out, the rest is written one
 *  statement per line. */
export function envForPlatform(envText: string): { text: string; settings: string[]; badNames: string[]; filled: string[]; unset: string[] } {
  const statements = scanDotenv(envText);
  // Compose stops reading at such a quote; sending what comes before it would start the stack
  // with the later variables (a password among them) missing on the platform.
  const open = statements.find((s) => !s.closed);
  if (open) throw usageError(`.env has a quoted value that never closes (${open.key}, line ${open.line}); Docker Compose cannot read that file either. Close the quote, then deploy again: nothing was sent.`, "envText");
  const leftOut = (s: DotenvStatement) => LOCAL_COMPOSE_SETTINGS.has(s.key) || !PLATFORM_NAME.test(s.key);
  const named = (keep: (key: string) => boolean) => [...new Set(statements.filter((s) => leftOut(s) && keep(s.key)).map((s) => s.key))];
  const settings = named((key) => LOCAL_COMPOSE_SETTINGS.has(key));
  const badNames = named((key) => !LOCAL_COMPOSE_SETTINGS.has(key));
  // Compose fills `${NAME}` in a value from the lines above it; both platforms take values as
  // written (Coolify's literal variables, Dokploy's escaped `$`), so the filled-in value is sent.
  // A name .env does not set stays as written: on this machine compose takes it from the shell.
  const seen = new Map<string, string>();
  const filledValues = new Map<DotenvStatement, string>();
  const unset = new Set<string>();
  for (const s of statements) {
    const read = s.template === undefined ? { value: s.value, unset: [] } : interpolate(s.template, (name) => seen.get(name));
    seen.set(s.key, read.value);
    for (const name of read.unset) unset.add(`${s.key} (\${${name}})`);
    if (read.value !== s.value && !leftOut(s)) filledValues.set(s, read.value);
  }
  const rewrite = settings.length || badNames.length || filledValues.size;
  const text = rewrite ? dotenvText(statements.filter((s) => !leftOut(s)), (s) => `${s.key}=${filledValues.has(s) ? envValue(filledValues.get(s)!) : s.raw}`) : envText;
  return { text, settings, badNames, filled: [...new Set([...filledValues.keys()].map((s) => s.key))], unset: [...unset] };
}

export async function deployBundle(opts: DeployOptions, onStep: StepHandler = () => {}): Promise<DeployResult> {
  const provider = PROVIDERS[opts.provider as ProviderName];
  if (!provider) throw usageError(`Unknown provider "${opts.provider}" (use ${PROVIDER_NAMES.join(" or ")})`, "provider");
  // Trimmed as fetch trims a header value: the key the platform sees is the one hidden in output.
  const apiKey = opts.apiKey.trim();
  if (!apiKey) throw usageError(`An API key for ${provider.label} is required`, "apiKey");
  // A header cannot carry a control or non-ASCII character (a key pasted with a stray line break
  // or quote mark); fetch would refuse it and the message would blame the network.
  if (!/^[\x20-\x7e]+$/.test(apiKey)) throw usageError(`The API key for ${provider.label} holds a character no HTTP header can carry (a line break, a control or non-ASCII character): copy it again from ${provider.label}`, "apiKey");
  const baseUrl = normaliseInstanceUrl(opts.url, apiKey);
  await checkInstanceAddress(baseUrl);
  // The catalog only for a stack stackgen generated: loading it takes a while (seconds from source).
  const catalog = opts.composeYaml.includes("dev.stackgen.service") ? (await import("../catalog/index.ts")).getCatalog() : undefined;
  const { yaml, compose, changes } = adaptCompose(opts.composeYaml, opts.files ?? {}, catalog, provider.name);
  const { text: envText, settings, badNames, filled, unset } = envForPlatform(opts.envText);
  if (filled.length) changes.push(`.env: ${filled.join(", ")} sent with the \${…} references in ${filled.length === 1 ? "its value" : "their values"} filled in from .env, as compose fills them here: the platform takes values as written`);
  if (unset.length) changes.push(`.env: ${unset.join(", ")} ${unset.length === 1 ? "refers" : "refer"} to a variable .env does not set (compose here takes it from the shell): sent as written, so set it in .env if the stack needs it`);
  if (settings.length) changes.push(`.env: ${settings.join(", ")} not sent: ${settings.length === 1 ? "it chooses" : "they choose"} the files and project name on this machine; the platform runs docker-compose.yml under its own project name`);
  if (badNames.length) changes.push(`.env: ${badNames.join(", ")} not sent: a platform variable name starts with a letter or _ and holds letters, digits, _ and . (255 at most); compose cannot use other names in the compose file either`);
  const target: DeployTarget = {
    baseUrl,
    apiKey,
    update: opts.update === true,
    projectName: opts.projectName.trim(),
    composeYaml: yaml,
    envText,
    envVars: parseEnvText(envText),
    destination: opts.destination?.trim() || undefined,
    keepExistingValues: opts.keepExistingValues === true,
    freshSecrets: opts.freshSecrets ?? new Set<string>(),
    derivedSecrets: opts.derivedSecrets ?? [],
    // Plain-http calls go to the address that was checked, not to whatever the name resolves to
    // by the time fetch asks again (DNS rebinding).
    fetch: opts.fetch ?? pinnedFetch(),
    timeoutMs: opts.timeoutMs,
    sleep: opts.sleep,
    signal: opts.signal,
  };
  const problem = projectNameProblem(provider.name, target.projectName);
  if (problem) throw usageError(problem);
  const envProblems = provider.checkEnv?.(target.envText, target.envVars) ?? [];
  if (envProblems.length) throw usageError(`${envProblems.join("; ")}. Change ${envProblems.length === 1 ? "it" : "them"} in .env and deploy again.`);
  const required = unsetRequiredVariables(compose, target.envVars, target.update, target.keepExistingValues);
  if (required.refused.length) {
    throw usageError(`docker-compose.yml refuses to start without ${required.refused.join(", ")}: ${provider.label} would fail to start the stack. Set ${required.refused.length === 1 ? "it" : "them"} in .env (or generate the stack again with secrets) and deploy again.`);
  }
  if (required.leftToPlatform.length) {
    const one = required.leftToPlatform.length === 1;
    changes.push(`.env: ${required.leftToPlatform.join(", ")} required by docker-compose.yml but not set here: this update leaves ${one ? "it" : "them"} as on ${provider.label}, so the stack starts only if ${one ? "it is" : "they are"} set there`);
  }

  const result: DeployResult = { success: false, provider: provider.name, steps: [], changes, created: [] };
  const clean = redactor(apiKey);
  const emit = (event: DeployStep) => {
    const safe: DeployStep = event.detail === undefined ? event : { ...event, detail: clean(event.detail) };
    if (safe.status !== "running") result.steps.push(safe);
    try {
      onStep(safe);
    } catch {
      // A broken progress printer must not break the deployment.
    }
  };

  let current: string | undefined;
  // A call the platform asked to slow down: the step under way says so while it waits.
  target.onWait = (seconds, refusal) => {
    if (current) emit({ step: current, status: "running", detail: `${refusal.message}; trying again in ${seconds} s` });
  };
  const steps: StepContext = {
    async run(step, work) {
      // Stopped between steps: none failed (the one before finished, this one never began).
      if (opts.signal?.aborted) {
        current = undefined;
        throw new DeployError(`Interrupted before "${step}": nothing more was sent to ${provider.label}`);
      }
      current = step;
      emit({ step, status: "running" });
      try {
        const { value, detail } = await work();
        emit(detail === undefined ? { step, status: "ok" } : { step, status: "ok", detail });
        return value;
      } catch (e) {
        const detail = (e as { detail?: string })?.detail;
        emit(detail === undefined ? { step, status: "failed" } : { step, status: "failed", detail });
        throw e;
      }
    },
    skip(step, detail) {
      emit({ step, status: "skipped", detail });
    },
    note(fields) {
      if (fields.projectId) result.projectId = fields.projectId;
      if (fields.stackId) result.stackId = result.composeId = fields.stackId;
      // Built on the instance URL, whose path may hold the key (pasted there by mistake).
      if (fields.dashboardUrl) result.dashboardUrl = clean(fields.dashboardUrl);
      if (fields.created) result.created.push(clean(fields.created));
    },
    async creating(what, call) {
      try {
        return await call();
      } catch (e) {
        if (!(e instanceof DeployError && e.notDone)) (result.possiblyCreated ??= []).push(clean(what));
        throw e;
      }
    },
  };

  try {
    await provider.deploy(target, steps);
    result.success = true;
  } catch (e) {
    const err = e as { name?: string; message?: string; status?: number; detail?: string; retryAfterSeconds?: number };
    result.error = clean(err?.name === "DeployError" ? String(err.message) : `Unexpected failure: ${err?.message ?? String(e)}`);
    if (current) result.failedStep = current;
    const hint = err?.name !== "DeployError" || !err.status ? undefined : err.status === 429 ? rateLimitHint(provider.label, err.retryAfterSeconds, result.created.length > 0 || (result.possiblyCreated?.length ?? 0) > 0) : provider.hintFor?.(err.status, err.detail ?? "");
    if (hint) result.hint = hint;
  }
  return result;
}

/**
 * The variables the compose file stops without that the env sent leaves empty or unset: the
 * platform would accept the stack and then fail to start it. On an update a variable the platform
 * may already hold is left to it (in `leftToPlatform`): one .env does not name (both platforms
 * keep variables they alone have), and an empty one when the platform's set values are kept.
 * `compose`: the parsed compose document.
 */
export function unsetRequiredVariables(compose: unknown, envVars: readonly EnvVar[], update: boolean, keepExistingValues: boolean): { refused: string[]; leftToPlatform: string[] } {
  const values = new Map(envVars.map((v) => [v.key, v.value]));
  const refused: string[] = [];
  const leftToPlatform: string[] = [];
  for (const { name, refusesEmpty } of requiredReferences(compose)) {
    const value = values.get(name);
    if (value === undefined) (update ? leftToPlatform : refused).push(`${name} (not in .env)`);
    else if (value === "" && refusesEmpty) (update && keepExistingValues ? leftToPlatform : refused).push(`${name} (empty)`);
  }
  return { refused, leftToPlatform };
}

/** What to do after a platform limited the call rate: wait as long as its Retry-After asked, and
 *  run again, with --update once this run made (or may have made) something there. */
function rateLimitHint(label: string, seconds: number | undefined, made: boolean): string {
  const wait = seconds === undefined ? "a minute" : seconds <= 1 ? "a second" : seconds < 120 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `${label} limits how fast its API may be called: wait ${wait}${seconds === undefined ? "" : " (its Retry-After)"} and run again${made ? " with --update" : ""}.`;
}

/** Addresses no Coolify or Dokploy instance has, which a caller of the relay could use to reach
 *  what the server itself may reach: link-local (the cloud metadata service, 169.254.169.254),
 *  unspecified (0.0.0.0, ::) and multicast. Loopback and private networks stay allowed: an
 *  instance on this machine or the LAN is the common case. */
export function instanceAddressAllowed(address: string): boolean {
  // An IPv6 address that carries an IPv4 one leads where that one does (URLs write it in hex:
  // ::ffff:a9fe:a9fe, ::a9fe:a9fe, 64:ff9b::a9fe:a9fe).
  const lower = address.toLowerCase();
  const mapped = (isIP(lower) === 6 ? embeddedV4(lower) : undefined) ?? lower;
  if (isIP(mapped) === 4) {
    const [a, b] = mapped.split(".").map(Number) as [number, number];
    return !(a === 0 || (a === 169 && b === 254) || (a >= 224 && a <= 239) || mapped === "255.255.255.255" || METADATA_ADDRESSES.has(mapped));
  }
  if (isIP(mapped) === 6) return !(/^fe[89ab]/.test(mapped) || /^ff/.test(mapped) || /^(0*:)*:?0*$/.test(mapped) || METADATA_ADDRESSES.has(canonicalV6(mapped)));
  return true;
}

/** The IPv4 address inside an IPv6 one: IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, but
 *  not :: or ::1), NAT64's well-known prefix (64:ff9b::/96) and 6to4 (2002::/16). */
function embeddedV4(address: string): string | undefined {
  // A dotted tail (::ffff:1.2.3.4) as the two groups it stands for.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const hex = dotted ? address.slice(0, dotted.index) + [((+dotted[1]! << 8) | +dotted[2]!).toString(16), ((+dotted[3]! << 8) | +dotted[4]!).toString(16)].join(":") : address;
  const g = canonicalV6(hex).split(":").map((x) => parseInt(x, 16));
  if (g.length !== 8 || g.some(Number.isNaN)) return undefined;
  const v4 = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6]!, g[7]!);
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!);
  return undefined;
}

/** Cloud metadata services outside the link-local ranges: Alibaba Cloud's, and AWS's over IPv6. */
const METADATA_ADDRESSES = new Set(["100.100.100.200", "fd00:ec2:0:0:0:0:0:254"]);

/** An IPv6 address with `::` written out and leading zeros dropped, to compare with the list. */
function canonicalV6(address: string): string {
  const [head, tail] = address.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return groups.map((g) => g.replace(/^0+(?=.)/, "")).join(":");
}

const refusedAddress = (address: string) =>
  `The instance URL leads to ${address}, a link-local, unspecified or multicast address where no Coolify or Dokploy runs; use the instance's own address`;

/** A URL's host without the brackets of an IPv6 literal. */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/** Refuses when one of the addresses `host` resolved to is one instanceAddressAllowed refuses. */
function refuseResolved(host: string, addresses: readonly { address: string }[]): void {
  const refused = addresses.find((a) => !instanceAddressAllowed(a.address));
  if (refused) throw usageError(refusedAddress(`${refused.address} (${host})`), "url");
}

/** Refuses an instance whose name resolves to an address instanceAddressAllowed refuses. A name
 *  that does not resolve is left to the first call, which reports it as unreachable. */
export async function checkInstanceAddress(baseUrl: string): Promise<void> {
  const host = hostOf(new URL(baseUrl));
  if (isIP(host)) return;
  refuseResolved(host, await lookup(host, { all: true }).catch(() => []));
}

/** A name's addresses (node:dns's lookup with `all`). */
export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

/**
 * fetch for a deploy: a plain-http call to a host name goes to an address just resolved and
 * checked, named literally, with the name in the Host header. fetch would otherwise resolve the
 * name again, and an answer changed in between (DNS rebinding) could aim the API key, and the
 * reply the caller reads back, at a metadata service that checkInstanceAddress refused. HTTPS is
 * left to fetch: no such service answers TLS for the name the certificate must match.
 */
export function pinnedFetch(fetchImpl: FetchLike = (input, init) => fetch(input, init), resolve: Resolve = (host) => lookup(host, { all: true })): FetchLike {
  return async (input, init) => {
    const url = new URL(input);
    const host = hostOf(url);
    if (url.protocol !== "http:" || isIP(host)) return fetchImpl(input, init);
    const addresses = await resolve(host);
    refuseResolved(host, addresses);
    if (addresses.length === 0) throw usageError(refusedAddress(`no address (${host})`), "url");
    const headers = new Headers(init.headers);
    headers.set("host", url.host);
    // Each checked address in turn, as fetch would try them (::1 first where the instance listens
    // on IPv4 only), while the call never left this machine: one that may have reached the
    // platform (a timeout, a dropped connection) is not sent again, or a create could run twice.
    let failure: unknown;
    for (const { address, family } of addresses) {
      const pinned = new URL(url);
      pinned.hostname = family === 6 ? `[${address}]` : address;
      try {
        return await fetchImpl(pinned.toString(), { ...init, headers });
      } catch (e) {
        if (!neverSent(e)) throw e;
        failure = e;
      }
    }
    throw failure;
  };
}

/** Whether calls to this instance URL carry the API key unencrypted over the network: plain
 *  http:// to another machine (Coolify's own dashboard starts at http://<ip>:8000). */
export function sendsKeyInClear(instanceUrl: string): boolean {
  const url = new URL(instanceUrl);
  const host = hostOf(url);
  return url.protocol === "http:" && !(host === "localhost" || host.endsWith(".localhost") || /^127\./.test(host) || host === "::1");
}

/** Accept `https://host`, `https://host/`, and pasted API roots (`…/api`, `…/api/v1`). `apiKey`
 *  is hidden wherever the URL is echoed. */
export function normaliseInstanceUrl(raw: string, apiKey = ""): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    // Said without the input's user part or the key: a pasted `https://user:token@…` or a key
    // pasted into the URL must not be echoed.
    throw usageError(`"${redactor(apiKey)(withoutUserPart(raw))}" is not a URL (expected the address of your instance, e.g. https://paas.example.com)`, "url");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usageError(`The instance URL must start with http:// or https:// (got ${url.protocol})`, "url");
  }
  if (url.username || url.password) throw usageError("The instance URL must not contain credentials; pass the API key instead", "url");
  const literal = hostOf(url);
  if (isIP(literal) && !instanceAddressAllowed(literal)) throw usageError(refusedAddress(literal), "url");
  const path = url.pathname.replace(/\/+$/, "").replace(/\/api(\/v1)?$/, "");
  return `${url.origin}${path}`;
}
