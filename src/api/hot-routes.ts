// POST /v1/validate and POST /v1/generate (plain JSON answer) are what clients call in loops, so
// the server answers them here, without Elysia's router and hooks, which cost more than the work
// itself. Same body reader, same core calls, same error mapping as their Elysia routes, which
// still document them and serve everything else (query strings, ZIP, complete exports).
// test/api/hot-routes.test.ts holds both paths to the same answers.
import type { Catalog } from "../catalog/index.ts";
import { validateSelection, VALIDATE_MESSAGE } from "../core/validate.ts";
import { finishGeneration, GENERATE_MESSAGE, prepareGeneration, type PreparedGeneration } from "../core/generate/index.ts";
import { errorBodyFor, toErrorReply } from "./errors.ts";
import { catalogMemo } from "../core/memo.ts";
import { parseJsonObject, readJsonText } from "./json-body.ts";
import { inputWithConfigChecked } from "./config-version.ts";
import { GenerateRequest, ValidateRequest } from "../schema/api.ts";
import type { TSchema } from "@sinclair/typebox";
import { bundleBlob, GENERATE_JSON_TYPE, wantsZip } from "./routes/generate.ts";

/** An answer the guard turns into a Response (with its headers in one go). */
export interface Reply {
  status: number;
  type: string;
  /** A Blob for a generation (see bundleBlob). */
  body: string | Blob;
}

/** What Elysia sends for a returned object, and what the app's error handler sets. */
const JSON_TYPE = "application/json;charset=utf-8";
const ERROR_TYPE = "application/json";

/** The hot route for this request, or undefined to leave it to the app. */
export type HotRoutes = (request: Request, path: string) => Promise<Reply> | undefined;

// Validation answers and prepared generations by body text: both are pure functions of it, and
// clients (the UI above all) send the same selection again and again. Checking and parsing a
// body cost a server more than the work itself. Errors are not kept; a generation still gets
// fresh secrets on every request.
const recentValidations = catalogMemo<string>(64);
const recentGenerations = catalogMemo<PreparedGeneration>(32);
/** Longer bodies are handled every time rather than kept as keys. */
const MAX_MEMO_BODY_CHARS = 4096;
const remembered = <T>(memo: (catalog: Catalog, key: string, make: () => T) => T, catalog: Catalog, text: string, make: () => T): T =>
  text.length > MAX_MEMO_BODY_CHARS ? make() : memo(catalog, text, make);

export function hotRoutes(catalog: Catalog, maxBodyBytes: number): HotRoutes {
  type Route = { message: string; type: string; run: (text: string) => string | Blob };
  // The body as the core reads it, once its config version passed the checks the Elysia routes
  // make first (see config-version.ts).
  const configChecked = (doc: Record<string, unknown>, schema: TSchema, message: string) => (inputWithConfigChecked(doc, schema, message, catalog), doc);
  const answer = async (request: Request, path: string, { message, type, run }: Route): Promise<Reply> => {
    try {
      return { status: 200, type, body: run(await readJsonText(request, message, maxBodyBytes)) };
    } catch (error) {
      const reply = toErrorReply("UNKNOWN", error, path);
      return { status: reply.status, type: ERROR_TYPE, body: JSON.stringify(errorBodyFor(path, reply.body.error)) };
    }
  };
  const validateRoute: Route = {
    message: VALIDATE_MESSAGE,
    type: JSON_TYPE,
    run: (text) => remembered(recentValidations, catalog, text, () => JSON.stringify(validateSelection(configChecked(parseJsonObject(text, VALIDATE_MESSAGE), ValidateRequest, VALIDATE_MESSAGE), catalog))),
  };
  const generateRoute: Route = {
    message: GENERATE_MESSAGE,
    type: GENERATE_JSON_TYPE,
    // A whole `complete` export posted back is read through its `input` (by prepareGeneration),
    // as on the Elysia route.
    run: (text) => bundleBlob(finishGeneration(remembered(recentGenerations, catalog, text, () => prepareGeneration(configChecked(parseJsonObject(text, GENERATE_MESSAGE), GenerateRequest, GENERATE_MESSAGE), catalog)))),
  };
  return (request, path) => {
    // A query string (format=zip|complete, or anything Elysia should judge) goes to the app.
    if (request.method !== "POST" || request.url.includes("?")) return undefined;
    if (path === "/v1/validate") return answer(request, path, validateRoute);
    if (path === "/v1/generate" && !wantsZip(undefined, request.headers.get("accept"))) return answer(request, path, generateRoute);
    return undefined;
  };
}
