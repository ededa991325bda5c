// Flags shared by `validate` and `generate`, turned into the same body the API takes.
import { open } from "node:fs/promises";
import { usageError, validationError } from "../errors.ts";
import { isJsonObject, jsonKind } from "../schema/json-kind.ts";
import { MAX_BODY_BYTES } from "../api/guard/config.ts";
import { COMPLETE_FORMAT_VERSION } from "../schema/versions.ts";
import { parseJsonText } from "../core/json-text.ts";

export const selectionArgs = {
  preset: { type: "string", description: "Preset id used as the base (see `stackgen presets`)" },
  services: { type: "string", description: "Comma-separated service ids" },
  "skill-packs": { type: "string", description: "Comma-separated skill pack ids" },
  proxy: { type: "string", description: "caddy, traefik or none" },
  domain: { type: "string", description: "Base domain; services are served at <service>.<domain>" },
  gpu: { type: "boolean", description: "Add NVIDIA GPU reservations (--no-gpu: none, also when the preset turns them on)" },
  platform: { type: "string", description: "linux/amd64 or linux/arm64 (default: this machine)" },
  json: { type: "boolean", description: "Print one JSON document on stdout" },
} as const;

const list = (v: unknown) => (typeof v === "string" ? v.split(",").map((s) => s.trim()).filter(Boolean) : undefined);

/** Body fields from flags; only flags the user gave are set, so a file or preset can fill the rest. */
/** What generate and validate say of a domain no proxy serves. */
export const domainWithoutProxy = (domain: string) =>
  `--domain ${domain} has no effect without a reverse proxy: nothing serves <id>.${domain}. Add --proxy caddy (or traefik) to have it.`;

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

/** At most `limit + 1` bytes of `path`: enough to tell an oversized file (or /dev/zero, a FIFO
 *  that never ends) from one within the limit without reading it all. */
async function readCapped(path: string, limit: number): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    const buffer = Buffer.alloc(limit + 1);
    let size = 0;
    while (size < buffer.length) {
      const { bytesRead } = await file.read(buffer, size, buffer.length - size, null);
      if (bytesRead === 0) break;
      size += bytesRead;
    }
    return buffer.subarray(0, size);
  } finally {
    await file.close();
  }
}


/** Standard input, up to `limit` + 1 bytes (one more tells it is too large). Read from the stream,
 *  not by opening /dev/stdin, which fails (ENXIO) when standard input is a socket: what a
 *  program spawning stackgen from Node or Python often hands it. */
async function readStdinCapped(limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = Bun.stdin.stream().getReader();
  try {
    while (size <= limit) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks).subarray(0, limit + 1);
}

/** How an input file is named to the user: `-` is standard input (a piped export). */
export const inputName = (path: string) => (path === "-" ? "standard input" : path);

/** Read a JSON input file: a `complete` document (its `input`), a stackgen.json or a plain body. */
export async function readInputFile(path: string): Promise<Record<string, unknown>> {
  return (await readInputDocument(path)).input;
}

/** An input file's generation input, and the `.env` a complete export carries (its secrets). */
export async function readInputDocument(path: string): Promise<{ input: Record<string, unknown>; exportedEnv?: string }> {
  const name = inputName(path);
  let bytes: Buffer;
  try {
    // Input files are request bodies: the API's body limit applies.
    bytes = path === "-" ? await readStdinCapped(MAX_BODY_BYTES) : await readCapped(path, MAX_BODY_BYTES);
  } catch (e) {
    throw usageError(`Cannot read ${name}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (bytes.length > MAX_BODY_BYTES) throw usageError(`${name} is larger than 1 MiB`);
  const text = bytes.toString("utf8");
  let doc: unknown;
  try {
    doc = parseJsonText(text);
  } catch {
    throw usageError(`${name} is not valid JSON`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw usageError(`${name} must hold a JSON object`);
  const d = doc as Record<string, unknown>;
  if ("formatVersion" in d) {
    // A complete export: its input is what is generated, its .env holds the secrets to keep. A
    // broken one is named as such, not read as a generation input missing every field.
    if (d.formatVersion !== COMPLETE_FORMAT_VERSION) throw usageError(`${name} has format version ${JSON.stringify(d.formatVersion)}; this version reads "${COMPLETE_FORMAT_VERSION}"`);
    const broken = (field: string, value: unknown, want: string) => validationError(`${name} is not a usable complete export`, [{ field, message: `Expected ${want}, received ${jsonKind(value)}` }]);
    if (!isJsonObject(d.input)) throw broken("input", d.input, "object");
    if (d.files !== undefined && !isJsonObject(d.files)) throw broken("files", d.files, "object");
    const env = d.files?.[".env"];
    if (env !== undefined && typeof env !== "string") throw broken("files..env", env, "string");
    return { input: { ...d.input }, ...(env !== undefined ? { exportedEnv: env } : {}) };
  }
  const { files: _files, generatedBy: _by, ...rest } = d;
  return { input: withoutRecordedProxy(rest) };
}

/** A stackgen.json records the resolved services, its proxy among them. The `proxy` field adds
 *  that service anyway; left in `services` it would stay when --proxy names another one (two
 *  proxies: a conflict) or none. */
function withoutRecordedProxy(input: Record<string, unknown>): Record<string, unknown> {
  const { proxy, services } = input;
  if (typeof proxy !== "string" || !Array.isArray(services) || !services.includes(proxy)) return input;
  return { ...input, services: services.filter((id) => id !== proxy) };
}
