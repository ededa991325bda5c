// `stackgen generate`: same input as POST /v1/generate, written to --dir without losing the
// user's .env values or edits.
import { defineCommand } from "citty";
import { isJsonObject } from "../schema/json-kind.ts";
import { parse as parseYaml } from "yaml";
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { getCatalog } from "../catalog/index.ts";
import { GENERATE_MESSAGE, generateBundle } from "../core/generate/index.ts";
import { PROJECT_NAME_MESSAGE, PROJECT_NAME_PATTERN } from "../schema/patterns.ts";
import { keptPortsOf } from "../core/kept-ports.ts";
import { httpsMissingFor, includesProxy } from "../core/generate/context.ts";
import { valuesToFill } from "../core/generate/env.ts";
import { CORE_VERSION_VAR } from "../core/generate/variables.ts";
import { requiredByCompose, requiredByNativeScripts } from "../core/required-variables.ts";
import { OPTIONAL_CONFIG_KEYS } from "../core/generate/config.ts";
import { StackgenError, validationError } from "../errors.ts";
import { withDeferredInterrupts } from "./interrupt.ts";
import { errorDocument, log, plural, printJson, printText, yellow } from "./output.ts";
import type { CatalogService } from "../schema/catalog.ts";
import { serviceVolumes } from "../core/listings.ts";
import { COMPOSE_FILES_READ_FIRST, composeSettings, loadStack, normaliseProjectName, readStackConfig } from "../docker/stack.ts";
import { mergeEnv, settingsTaken } from "../core/env-merge.ts";
import { domainWithoutProxy, inputName, readInputDocument, selectionArgs, selectionFromArgs } from "./selection-args.ts";
import { EDIT_KEPT_SUFFIX, planBundle, writePlan } from "./write-bundle.ts";
import type { FileDiff } from "./bundle-diff.ts";
import { shellWord } from "../core/paths.ts";

export default defineCommand({
  meta: { name: "generate", description: "Generate a stack bundle (docker-compose.yml, .env, proxy, monitoring, skills, README)" },
  args: {
    name: { type: "string", description: "Project name (default: the bundle's already in --dir, else the --from file's, else the --dir folder name)" },
    ...selectionArgs,
    deployment: { type: "string", description: "docker (default), bare-metal (native installs for services with a Debian package), or local (docker, recorded as local)" },
    "core-version": { type: "string", description: "Image tag of the core gateway, written to CORE_VERSION in .env (default: the --from file's, else the bundle's already in --dir, else latest)" },
    secrets: { type: "boolean", default: true, description: "Generate random secrets (--no-secrets leaves them empty)" },
    "memory-limits": { type: "boolean", description: "Cap each container's memory at twice its estimate, at least 256 MiB (--no-memory-limits: none, over a --from file that has them)" },
    dir: { type: "string", description: "Output directory (default ./<name>)" },
    from: { type: "string", description: "A complete JSON export or a stackgen.json to generate from (-: read it from standard input)" },
    "dry-run": { type: "boolean", description: "Show what would be written, write nothing" },
    force: { type: "boolean", description: "Overwrite files you edited since the last generate" },
    diff: { type: "boolean", description: "Show each file the run changes as a unified diff against the folder (.env by variable, values hidden); with --dry-run, nothing is written" },
  },
  async run({ args, rawArgs }) {
    const { outDir, fromPath } = sourceAndTarget(args);
    const from = fromPath ? await readInputDocument(fromPath) : undefined;
    /** The --from file as messages name it (`-` is standard input). */
    const fromName = fromPath === undefined ? "" : inputName(fromPath);
    const body: Record<string, unknown> = { ...from?.input, ...selectionFromArgs(args) };
    if (args.deployment !== undefined) body.deployment = args.deployment;
    if (args["core-version"] !== undefined) body.coreVersion = args["core-version"];
    if (args["memory-limits"] !== undefined) body.memoryLimits = args["memory-limits"];
    if (args.secrets === false) body.generateSecrets = false;
    // --secrets given (not just the default) turns them on over a file made with --no-secrets.
    else if (rawArgs.some((a) => a === "--secrets" || a === "--secrets=true")) body.generateSecrets = true;
    // Into an existing bundle, its own name, whatever the --from file says: another one would make
    // compose start a new project, with new, empty volumes beside the data. Into a new folder, the
    // --from file's name, else the folder's. --name still decides, said out loud.
    // The folder is fixed first (--dir, else the name given or the --from file's), so keeping its
    // bundle's name below does not move the output elsewhere.
    const nameGiven = args.name ?? (typeof body.projectName === "string" ? body.projectName : undefined);
    // The name becomes a path before the body is checked, and a bundle found there gives its own
    // name: checked first, or a shared file naming "../prod" or "/srv/stack" would rewrite
    // whatever bundle it points at.
    if (outDir === undefined && nameGiven !== undefined && !new RegExp(PROJECT_NAME_PATTERN).test(nameGiven)) {
      throw validationError(GENERATE_MESSAGE, [{ field: "projectName", message: PROJECT_NAME_MESSAGE }]);
    }
    const target = outDir ?? nameGiven;
    // The stackgen.json of the folder, read once: before the new one replaces it.
    const targetConfig = target ? readConfig(resolve(target)) : undefined;
    const existing = target ? bundleProjectName(resolve(target), targetConfig) : undefined;
    if (args.name !== undefined) {
      body.projectName = args.name;
      if (existing && existing !== args.name) log.warn(renamed(existing, args.name));
    } else if (existing) {
      if (typeof body.projectName === "string" && body.projectName !== existing) log.info(`Keeping the project name of the bundle in ${target}, "${existing}" (${fromName} names "${body.projectName}"); --name renames it.`);
      body.projectName = existing;
    } else if (body.projectName === undefined && outDir) {
      // Named after the folder as Compose names a project after it (MyStack -> mystack).
      const folder = basename(resolve(outDir));
      body.projectName = normaliseProjectName(folder) || folder;
      if (body.projectName !== folder) log.info(`Project name "${body.projectName}", made from the folder name ${folder} as Compose makes it; --name sets another.`);
    }

    // A bundle keeps the gateway tag it records when none is given: the compose file's fallback
    // and stackgen.json then still name what .env runs (the next run's .env keeps its value).
    if (body.coreVersion === undefined && typeof targetConfig?.coreVersion === "string") body.coreVersion = targetConfig.coreVersion;

    // Regenerating keeps the host ports the bundle already publishes: adding a service moves the
    // newcomer, not a service that runs.
    const keptPorts = target ? keptPortsIn(resolve(target)) : undefined;
    const { input, files, metadata, secretNames, derivedSecrets, valuePatterns, stack } = withFlagHints(() => generateBundle(body, getCatalog(), { keptPorts }));
    // A complete export brings its stack back with the secrets it was made with (its volumes may
    // hold data under them); variables the export lacks get fresh values. A .env already in --dir
    // still wins over both when the plan merges it.
    // Only the values of this stack's own variables: an export may be someone else's, and other
    // settings in it (COMPOSE_PROJECT_NAME, COMPOSE_FILE) would steer compose to another project.
    const generatedEnv = files[".env"]!;
    const fromExport = from?.exportedEnv === undefined ? undefined : mergeEnv(from.exportedEnv, generatedEnv, secretNames, derivedSecrets, { keepExtra: false, patterns: valuePatterns });
    if (fromExport) files[".env"] = fromExport.text;
    // Its secrets are why an export's .env is taken; its other values change the stack too (the
    // gateway's image, an endpoint it sends credentials to): named, so a foreign file shows.
    const dir = resolve(target ?? input.projectName);
    const recorded = target ? targetConfig : readConfig(dir);
    const plan = await planBundle(dir, files, args.force === true, { secrets: secretNames, derived: derivedSecrets, previous: previousSettings(recorded, stack.services), patterns: valuePatterns, follow: args["core-version"] === undefined ? undefined : new Set([CORE_VERSION_VAR]) });
    // A .env already in the folder wins over the export's: only a new one says what it took.
    const envKept = plan.some((f) => f.path === ".env" && f.action !== "create");
    // A bundle (its record is there; every bundle is written with a .env) that lost its .env gets
    // new secrets: a stack that already ran keeps the old passwords in its databases' volumes.
    if (!envKept && isJsonObject(recorded?.files) && from?.exportedEnv === undefined) {
      log.warn(`${join(dir, ".env")} is gone: a new one with new secrets ${args["dry-run"] ? "would be" : "is"} written. If this stack has run before, its databases still hold the old passwords and its services would not log in: put the old .env back over the new one (every stackgen backup of the stack holds it).`);
    }
    if (fromExport && !envKept) {
      const taken = settingsTaken(fromExport, generatedEnv, secretNames);
      if (taken.length) log.warn(`Settings taken from ${fromName} that differ from what this generation makes: ${taken.join(", ")}. Check them in .env if the file is not your own.`);
      if (fromExport.extra.length) log.warn(`Not taken from ${fromName}: ${fromExport.extra.join(", ")} (not variables of this stack).`);
      if (fromExport.refused.length) log.warn(`Not taken from ${fromName}: ${misshapen(fromExport.refused)}.`);
    }
    const refused = plan.find((f) => f.refusedValues)?.refusedValues ?? [];
    if (refused.length) log.warn(`Replaced in .env: ${misshapen(refused)}.`);
    const followed = plan.find((f) => f.updatedValues)?.updatedValues ?? [];
    const filled = plan.find((f) => f.filledSecrets)?.filledSecrets ?? [];
    const edited = plan.filter((f) => f.action === "skip-edited").map((f) => f.path);
    // Read before anything is written: what the folder holds now. The diff library loads only then.
    const differ = args.diff ? await import("./bundle-diff.ts") : undefined;
    const diffs: FileDiff[] | undefined = differ?.planDiffs(dir, plan);
    // What .env leaves empty: values only the user has, and secrets compose will not start without.
    const envText = plan.find((f) => f.path === ".env")?.content || files[".env"]!;
    const toFill = valuesToFill(stack.services, envText);
    // Bare metal: the native install scripts stop on their empty secrets as compose does on its own.
    const composeSecrets = requiredByCompose([parseYaml(files["docker-compose.yml"]!)], envText);
    const nativeScripts = Object.entries(files).filter(([path]) => path.startsWith("native/")).map(([, text]) => text);
    const nativeSecrets = requiredByNativeScripts(nativeScripts, envText).filter((name) => !composeSecrets.includes(name));
    const secretsToFill = [...composeSecrets, ...nativeSecrets];
    const summary = {
      dir,
      files: plan.map(({ path, action, updatedValues }) => ({ path, action, ...(updatedValues ? { updatedValues } : {}) })),
      metadata,
      valuesToFill: toFill.map(({ name, service }) => ({ name, service })),
      emptySecrets: secretsToFill,
      ...(diffs ? { diffs } : {}),
    };
    // docker compose reads these before docker-compose.yml: with one of the user's in the folder,
    // `docker compose up` there would start that file's services, not the bundle. --force cannot help.
    // When the folder's .env names the files (COMPOSE_FILE), compose reads those instead: refused
    // when they leave the bundle's out. Only the folder's own setting counts: this shell's may not
    // be the next one's (the .env is kept, so it steers every later `up` there).
    const nothingWritten = args["dry-run"] ? "a real run would write nothing" : "nothing was written";
    const pinned = composeSettings(dir, {});
    if (pinned.files && !pinned.files.includes(join(dir, "docker-compose.yml"))) {
      throw new StackgenError("EDITED_FILES", `${pinned.filesFrom} names ${pinned.files.map((f) => shellWord(f)).join(", ")} for docker compose to read, not the docker-compose.yml a bundle has: \`docker compose up\` there would not start this stack. Remove the setting, or add docker-compose.yml to it; ${nothingWritten}.`, 500,
        [{ field: "COMPOSE_FILE", message: "leaves out docker-compose.yml" }], 1);
    }
    const shadowing = pinned.files ? [] : COMPOSE_FILES_READ_FIRST.filter((f) => existsSync(join(dir, f)));
    if (shadowing.length) {
      throw new StackgenError("EDITED_FILES", `${dir} holds ${shadowing.join(" and ")}, which docker compose reads in place of the docker-compose.yml a bundle has: \`docker compose up\` there would not start this stack. Move ${shadowing.length === 1 ? "it" : "them"} out of the folder or choose another --dir; ${nothingWritten}.`, 500,
        shadowing.map((field) => ({ field, message: "read by docker compose in place of docker-compose.yml" })), 1);
    }
    // A dry run ends as the real run would: refused (exit 1) when it would refuse.
    // Edits to the compose file are the common case, and they have a place that survives every
    // regeneration: the override file, which compose loads on top and no bundle contains.
    const overrideHint = edited.includes("docker-compose.yml")
      ? " Your own changes to docker-compose.yml belong in docker-compose.override.yml: docker compose and stackgen update, backup and restore load it, and generate never writes it (deploy sends docker-compose.yml alone)."
      : "";
    // A file no stackgen.json records is not one "changed since it was generated": in a folder
    // without one (compose files of the user's own) stackgen never wrote it.
    const unrecorded = (kind: string) => plan.filter((f) => f.action === "skip-edited" && f.unrecorded === kind).map((f) => f.path);
    const [notOurs, notInRecord] = [unrecorded("no-record"), unrecorded("not-in-record")];
    const changedSince = edited.filter((path) => !notOurs.includes(path) && !notInRecord.includes(path));
    // Each file also as a detail, for scripts (--json) that want the list rather than the prose.
    const details = [
      ...changedSince.map((field) => ({ field, message: "changed since it was generated" })),
      ...notOurs.map((field) => ({ field, message: "not written by stackgen (the folder has no stackgen.json)" })),
      ...notInRecord.map((field) => ({ field, message: "not recorded by the folder's stackgen.json" })),
    ];
    const refusal = edited.length
      ? new StackgenError("EDITED_FILES", [
          changedSince.length ? `These files were changed since they were generated and would be overwritten: ${changedSince.join(", ")}.` : "",
          notOurs.length ? `These files are already in ${dir} and were not written by stackgen (there is no stackgen.json): ${notOurs.join(", ")}.` : "",
          notInRecord.length ? `These files are in ${dir} but not recorded by its stackgen.json (left from an earlier generation, or added by you), and would be overwritten: ${notInRecord.join(", ")}.` : "",
          `${args["dry-run"] ? "A real run would write nothing" : "Nothing was written"}; re-run with --force to replace them${notOurs.length ? ", or choose another --dir" : ""}.${overrideHint}`,
        ].filter(Boolean).join(" "), 500, details, 1)
      : undefined;

    const dropped = plan.find((f) => f.droppedKeys)?.droppedKeys;
    const byHand = dropped?.filter((k) => !OPTIONAL_CONFIG_KEYS.has(k)) ?? [];
    const notGiven = dropped?.filter((k) => OPTIONAL_CONFIG_KEYS.has(k)) ?? [];
    if (byHand.length) log.warn(`stackgen.json is stackgen's record of the bundle and is rewritten on every run: what was added to it by hand (${byHand.join(", ")}) is not kept. Keep notes in a file of your own.`);
    if (notGiven.length && !fromPath) log.warn(`The previous run's ${notGiven.join(", ")} ${notGiven.length === 1 ? "was" : "were"} not given this time, so the bundle no longer has ${notGiven.length === 1 ? "it" : "them"}: pass ${notGiven.length === 1 ? "it" : "them"} again, or regenerate with --from stackgen.json to start from the recorded choices.`);
    const removed = removedServices(recorded, stack.services.map((s) => s.id));
    // Renamed, the removed services' containers and volumes are the old project's.
    const oldProject = typeof recorded?.projectName === "string" ? recorded.projectName : input.projectName;
    const sayLeftBehind = () => {
      if (removed.length) log.warn(leftBehind(removed, plan, oldProject, oldProject !== input.projectName));
    };
    // What the bundle warns of, said by a dry run as by the real one.
    const sayWarnings = () => {
      for (const w of metadata.warnings) log.warn(`${w.code}: ${w.message}`);
      const plainHttp = httpsMissingFor(stack.services, input.domain).map((s) => s.name);
      if (plainHttp.length) log.warn(`${plainHttp.join(" and ")} ${plainHttp.length === 1 ? "needs" : "need"} HTTPS in the browser: without a proxy serving a domain ${plainHttp.length === 1 ? "it works" : "they work"} from this machine only (add --proxy caddy --domain <your domain>).`);
      if (input.domain && !includesProxy(stack.services)) log.warn(domainWithoutProxy(input.domain));
      // Gaps the user must know before relying on the stack (Meet needs a domain to work at all).
      const limited = stack.services.filter((s) => s.knownLimits).map((s) => s.name);
      if (limited.length) log.warn(`Known limits of ${limited.join(", ")}: read "Known limits" in ${join(dir, "README.md")} before you rely on ${limited.length === 1 ? "it" : "them"}.`);
      sayLeftBehind();
    };
    if (args["dry-run"]) {
      sayWarnings();
      const planText = [`Would write to ${dir}:`, ...plan.map((f) => `  ${f.action.padEnd(16)} ${f.path}${f.updatedValues ? ` (new settings for ${f.updatedValues.join(", ")})` : ""}`), ...(diffs?.length ? ["", differ!.renderDiffs(diffs)] : [])].join("\n");
      if (!refusal) return args.json ? printJson({ ...summary, dryRun: true }) : printText(planText);
      if (!args.json) {
        log.info(planText);
        throw refusal;
      }
      // One document: the refusal, beside the plan and diffs it was made over (what --force
      // would put in place of an edited file is what a dry run with --diff is asked for).
      process.exitCode = refusal.exitCode;
      printJson({ ...errorDocument(refusal), ...summary, dryRun: true });
      log.error(refusal.message);
      return;
    }
    if (refusal) throw refusal;
    // A Ctrl-C while the files are written puts back those already written (all or nothing).
    await withDeferredInterrupts("writing the bundle", (signal) => writePlan(dir, plan, signal), () => `the bundle in ${dir} may be half-written: compare it with its stackgen.json, or generate again.`, "what was written is put back");
    const replaced = plan.filter((f) => f.action === "overwrite-edited").map((f) => f.path);
    if (replaced.length) log.warn(`Replaced files you had changed (--force): ${replaced.join(", ")}. Your text of each is kept beside it, in ${replaced.map((p) => `${p}${EDIT_KEPT_SUFFIX}`).join(", ")}, to carry over what you still need.`);
    sayWarnings();
    const addresses = followed.filter((name) => name !== CORE_VERSION_VAR);
    if (addresses.length) log.warn(`Changed in .env to the new addresses (they still held what the previous settings made): ${addresses.join(", ")}.`);
    if (followed.includes(CORE_VERSION_VAR)) log.warn(`${CORE_VERSION_VAR} in .env is now ${input.coreVersion} (--core-version); \`stackgen update\` pulls that gateway image and restarts the stack on it.`);
    if (args.json) return printJson(summary);
    if (diffs?.length) printText(differ!.renderDiffs(diffs));
    const changed = plan.filter((f) => !["unchanged", "keep-edited", "remove", "leave-edited"].includes(f.action)).length;
    const gone = plan.filter((f) => f.action === "remove").length;
    printText([
      `Generated ${input.projectName} in ${dir} (${plural(metadata.totalServices, "service")}, ~${metadata.estimatedMemoryMB} MB, ${plural(changed, "file")} written${gone ? `, ${gone} removed` : ""}).`,
      // A .env already there wins over an export's values, changed or not.
      ...(envKept ? [yellow(keptText(followed, filled))] : from?.exportedEnv !== undefined ? [yellow(`Took the .env values of ${fromName}.`)] : []),
      ...(toFill.length ? [yellow(`Fill in before the first start (the README says where to get each), empty in .env: ${toFill.map((v) => `${v.name} (${v.service})`).join(", ")}.`)] : []),
      ...(composeSecrets.length ? [yellow(`Empty in .env, and compose refuses to start without them: ${composeSecrets.join(", ")}.`)] : []),
      ...(nativeSecrets.length ? [yellow(`Empty in .env, and install.sh stops before the native install without them: ${nativeSecrets.join(", ")}.`)] : []),
      ...(secretsToFill.length ? [yellow(`Fill them in (at least 32 random letters and digits each), or have them made: stackgen generate --dir ${shellWord(dir)} --from ${shellWord(join(dir, "stackgen.json"))} --secrets.`)] : []),
      // A bare-metal bundle installs its native services first; its install.sh then starts compose.
      `Next: cd ${shellWord(dir)} && ${"install.sh" in files ? "sudo ./install.sh" : removed.length && oldProject === input.projectName ? "docker compose up -d --remove-orphans" : "docker compose up -d"}`,
    ].join("\n"));
  },
});

/** What happened to the .env values already there. */
function keptText(followed: string[], filled: string[]): string {
  const except = [followed.length ? "the addresses named above" : "", filled.length ? `the empty secrets, now generated (${filled.join(", ")})` : ""].filter(Boolean);
  return except.length ? `Kept the existing .env values, except ${except.join(" and ")}.` : "Kept the existing .env values.";
}

/** The core names the input field; on the command line, also say which flag sets it. */
function withFlagHints<T>(generate: () => T): T {
  try {
    return generate();
  } catch (error) {
    const name = error instanceof StackgenError ? error.details?.find((d) => d.field === "projectName") : undefined;
    if (name?.message === "Required") log.info("Name the project with --name <name>, or give --dir <folder> to use its name.");
    // Refused, the name may be one the user never typed: the folder's or the --from file's.
    else if (name) log.info("--name <name> sets the project name; without it, it is the bundle's in --dir, else the --from file's, else the --dir folder's.");
    throw error;
  }
}

/** The stackgen.json already in `dir`, parsed and migrated, if there is one. One that cannot be
 *  read (not JSON, a newer configVersion) stops the run before anything is written: replacing
 *  it would lose the record of which files are the user's edits (and a newer stackgen's data). */
function readConfig(dir: string): Record<string, unknown> | undefined {
  const path = join(dir, "stackgen.json");
  if (!existsSync(path)) return undefined;
  try {
    return readStackConfig(path);
  } catch (e) {
    if (e instanceof StackgenError) e.message = `${e.message.replace(/\.?$/, ".")} Nothing was written, and ${path} is left as it is: fix or remove it, then generate again.`;
    throw e;
  }
}

/** What the input recorded in the old stackgen.json makes of .env today, and the settings made
 *  from the new stack's addresses: tells the merge which old values only followed the previous
 *  address. Without secrets (they are never compared). A record that no longer generates gives
 *  nothing, and then every old value stays. */
function previousSettings(recorded: Record<string, unknown> | undefined, services: readonly CatalogService[]) {
  if (!recorded) return undefined;
  try {
    const { files: _files, generatedBy: _by, ...input } = recorded;
    const env = generateBundle({ ...input, generateSecrets: false }, getCatalog()).files[".env"]!;
    const addressNames = new Set(services.flatMap((s) => (s.variables ?? []).filter((v) => v.publicUrl).map((v) => v.name)));
    return { env, addressNames };
  } catch {
    return undefined;
  }
}

/** Services the old stackgen.json lists that the new stack leaves out. */
function removedServices(recorded: Record<string, unknown> | undefined, now: readonly string[]): string[] {
  const before = recorded?.services;
  return Array.isArray(before) ? before.filter((id): id is string => typeof id === "string" && !now.includes(id)) : [];
}

/** What a service taken out of the stack leaves behind, said once: its containers run on, and
 *  its volumes keep their data, which backups no longer copy. `project` is the one they ran in:
 *  the old name when the bundle is renamed, where `--remove-orphans` of the new one cannot reach. */
function leftBehind(removed: string[], plan: { path: string; action: string }[], project: string, renamedFrom: boolean): string {
  const catalog = getCatalog();
  const volumes = removed.flatMap((id) => {
    const service = catalog.servicesById.get(id);
    return service ? serviceVolumes(service).map((v) => v.source).filter((s) => !s.startsWith("/")).map((s) => `${project}_${s}`) : [];
  });
  const kept = plan.filter((f) => f.action === "leave-edited").map((f) => f.path);
  return [
    `No longer in the stack: ${removed.join(", ")}.`,
    renamedFrom
      ? `Their containers keep running in the project "${project}" until \`docker compose -p ${project} down --remove-orphans\` (which keeps its volumes).`
      : "Their containers keep running until `docker compose up -d --remove-orphans`.",
    volumes.length ? `Their volumes (${[...new Set(volumes)].join(", ")}) keep their data, but stackgen backup no longer copies them; remove them with docker volume rm once you no longer need it.` : "",
    kept.length ? `Files of theirs you edited were left in place: ${kept.join(", ")}.` : "",
  ].filter(Boolean).join(" ");
}

/** What renaming a bundle's project does to the stack that already ran under the old name. */
const renamed = (from: string, to: string) =>
  `Renaming the project from "${from}" to "${to}": compose starts "${to}" as a new stack, with new, empty volumes; the containers and volumes of "${from}" (${from}_*) stay as they are until you remove them.`;

/** Names of values refused for their shape, and why. */
const misshapen = (names: readonly string[]) =>
  `${names.join(", ")} (${names.length === 1 ? "its value does not have the shape it must have" : "their values do not have the shape they must have"}: ${names.length === 1 ? "it reaches" : "they reach"} a config file as text; the generated ${names.length === 1 ? "value is" : "values are"} used instead)`;

/** The host ports the compose file in `dir` publishes (none when there is no readable one). */
function keptPortsIn(dir: string): Record<string, number> | undefined {
  const file = join(dir, "docker-compose.yml");
  try {
    // A generated compose file is tens of KiB; anything past 1 MiB is not one of ours.
    return statSync(file).size > 1024 * 1024 ? undefined : keptPortsOf(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * Where a run reads its input and writes its bundle, for the two ways of regenerating a bundle:
 * `--from <bundle>/stackgen.json` without --dir writes into that bundle (not a nested copy in a
 * folder of its name, whose fresh secrets would start the same compose project on the same
 * volumes), and `--dir <bundle>` without a selection reads the bundle's own stackgen.json.
 */
function sourceAndTarget(args: { dir?: string; from?: string; name?: string; services?: string; preset?: string; "skill-packs"?: string }): { outDir?: string; fromPath?: string } {
  let { dir: outDir, from: fromPath } = args;
  // Only a bundle's own record (the hashes of the files it wrote), and only under its own name: a
  // --name starts a copy in a folder of that name, as it did, and a stackgen.json of the user's
  // beside a compose file of theirs is no bundle.
  if (outDir === undefined && fromPath !== undefined && basename(fromPath) === "stackgen.json") {
    const folder = dirname(resolve(fromPath));
    const record = readConfig(folder);
    const own = record !== undefined && typeof record.files === "object" && record.files !== null && existsSync(join(folder, "docker-compose.yml"));
    if (own && (args.name === undefined || args.name === record.projectName)) {
      outDir = folder;
      log.info(`Writing into the bundle ${fromPath} belongs to, ${folder}; --dir writes a copy elsewhere.`);
    }
  }
  const selected = args.services !== undefined || args.preset !== undefined || args["skill-packs"] !== undefined;
  if (fromPath === undefined && outDir !== undefined && !selected && existsSync(join(outDir, "stackgen.json"))) {
    fromPath = join(outDir, "stackgen.json");
    log.info(`Regenerating ${outDir} with the choices its stackgen.json records; the flags given change them.`);
  }
  return { outDir, fromPath };
}

/** The project name an existing bundle in `dir` records in its stackgen.json (`config`), if any. */
function bundleProjectName(dir: string, config: Record<string, unknown> | undefined): string | undefined {
  const name = config?.projectName;
  if (typeof name === "string" && name !== "") return name;
  // A stack without stackgen.json (made by hand, or its file lost) still has a compose project.
  if (!existsSync(join(dir, "docker-compose.yml"))) return undefined;
  try {
    return loadStack(dir).project;
  } catch {
    return undefined;
  }
}
