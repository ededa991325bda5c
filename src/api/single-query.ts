// Query parameters the routes read one value of. Given more than once, the last one silently won
// (`/v1/services?category=database&category=storage` listed storage only, `format=zip&format=json`
// answered JSON): each is refused instead, naming the parameter. SPEC §4 gives each a single value
// (`category` is one of the 20), so repeats are not read as "any of".
import { validationError } from "../errors.ts";

export const GIVEN_MORE_THAN_ONCE = "Given more than once";

/** The names among `names` that `url`'s query gives more than once. */
export function repeatedParameters(url: string, names: readonly string[]): string[] {
  const at = url.indexOf("?");
  if (at < 0) return [];
  const params = new URLSearchParams(url.slice(at + 1));
  return names.filter((name) => params.getAll(name).length > 1);
}

/** An Elysia `transform` hook (it runs before the query is checked) refusing a repeat of one of
 *  `names` with a 400 VALIDATION_ERROR whose details name each. `describe` words the message
 *  from the names, for a route whose error body has no details (/v1/skills, SPEC §7). */
export const singleValued = (names: readonly string[], describe: (repeated: string[]) => string = () => "Invalid query parameters") =>
  ({ request }: { request: Request }) => {
    const repeated = repeatedParameters(request.url, names);
    if (repeated.length) throw validationError(describe(repeated), repeated.map((field) => ({ field, message: GIVEN_MORE_THAN_ONCE })));
  };
