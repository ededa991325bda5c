// Turns TypeBox value errors into the SPEC's `details` items: `{field, message}` with the path of
// the offending value (`services.2`) and short messages (`Required`, `Expected array, received string`).
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import { validationError, type FieldIssue } from "../errors.ts";
import { jsonKind } from "./json-kind.ts";


function messageFor(e: ValueError): string {
  if (e.value === undefined) return "Required";
  const expected = (e.schema as { type?: string }).type;
  const actual = jsonKind(e.value);
  if (expected && expected !== actual && !(expected === "integer" && actual === "number")) {
    return `Expected ${expected}, received ${actual}`;
  }
  if ("anyOf" in e.schema && Array.isArray(e.schema.anyOf)) {
    const options = e.schema.anyOf.map((s: TSchema) => ("const" in s ? JSON.stringify(s.const) : s.type)).filter(Boolean);
    return `Expected one of ${options.join(", ")}, received ${JSON.stringify(e.value)}`.slice(0, 300);
  }
  // A regular expression tells a person little: a schema may say in words what its pattern wants.
  const explained = (e.schema as { errorMessage?: unknown }).errorMessage;
  if (e.type === ValueErrorType.StringPattern && typeof explained === "string") return explained;
  return e.message;
}

export function toFieldIssues(errors: Iterable<ValueError>, root = "body"): FieldIssue[] {
  const byField = new Map<string, FieldIssue>();
  for (const e of errors) {
    const field = e.path.replace(/^\//, "").replace(/\//g, ".") || root;
    if (!byField.has(field)) byField.set(field, { field, message: messageFor(e) });
    if (byField.size >= 50) break;
  }
  return [...byField.values()];
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();
/** Check `value` against `schema`; throws VALIDATION_ERROR with every offending field. */
export function assertValid<T>(schema: TSchema, value: unknown, message: string): T {
  let c = compiled.get(schema);
  if (!c) compiled.set(schema, (c = TypeCompiler.Compile(schema)));
  if (!c.Check(value)) throw validationError(message, toFieldIssues(c.Errors(value)));
  return value as T;
}
