// FileMap -> ZIP (fflate). Every entry under `<projectName>/`; scripts 0755, .env 0600, rest 0644.
// The web UI zips the bundle it previewed with this too, so it imports nothing of the generator.
import { zipSync, strToU8, type Zippable } from "fflate";
import type { FileMap } from "./generate/context.ts";
import { fileMode } from "./file-modes.ts";

export function zipBundle(projectName: string, files: FileMap, mtime = new Date("2026-01-01T00:00:00Z")): Uint8Array {
  const entries: Zippable = {};
  for (const [path, text] of Object.entries(files)) {
    const mode = fileMode(path);
    // Unix mode lives in the high 16 bits of the external attributes; os 3 = Unix.
    entries[`${projectName}/${path}`] = [strToU8(text), { os: 3, attrs: ((0o100000 | mode) << 16) >>> 0, mtime }];
  }
  return zipSync(entries, { level: 6 });
}
