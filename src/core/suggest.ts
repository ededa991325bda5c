// "Did you mean" for ids, commands and options a user mistyped (postgres for postgresql).
import { distance } from "fastest-levenshtein";
import { notFound, type StackgenError } from "../errors.ts";

/** The candidate closest to `word` when it is close enough to be what was meant: at most a third
 *  of the word's letters off (two for short words), or the word cut short (postgres). */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    // The word itself is no suggestion; the same in other capitals, or cut short, is one step off.
    const d = candidate === word ? 0 : candidate.startsWith(lower) && lower.length >= 3 ? 1 : distance(lower, candidate) || 1;
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance > 0 && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** ` (did you mean "x"?)`, or nothing when no candidate is close. */
export function didYouMean(word: string, candidates: Iterable<string>, quote = true): string {
  const match = closestMatch(word, candidates);
  return match === undefined ? "" : ` (did you mean ${quote ? `"${match}"` : match}?)`;
}

/** A catalog id the user gave that the catalog does not hold (`stackgen presets <id>`): the API's
 *  NOT_FOUND, as bad input (exit 2), with the near match and the command that lists them. */
export const unknownCatalogId = (kind: "Preset" | "Service", id: string, known: Iterable<string>): StackgenError =>
  notFound(`${kind} "${id}" not found${didYouMean(id, known)}; stackgen ${kind.toLowerCase()}s lists them`);
