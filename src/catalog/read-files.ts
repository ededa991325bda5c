// Build-time reader: used as a Bun macro, so the catalog's files are inlined into the bundle
// (and the compiled binary) as a plain object. Runs on the developer's machine, never at runtime.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { loadCatalog, preparse } from "./load.ts";

/** All text files under `dir` (relative to the project root), keyed by their relative path. */
export function readTextTree(dir: string): Record<string, string> {
  const root = join(import.meta.dir, "..", "..", dir);
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(root, p)] = readFileSync(p, "utf8");
    }
  };
  walk(root);
  return out;
}

/**
 * The catalog under `dir`, parsed and fully checked at build time. A catalog that breaks its
 * schemas or references fails the build here, with every problem listed.
 */
export function readCheckedCatalog(dir: string): string {
  const files = readTextTree(dir);
  loadCatalog(files);
  // JSON text rather than an object literal: the binary loads a string constant and parses it
  // only when the catalog is first needed.
  return JSON.stringify(preparse(files));
}
