// The JSON type of a parsed value, as error messages name it ("expected an object, got array"),
// and the one guard for "a plain object" that input readers share.

/** "null", "array" or the `typeof` of anything else. */
export const jsonKind = (value: unknown): string => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value);

/** An object that is not null and not a list: the shape of a JSON body, a manifest, an answer. */
export const isJsonObject = (value: unknown): value is Record<string, unknown> => jsonKind(value) === "object";
