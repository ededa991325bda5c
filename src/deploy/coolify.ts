// Coolify v4 deployer. The call sequence follows CONTRACT §5 and the research notes §6, which
// amend SPEC §4.2 where real servers differ: the compose file goes base64-encoded (and ASCII only,
// see ascii-compose.ts), variables go
// through PATCH /services/{uuid}/envs/bulk, and deploy is POST /deploy (GET gives 405 on 4.2+).
import { callSettingsOf, createJsonClient, DeployError, requireMinimumVersion, type JsonClient } from "./http.ts";
import type { DeployProvider, DeployTarget, EnvVar, StepContext } from "./types.ts";
import { variablesToPush, type PlatformEnv } from "./existing-env.ts";
import { coolifyNameProblem } from "./project-names.ts";
import { asciiCompose } from "./ascii-compose.ts";
import { answerOf, type AnswerObject, type AnswerReader } from "./platform-answer.ts";

/** Custom compose services over the API arrived in this build. */
export const COOLIFY_MIN_VERSION = "4.0.0-beta.399";

const DESCRIPTION = "Deployed by stackgen";

interface CoolifyServer {
  uuid: string;
  name?: string;
  is_usable?: boolean;
  is_reachable?: boolean;
  settings?: { is_usable?: boolean; is_reachable?: boolean; is_build_server?: boolean };
}

interface CoolifyDestination {
  uuid: string;
  name?: string;
  network?: string;
  type?: string;
}

interface CoolifyEnvironment {
  id?: number;
  uuid: string;
  name: string;
}

interface CoolifyProject {
  uuid: string;
  name: string;
}

export const coolify: DeployProvider = {
  name: "coolify",
  label: "Coolify",
  checkProjectName: coolifyNameProblem,
  // The causes of each refusal, as Coolify words them (research §2).
  hintFor(status, detail) {
    // A token whose team is gone is a 400 "Invalid token." rather than a 401.
    if (status === 401 || (status === 400 && /invalid token/i.test(detail))) return "Check the token: Coolify API tokens are created under Keys & Tokens > API tokens, and belong to one team.";
    if (status === 403 && /API is disabled/i.test(detail)) return "Coolify's API is switched off: turn it on in its Settings (API access), then try again.";
    if (status === 403 && /not allowed to access the API/i.test(detail)) return "Coolify's API allow-list does not include the address this call came from: add it in its Settings.";
    if (status === 403) return "The token lacks an ability this step needs: create one with read, write and deploy (or root), as a team owner or admin.";
    return undefined;
  },
  deploy: deployToCoolify,
};

async function deployToCoolify(t: DeployTarget, steps: StepContext): Promise<void> {
  const api = createJsonClient({ provider: "Coolify", baseUrl: `${t.baseUrl}/api/v1`, headers: { Authorization: `Bearer ${t.apiKey}` }, ...callSettingsOf(t) });
  const name = t.projectName;

  await steps.run("Test connection", async () => {
    const answer = await api.call<string>("GET", "/version", { expect: "text" });
    const version = requireMinimumVersion("Coolify", answer, COOLIFY_MIN_VERSION, "custom compose services over the API");
    return { value: version, detail: `Coolify ${version}` };
  });

  // The project lookup belongs to this step (SPEC §4.2 names seven steps): it decides whether
  // "Create project" creates, refuses (a name in use) or reuses (--update).
  const { server, existing } = await steps.run("Discover server", async () => {
    const read = answerOf("Coolify", "GET /servers");
    const servers = read.objects(await api.call<unknown>("GET", "/servers"), "", (row, at) => serverOf(read, row, at));
    if (servers.length === 0) throw new DeployError("No servers found in Coolify instance");
    const usable = servers.find(isUsableServer);
    if (!usable) {
      throw new DeployError(
        `No usable server in Coolify instance (${servers.length} found; none is reachable, usable and a deployment server)`,
      );
    }
    const readProjects = answerOf("Coolify", "GET /projects");
    const projects = readProjects.objects(await api.call<unknown>("GET", "/projects"), "", (row, at): CoolifyProject => ({ uuid: readProjects.id(row.uuid, `${at}.uuid`), name: readProjects.text(row.name, `${at}.name`) }));
    const found = projects.find((p) => p.name === name);
    return {
      value: { server: usable, existing: found },
      detail: `${usable.name ?? "server"} (${usable.uuid}); ${found ? `project "${name}" exists (${found.uuid})` : `no project named "${name}" yet`}`,
    };
  });

  let projectUuid: string;
  if (existing && !t.update) {
    // SPEC §7: the same text a server-side duplicate would give; nothing has been created.
    return steps.run("Create project", async () => {
      throw new DeployError("Coolify API 409: Conflict", 409, `project "${name}" already exists (${existing.uuid}); run with --update to redeploy it`);
    });
  }
  if (existing) {
    projectUuid = existing.uuid;
    steps.skip("Create project", `reusing project "${name}" (${projectUuid})`);
    steps.note({ projectId: projectUuid });
  } else {
    projectUuid = await steps.run("Create project", async () => {
      const uuid = await steps.creating(`Coolify project "${name}"`, async () =>
        createdUuid(await api.call<unknown>("POST", "/projects", { body: { name, description: DESCRIPTION } }), "POST /projects"));
      steps.note({ projectId: uuid, created: `Coolify project "${name}" (${uuid})` });
      return { value: uuid, detail: uuid };
    });
  }

  // On an update the service of the same name in that environment is looked up here too: the
  // next step then replaces its compose file instead of making a second one.
  const { environment, serviceUuid: reusedService } = await steps.run("Get project", async () => {
    const read = answerOf("Coolify", "GET /projects/{uuid}");
    const project = read.object(await api.call<unknown>("GET", `/projects/${encodeURIComponent(projectUuid)}`));
    const envs = read.objects(project.environments ?? [], "environments", (row, at) => ({ row, at, name: read.text(row.name, `${at}.name`) }));
    const production = envs.find((e) => e.name === "production");
    if (!production) throw new DeployError(`Coolify project "${name}" has no "production" environment`);
    const env: CoolifyEnvironment = { id: read.optionalNumber(production.row.id, `${production.at}.id`), uuid: read.id(production.row.uuid, `${production.at}.uuid`), name: production.name };
    const found = existing ? await findService(api, name, env) : undefined;
    const service = !existing ? "" : found ? `; service "${name}" exists (${found})` : `; no service named "${name}" yet`;
    return { value: { environment: env, serviceUuid: found }, detail: `environment production (${env.uuid})${service}` };
  });

  let serviceUuid = reusedService;
  const composeBase64 = Buffer.from(asciiCompose(t.composeYaml), "utf8").toString("base64");
  let vars = t.envVars;
  let kept: string[] = [];
  if (serviceUuid) {
    const uuid = serviceUuid;
    await steps.run("Create compose service", async () => {
      let unread = "";
      if (t.keepExistingValues) {
        // Read before the new compose file adds empty rows for the variables it introduces.
        try {
          ({ push: vars, kept } = variablesToPush(t.envVars, await platformEnv(api, uuid), true, t.derivedSecrets));
        } catch (e) {
          if (!(e instanceof DeployError)) throw e;
          // Unreadable: send only what cannot replace anything that matters: no generated secret
          // (a running stack's are in its data) and no empty value (the user may have set it there).
          vars = t.envVars.filter((v) => v.value !== "" && !t.freshSecrets.has(v.key));
          kept = t.envVars.filter((v) => !vars.includes(v)).map((v) => v.key);
          unread = `; its variables could not be listed (${e.message}), so only set values that were not generated now are sent`;
        }
      }
      await api.call("PATCH", `/services/${encodeURIComponent(uuid)}`, { body: { docker_compose_raw: composeBase64 } });
      return { value: undefined, detail: `reusing service "${name}" (${uuid}): its compose file replaced${unread}` };
    });
  } else {
    serviceUuid = await steps.run("Create compose service", async () => {
      const create = (destinationUuid?: string) => steps.creating(`Coolify service "${name}"`, async () => {
        const res = await api.call<unknown>("POST", "/services", {
          body: {
            project_uuid: projectUuid,
            server_uuid: server.uuid,
            // The spec marks both required, the server needs one; sending both satisfies both.
            environment_name: environment.name,
            environment_uuid: environment.uuid,
            ...(destinationUuid ? { destination_uuid: destinationUuid } : {}),
            name,
            description: DESCRIPTION,
            docker_compose_raw: composeBase64,
            // Deploy only after the variables are written.
            instant_deploy: false,
          },
        });
        return createdUuid(res, "POST /services");
      });
      let uuid: string;
      let where = "";
      try {
        uuid = await create();
      } catch (e) {
        // A server with several Docker destinations needs one named (research §2).
        if (!(e instanceof DeployError && e.status === 400 && /multiple destinations/i.test(e.detail ?? ""))) throw e;
        const destination = await chooseDestination(api, server, t.destination);
        uuid = await create(destination.uuid);
        where = ` on destination ${destination.name ?? destination.uuid} (network ${destination.network})`;
      }
      steps.note({ created: `Coolify service "${name}" (${uuid})` });
      return { value: uuid, detail: uuid + where };
    });
  }
  const stackUuid = serviceUuid;
  steps.note({
    stackId: stackUuid,
    dashboardUrl: `${t.baseUrl}/project/${projectUuid}/environment/${environment.uuid}/service/${stackUuid}`,
  });

  const keptNote = kept.length ? `; ${kept.length} kept as set on Coolify` : "";
  if (t.envVars.length === 0) steps.skip("Set env", ".env holds no variables");
  else if (vars.length === 0) steps.skip("Set env", `all ${kept.length} variables kept as set on Coolify`);
  else {
    await steps.run("Set env", async () => {
      // The bulk endpoint upserts by key: variables only Coolify has stay as they are.
      await api.call("PATCH", `/services/${encodeURIComponent(stackUuid)}/envs/bulk`, { body: { data: vars.map(envEntry) } });
      return { value: undefined, detail: `${vars.length} variable${vars.length === 1 ? "" : "s"}${keptNote}` };
    });
  }

  await steps.run("Deploy", async () => {
    // force=false: no cache-less rebuild; the stack uses published images.
    const read = answerOf("Coolify", "POST /deploy");
    const res = read.object(await api.call<unknown>("POST", "/deploy", {
      query: { uuid: stackUuid, force: "false" },
    }));
    const first = read.objects(res.deployments ?? [], "deployments")[0];
    // No entry: Coolify started nothing for this uuid (each resource it starts is listed).
    if (!first) throw new DeployError("Coolify did not deploy the stack: its answer lists no deployment for the service");
    const message = read.optionalText(first.message, "deployments[0].message");
    // Coolify answers 200 when a token may not deploy this service, saying so in the message
    // ("Unauthorized to deploy this service."): nothing starts, so it is not a success.
    if (typeof message === "string" && /^unauthori[sz]ed/i.test(message.trim())) throw new DeployError(`Coolify did not deploy the stack: ${message}`, 403);
    return { value: undefined, detail: message ?? "deployment queued" };
  });
}

/** The service's variables as Coolify lists them (preview copies left out). A token without the
 *  right to read secrets gets rows without their value: such a value counts as set. */
async function platformEnv(api: JsonClient, serviceUuid: string): Promise<PlatformEnv> {
  // An answer of another shape is unreadable (the caller then sends nothing that could replace a
  // value), not a list of no variables.
  const read = answerOf("Coolify", "GET /services/{uuid}/envs");
  const env: PlatformEnv = new Map();
  read.objects(await api.call<unknown>("GET", `/services/${encodeURIComponent(serviceUuid)}/envs`), "", (row, at) => {
    const key = read.id(row.key, `${at}.key`);
    if (read.optionalFlag(row.is_preview, `${at}.is_preview`) === true) return;
    // A row without `value` is hidden (counts as set); `null` is Laravel's empty string.
    env.set(key, !("value" in row) ? undefined : (read.optionalText(row.value, `${at}.value`) ?? ""));
  });
  return env;
}

/** Update path: the service of the same name in the project's production environment, if any.
 *  One of that name whose environment cannot be told (an answer without the ids) stops the deploy:
 *  taking it could overwrite another project's stack, passing it by would make a second one. */
async function findService(api: JsonClient, name: string, environment: CoolifyEnvironment): Promise<string | undefined> {
  const read = answerOf("Coolify", "GET /services");
  const services = read.objects(await api.call<unknown>("GET", "/services"), "", (row, at) => ({
    uuid: read.id(row.uuid, `${at}.uuid`),
    name: read.text(row.name, `${at}.name`),
    environmentId: read.optionalNumber(row.environment_id, `${at}.environment_id`),
  })).filter((s) => s.name === name);
  if (services.length && (environment.id === undefined || services.some((s) => s.environmentId === undefined))) {
    const unknown = environment.id === undefined
      ? `Coolify's answer for project "${name}" gives its production environment no id`
      : `Coolify lists a service named "${name}" without saying which environment it is in`;
    throw new DeployError(
      `${unknown}, so it cannot be told whether that service is this project's; nothing was changed`,
      undefined,
      `rename or remove the other service on Coolify, or generate the stack again under another name (--name) and deploy that`,
    );
  }
  return services.find((s) => s.environmentId === environment.id)?.uuid;
}

/** Coolify's own network, which every server gets when it is set up. */
const DEFAULT_NETWORK = "coolify";
/** How the user names a destination when Coolify cannot be left to pick (CLI environment). */
export const DESTINATION_ENV = "STACKGEN_COOLIFY_DESTINATION";

/**
 * The destination to use on a server that has several: the one the user named (uuid, name or
 * network), else the standalone one on Coolify's default network, or the only standalone one.
 * Anything else is the user's choice to make, so it is an error naming them.
 */
async function chooseDestination(api: JsonClient, server: CoolifyServer, wanted: string | undefined): Promise<CoolifyDestination> {
  const label = `Server ${server.name ?? server.uuid}`;
  let answer: unknown;
  try {
    answer = await api.call<unknown>("GET", `/servers/${encodeURIComponent(server.uuid)}/destinations`);
  } catch (e) {
    if (e instanceof DeployError && e.status === 404) {
      throw new DeployError(`${label} has several Docker destinations, and this Coolify version cannot list them over its API; keep one destination on it, or deploy to another server`, 400);
    }
    throw e;
  }
  const read = answerOf("Coolify", "GET /servers/{uuid}/destinations");
  const destinations = read.objects(answer, "", (row, at): CoolifyDestination => ({
    uuid: read.id(row.uuid, `${at}.uuid`),
    name: read.optionalText(row.name, `${at}.name`),
    network: read.optionalText(row.network, `${at}.network`),
    type: read.optionalText(row.type, `${at}.type`),
  }));
  const standalone = destinations.filter((d) => (d.type ?? "standalone") === "standalone");
  const names = standalone.map((d) => `${d.name ?? d.uuid} (network ${d.network ?? "?"})`).join(", ") || "none usable";
  if (wanted !== undefined) {
    const named = standalone.filter((d) => d.uuid === wanted || d.name === wanted || d.network === wanted);
    if (named.length === 1) return named[0];
    throw new DeployError(
      `${label} has ${named.length ? "several" : "no"} standalone Docker destination${named.length ? "s" : ""} matching ${DESTINATION_ENV}="${wanted}"; its destinations: ${names}`,
      400,
    );
  }
  const chosen = standalone.find((d) => d.network === DEFAULT_NETWORK) ?? (standalone.length === 1 ? standalone[0] : undefined);
  if (chosen) return chosen;
  throw new DeployError(
    `${label} has several Docker destinations and none is clearly the one to use (Coolify's default "${DEFAULT_NETWORK}" network, or the only standalone one): ${names}; set ${DESTINATION_ENV} to the uuid, name or network of one, keep one destination on the server, or deploy to another server`,
    400,
  );
}

/** A server row of GET /servers, each field read as Coolify documents it. */
function serverOf(read: AnswerReader, row: AnswerObject, at: string): CoolifyServer {
  const settings = row.settings === undefined || row.settings === null ? undefined : read.object(row.settings, `${at}.settings`);
  const flag = (from: AnswerObject, key: string, where: string) => read.optionalFlag(from[key], `${where}.${key}`);
  return {
    uuid: read.id(row.uuid, `${at}.uuid`),
    name: read.optionalText(row.name, `${at}.name`),
    is_usable: flag(row, "is_usable", at),
    is_reachable: flag(row, "is_reachable", at),
    settings: settings && {
      is_usable: flag(settings, "is_usable", `${at}.settings`),
      is_reachable: flag(settings, "is_reachable", `${at}.settings`),
      is_build_server: flag(settings, "is_build_server", `${at}.settings`),
    },
  };
}

function isUsableServer(server: CoolifyServer): boolean {
  const flag = (key: "is_usable" | "is_reachable") => server[key] ?? server.settings?.[key] ?? true;
  return flag("is_usable") && flag("is_reachable") && server.settings?.is_build_server !== true;
}

function envEntry(v: EnvVar) {
  return {
    key: v.key,
    value: v.value,
    is_preview: false,
    // Literal: generated secrets may hold `$`, which Coolify would otherwise interpolate.
    is_literal: true,
    is_multiline: v.value.includes("\n"),
    is_shown_once: false,
    // SPEC §4.2 lists it; current servers ignore it, older ones (before Sept 2025) validate it as boolean.
    is_build_time: false,
  };
}

/** The uuid a create call answers with. */
function createdUuid(answer: unknown, call: string): string {
  const read = answerOf("Coolify", call);
  return read.id(read.object(answer).uuid, "uuid");
}
