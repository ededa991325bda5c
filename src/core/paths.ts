// Whether a path lies in a folder: the test behind every "never write (or read) outside the
// target" check of the CLI, the backups and the deploy file reader.
import { sep } from "node:path";

/** `path` is `root` itself or lies below it. Both must be absolute and normalised (resolved, or
 *  real paths where symlinks matter): the test is on the text, without touching the disk. The
 *  file system's root already ends in the separator. */
export const isWithin = (root: string, path: string): boolean => path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);

/** `text` as one shell word, for commands printed for the user to paste: a folder named
 *  `My Stack` or `$(…)` must stay one argument and never run as code. Plain words stay bare. */
export const shellWord = (text: string): string => (/^[A-Za-z0-9_\/.,:@%+=-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`);
