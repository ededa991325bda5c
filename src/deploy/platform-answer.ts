// A platform's answer is read only as its API documents it. A field of another type (a broken or
// hostile instance, a proxy's page that happens to be JSON) is a DeployError naming the call and
// the field, never a JavaScript error from deep inside a step ("null is not an object").
import { isJsonObject } from "../schema/json-kind.ts";
import { DeployError } from "./http.ts";

const kindOf = (value: unknown) =>
  value === undefined ? "missing" : value === null ? "null" : Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : typeof value === "string" ? (value === "" ? "an empty string" : "a string") : `a ${typeof value}`;

export type AnswerObject = Record<string, unknown>;

/** Readers of one call's answer. `where` is the place of the value in the answer (`[0].uuid`);
 *  empty for the answer itself. Optional fields take null as absent (Laravel's and tRPC's way of
 *  sending a field without a value). */
export interface AnswerReader {
  list(value: unknown, where?: string): unknown[];
  object(value: unknown, where?: string): AnswerObject;
  /** Each item of a list, as an object, read by `map` (called on each item in turn, at its place
   *  `[i]`, so the first offending value is the one named); `where` names the list. */
  objects<T = AnswerObject>(value: unknown, where?: string, map?: (item: AnswerObject, at: string) => T): T[];
  /** A non-empty string (an id). */
  id(value: unknown, where: string): string;
  text(value: unknown, where: string): string;
  optionalText(value: unknown, where: string): string | undefined;
  optionalFlag(value: unknown, where: string): boolean | undefined;
  optionalNumber(value: unknown, where: string): number | undefined;
}

/** The readers for `provider`'s answer to `call` (`GET /servers`). */
export function answerOf(provider: string, call: string): AnswerReader {
  const fail = (value: unknown, where: string, expected: string): never => {
    throw new DeployError(`${provider}'s answer to ${call} is not what its API documents: ${where || "the answer"} is ${kindOf(value)}, expected ${expected}`);
  };
  const absent = (value: unknown) => value === undefined || value === null;
  const reader: AnswerReader = {
    list: (value, where = "") => (Array.isArray(value) ? value : fail(value, where, "a list")),
    object: (value, where = "") => (isJsonObject(value) ? value : fail(value, where, "an object")),
    objects: <T>(value: unknown, where = "", map = (item: AnswerObject, _at: string) => item as T) =>
      reader.list(value, where).map((item, i) => map(reader.object(item, `${where}[${i}]`), `${where}[${i}]`)),
    id: (value, where) => (typeof value === "string" && value !== "" ? value : fail(value, where, "a non-empty string")),
    text: (value, where) => (typeof value === "string" ? value : fail(value, where, "a string")),
    optionalText: (value, where) => (absent(value) ? undefined : typeof value === "string" ? value : fail(value, where, "a string")),
    optionalFlag: (value, where) => (absent(value) ? undefined : typeof value === "boolean" ? value : fail(value, where, "true or false")),
    optionalNumber: (value, where) => (absent(value) ? undefined : typeof value === "number" ? value : fail(value, where, "a number")),
  };
  return reader;
}
