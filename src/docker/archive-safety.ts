// Defensive checks on archive members before anything is extracted: no member may write outside
// its target directory (no absolute paths, no `..`). In a volume, a symlink is data: apps keep
// absolute and relative links of their own, and a backup must give them back as they were. It
// can do no harm as long as nothing is written through it, so no member may lie under a symlink.
import type { TarEntry } from "./tar.ts";

/** What the checks read of a member: a volume may hold millions, so nothing more is kept. */
export type MemberName = Pick<TarEntry, "name" | "type" | "linkname">;

/** Split a member path into clean components, or explain why it is unsafe. */
export function safeComponents(path: string): { parts: string[] } | { error: string } {
  if (path.includes("\0")) return { error: "contains a NUL byte" };
  if (path.includes("\\")) return { error: "contains a backslash" };
  if (path.startsWith("/")) return { error: "is an absolute path" };
  if (/^[A-Za-z]:/.test(path)) return { error: "is an absolute path" };
  const parts = path.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) return { error: "contains '..'" };
  return { parts };
}

export interface MemberPolicy {
  /** Allow symlinks (any target: they are not followed) and hardlinks (to a member inside). Volume
   *  contents need them; the outer archive does not. */
  allowLinks: boolean;
  /** Every member must be this directory or lie below it (e.g. the volume's own top folder). */
  root?: string;
}

/** Check one member; returns a reason when it must be rejected. */
export function checkMember(entry: MemberName, policy: MemberPolicy): string | undefined {
  const comps = safeComponents(entry.name);
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
    case "symlink":
      if (!policy.allowLinks) return `member "${entry.name}" is a link`;
      if (entry.linkname.includes("\0")) return `symlink "${entry.name}" target contains a NUL byte`;
      return undefined;
    case "hardlink": {
      if (!policy.allowLinks) return `member "${entry.name}" is a link`;
      const target = safeComponents(entry.linkname);
      if ("error" in target) return `hardlink "${entry.name}" target ${target.error}`;
      if (policy.root !== undefined && target.parts[0] !== policy.root) return `hardlink "${entry.name}" points outside "${policy.root}/"`;
      return undefined;
    }
    default:
      return `member "${entry.name}" has a forbidden type (${entry.type})`;
  }
}

/** Whether a member would be written through a symlink of the archive (`l -> /etc` then `l/passwd`). */
function underSymlink(name: string, symlinks: Set<string>): string | undefined {
  const comps = safeComponents(name);
  if (!("parts" in comps)) return undefined;
  for (let i = 1; i < comps.parts.length; i++) {
    const parent = comps.parts.slice(0, i).join("/");
    if (symlinks.has(parent)) return `member "${name}" lies under the symlink "${parent}"`;
  }
  return undefined;
}

/** All problems of an archive's members (empty when it is safe to extract). */
export function checkMembers(entries: MemberName[], policy: MemberPolicy): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const symlinks = new Set<string>();
  for (const entry of entries) {
    const comps = safeComponents(entry.name);
    if (entry.type === "symlink" && "parts" in comps) symlinks.add(comps.parts.join("/"));
  }
  for (const entry of entries) {
    const problem = checkMember(entry, policy) ?? underSymlink(entry.name, symlinks) ?? (entry.type === "hardlink" ? underSymlink(entry.linkname, symlinks) : undefined);
    if (problem) problems.push(problem);
    // A hardlink may only point at a member that came before it.
    if (!problem && entry.type === "hardlink") {
      const target = (safeComponents(entry.linkname) as { parts: string[] }).parts.join("/");
      if (!seen.has(target)) problems.push(`hardlink "${entry.name}" points at "${entry.linkname}", which is not in the archive before it`);
    }
    const comps = safeComponents(entry.name);
    if ("parts" in comps) seen.add(comps.parts.join("/"));
  }
  return problems;
}
