// A config document's version is judged before its fields, and the same way on both paths that
// take a validate or generate body (hot-routes.ts and the Elysia routes), so that one body gets
// one answer wherever it is served.
import type { TSchema } from "@sinclair/typebox";
import type { Catalog } from "../catalog/index.ts";
import { checkRequest } from "../core/check-input.ts";
import { checkedAsSent, migrateConfig, requestInput } from "../core/migrate.ts";

type Doc = Record<string, unknown>;

/**
 * The input of `doc` (itself, or a complete export's `input`) after the checks of its
 * `configVersion` that come before its fields:
 * - a version no migration path leads from is refused as such (CONTRACT §3), whatever the other
 *   fields hold: a later version's fields may mean something else;
 * - one that is not an integer is named beside every other offending field, as the shape check
 *   names them (the migration alone would stop at it).
 * Errors name fields as the client sent them (`input.configVersion` in an export).
 * A migrated input is returned as migrated: its fields are then checked as the current version's
 * (SPEC §9: a migrated config must pass the input schema), on this path as on the other.
 */
export function inputWithConfigChecked(doc: Doc, schema: TSchema, message: string, catalog: Catalog): Doc {
  const input = requestInput(doc, message);
  if (!("configVersion" in input)) return input;
  const version = input.configVersion;
  let checked = input;
  checkedAsSent(doc, input, () => {
    if (typeof version === "number" && Number.isInteger(version)) checked = migrateConfig(input, message);
    else checkRequest(schema, input, catalog, message);
  });
  return checked;
}
