// FileMap -> ZIP (fflate). Every entry under `<projectName>/`; scripts 0755, .env 0600, rest 0644.
import { zipSync, strToU8, type Zippable } from "fflate";
import type { FileMap } from "./generate/context.ts";
import { isExecutable, isPrivate } from "./generate/index.ts";

export function zipBundle(projectName: string, files: FileMap, mtime = new Date("2026-01-01T00:00:00Z")): Uint8Array {
  const entries: Zippable = {};
  for (const [path, text] of Object.entries(files)) {
    const mode = isExecutable(path) ? 0o755 : isPrivate(path) ? 0o600 : 0o644;
    // Unix mode lives in the high 16 bits of the external attributes; os 3 = Unix.
    entries[`${projectName}/${path}`] = [strToU8(text), { os: 3, attrs: ((0o100000 | mode) << 16) >>> 0, mtime }];
  }
  return zipSync(entries, { level: 6 });
}
