// The catalog, parsed and checked at bundle time by a macro: the binary carries it as JSON text
// and neither reads files nor parses YAML when it starts.
import { readCheckedCatalog } from "./read-files.ts" with { type: "macro" };

export const catalogJson: string = readCheckedCatalog("catalog");
