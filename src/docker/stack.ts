// Finding the stack a day-2 command works on: a directory with stackgen.json or a compose file.
// The compose file and the engine are the truth; stackgen.json only supplies a project name.
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import YAML from "yaml";
import { StackgenError } from "../errors.ts";
import { migrateConfig } from "../core/migrate.ts";

export interface Stack {
  dir: string;
  composeFile: string;
  /** Every file compose is given, in order: the compose file, then the user's override file beside
   *  it if any (which plain `docker compose` in the directory also loads). */
  composeFiles: string[];
  project: string;
  /** The compose file as parsed (not interpolated). */
  compose: Record<string, unknown>;
  /** The override file as parsed (not interpolated); undefined when there is none. */
  override?: Record<string, unknown>;
  /** stackgen.json, migrated to the current configVersion; undefined when there is none. */
  config?: Record<string, unknown>;
}

/** Compose v2's own preference order when a directory holds several (checked against `docker compose config`). */
export const COMPOSE_FILE_NAMES = ["compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"];
/** Override files compose loads on top by default, first found wins, whichever compose file was picked.
 *  Day-2 commands must pass it too: naming only the compose file would recreate containers without
 *  the user's own changes (a port, a bind mount holding their data) on the first update or restore. */
export const OVERRIDE_FILE_NAMES = ["compose.override.yaml", "compose.override.yml", "docker-compose.override.yml", "docker-compose.override.yaml"];

const badInput = (message: string) => new StackgenError("STACK_NOT_FOUND", message, 400, undefined, 2);

/** Compose's own rule for a project name taken from a directory: lowercase, [a-z0-9_-], starting alphanumeric. */
export function normaliseProjectName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "")
    .replace(/^[^a-z0-9]+/, "");
}

const PROJECT_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** Project name: compose top-level `name`, else stackgen.json `projectName`, else the directory name. */
export function projectNameOf(composeName: unknown, configName: unknown, dir: string): string {
  if (typeof composeName === "string" && composeName !== "" && !composeName.includes("$")) return composeName;
  if (typeof configName === "string" && configName !== "") return configName;
  return normaliseProjectName(basename(dir));
}

export function loadStack(dirArg: string | undefined): Stack {
  const dir = resolve(dirArg && dirArg !== "" ? dirArg : ".");
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw badInput(`${dir} is not a directory.`);
  const composeName = COMPOSE_FILE_NAMES.find((n) => existsSync(join(dir, n)));
  const configPath = join(dir, "stackgen.json");
  const hasConfig = existsSync(configPath);
  if (!composeName) {
    throw badInput(
      hasConfig
        ? `${dir} has a stackgen.json but no docker-compose.yml; regenerate the bundle.`
        : `${dir} is not a stack directory (no stackgen.json or docker-compose.yml). Use --dir.`,
    );
  }
  let config: Record<string, unknown> = {};
  if (hasConfig) {
    try {
      config = JSON.parse(readFileSync(configPath, "utf8"));
    } catch (e) {
      throw badInput(`${configPath} is not valid JSON: ${(e as Error).message}`);
    }
    if (typeof config !== "object" || config === null || Array.isArray(config)) throw badInput(`${configPath} must hold a JSON object.`);
    // SPEC §9: an older configVersion is migrated on load, an unknown one refused (exit 2).
    config = migrateConfig(config, `${configPath} has an invalid configVersion`);
  }
  const composeFile = join(dir, composeName);
  const compose = parseYamlFile(composeFile);
  const overrideName = OVERRIDE_FILE_NAMES.find((n) => existsSync(join(dir, n)));
  const overrideFile = overrideName ? join(dir, overrideName) : undefined;
  const override = overrideFile ? parseYamlFile(overrideFile) : undefined;
  // A later file's top-level name wins, as in compose.
  const project = projectNameOf(override?.name ?? compose.name, config?.projectName, dir);
  if (!PROJECT_NAME.test(project)) throw badInput(`"${project}" is not a valid compose project name.`);
  return {
    dir,
    composeFile,
    composeFiles: overrideFile ? [composeFile, overrideFile] : [composeFile],
    project,
    compose,
    ...(override ? { override } : {}),
    ...(hasConfig ? { config } : {}),
  };
}

function parseYamlFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = YAML.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw badInput(`${file} is not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) throw badInput(`${file} must hold a YAML mapping.`);
  return parsed as Record<string, unknown>;
}
