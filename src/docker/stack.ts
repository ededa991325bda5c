// Finding the stack a day-2 command works on: a directory with stackgen.json or a compose file.
// The compose file and the engine are the truth; stackgen.json only supplies a project name.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import YAML, { YAMLMap, YAMLSeq, type CollectionTag, type ScalarTag } from "yaml";
import { StackgenError } from "../errors.ts";
import { migrateConfig } from "../core/migrate.ts";
import { envValues } from "../core/parse-env.ts";
import { parseJsonText } from "../core/json-text.ts";

export interface Stack {
  dir: string;
  /** Every file compose is given, in order: COMPOSE_FILE's list when it is set, else the compose
   *  file and the user's override file beside it if any (which plain `docker compose` also loads). */
  composeFiles: string[];
  /** Each of `composeFiles` as parsed (not interpolated), in the same order. */
  documents: Record<string, unknown>[];
  project: string;
  /** stackgen.json, migrated to the current configVersion; undefined when there is none. */
  config?: Record<string, unknown>;
}

/** Compose v2's own preference order when a directory holds several (checked against `docker compose config`). */
export const COMPOSE_FILE_NAMES = ["compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"];
/** The names compose looks for before a bundle's docker-compose.yml: one of them beside it is read in its place. */
export const COMPOSE_FILES_READ_FIRST = COMPOSE_FILE_NAMES.slice(0, COMPOSE_FILE_NAMES.indexOf("docker-compose.yml"));
/** Override files compose loads on top by default, first found wins, whichever compose file was picked.
 *  Day-2 commands must pass it too: naming only the compose file would recreate containers without
 *  the user's own changes (a port, a bind mount holding their data) on the first update or restore. */
export const OVERRIDE_FILE_NAMES = ["compose.override.yaml", "compose.override.yml", "docker-compose.override.yml", "docker-compose.override.yaml"];

/** Marks a list or mapping that a later compose file tagged `!override` or `!reset` (compose
 *  2.24+): it replaces what the earlier files set instead of adding to it. */
export const REPLACES = Symbol("compose !override");
const replacing = <T extends object>(value: T): T => Object.defineProperty(value, REPLACES, { value: true });
class ReplacingSeq extends YAMLSeq {
  override toJSON(arg?: unknown, ctx?: Parameters<YAMLSeq["toJSON"]>[1]) {
    return replacing(super.toJSON(arg, ctx) as unknown[]);
  }
}
class ReplacingMap extends YAMLMap {
  override toJSON(arg?: unknown, ctx?: Parameters<YAMLMap["toJSON"]>[1]) {
    return replacing(super.toJSON(arg, ctx) as object);
  }
}
/** Compose's merge tags, read rather than warned about (the override file is where the README
 *  sends lasting changes, and doctor's own advice uses `!override`). */
const COMPOSE_TAGS: (CollectionTag | ScalarTag)[] = [
  { tag: "!override", collection: "seq", resolve: (seq) => Object.assign(new ReplacingSeq(), { items: (seq as YAMLSeq).items }) },
  { tag: "!override", collection: "map", resolve: (map) => Object.assign(new ReplacingMap(), { items: (map as YAMLMap).items }) },
  { tag: "!reset", collection: "seq", resolve: () => new ReplacingSeq() },
  { tag: "!reset", collection: "map", resolve: () => new ReplacingMap() },
  { tag: "!reset", resolve: () => null },
];

/** Bad input (exit 2): no stack where one was named, or one whose files cannot be read as a stack. */
const badInput = (message: string, code: "STACK_NOT_FOUND" | "STACK_INVALID" = "STACK_NOT_FOUND") => new StackgenError(code, message, 400, undefined, 2);
export const invalidStack = (message: string) => badInput(message, "STACK_INVALID");
export const stackNotFound = (message: string) => badInput(message, "STACK_NOT_FOUND");

/** Compose's own rule for a project name taken from a directory: lowercase, [a-z0-9_-], starting alphanumeric. */
export function normaliseProjectName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "")
    .replace(/^[^a-z0-9]+/, "");
}

/** A Compose project name as compose accepts one (also what a backup manifest must name). */
export const PROJECT_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** A stackgen.json, migrated to the current configVersion (SPEC §9); one that is not a JSON
 *  object, or of a version with no migration path, is refused (exit 2), never read as absent. */
export function readStackConfig(configPath: string): Record<string, unknown> {
  let config: unknown;
  const text = readStackFile(configPath);
  try {
    config = parseJsonText(text);
  } catch (e) {
    throw invalidStack(`${configPath} is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof config !== "object" || config === null || Array.isArray(config)) throw invalidStack(`${configPath} must hold a JSON object.`);
  return migrateConfig(config as Record<string, unknown>, `${configPath} has an invalid configVersion`);
}

/** Project name: compose top-level `name`, else stackgen.json `projectName`, else the directory name. */
export function projectNameOf(composeName: unknown, configName: unknown, dir: string): string {
  if (typeof composeName === "string" && composeName !== "" && !composeName.includes("$")) return composeName;
  if (typeof configName === "string" && configName !== "") return configName;
  return normaliseProjectName(basename(dir));
}

/** Compose's own variables that choose a project's files and name, as `docker compose` run in
 *  `dir` reads them: the environment's value first, else the one in the directory's `.env`.
 *  A user who set them there runs their stack with them; a day-2 command that ignored them would
 *  recreate the containers from other files, or under another project with other volumes. */
export interface ComposeSettings {
  files?: string[];
  projectName?: string;
  /** Where COMPOSE_FILE came from, for messages. */
  filesFrom?: string;
}

export function composeSettings(dir: string, env: Record<string, string | undefined> = process.env): ComposeSettings {
  const envFile = join(dir, ".env");
  let fromFile = new Map<string, string>();
  if (existsSync(envFile) && statSync(envFile).isFile()) {
    try {
      fromFile = envValues(readFileSync(envFile, "utf8"));
    } catch {
      // An unreadable .env is doctor's business; compose settings then come from the environment only.
    }
  }
  const setting = (name: string): { value: string; from: string } | undefined => {
    const own = env[name];
    if (own !== undefined && own !== "") return { value: own, from: `$${name}` };
    const written = fromFile.get(name);
    return written !== undefined && written !== "" ? { value: written, from: `${name} in ${envFile}` } : undefined;
  };
  const file = setting("COMPOSE_FILE");
  const separator = setting("COMPOSE_PATH_SEPARATOR")?.value ?? ":";
  const project = setting("COMPOSE_PROJECT_NAME");
  return {
    // Relative entries are read from the stack directory, where compose runs for every command.
    ...(file ? { files: file.value.split(separator).filter((f) => f.trim() !== "").map((f) => resolve(dir, f.trim())), filesFrom: file.from } : {}),
    ...(project ? { projectName: project.value } : {}),
  };
}

/** Whether `dir` holds no stack yet: missing, empty, or only a `backups/` folder (where one copies
 *  the archives to on a new machine). Restore brings a stack back into such a directory. */
export function isEmptyStackDir(dir: string): boolean {
  return !existsSync(dir) || (statSync(dir).isDirectory() && readdirSync(dir).every((name) => name === "backups"));
}

export function loadStack(dirArg: string | undefined, env: Record<string, string | undefined> = process.env): Stack {
  const dir = resolve(dirArg && dirArg !== "" ? dirArg : ".");
  if (!existsSync(dir)) throw badInput(`${dir} does not exist.`);
  if (!statSync(dir).isDirectory()) throw badInput(`${dir} is not a directory.`);
  const settings = composeSettings(dir, env);
  const configPath = join(dir, "stackgen.json");
  const hasConfig = existsSync(configPath);
  let composeFiles: string[];
  if (settings.files) {
    const missing = settings.files.find((f) => !existsSync(f) || !statSync(f).isFile());
    if (missing) throw badInput(`${settings.filesFrom} names ${missing}, which is not a file.`);
    composeFiles = settings.files;
  } else {
    const composeName = COMPOSE_FILE_NAMES.find((n) => existsSync(join(dir, n)));
    if (!composeName) {
      throw badInput(
        hasConfig
          ? `${dir} has a stackgen.json but no docker-compose.yml; regenerate the bundle.`
          : `${dir} is not a stack directory (no stackgen.json or docker-compose.yml). Use --dir.`,
      );
    }
    const overrideName = OVERRIDE_FILE_NAMES.find((n) => existsSync(join(dir, n)));
    composeFiles = [join(dir, composeName), ...(overrideName ? [join(dir, overrideName)] : [])];
  }
  const config = hasConfig ? readStackConfig(configPath) : {};
  const documents = composeFiles.map(parseYamlFile);
  // COMPOSE_PROJECT_NAME beats the files' `name`, and a later file's `name` wins, as in compose.
  const named = documents.findLast((d) => d.name !== undefined)?.name;
  const project = settings.projectName ?? projectNameOf(named, config?.projectName, dir);
  // Quoted as JSON: a line break or control character in it stays visible on one line.
  if (!PROJECT_NAME.test(project)) throw invalidStack(`${JSON.stringify(project)} is not a valid compose project name.`);
  return {
    dir,
    composeFiles,
    documents,
    project,
    ...(hasConfig ? { config } : {}),
  };
}

/** A stack file's text. Only a regular file is read: opening a FIFO would wait for a writer
 *  forever. Unreadable is bad input too, with the reason (permission, a folder in its place). */
export function readStackFile(file: string): string {
  try {
    if (!statSync(file).isFile()) throw invalidStack(`${file} is not a regular file.`);
    return readFileSync(file, "utf8");
  } catch (e) {
    if (e instanceof StackgenError) throw e;
    throw invalidStack(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}.`);
  }
}

function parseYamlFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  const text = readStackFile(file);
  try {
    // logLevel "error": the library would print its warnings (an unknown tag) on stderr itself,
    // quoting the file's line raw, escape sequences included.
    parsed = YAML.parse(text, { customTags: COMPOSE_TAGS, logLevel: "error" });
  } catch (e) {
    throw invalidStack(`${file} is not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) throw invalidStack(`${file} must hold a YAML mapping.`);
  return parsed as Record<string, unknown>;
}
