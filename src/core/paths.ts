// Whether a path lies in a folder: the test behind every "never write (or read) outside the
// target" check of the CLI, the backups and the deploy file reader.
import { sep } from "node:path";

/** `path` is `root` itself or lies below it. Both must be absolute and normalised (resolved, or
 *  real paths where symlinks matter): the test is on the text, without touching the disk. */
export const isWithin = (root: string, path: string): boolean => path === root || path.startsWith(root + sep);
