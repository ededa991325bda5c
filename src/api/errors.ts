// One place that turns any thrown error into the SPEC error body and status.
import { ValidationError } from "elysia";
import { StackgenError } from "../errors.ts";
import { toFieldIssues } from "../schema/issues.ts";
import { VALIDATE_MESSAGE } from "../core/check-input.ts";
import { GENERATE_MESSAGE } from "../core/generate/index.ts";
import { DEPLOY_MESSAGE } from "./routes/deploy.ts";

export interface ErrorReply {
  status: number;
  body: { error: { code: string; message: string; details?: { field: string; message: string }[] } };
}

/** The route a path names: the router answers `/v1/generate/` as `/v1/generate`, so its errors
 *  must read the same. */
const routeOf = (path: string) => path.replace(/\/+$/, "");

/** The body of an error answer at `path`: the SPEC shape, or the flat one /v1/skills keeps (SPEC §7).
 *  That route's one 400 code is INVALID_SERVICE_ID: its one parameter is the service ids, so a
 *  repeated or malformed `services` is answered with it too. */
export function errorBodyFor(path: string, error: ErrorReply["body"]["error"]) {
  if (routeOf(path) !== "/v1/skills") return { error };
  return { error: error.message, code: error.code === "VALIDATION_ERROR" ? "INVALID_SERVICE_ID" : error.code };
}

const MESSAGES: Record<string, string> = { "/v1/generate": GENERATE_MESSAGE, "/v1/deploy": DEPLOY_MESSAGE };

/** 405 for a route that exists with other methods (the caller also gets an Allow header). */
export const methodNotAllowed = (method: string, path: string, allowed: string[]): ErrorReply => ({
  status: 405,
  body: { error: { code: "METHOD_NOT_ALLOWED", message: `${path} does not answer ${method}; it answers ${allowed.join(", ")}` } },
});

export function toErrorReply(code: string | number, error: unknown, path: string): ErrorReply {
  const reply = (status: number, c: string, message: string, details?: { field: string; message: string }[]) =>
    ({ status, body: { error: { code: c, message, ...(details ? { details } : {}) } } });
  // Elysia wraps what a parse hook throws (our body reader's 400s and 413s) in a ParseError.
  const own = error instanceof StackgenError ? error : (error as { cause?: unknown })?.cause;
  // The CLI's usage errors (shared checks, e.g. a deploy target's name) are the API's bad input.
  if (own instanceof StackgenError && own.code === "USAGE_ERROR") {
    return reply(400, "VALIDATION_ERROR", own.message, own.details ?? [{ field: "body", message: own.message }]);
  }
  if (own instanceof StackgenError) return reply(own.status, own.code, own.message, own.details);
  if (code === "VALIDATION" && error instanceof ValidationError) {
    const root = error.type === "query" ? "query" : error.type === "params" ? "params" : "body";
    const details = toFieldIssues(error.all as never, root);
    return reply(400, "VALIDATION_ERROR", MESSAGES[routeOf(path)] ?? (root === "query" ? "Invalid query parameters" : VALIDATE_MESSAGE), details);
  }
  if (code === "PARSE") return reply(400, "VALIDATION_ERROR", "Malformed request body", [{ field: "body", message: "Expected a JSON document" }]);
  if (code === "NOT_FOUND") return reply(404, "NOT_FOUND", `No route for ${path}`);
  if (code === "INVALID_COOKIE_SIGNATURE") return reply(400, "VALIDATION_ERROR", "Invalid cookie");
  const status = (error as { status?: number })?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return reply(status, status === 413 ? "PAYLOAD_TOO_LARGE" : status === 405 ? "METHOD_NOT_ALLOWED" : "BAD_REQUEST", (error as Error).message || "Bad request");
  }
  if (routeOf(path).endsWith("/generate")) return reply(500, "GENERATION_ERROR", "Stack generation failed");
  return reply(500, "INTERNAL_ERROR", "Unexpected failure");
}
