import { Elysia } from "elysia";
import type { Catalog } from "../../catalog/index.ts";
import { ValidateRequest, ValidateResponse, ErrorBody } from "../../schema/api.ts";
import { validateSelection } from "../../core/validate.ts";
import { jsonObjectBody } from "../json-body.ts";

export const validateRoutes = (catalog: Catalog) =>
  new Elysia({ name: "validate-routes" }).post("/validate", ({ body }) => validateSelection(body, catalog), {
    parse: jsonObjectBody("Invalid request body"),
    body: ValidateRequest,
    response: { 200: ValidateResponse, 400: ErrorBody },
    detail: {
      summary: "Validate a selection",
      description: "Resolves dependencies, detects conflicts and port clashes, estimates memory. Conflicts still answer 200 with valid: false.",
      tags: ["stacks"],
    },
  });
