// POST /v1/generate: json (default), complete (round-trips through its `input`) or zip.
import { Elysia } from "elysia";
import { ACCEPTS_EXPORT } from "../docs/openapi.ts";
import type { Catalog } from "../../catalog/index.ts";
import { COMPLETE_FORMAT_VERSION } from "../../schema/versions.ts";
import { GenerateRequest, GenerateQuery, GenerateJsonResponse, CompleteDocument, ErrorBody, routeSchema } from "../../schema/api.ts";
import { generateBundle, GENERATE_MESSAGE, type Generated } from "../../core/generate/index.ts";
import { inputWithConfigChecked } from "../config-version.ts";
import { singleValued } from "../single-query.ts";
import { bodySent, documentSent, jsonObjectBody } from "../json-body.ts";
import { Type } from "@sinclair/typebox";
import { asciiJson } from "../../core/ascii-json.ts";

export const GENERATE_JSON_TYPE = "application/json; charset=utf-8";

/** Whether a generate request asks for the ZIP archive: `format=zip`, or without a format an
 *  `Accept` that names application/zip and ranks it at least as high as JSON (RFC 9110 quality
 *  values; `q=0` means "not acceptable", and a wildcard alone never asks for the archive). */
export function wantsZip(format: string | undefined, accept: string | null | undefined): boolean {
  if (format !== undefined) return format === "zip";
  if (!accept || !/zip/i.test(accept)) return false;
  let zip = 0;
  // JSON's quality comes from its most specific range: application/json, then application/*, then */*.
  let json = 0;
  let jsonSpecificity = -1;
  for (const entry of accept.split(",")) {
    const [range, ...params] = entry.split(";");
    const type = range.trim().toLowerCase();
    const qParam = params.map((p) => p.split("=")).find(([name]) => name.trim().toLowerCase() === "q");
    const parsed = qParam ? Number(qParam[1]?.trim()) : 1;
    const q = Number.isFinite(parsed) && parsed >= 0 && parsed <= 1 ? parsed : 1;
    if (type === "application/zip") zip = Math.max(zip, q);
    const specificity = ["*/*", "application/*", "application/json"].indexOf(type);
    if (specificity > jsonSpecificity) [json, jsonSpecificity] = [q, specificity];
  }
  return zip > 0 && zip >= json;
}

/** The JSON answer of a generation: `{files, metadata}`, or the complete export document. */
/** `sent`: the whole document when `body` is the input of a complete export posted back. */
export function generateJson(body: Record<string, unknown>, catalog: Catalog, complete = false, sent = body): string {
  return bundleJson(generateBundle(sent, catalog), complete ? `{"formatVersion":"${COMPLETE_FORMAT_VERSION}","input":${JSON.stringify(body)},` : "{");
}

/** `{files, metadata}` (after `head`), serialized by hand around the cached JSON of the files:
 *  the same document as JSON.stringify at a fraction of the cost. */
export function bundleJson({ metadata, filesJson }: Generated, head = "{"): string {
  return `${head}"files":${filesJson()}${metadataTail(metadata)}`;
}

/** The same document as bundleJson, as a Blob of the cached bytes and this answer's secrets:
 *  no 40 KB string is made per answer (the server's hot route). */
export function bundleBlob({ metadata, filesJsonPieces }: Generated): Blob {
  return new Blob(['{"files":', ...filesJsonPieces(), metadataTail(metadata)]);
}

/** What both follow the files with: the metadata, and the document's end. */
const metadataTail = (metadata: Generated["metadata"]) => `,"metadata":${asciiJson(JSON.stringify(metadata))}}`;

export const generateRoutes = (catalog: Catalog, maxBodyBytes: number) =>
  new Elysia({ name: "generate-routes" }).post("/generate", async ({ body, query, headers, request }) => {
    const sent = documentSent(request) ?? body;
    if (wantsZip(query.format, headers.accept)) {
      const { input, files } = generateBundle(sent, catalog);
      // fflate builds its tables when loaded: only pay for it when a ZIP is asked for.
      const { zipBundle } = await import("../../core/bundle.ts");
      return new Response(zipBundle(input.projectName, files) as Uint8Array<ArrayBuffer>, {
        headers: {
          "content-type": "application/zip",
          "content-disposition": `attachment; filename="${input.projectName}.zip"`,
        },
      });
    }
    // A complete document's `input` is the body as sent (SPEC §2.7), unknown fields included.
    return new Response(generateJson(bodySent(request) ?? body, catalog, query.format === "complete", sent), { headers: { "content-type": GENERATE_JSON_TYPE } });
  }, {
    // A whole `complete` export posted back is read through its `input`.
    parse: jsonObjectBody(GENERATE_MESSAGE, maxBodyBytes, (doc) => inputWithConfigChecked(doc, GenerateRequest, GENERATE_MESSAGE, catalog)),
    body: routeSchema(GenerateRequest),
    transform: singleValued(["format"], () => GENERATE_MESSAGE),
    query: routeSchema(GenerateQuery),
    detail: {
      [ACCEPTS_EXPORT]: true,
      summary: "Generate a stack bundle",
      description: "Returns the bundle's files as JSON, as a complete document (for export/import) or as a ZIP archive (`format=zip` or `Accept: application/zip`). Something must be selected (a service, a skill pack or a preset), else 400 VALIDATION_ERROR. A conflicting selection is 409 CONFLICT_ERROR.",
      tags: ["stacks"],
      // Declared here rather than as a response schema: Elysia would strip one of the two JSON shapes.
      responses: {
        200: {
          description: "The bundle: files + metadata (json), the complete export document (complete) or a ZIP archive (zip). The shape follows `format` (a complete document also fits the json shape).",
          headers: {
            "Content-Disposition": { description: "ZIP only: `attachment; filename=\"<projectName>.zip\"`", schema: { type: "string" } },
            "Cache-Control": { description: "`no-store`: every answer carries fresh secrets", schema: { type: "string" } },
          },
          content: {
            "application/json": { schema: Type.Union([GenerateJsonResponse, CompleteDocument]) },
            "application/zip": { schema: { type: "string", format: "binary" } },
          },
        },
        400: { description: "VALIDATION_ERROR naming each offending field", content: { "application/json": { schema: ErrorBody } } },
        409: { description: "CONFLICT_ERROR: the selection has conflicts", content: { "application/json": { schema: ErrorBody } } },
        500: { description: "GENERATION_ERROR", content: { "application/json": { schema: ErrorBody } } },
      } as never,
    },
  });

export { CompleteDocument };
