// `stackgen deploy`: push a generated bundle to Coolify or Dokploy (SPEC §4.1/§4.2, CONTRACT §5).
// Reads the bundle from --dir, asks for what is missing when a terminal is attached, prints one
// line per step on stderr and, with --json, exactly the DeployResult on stdout.
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline/promises";
import { defineCommand } from "citty";
import { parse as parseYaml } from "yaml";
import { INTERRUPTED_EXIT, usageError } from "../errors.ts";
import { isWithin } from "../core/paths.ts";
import { listBundleMounts, type BundleFiles } from "../deploy/adapt-compose.ts";
import { deployBundle, DESTINATION_ENV, normaliseInstanceUrl, PROVIDER_NAMES, PROVIDERS, sendsKeyInClear } from "../deploy/index.ts";
import { redactor } from "../deploy/http.ts";
import type { DeployResult, DeployStep, ProviderName } from "../deploy/types.ts";
import { composeSettings, invalidStack, OVERRIDE_FILE_NAMES, readStackConfig, readStackFile, stackNotFound } from "../docker/stack.ts";
import { log, printJson, printText } from "./output.ts";
import { withDeferredInterrupts } from "./interrupt.ts";

const KEY_ENV = "STACKGEN_DEPLOY_API_KEY";
// Inline configs are for small text files; anything bigger stays a (reported) bind mount.
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_FILES_PER_MOUNT = 200;

export default defineCommand({
  meta: {
    name: "deploy",
    description: `Deploy the stack in --dir to a Coolify or Dokploy instance. On a Coolify server with several Docker destinations, $${DESTINATION_ENV} names the one to use (uuid, name or network).`,
  },
  args: {
    provider: { type: "string", description: `Platform: ${PROVIDER_NAMES.join(" | ")}` },
    url: { type: "string", description: "Instance URL, e.g. https://coolify.example.com" },
    "api-key": { type: "string", description: `API token (else $${KEY_ENV}, else a hidden prompt; on the command line other users can see it in ps)` },
    dir: { type: "string", description: "Stack directory", default: "." },
    update: { type: "boolean", description: "Redeploy an existing project and stack of the same name", default: false },
    json: { type: "boolean", description: "Print the deploy result as JSON on stdout", default: false },
  },
  async run({ args }) {
    const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
    const dir = path.resolve(String(args.dir ?? "."));
    const bundle = readBundle(dir);
    // The platform runs the bundle's compose file alone; changes kept beside it (the override file,
    // or the other files COMPOSE_FILE lists) would silently not be there.
    const { files: listed } = composeSettings(dir);
    const beside = listed
      ? listed.filter((f) => f !== path.join(dir, "docker-compose.yml")).map((f) => path.relative(dir, f))
      : OVERRIDE_FILE_NAMES.filter((n) => existsSync(path.join(dir, n)));
    for (const name of beside) {
      log.warn(`${name} is not deployed: the platform runs docker-compose.yml alone, so carry the changes it holds into that file first.`);
    }

    const provider = await resolveProvider(optionalString(args.provider), interactive);
    const url = optionalString(args.url) ?? (interactive ? await askLine(`${PROVIDERS[provider].label} URL: `) : undefined);
    if (!url) throw usageError("--url is required (the address of your instance, e.g. https://coolify.example.com)");
    const givenKey = optionalString(args["api-key"] ?? (args as Record<string, unknown>).apiKey);
    // A URL that cannot be one is refused before a key is asked for (or its absence reported).
    normaliseInstanceUrl(url, givenKey ?? optionalString(process.env[KEY_ENV]));
    const apiKey = await resolveApiKey(givenKey, provider, interactive);
    const instance = normaliseInstanceUrl(url, apiKey);
    if (sendsKeyInClear(instance)) log.warn(`${redactor(apiKey)(instance)} is plain http: the API key crosses the network unencrypted. Use https:// if the instance has it.`);

    // Ctrl-C lets the call under way finish (so what it made is known and reported), then stops.
    let interrupted = false;
    const result = await withDeferredInterrupts(
      "the deploy",
      async (signal) => {
        const r = await deployBundle(
          {
            provider,
            url,
            apiKey,
            update: args.update === true,
            projectName: bundle.projectName,
            composeYaml: bundle.composeYaml,
            envText: bundle.envText,
            files: bundle.files,
            destination: optionalString(process.env[DESTINATION_ENV]),
            signal,
          },
          printStep,
        );
        interrupted = signal.aborted && !r.success;
        return r;
      },
      () => `${PROVIDERS[provider].label} may hold a half-made project "${bundle.projectName}": run the same deploy with --update to finish it.`,
      "what it made so far is reported",
    );

    if (args.json) printJson(result);
    else printSummary(result, bundle.projectName);
    process.exitCode = result.success ? 0 : interrupted ? INTERRUPTED_EXIT : 1;
  },
});

interface Bundle {
  projectName: string;
  composeYaml: string;
  envText: string;
  files: BundleFiles;
}

function readBundle(dir: string): Bundle {
  const composePath = path.join(dir, "docker-compose.yml");
  const envPath = path.join(dir, ".env");
  // The codes status, update and backup give for the same stack files (exit 2 all the same).
  if (!existsSync(composePath)) throw stackNotFound(`No docker-compose.yml in ${dir}; run deploy in a generated stack directory or pass --dir`);
  if (!existsSync(envPath)) throw stackNotFound(`No .env in ${dir}; the deploy pushes its variables to the platform`);
  const composeYaml = readStackFile(composePath);
  const envText = readStackFile(envPath);
  const projectName = readProjectName(dir, composeYaml);
  const files: BundleFiles = {};
  for (const source of listBundleMounts(composeYaml)) readMountedFiles(dir, source, files);
  return { projectName, composeYaml, envText, files };
}

/** stackgen.json `projectName`, else the compose file's top-level `name`. */
function readProjectName(dir: string, composeYaml: string): string {
  const configPath = path.join(dir, "stackgen.json");
  if (existsSync(configPath)) {
    // Read as every command reads it: SPEC §9's unknown configVersion is refused (exit 2).
    const name = readStackConfig(configPath).projectName;
    if (typeof name === "string" && name.trim()) return name.trim();
  }
  let compose: unknown;
  try {
    compose = parseYaml(composeYaml, { logLevel: "error" }); // no raw warnings on stderr
  } catch (e) {
    throw invalidStack(`docker-compose.yml is not valid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  const name = (compose as { name?: unknown })?.name;
  if (typeof name === "string" && name.trim()) return name.trim();
  throw usageError("No project name: stackgen.json has no projectName and docker-compose.yml no top-level name");
}

/** A mounted bundle file, or every text file below a mounted directory. Missing ones are reported
 *  later. Symbolic links are not followed: their files are not the bundle's (a link to a host
 *  secret would go to the platform inline), so they count as missing. */
function readMountedFiles(dir: string, source: string, into: BundleFiles): void {
  const root = path.resolve(dir);
  const full = path.resolve(root, source);
  if (!isWithin(root, full)) return;
  // A folder on the way there that is a link leads elsewhere too.
  try {
    if (!isWithin(realpathSync(root), realpathSync(path.dirname(full)))) return;
  } catch {
    return;
  }
  const queue = [full];
  let count = 0;
  while (queue.length && count < MAX_FILES_PER_MOUNT) {
    const current = queue.shift()!;
    let stat;
    try {
      stat = lstatSync(current);
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      for (const entry of readdirSync(current).sort()) queue.push(path.join(current, entry));
    } else if (stat.isFile() && stat.size <= MAX_FILE_BYTES) {
      const bytes = readFileSync(current);
      if (bytes.includes(0)) continue; // binary: not something to inline as text
      into[path.relative(root, current).split(path.sep).join("/")] = bytes.toString("utf8");
      count++;
    }
  }
}

function optionalString(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

async function resolveProvider(given: string | undefined, interactive: boolean): Promise<ProviderName> {
  let value = given?.toLowerCase();
  if (!value && interactive) value = (await askLine(`Provider (${PROVIDER_NAMES.join("/")}): `)).toLowerCase();
  if (!value) throw usageError(`--provider is required (${PROVIDER_NAMES.join(" or ")})`);
  if (!(PROVIDER_NAMES as string[]).includes(value)) throw usageError(`Unknown provider "${value}" (use ${PROVIDER_NAMES.join(" or ")})`);
  return value as ProviderName;
}

async function resolveApiKey(given: string | undefined, provider: ProviderName, interactive: boolean): Promise<string> {
  const fromEnv = optionalString(process.env[KEY_ENV]);
  // A command line is readable by every user of the machine (ps, /proc) while the deploy runs.
  if (given) log.warn(`--api-key shows the key to every user of this machine in the process list while the deploy runs; ${KEY_ENV} or the hidden prompt do not.`);
  const key = given ?? fromEnv ?? (interactive ? await askHidden(`${PROVIDERS[provider].label} API key (hidden): `) : undefined);
  if (!key) throw usageError(`No API key: pass --api-key, set ${KEY_ENV}, or run on a terminal to be asked`);
  return key;
}

async function askLine(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

/** Read one line from the terminal in raw mode without echoing it. */
function askHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString()) {
        if (ch === "\r" || ch === "\n") {
          finish();
          return resolve(value.trim());
        }
        if (ch === "\u0003" || ch === "\u0004") {
          finish();
          return reject(usageError("Cancelled"));
        }
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else if (ch >= " ") value += ch;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}

function printStep(event: DeployStep): void {
  const detail = event.detail ? `: ${event.detail}` : "";
  if (event.status === "running") log.start(`${event.step}…${event.detail ? ` ${event.detail}` : ""}`);
  else if (event.status === "ok") log.success(`${event.step}${detail}`);
  else if (event.status === "skipped") log.info(`${event.step} skipped${detail}`);
  else log.error(`${event.step} failed${detail}`);
}

function printSummary(result: DeployResult, projectName: string): void {
  const label = PROVIDERS[result.provider].label;
  if (result.changes.length) {
    log.info(`Compose file adapted for ${label}:`);
    for (const change of result.changes) log.info(`  ${change}`);
  }
  if (result.success) {
    log.success(`Deployed "${projectName}" to ${label}`);
    if (result.dashboardUrl) printText(`Dashboard: ${result.dashboardUrl}`);
    return;
  }
  log.error(`Deploy failed at step "${result.failedStep ?? "?"}": ${result.error}`);
  if (result.hint) log.info(result.hint);
  const possibly = result.possiblyCreated ?? [];
  if (result.created.length) {
    log.warn(`Already created on ${label}: ${result.created.join(", ")}. Delete them, or run again with --update to reuse them.`);
  }
  if (possibly.length) {
    const them = possibly.length === 1 ? "it" : "them";
    log.warn(`Possibly created on ${label}: ${possibly.join(", ")} (the call that creates ${them} ended without saying whether ${them} ${them === "it" ? "was" : "were"} made: no answer, an unreadable one, or a server error). Check ${label}, and run again with --update, which reuses ${them} if ${label} made ${them}.`);
  }
  if (!result.created.length && !possibly.length) log.info(`This run created nothing on ${label}.`);
}
