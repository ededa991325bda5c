// Environment -> typed guard configuration (CONTRACT §1, §3). Read once at start-up; every problem
// is reported at once, and no message ever repeats an API key.
import { usageError } from "../../errors.ts";

export type LogLevel = "silent" | "error" | "warn" | "info" | "debug";
export const LOG_LEVELS: readonly LogLevel[] = ["silent", "error", "warn", "info", "debug"];

export interface BucketLimits {
  /** Requests per window on every route except `POST /v1/generate`. */
  standard: number;
  /** Requests per window on `POST /v1/generate`. */
  generate: number;
}

export interface ApiKeyEntry {
  key: string;
  /** Limits set by the key's own entry (`key:standard:generate`); otherwise the authenticated defaults. */
  limits?: BucketLimits;
}

export interface GuardConfig {
  apiKeys: ApiKeyEntry[];
  /** `"*"` allows every origin; otherwise the exact origins allowed. */
  corsOrigins: "*" | string[];
  windowMs: number;
  anonymousLimits: BucketLimits;
  authenticatedLimits: BucketLimits;
  trustProxy: boolean;
  redisUrl?: string;
  logLevel: LogLevel;
  /** Largest accepted request body (CONTRACT §3: 1 MiB). */
  maxBodyBytes: number;
  /** How often a lost Redis is retried in the background. */
  redisRetryMs: number;
  /** A Redis command slower than this counts as a failure (the request falls back to memory). */
  redisTimeoutMs: number;
}

export const MAX_BODY_BYTES = 1024 * 1024;

export const DEFAULT_GUARD_CONFIG: GuardConfig = {
  apiKeys: [],
  corsOrigins: "*",
  windowMs: 15 * 60 * 1000,
  anonymousLimits: { standard: 100, generate: 10 },
  authenticatedLimits: { standard: 1000, generate: 50 },
  trustProxy: false,
  logLevel: "info",
  maxBodyBytes: MAX_BODY_BYTES,
  redisRetryMs: 2000,
  redisTimeoutMs: 500,
};

/** Defaults with some fields replaced (tests, embedding). */
export function guardConfig(overrides: Partial<GuardConfig> = {}): GuardConfig {
  return { ...DEFAULT_GUARD_CONFIG, ...overrides };
}

type Env = Record<string, string | undefined>;

const present = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

function positiveInt(raw: string): number | undefined {
  const text = raw.trim();
  if (!/^\d{1,15}$/.test(text)) return undefined;
  const n = Number(text);
  return n >= 1 ? n : undefined;
}

function limitFromEnv(env: Env, name: string, fallback: number, problems: string[]): number {
  const raw = env[name];
  if (!present(raw)) return fallback;
  const n = positiveInt(raw);
  if (n === undefined) problems.push(`${name} must be a positive integer, got "${raw.slice(0, 40)}"`);
  return n ?? fallback;
}

/** `key` or `key:standardLimit:generateLimit`, comma separated. Problems name the entry by position only. */
export function parseApiKeys(raw: string | undefined, problems: string[]): ApiKeyEntry[] {
  if (!present(raw)) return [];
  const entries: ApiKeyEntry[] = [];
  const seen = new Set<string>();
  raw.split(",").forEach((item, index) => {
    const where = `API_KEYS entry ${index + 1}`;
    const text = item.trim();
    if (text === "") return problems.push(`${where} is empty`);
    const parts = text.split(":");
    const key = parts[0];
    if (parts.length !== 1 && parts.length !== 3) {
      return problems.push(`${where} must be "key" or "key:standardLimit:generateLimit" (keys cannot contain ":")`);
    }
    if (key === "" || /\s/.test(key)) return problems.push(`${where} has an empty key or a key with whitespace`);
    if (seen.has(key)) return problems.push(`${where} repeats an earlier key`);
    seen.add(key);
    if (parts.length === 1) return entries.push({ key });
    const standard = positiveInt(parts[1]);
    const generate = positiveInt(parts[2]);
    if (standard === undefined || generate === undefined) {
      return problems.push(`${where}: standardLimit and generateLimit must be positive integers`);
    }
    entries.push({ key, limits: { standard, generate } });
  });
  return entries;
}

/** `*` or a comma list of origins (`scheme://host[:port]`), compared exactly after normalising. */
export function parseCorsOrigins(raw: string | undefined, problems: string[]): "*" | string[] {
  if (!present(raw) || raw.trim() === "*") return "*";
  const origins: string[] = [];
  for (const item of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (item === "*") {
      problems.push(`CORS_ORIGINS: "*" cannot be combined with other origins`);
      continue;
    }
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    const originOnly = url && /^https?:$/.test(url.protocol) && url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
    if (!url || !originOnly) {
      problems.push(`CORS_ORIGINS: "${item.slice(0, 100)}" is not an origin like https://app.example.com`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins.length ? origins : "*";
}

function parseBoolean(name: string, raw: string | undefined, problems: string[]): boolean {
  if (!present(raw)) return false;
  const text = raw.trim().toLowerCase();
  if (text === "true") return true;
  if (text === "false") return false;
  problems.push(`${name} must be "true" or "false", got "${raw.slice(0, 40)}"`);
  return false;
}

const REDIS_PROTOCOLS = new Set(["redis:", "rediss:", "valkey:", "valkeys:", "redis+unix:", "redis+tls:", "valkey+unix:"]);

function parseRedisUrl(raw: string | undefined, problems: string[]): string | undefined {
  if (!present(raw)) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    // reported below
  }
  // The URL may hold a password: name the variable, never echo it.
  if (!url || !REDIS_PROTOCOLS.has(url.protocol)) {
    problems.push(`REDIS_URL must be a redis:// or rediss:// URL`);
    return undefined;
  }
  // Over TCP: a host, then at most a database number. The client would refuse another path only
  // once the server starts (an unexpected failure, not this list of problems).
  if (!url.protocol.endsWith("+unix:") && (url.hostname === "" || !/^\/?\d*$/.test(url.pathname))) {
    problems.push(`REDIS_URL must name a host and, after it, at most a database number (redis://host:6379/0)`);
    return undefined;
  }
  return raw.trim();
}

function parseLogLevel(raw: string | undefined, problems: string[]): LogLevel {
  if (!present(raw)) return "info";
  const level = raw.trim().toLowerCase() as LogLevel;
  if (LOG_LEVELS.includes(level)) return level;
  problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${raw.slice(0, 40)}"`);
  return "info";
}

/** Reads the guard's environment; throws a usage error (exit 2) listing every problem. */
export function readGuardConfig(env: Env): GuardConfig {
  const problems: string[] = [];
  const d = DEFAULT_GUARD_CONFIG;
  const config: GuardConfig = {
    ...d,
    apiKeys: parseApiKeys(env.API_KEYS, problems),
    corsOrigins: parseCorsOrigins(env.CORS_ORIGINS, problems),
    windowMs: limitFromEnv(env, "RATE_LIMIT_WINDOW_MS", d.windowMs, problems),
    anonymousLimits: {
      standard: limitFromEnv(env, "RATE_LIMIT_STANDARD", d.anonymousLimits.standard, problems),
      generate: limitFromEnv(env, "RATE_LIMIT_GENERATE", d.anonymousLimits.generate, problems),
    },
    authenticatedLimits: {
      standard: limitFromEnv(env, "RATE_LIMIT_AUTH_STANDARD", d.authenticatedLimits.standard, problems),
      generate: limitFromEnv(env, "RATE_LIMIT_AUTH_GENERATE", d.authenticatedLimits.generate, problems),
    },
    trustProxy: parseBoolean("TRUST_PROXY", env.TRUST_PROXY, problems),
    redisUrl: parseRedisUrl(env.REDIS_URL, problems),
    logLevel: parseLogLevel(env.LOG_LEVEL, problems),
  };
  if (problems.length) throw usageError(`Invalid server configuration: ${problems.join("; ")}`);
  return config;
}
