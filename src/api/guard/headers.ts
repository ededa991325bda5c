// Headers of pages (the UI, /v1/docs). Every answer also carries nosniff and frame denial (set by
// the guard); the CSP allows only same-origin scripts and styles (plus inline styles, which
// Swagger UI sets) and the referrer policy keeps URLs from leaking to other sites.
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "content-security-policy": CONTENT_SECURITY_POLICY,
};

/** Adds the security headers to a response built outside the app (the UI listener's page). */
export function withSecurityHeaders(response: Response): Response {
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) headers.set(name, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
