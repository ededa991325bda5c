// A service's bind mounts, read from a compose `volumes` entry as compose reads it. One reader for
// the three places that need them: doctor (file modes under the bundle's mounts), deploy (the
// bundle's files a platform must be given) and update/backup (`compose config`'s absolute paths).

export interface BindMount {
  /** As written: `./postgres/init`, `/srv/data`, `${DATA_DIR:-./data}`. */
  source: string;
  target: string;
  readOnly: boolean;
}

/** Split on `sep`, but not inside `${...}` (variables with defaults) or `[...]` (IPv6 hosts). */
export function splitOutsideBraces(text: string, sep: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if ((ch === "$" && text[i + 1] === "{") || ch === "[") depth++;
    else if ((ch === "}" || ch === "]") && depth > 0) depth--;
    if (ch === sep && depth === 0) {
      out.push(current);
      current = "";
    } else current += ch;
  }
  out.push(current);
  return out;
}

/** Compose's rule for the short form: a source that starts like a path is a bind mount, a bare
 *  word a named volume. (A variable may stand for either; it is taken as a path.) */
const isPathLike = (source: string) => /^[./~$]/.test(source);

/** The bind mount an entry of a service's `volumes` describes (short `src:dst[:mode]` or long
 *  `{type: bind, source, target}` form), or null for a named or anonymous volume, a tmpfs, or
 *  anything that is not a mount. */
export function bindMountOf(volume: unknown): BindMount | null {
  if (typeof volume === "string") {
    const [source, target, mode] = splitOutsideBraces(volume, ":");
    if (!source || !target || !isPathLike(source)) return null;
    return { source, target, readOnly: mode?.split(",").includes("ro") ?? false };
  }
  if (volume === null || typeof volume !== "object") return null;
  const { type, source, target, read_only } = volume as Record<string, unknown>;
  if (type !== "bind" || typeof source !== "string" || typeof target !== "string") return null;
  return { source, target, readOnly: read_only === true };
}

/** Compose reads a source starting with `.` as a path relative to the compose file. */
export const isBundleRelative = (source: string) => source === "." || source.startsWith("./") || source.startsWith("../");
