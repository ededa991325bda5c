// POST /v1/validate and POST /v1/generate (plain JSON answer) are what clients call in loops, so
// the server answers them here, without Elysia's router and hooks, which cost more than the work
// itself. Same body reader, same core calls, same error mapping as their Elysia routes, which
// still document them and serve everything else (query strings, ZIP, complete exports).
// test/api/hot-routes.test.ts holds both paths to the same answers.
import type { Catalog } from "../catalog/index.ts";
import { validateSelection, VALIDATE_MESSAGE } from "../core/validate.ts";
import { GENERATE_MESSAGE, requestInput } from "../core/generate/index.ts";
import { errorBodyFor, toErrorReply } from "./errors.ts";
import { readJsonObject } from "./json-body.ts";
import { GENERATE_JSON_TYPE, generateJson, wantsZip } from "./routes/generate.ts";

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
  type Route = { message: string; type: string; run: (body: Record<string, unknown>) => string; unwrap?: typeof requestInput };
  const answer = async (request: Request, path: string, { message, type, run, unwrap }: Route): Promise<Reply> => {
    try {
      const body = await readJsonObject(request, message, maxBodyBytes, unwrap);
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
      return answer(request, path, { message: VALIDATE_MESSAGE, type: JSON_TYPE, run: (body) => JSON.stringify(validateSelection(body, catalog)) });
    }
    if (path === "/v1/generate" && !wantsZip(undefined, request.headers.get("accept"))) {
      // A whole `complete` export posted back is read through its `input`, as on the Elysia route.
      return answer(request, path, { message: GENERATE_MESSAGE, type: GENERATE_JSON_TYPE, run: (body) => generateJson(body, catalog), unwrap: requestInput });
    }
    return undefined;
  };
}
