import { Elysia } from "elysia";
import { ACCEPTS_EXPORT } from "../docs/openapi.ts";
import type { Catalog } from "../../catalog/index.ts";
import { routeSchema, ValidateRequest, ValidateResponse, ErrorBody } from "../../schema/api.ts";
import { validateSelection, VALIDATE_MESSAGE } from "../../core/validate.ts";
import { documentSent, jsonObjectBody } from "../json-body.ts";
import { inputWithConfigChecked } from "../config-version.ts";

export const validateRoutes = (catalog: Catalog, maxBodyBytes: number) =>
  new Elysia({ name: "validate-routes" }).post("/validate", ({ body, request }) => validateSelection(documentSent(request) ?? body, catalog), {
    // A whole `complete` export is validated through its `input`, as generate reads it.
    parse: jsonObjectBody(VALIDATE_MESSAGE, maxBodyBytes, (doc) => inputWithConfigChecked(doc, ValidateRequest, VALIDATE_MESSAGE, catalog)),
    body: routeSchema(ValidateRequest),
    detail: {
      [ACCEPTS_EXPORT]: true,
      summary: "Validate a selection",
      description: "Resolves dependencies, detects conflicts and port clashes, estimates memory. Conflicts still answer 200 with valid: false.",
      tags: ["stacks"],
      // Documented here rather than as a response schema, which Elysia would re-check on every answer.
      responses: {
        200: { description: "The verdict (a conflict is still 200, with valid: false)", content: { "application/json": { schema: ValidateResponse } } },
        400: { description: "VALIDATION_ERROR naming each offending field", content: { "application/json": { schema: ErrorBody } } },
      } as never,
    },
  });
