// Documents clients send back: a whole `complete` export (its `input` is read) and config files
// of older versions (SPEC §9: migrated one step at a time, in order, never skipping).
import { validationError, withFieldsUnder } from "../errors.ts";
import { COMPLETE_FORMAT_VERSION, CURRENT_CONFIG_VERSION } from "../schema/versions.ts";

type Doc = Record<string, unknown>;

/** The values of `deployment` (schema/api.ts DeploymentType): another one is reported as sent,
 *  under `deployment` alone, not carried into a field the client never wrote. */
const DEPLOYMENTS = new Set<unknown>(["docker", "bare-metal", "local"]);

/** migrations[n] turns a version-n document into a version-(n+1) one. `deployment` is the same
 *  setting as `deploymentType` (CONTRACT §3): a v1 bare-metal config stays bare-metal. */
const migrations: Record<number, (doc: Doc) => Doc> = {
  1: (doc) => ({ ...doc, configVersion: 2, deploymentType: doc.deploymentType ?? (DEPLOYMENTS.has(doc.deployment) ? doc.deployment : "docker") }),
};

/** Bring a document that carries `configVersion` up to the current version; others pass through.
 *  `message` is the caller's VALIDATION_ERROR message for a version that is not an integer. */
export function migrateConfig(doc: Doc, message: string): Doc {
  if (!("configVersion" in doc)) return doc;
  const declared = doc.configVersion;
  if (typeof declared !== "number" || !Number.isInteger(declared)) {
    // Worded as the schema words it (../schema/issues.ts), whichever check sees it first.
    const kind = declared === null ? "null" : Array.isArray(declared) ? "array" : typeof declared;
    throw validationError(message, [{ field: "configVersion", message: kind === "number" ? "Expected integer" : `Expected integer, received ${kind}` }]);
  }
  let version = declared;
  let out = doc;
  while (version < CURRENT_CONFIG_VERSION) {
    const step = migrations[version];
    if (!step) break;
    out = step(out);
    version = out.configVersion as number;
  }
  if (version !== CURRENT_CONFIG_VERSION) {
    const noPath = `No migration path from config version ${String(doc.configVersion)}`;
    throw validationError(noPath, [{ field: "configVersion", message: noPath }]);
  }
  return out;
}

/** Whether `doc` is a whole `complete` export (read through its `input`) rather than an input.
 *  Any formatVersion marks one (a number is a wrong version, not a field to ignore). */
export const isCompleteExport = (doc: Doc): boolean => "formatVersion" in doc && "input" in doc && !("projectName" in doc);

/** Runs `check` on the `input` that requestInput read from `body`: when it came out of a complete
 *  export, the fields its errors name are given from the export's root (`input.services.0`), as
 *  the client sent them. */
export const checkedAsSent = <T>(body: Doc, input: Doc, check: () => T): T => (input !== body ? withFieldsUnder("input", check) : check());

/** The input of a body: itself, or the `input` of a whole `complete` export posted back.
 *  `message` is the caller's VALIDATION_ERROR message for an export of another format version. */
export function requestInput(doc: Doc, message: string): Doc {
  if (!isCompleteExport(doc)) return doc;
  // An export whose input is not an object is broken, not a body of unknown fields to ignore
  // (validate answered it with an empty stack).
  if (typeof doc.input !== "object" || doc.input === null || Array.isArray(doc.input)) {
    throw validationError(message, [{ field: "input", message: `Expected object, received ${doc.input === null ? "null" : Array.isArray(doc.input) ? "array" : typeof doc.input}` }]);
  }
  // A later format may mean something else by the same fields: refuse it rather than guess.
  if (doc.formatVersion !== COMPLETE_FORMAT_VERSION) {
    throw validationError(message, [{ field: "formatVersion", message: `Unsupported format version ${JSON.stringify(doc.formatVersion)}; this version reads "${COMPLETE_FORMAT_VERSION}"` }]);
  }
  return doc.input as Doc;
}
