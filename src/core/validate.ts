// validate = migrate a config document if needed, check ids, resolve.
import type { Catalog } from "../catalog/index.ts";
import { ValidateRequest, type ValidateResponse } from "../schema/api.ts";
import { checkRequest, toSelection, VALIDATE_MESSAGE } from "./check-input.ts";

export { VALIDATE_MESSAGE };
import { checkedAsSent, migrateConfig, requestInput } from "./migrate.ts";
import { resolve, toValidateResponse } from "./resolve.ts";

export function validateSelection(body: unknown, catalog: Catalog): ValidateResponse {
  const input = requestInput(body as Record<string, unknown>, VALIDATE_MESSAGE);
  return checkedAsSent(body as Record<string, unknown>, input, () => {
    const migrated = checkRequest<ValidateRequest>(ValidateRequest, migrateConfig(input, VALIDATE_MESSAGE), catalog, VALIDATE_MESSAGE);
    return toValidateResponse(resolve(toSelection(migrated, catalog), catalog));
  });
}
