// Defensive checks on archive members before anything is extracted: no member may write outside
// its target directory (no absolute paths, no `..`). In a volume, a symlink is data: apps keep
// absolute and relative links of their own, and a backup must give them back as they were. It
// can do no harm as long as nothing is written through it, so no member may lie under a symlink.
import type { TarEntry } from "./tar.ts";

/** What the checks read of a member: a volume may hold millions, so nothing more is kept. */
export type MemberName = Pick<TarEntry, "name" | "type" | "linkname">;

/** Split a member path into clean components, or explain why it is unsafe. A backslash is an
 *  ordinary character in a Linux file name (and volume contents may hold one: `volume`); in the
 *  bundle's own files it can only be a Windows path. */
export function safeComponents(path: string, volume = false): { parts: string[] } | { error: string } {
  if (path.includes("\0")) return { error: "contains a NUL byte" };
  if (!volume && path.includes("\\")) return { error: "contains a backslash" };
  if (path.startsWith("/")) return { error: "is an absolute path" };
  if (/^[A-Za-z]:/.test(path)) return { error: "is an absolute path" };
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) return { error: "contains '..'" };
  return { parts };
}

export interface MemberPolicy {
  /** Volume contents: they keep whatever a Linux file system holds, so symlinks (any target: they
   *  are not followed), hardlinks (to a member inside), device nodes (the engine makes them again,
   *  and a container may not open them without being granted the device) and backslashes in names.
   *  The outer archive holds none of these. */
  volume: boolean;
  /** Every member must be this directory or lie below it (e.g. the volume's own top folder). */
  root?: string;
}

/** Check one member; returns a reason when it must be rejected. */
export function checkMember(entry: MemberName, policy: MemberPolicy): string | undefined {
  const comps = safeComponents(entry.name, policy.volume);
  if ("error" in comps) return `member "${entry.name}" ${comps.error}`;
  if (comps.parts.length === 0 && entry.type !== "dir") return `member "${entry.name}" has an empty name`;
  if (policy.root !== undefined && comps.parts.length > 0 && comps.parts[0] !== policy.root) {
    return `member "${entry.name}" lies outside "${policy.root}/"`;
  }
  switch (entry.type) {
    case "file":
    case "dir":
    case "fifo":
      return undefined;
    case "char":
    case "block":
      return policy.volume ? undefined : `member "${entry.name}" is a device node`;
    case "symlink":
      if (!policy.volume) return `member "${entry.name}" is a link`;
      if (entry.linkname.includes("\0")) return `symlink "${entry.name}" target contains a NUL byte`;
      return undefined;
    case "hardlink": {
      if (!policy.volume) return `member "${entry.name}" is a link`;
      const target = safeComponents(entry.linkname, true);
      if ("error" in target) return `hardlink "${entry.name}" target ${target.error}`;
      if (policy.root !== undefined && target.parts[0] !== policy.root) return `hardlink "${entry.name}" points outside "${policy.root}/"`;
      return undefined;
    }
    default:
      return `member "${entry.name}" has a forbidden type (${entry.type})`;
  }
}

/** A path's hash, for the set of member names a hardlink may point at: a volume may hold millions
 *  of files, and a number costs far less than the name. A collision can only let a hardlink to a
 *  missing member through, which the extraction then refuses; where it may point is checked on
 *  its name. */
const nameKey = (path: string) => Number(Bun.hash.wyhash(path) & 0x1fffffffffffffn);

/**
 * Checks an archive's members as they stream past, keeping only what later members are checked
 * against: the symlinks, every folder some member lies in, and a hash of each member's path. No
 * member may be written through a symlink, whichever comes first (`l -> /etc` then `l/passwd`,
 * or the other way round).
 */
export class MemberChecker {
  readonly problems: string[] = [];
  private readonly symlinks = new Set<string>();
  private readonly folders = new Set<string>();
  private readonly seen = new Set<number>();

  constructor(private readonly policy: MemberPolicy) {}

  add(entry: MemberName): void {
    const comps = safeComponents(entry.name, this.policy.volume);
    const parts = "parts" in comps ? comps.parts : [];
    const path = parts.join("/");
    const problem = checkMember(entry, this.policy) ?? this.underSymlink(entry.name, parts) ?? (entry.type === "hardlink" ? this.underSymlink(entry.linkname) : undefined);
    // A hardlink to a symlink is extracted as a symlink of its own, pointing where that one does.
    let linksToSymlink = false;
    if (problem) this.problems.push(problem);
    else if (entry.type === "hardlink") {
      // A hardlink may only point at a member that came before it.
      const target = (safeComponents(entry.linkname, this.policy.volume) as { parts: string[] }).parts.join("/");
      if (!this.seen.has(nameKey(target))) this.problems.push(`hardlink "${entry.name}" points at "${entry.linkname}", which is not in the archive before it`);
      linksToSymlink = this.symlinks.has(target);
    }
    if ((entry.type === "symlink" || linksToSymlink) && parts.length > 0) {
      if (this.folders.has(path)) this.problems.push(`a member written earlier lies under the symlink "${path}"`);
      this.symlinks.add(path);
    }
    this.seen.add(nameKey(path));
    // Every folder above the member (a folder already known has its own parents recorded).
    for (let i = parts.length - 1; i > 0; i--) {
      const folder = parts.slice(0, i).join("/");
      if (this.folders.has(folder)) break;
      this.folders.add(folder);
    }
  }

  /** Whether a path (its components, when already split) lies under a symlink seen so far. */
  private underSymlink(name: string, known?: string[]): string | undefined {
    if (this.symlinks.size === 0) return undefined;
    const comps = known ? { parts: known } : safeComponents(name, this.policy.volume);
    if (!("parts" in comps)) return undefined;
    for (let i = 1; i < comps.parts.length; i++) {
      const parent = comps.parts.slice(0, i).join("/");
      if (this.symlinks.has(parent)) return `member "${name}" lies under the symlink "${parent}"`;
    }
    return undefined;
  }
}

/** All problems of an archive's members (empty when it is safe to extract). */
export function checkMembers(entries: Iterable<MemberName>, policy: MemberPolicy): string[] {
  const checker = new MemberChecker(policy);
  for (const entry of entries) checker.add(entry);
  return checker.problems;
}
