// stackgen.json: the config file of SPEC §2.8 (configVersion 2) plus what regeneration, update
// and backup need: the full input and a hash of every generated file (to spot user edits).
import type { FileMap, GenContext } from "./context.ts";
import { CURRENT_CONFIG_VERSION } from "../../schema/versions.ts";

export const CONFIG_FILE = "stackgen.json";
/** Files whose content changes on every run (secrets) are not hashed. */
const UNHASHED = new Set([".env", CONFIG_FILE]);

/** Keys stackgen writes only when set: gone from a new stackgen.json, they were not given this time
 *  (not added by hand). */
export const OPTIONAL_CONFIG_KEYS: ReadonlySet<string> = new Set(["preset", "domain", "platform", "memoryLimits"]);

export const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

export function configFile(ctx: GenContext, files: FileMap): FileMap {
  const hashes = Object.fromEntries(Object.keys(files).filter((p) => !UNHASHED.has(p)).sort().map((p) => [p, sha256(files[p])]));
  const config = {
    configVersion: CURRENT_CONFIG_VERSION,
    projectName: ctx.projectName,
    services: ctx.stack.resolvedServices,
    deploymentType: ctx.deploymentType,
    skillPacks: ctx.skillPacks,
    ...(ctx.preset ? { preset: ctx.preset } : {}),
    proxy: ctx.proxy,
    ...(ctx.domain ? { domain: ctx.domain } : {}),
    gpu: ctx.gpu,
    ...(ctx.platform ? { platform: ctx.platform } : {}),
    coreVersion: ctx.coreVersion,
    generateSecrets: ctx.generateSecrets,
    ...(ctx.memoryLimits ? { memoryLimits: true } : {}),
    generatedBy: `stackgen ${ctx.version}`,
    files: hashes,
  };
  return { [CONFIG_FILE]: JSON.stringify(config, null, 2) + "\n" };
}
