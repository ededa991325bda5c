// CORS (SPEC §4 rule 2, CONTRACT §3): every origin by default; with CORS_ORIGINS only the listed
// ones, echoed back with `Vary: Origin` so caches keep answers for different origins apart.
export const ALLOWED_METHODS = "GET, HEAD, POST, OPTIONS";
export const ALLOWED_HEADERS = "Content-Type, X-API-Key, X-Request-Id, Accept";
/** Headers a browser script may read: the limiter's, the request id and the ZIP file name. */
export const EXPOSED_HEADERS = "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Request-Id, Content-Disposition";
const PREFLIGHT_MAX_AGE_S = "600";

/** Adds the CORS headers of an answer to `origin` to `headers`. */
export function addCorsHeaders(headers: Record<string, string>, allowed: "*" | readonly string[], origin: string | null): void {
  if (allowed === "*") {
    headers["access-control-allow-origin"] = "*";
    headers["access-control-expose-headers"] = EXPOSED_HEADERS;
    return;
  }
  headers.vary = "Origin";
  if (origin !== null && allowed.includes(origin)) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-expose-headers"] = EXPOSED_HEADERS;
  }
}

/** Extra headers of a preflight answer (204); `allow`: the methods the path answers, when known
 *  (the same list a 405 from that path names). */
export function preflightHeaders(allow: readonly string[]): Record<string, string> {
  return {
    "access-control-allow-methods": ALLOWED_METHODS,
    "access-control-allow-headers": ALLOWED_HEADERS,
    "access-control-max-age": PREFLIGHT_MAX_AGE_S,
    ...(allow.length > 0 ? { allow: [...allow, "OPTIONS"].join(", ") } : {}),
  };
}
