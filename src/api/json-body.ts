// Request bodies are JSON objects. Elysia would quietly coerce a string, an array or a
// text/plain body into `{}`, so routes parse with this instead: anything else is a 400.
import { validationError } from "../errors.ts";

const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

export const jsonObjectBody = (message: string, unwrap: (doc: Record<string, unknown>) => Record<string, unknown> = (d) => d) => async ({ request }: { request: Request }) => {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(type)) {
    throw validationError(message, [{ field: "body", message: `Expected Content-Type application/json, received ${type.split(";")[0] || "none"}` }]);
  }
  const text = await request.text();
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw validationError(message, [{ field: "body", message: text.trim() ? "Malformed JSON" : "Required" }]);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationError(message, [{ field: "body", message: `Expected object, received ${kindOf(value)}` }]);
  }
  return unwrap(value as Record<string, unknown>);
};
