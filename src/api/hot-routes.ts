// POST /v1/validate and POST /v1/generate (plain JSON answer) are what clients call in loops, so
// the server answers them here, without Elysia's router and hooks, which cost more than the work
// itself. Same body reader, same core calls, same error mapping as their Elysia routes, which
// still document them and serve everything else (query strings, ZIP, complete exports).
// test/api/hot-routes.test.ts holds both paths to the same answers.
import type { Catalog } from "../catalog/index.ts";
import { validateSelection } from "../core/validate.ts";
import { GENERATE_MESSAGE, requestInput } from "../core/generate/index.ts";
import { errorBodyFor, toErrorReply } from "./errors.ts";
import { readJsonObject } from "./json-body.ts";
import { GENERATE_JSON_TYPE, generateJson, wantsZip } from "./routes/generate.ts";
import { VALIDATE_MESSAGE } from "./routes/validate.ts";

/** An answer the guard turns into a Response (with its headers in one go). */
export interface Reply {
  status: number;
  type: string;
  body: string;
}

/** What Elysia sends for a returned object, and what the app's error handler sets. */
const JSON_TYPE = "application/json;charset=utf-8";
const ERROR_TYPE = "application/json";

/** The hot route for this request, or undefined to leave it to the app. */
export type HotRoutes = (request: Request, path: string) => Promise<Reply> | undefined;

export function hotRoutes(catalog: Catalog, maxBodyBytes: number): HotRoutes {
  const answer = async (request: Request, path: string, message: string, run: (body: Record<string, unknown>) => string, type: string): Promise<Reply> => {
    try {
      const body = await readJsonObject(request, message, maxBodyBytes, path === "/v1/generate" ? requestInput : undefined);
      return { status: 200, type, body: run(body) };
    } catch (error) {
      const reply = toErrorReply("UNKNOWN", error, path);
      return { status: reply.status, type: ERROR_TYPE, body: JSON.stringify(errorBodyFor(path, reply.body.error)) };
    }
  };
  return (request, path) => {
    // A query string (format=zip|complete, or anything Elysia should judge) goes to the app.
    if (request.method !== "POST" || request.url.includes("?")) return undefined;
    if (path === "/v1/validate") {
      return answer(request, path, VALIDATE_MESSAGE, (body) => JSON.stringify(validateSelection(body, catalog)), JSON_TYPE);
    }
    if (path === "/v1/generate" && !wantsZip(undefined, request.headers.get("accept"))) {
      return answer(request, path, GENERATE_MESSAGE, (body) => generateJson(body, catalog), GENERATE_JSON_TYPE);
    }
    return undefined;
  };
}
