// The catalog files, inlined at bundle time by a macro (no file access at runtime).
import { readTextTree } from "./read-files.ts" with { type: "macro" };

export const catalogFiles: Record<string, string> = readTextTree("catalog");
