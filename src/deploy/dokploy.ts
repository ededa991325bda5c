// Dokploy deployer (tRPC-over-HTTP: queries are GET with query input, mutations POST with JSON).
// CONTRACT §5 / research §3: needs 0.25.0+ (environments, `x-api-key`), the compose source must be
// `raw`, and `compose.update` carries both the compose file and the env text.
import { callSettingsOf, compareVersions, createJsonClient, DeployError, parseVersion, requireMinimumVersion, type JsonClient } from "./http.ts";
import type { DeployProvider, DeployTarget, StepContext } from "./types.ts";
import { envTextForUpdate } from "./existing-env.ts";
import { dokployEnvProblems, dokployEnvText } from "./dokploy-env.ts";
import { dokployNameProblem } from "./project-names.ts";
import { answerOf, type AnswerObject, type AnswerReader } from "./platform-answer.ts";

/** Environments and `x-api-key` together exist from this release on. */
export const DOKPLOY_MIN_VERSION = "0.25.0";
/** `compose.create` keeps `sourceType` from this release on (older ones strip it; `compose.update` sets it). */
const SOURCE_TYPE_ON_CREATE = "0.30.0";

const DESCRIPTION = "Deployed by stackgen";

interface DokployCompose {
  composeId: string;
  name: string;
}

interface DokployEnvironment {
  environmentId: string;
  name: string;
  isDefault?: boolean;
  compose?: DokployCompose[];
}

interface DokployProject {
  projectId: string;
  name: string;
}

/** An environment row (of project.one or project.create), each field read as Dokploy documents it. */
function environmentOf(read: AnswerReader, row: AnswerObject, at: string): DokployEnvironment {
  const compose = row.compose === undefined || row.compose === null ? undefined
    : read.objects(row.compose, `${at}.compose`, (c, where) => ({ composeId: read.id(c.composeId, `${where}.composeId`), name: read.text(c.name, `${where}.name`) }));
  return {
    environmentId: read.id(row.environmentId, `${at}.environmentId`),
    name: read.text(row.name, `${at}.name`),
    isDefault: read.optionalFlag(row.isDefault, `${at}.isDefault`),
    compose: compose,
  };
}

export const dokploy: DeployProvider = {
  name: "dokploy",
  label: "Dokploy",
  checkProjectName: dokployNameProblem,
  // The causes of each refusal (research §3).
  checkEnv: dokployEnvProblems,
  hintFor(status, detail) {
    // Dokploy refuses a member's missing permission with 401 too, in words of its own
    // ("Permission denied", "You don't have access to this project"); a bad key is a bare "Unauthorized".
    if (status === 401 && /permission|access/i.test(detail)) return "The key works, but its user lacks a permission this step needs (create projects and services, write variables, deploy): use a key of an owner or admin, or grant the member those permissions in Dokploy.";
    if (status === 401) return "Check the key: Dokploy API keys (x-api-key) are created in its dashboard under your profile's API keys, with an organization selected; tokens of Dokploy before 0.19 no longer work.";
    if (status === 403) return "The key's user lacks a permission this step needs (create projects and services, write variables, deploy): use a key of an owner or admin.";
    return undefined;
  },
  deploy: deployToDokploy,
};

/** The version text in settings.getDokployVersion's answer: Dokploy sends a JSON string, its
 *  published OpenAPI document an object (`{}`, or one with `version`). undefined when an object
 *  names none; anything else is given to requireMinimumVersion, which says what came back. */
function reportedVersion(answer: unknown): string | undefined {
  if (answer !== null && typeof answer === "object" && !Array.isArray(answer)) {
    const version = (answer as Record<string, unknown>).version;
    return typeof version === "string" ? version : undefined;
  }
  return String(answer ?? "");
}

async function deployToDokploy(t: DeployTarget, steps: StepContext): Promise<void> {
  const api = createJsonClient({ provider: "Dokploy", baseUrl: `${t.baseUrl}/api`, headers: { "x-api-key": t.apiKey }, ...callSettingsOf(t) });
  const name = t.projectName;

  // SPEC §4.2's first step; the version check (CONTRACT §5) is part of it, as for Coolify.
  const { version, existing } = await steps.run("Test connection", async () => {
    const answer = await api.call<unknown>("GET", "/settings.getDokployVersion");
    const reported = reportedVersion(answer);
    const shown = reported === undefined ? undefined : requireMinimumVersion("Dokploy", reported, DOKPLOY_MIN_VERSION, "environments and x-api-key");
    const read = answerOf("Dokploy", "GET /project.all");
    const projects = read.objects(await api.call<unknown>("GET", "/project.all"), "", (row, at): DokployProject => ({ projectId: read.id(row.projectId, `${at}.projectId`), name: read.text(row.name, `${at}.name`) }));
    const found = projects.find((p) => p.name === name);
    return {
      // Not reported: the instance is taken to be as its published API describes it (the newest).
      value: { version: shown === undefined ? undefined : parseVersion(shown)!, existing: found },
      detail: `Dokploy ${shown ?? "(version not reported)"}; ${found ? `project "${name}" exists (${found.projectId})` : `no project named "${name}" yet`}`,
    };
  });

  if (existing && !t.update) {
    return steps.run("Create project", async () => {
      throw new DeployError("Project already exists", 409, `project "${name}" (${existing.projectId}); run with --update to redeploy it`);
    });
  }

  let projectId: string;
  let createdEnvironment: DokployEnvironment | undefined;
  if (existing) {
    projectId = existing.projectId;
    steps.skip("Create project", `reusing project "${name}" (${projectId})`);
    steps.note({ projectId });
  } else {
    projectId = await steps.run("Create project", async () => {
      const id = await steps.creating(`Dokploy project "${name}"`, async () => {
        // `{project, environment}` since 0.25; older releases answered the bare row.
        const read = answerOf("Dokploy", "POST /project.create");
        const res = read.object(await api.call<unknown>("POST", "/project.create", { body: { name, description: DESCRIPTION } }));
        const row = res.project === undefined ? res : read.object(res.project, "project");
        const created = read.id(row.projectId, res.project === undefined ? "projectId" : "project.projectId");
        if (res.environment !== undefined && res.environment !== null) createdEnvironment = environmentOf(read, read.object(res.environment, "environment"), "environment");
        return created;
      });
      steps.note({ projectId: id, created: `Dokploy project "${name}" (${id})` });
      return { value: id, detail: id };
    });
  }

  const environment = await steps.run("Get project", async () => {
    const read = answerOf("Dokploy", "GET /project.one");
    const project = read.object(await api.call<unknown>("GET", "/project.one", { query: { projectId } }));
    const envs = read.objects(project.environments ?? [], "environments", (row, at) => environmentOf(read, row, at));
    const env = defaultEnvironment(envs, createdEnvironment);
    if (!env) throw new DeployError(`Dokploy project "${name}" has no default environment`);
    return { value: env, detail: `environment ${env.name} (${env.environmentId})` };
  });

  // With --update, the stack of the same name is reused: no duplicate compose per redeploy.
  const reused = existing ? environment.compose?.find((c) => c.name === name) : undefined;
  let composeId: string;
  if (reused) {
    composeId = reused.composeId;
    steps.skip("Create compose stack", `reusing compose "${name}" (${composeId})`);
  } else {
    const sourceTypeOnCreate = version === undefined || compareVersions(version, parseVersion(SOURCE_TYPE_ON_CREATE)!) >= 0;
    composeId = await steps.run("Create compose stack", async () => {
      const create = (serverId?: string) => steps.creating(`Dokploy compose "${name}"`, async () => {
        const res = await api.call<unknown>("POST", "/compose.create", {
          body: {
            name,
            description: DESCRIPTION,
            environmentId: environment.environmentId,
            composeType: "docker-compose",
            composeFile: t.composeYaml,
            ...(sourceTypeOnCreate ? { sourceType: "raw" } : {}),
            ...(serverId ? { serverId } : {}),
          },
        });
        const read = answerOf("Dokploy", "POST /compose.create");
        return read.id(read.object(res).composeId, "composeId");
      });
      let server: { serverId: string; name?: string } | undefined;
      let id: string;
      try {
        id = await create();
      } catch (e) {
        // Dokploy Cloud, or an instance set to remote servers only, runs stacks on a remote
        // server and says so with a 401 that is not about the key: deploy to its first server.
        if (!(e instanceof DeployError && e.status === 401 && /use a server/i.test(e.detail ?? ""))) throw e;
        server = await firstServer(api);
        id = await create(server.serverId);
      }
      steps.note({ created: `Dokploy compose "${name}" (${id})` });
      return { value: id, detail: server ? `${id} on server ${server.name ?? server.serverId}` : id };
    });
  }
  steps.note({
    stackId: composeId,
    dashboardUrl: `${t.baseUrl}/dashboard/project/${projectId}/environment/${environment.environmentId}/services/compose/${composeId}`,
  });

  await steps.run("Set env", async () => {
    // compose.update replaces the whole env text: on a reused stack, what is already there decides
    // what stays (variables added on Dokploy; set values when the bundle is freshly generated).
    let env: { text: string | undefined; kept: string[]; carried: string[] } = { text: dokployEnvText(t.envText), kept: [], carried: [] };
    let unread = "";
    if (reused) {
      try {
        // An answer of another shape is unreadable (below), not an empty env text to replace.
        const read = answerOf("Dokploy", "GET /compose.one");
        const current = read.object(await api.call<unknown>("GET", "/compose.one", { query: { composeId } }));
        env = envTextForUpdate(t.envText, read.optionalText(current.env, "env") ?? "", t.keepExistingValues, t.derivedSecrets);
      } catch (e) {
        if (!(e instanceof DeployError)) throw e;
        // Unreadable: the bundle's own values still go in (as before the platform was read, so
        // variables only on Dokploy are replaced); freshly generated ones never replace a running
        // stack's, so then the env text is left as it is.
        if (t.keepExistingValues) env = { text: undefined, kept: [], carried: [] };
        unread = `current variables not readable (${e.message})${t.keepExistingValues ? "" : "; variables set only on Dokploy were not kept"}`;
      }
    }
    // One call sets the env text, the source type (default "github" would fail to deploy) and the file.
    await api.call("POST", "/compose.update", {
      body: { composeId, ...(env.text === undefined ? {} : { env: env.text }), sourceType: "raw", composeFile: t.composeYaml },
    });
    const n = t.envVars.length;
    const notes = [
      env.text === undefined ? "left as they are on Dokploy" : "",
      env.kept.length ? `${env.kept.length} kept as set on Dokploy` : "",
      env.carried.length ? `${env.carried.length} only on Dokploy kept` : "",
      unread,
    ].filter(Boolean);
    return { value: undefined, detail: `${n} variable${n === 1 ? "" : "s"}${notes.length ? ` (${notes.join(", ")})` : ""}, compose file ${reused ? "replaced" : "set"}` };
  });

  await steps.run("Deploy", async () => {
    const res = await api.call<unknown>("POST", "/compose.deploy", {
      body: { composeId, title: DESCRIPTION },
    });
    // `true` from older releases (and the cloud with a remote server), `{success, message}` from
    // later ones: `false` or `success: false` queued nothing.
    const read = answerOf("Dokploy", "POST /compose.deploy");
    const answer = typeof res === "boolean" ? { success: res } : read.object(res);
    const message = read.optionalText(answer.message, "message");
    if (read.optionalFlag(answer.success, "success") === false) {
      throw new DeployError(`Dokploy did not deploy the stack${message ? `: ${message}` : " (its answer says success: false)"}`);
    }
    return { value: undefined, detail: message ?? "deployment queued" };
  });
}

/** `isDefault` from 0.26.1; before that the first environment is named "production". */
function defaultEnvironment(envs: DokployEnvironment[], fromCreate?: DokployEnvironment): DokployEnvironment | undefined {
  const flagged = envs.find((e) => e.isDefault === true);
  if (flagged) return flagged;
  const production = envs.find((e) => e.name === "production");
  if (production) return production;
  if (fromCreate) return envs.find((e) => e.environmentId === fromCreate.environmentId) ?? fromCreate;
  return undefined;
}

/** The first remote server Dokploy lists, for an instance that runs stacks on remote servers only. */
async function firstServer(api: JsonClient): Promise<{ serverId: string; name?: string }> {
  const read = answerOf("Dokploy", "GET /server.all");
  const [server] = read.objects(await api.call<unknown>("GET", "/server.all"), "", (row, at) => ({ serverId: read.id(row.serverId, `${at}.serverId`), name: read.optionalText(row.name, `${at}.name`) }));
  if (!server) {
    throw new DeployError("Dokploy runs compose stacks on remote servers only here (Dokploy Cloud, or remote servers only), and lists none: add a server in Dokploy first", 400);
  }
  return server;
}
