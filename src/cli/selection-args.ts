// Flags shared by `validate` and `generate`, turned into the same body the API takes.
import { readFile } from "node:fs/promises";
import { usageError } from "../errors.ts";
import { COMPLETE_FORMAT_VERSION } from "../schema/versions.ts";

export const selectionArgs = {
  preset: { type: "string", description: "Preset id used as the base (see `stackgen presets`)" },
  services: { type: "string", description: "Comma-separated service ids" },
  "skill-packs": { type: "string", description: "Comma-separated skill pack ids" },
  proxy: { type: "string", description: "caddy, traefik or none" },
  domain: { type: "string", description: "Base domain; services are served at <service>.<domain>" },
  gpu: { type: "boolean", description: "Add NVIDIA GPU reservations" },
  platform: { type: "string", description: "linux/amd64 or linux/arm64 (default: this machine)" },
  json: { type: "boolean", description: "Print one JSON document on stdout" },
} as const;

const list = (v: unknown) => (typeof v === "string" ? v.split(",").map((s) => s.trim()).filter(Boolean) : undefined);

/** Body fields from flags; only flags the user gave are set, so a file or preset can fill the rest. */
export function selectionFromArgs(args: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (args.preset !== undefined) body.preset = args.preset;
  if (args.services !== undefined) body.services = list(args.services);
  if (args["skill-packs"] !== undefined) body.skillPacks = list(args["skill-packs"]);
  if (args.proxy !== undefined) body.proxy = args.proxy;
  if (args.domain !== undefined) body.domain = args.domain;
  if (args.gpu !== undefined) body.gpu = args.gpu;
  if (args.platform !== undefined) body.platform = args.platform;
  return body;
}

/** Read a JSON input file: a `complete` document (its `input`), a stackgen.json or a plain body. */
export async function readInputFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw usageError(`Cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (text.length > 1024 * 1024) throw usageError(`${path} is larger than 1 MiB`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw usageError(`${path} is not valid JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw usageError(`${path} must hold a JSON object`);
  const d = doc as Record<string, unknown>;
  if ("formatVersion" in d && typeof d.input === "object" && d.input !== null) {
    if (d.formatVersion !== COMPLETE_FORMAT_VERSION) throw usageError(`${path} has format version ${JSON.stringify(d.formatVersion)}; this version reads "${COMPLETE_FORMAT_VERSION}"`);
    return { ...(d.input as Record<string, unknown>) };
  }
  const { files: _files, generatedBy: _by, ...rest } = d;
  return rest;
}
