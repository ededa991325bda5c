// Request bodies are JSON objects. Elysia would quietly coerce a string, an array or a
// text/plain body into `{}`, so routes parse with this instead: anything else is a 400.
// The size limit is checked here too, where the body is read: a declared Content-Length was
// already checked by the guard, but a chunked body only shows its size as it arrives, so it is
// read chunk by chunk and refused as soon as it passes the limit.
import { StackgenError, validationError } from "../errors.ts";
import { jsonKind } from "../schema/json-kind.ts";
import { isCompleteExport } from "../core/migrate.ts";

const JSON_TYPE = /^application\/(.+\+)?json\b/i;

export const tooLarge = (maxBytes: number) =>
  new StackgenError("PAYLOAD_TOO_LARGE", `Request body is larger than ${maxBytes} bytes.`, 413);

type Unwrap = (doc: Record<string, unknown>) => Record<string, unknown>;

/** The body of `request` as a JSON object, or a VALIDATION_ERROR (400) / PAYLOAD_TOO_LARGE (413). */
export async function readJsonObject(request: Request, message: string, maxBytes: number, unwrap?: Unwrap, jsonTypeOnly = false): Promise<Record<string, unknown>> {
  return parseJsonObject(await readJsonText(request, message, maxBytes, jsonTypeOnly), message, unwrap);
}

/**
 * The text of a JSON body, checked for its size but not parsed. The body is read as JSON whatever
 * Content-Type says (fetch sends a string as text/plain, curl -d as a form): the reply to a body
 * that is not JSON says so. With `jsonTypeOnly` (the deploy relay, which acts on the caller's
 * behalf) only application/json is taken: a browser sends that type cross-origin only after a
 * CORS preflight, so a web page cannot make a visitor's browser post a deploy to a local stackgen.
 */
export async function readJsonText(request: Request, message: string, maxBytes: number, jsonTypeOnly = false): Promise<string> {
  // A compressed body would be read as bytes of JSON: "Malformed JSON" for gzip, or taken as it
  // is for an encoding named but not applied. Neither is what the sender meant.
  const encoding = request.headers.get("content-encoding");
  if (encoding !== null && encoding.trim().toLowerCase() !== "identity") {
    throw new StackgenError("UNSUPPORTED_MEDIA_TYPE", `Content-Encoding ${encoding.trim().slice(0, 64) || "(empty)"} is not supported: send the JSON body uncompressed.`, 415);
  }
  const type = request.headers.get("content-type") ?? "";
  if (jsonTypeOnly && !JSON_TYPE.test(type)) {
    throw validationError(message, [{ field: "body", message: `Expected Content-Type application/json, received ${type.split(";")[0] || "none"}` }]);
  }
  // A declared size was checked by the guard; a body without one (chunked) is read only up to
  // the limit, whatever the sender keeps sending.
  let text: string;
  try {
    text = request.headers.has("content-length") ? await request.text() : await readUpTo(request, maxBytes);
  } catch (error) {
    // The sender's fault (a chunked encoding Bun cannot read, a connection closed before the
    // declared length arrived: Bun aborts the body's stream): a 400 in the log, not an internal
    // error. Anything else stays what it is.
    const { name, code } = (error ?? {}) as { name?: string; code?: string };
    if (name !== "AbortError" && code !== "ECONNRESET") throw error;
    throw validationError(message, [{ field: "body", message: "The body could not be read to its end: the connection closed early or its chunked encoding is broken" }]);
  }
  if (text.length > maxBytes / 3 && Buffer.byteLength(text) > maxBytes) throw tooLarge(maxBytes);
  return text;
}

/** The body as UTF-8 text, or PAYLOAD_TOO_LARGE as soon as it passes `maxBytes`. */
async function readUpTo(request: Request, maxBytes: number): Promise<string> {
  if (!request.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(chunk.value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

/** `text` as a JSON object (optionally unwrapped), or a VALIDATION_ERROR naming what it is instead. */
export function parseJsonObject(sent: string, message: string, unwrap?: Unwrap): Record<string, unknown> {
  // A leading byte order mark is no part of the document (RFC 8259 §8.1 lets a reader ignore
  // it), and JSON.parse refuses it: the UTF-8 decoder drops one, one written twice (an editor
  // that adds its own) was left and answered "Malformed JSON".
  const text = sent.charCodeAt(0) === 0xfeff ? sent.replace(/^\ufeff+/, "") : sent;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw validationError(message, [{ field: "body", message: text.trim() ? "Malformed JSON" : "Required" }]);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationError(message, [{ field: "body", message: `Expected object, received ${jsonKind(value)}` }]);
  }
  // JSON.parse takes any depth; what later walks the document recursively (a complete export
  // echoes its input with JSON.stringify) runs out of stack on thousands of levels.
  if (text.length > 2 * MAX_DEPTH && depthOf(value) > MAX_DEPTH) {
    throw validationError(message, [{ field: "body", message: `Nested deeper than ${MAX_DEPTH} levels` }]);
  }
  return unwrap ? unwrap(value as Record<string, unknown>) : (value as Record<string, unknown>);
}

/** No request document needs more than a handful of levels. */
export const MAX_DEPTH = 64;

/** How deep objects and arrays nest in `value`, counted without recursion (and no further than
 *  one level past MAX_DEPTH). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    deepest = Math.max(deepest, depth);
    if (depth > MAX_DEPTH) return depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** What an Elysia `parse` hook read, by request: the whole document, the input in it as sent
 *  (the document itself, or a complete export's `input`) and the part it checks (that input,
 *  migrated to the current config version). */
const bodiesRead = new WeakMap<Request, { doc: Record<string, unknown>; sent: Record<string, unknown>; part: Record<string, unknown> }>();

/** The whole document a request sent when its hook checked only its `input` (a complete export
 *  posted back). Core calls given it read the same part and name fields as sent
 *  (`input.services.0`); Elysia hands routes a copy of the part, so the part alone cannot tell
 *  where it came from. A migrated body is not such a document: its fields are its own. */
export const documentSent = (request: Request): Record<string, unknown> | undefined => {
  const read = bodiesRead.get(request);
  return read && read.sent !== read.doc ? read.doc : undefined;
};

/** The checked part as the client sent it, unknown fields included (Elysia hands routes a copy
 *  without them) and not migrated (SPEC §2.7: a complete document echoes the original body). */
export const bodySent = (request: Request): Record<string, unknown> | undefined => bodiesRead.get(request)?.sent;

/** An Elysia `parse` hook reading the body with `readJsonObject`. */
export const jsonObjectBody = (message: string, maxBytes: number, unwrap?: Unwrap, jsonTypeOnly = false) => async ({ request }: { request: Request }) => {
  const doc = await readJsonObject(request, message, maxBytes, undefined, jsonTypeOnly);
  const part = unwrap ? unwrap(doc) : doc;
  // A part other than the document is an export's input, or the document migrated.
  const sent = part !== doc && isCompleteExport(doc) ? (doc.input as Record<string, unknown>) : doc;
  bodiesRead.set(request, { doc, sent, part });
  return part;
};
