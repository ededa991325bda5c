// POST /v1/deploy: the UI's relay to a user's Coolify or Dokploy. Generates the bundle (with a
// complete document's .env values), deploys it and streams the steps as NDJSON
// (`{type:"step",...}` lines, then one `{type:"result"}`).
// It makes the server call a user-given URL, so only trusted callers may use it.
import { Elysia } from "elysia";
import type { Catalog } from "../../catalog/index.ts";
import { DeployRequest, ErrorBody, routeSchema } from "../../schema/api.ts";
import { generateBundle, GENERATE_MESSAGE, type Generated } from "../../core/generate/index.ts";
import { mergeEnv, settingsTaken, type EnvMerge } from "../../core/env-merge.ts";
import { deployBundle, projectNameProblem, type DeployStep } from "../../deploy/index.ts";
import { StackgenError, validationError, withFieldsUnder } from "../../errors.ts";
import { jsonObjectBody } from "../json-body.ts";
import { isJsonObject, jsonKind } from "../../schema/json-kind.ts";

/** Decides whether this request may make the server call out (loopback, valid key, or opt-in). */
export type DeployPolicy = (request: Request) => boolean;

export const DEPLOY_MESSAGE = "Invalid deploy request";

export const FORBIDDEN_MESSAGE =
  "Deploying through the API is allowed only from this machine (loopback) or with a valid X-API-Key. " +
  "Set ALLOW_REMOTE_DEPLOY=true on the server to allow it from anywhere.";
/** The same for a server with no API keys at all: no key could unlock it, so none is asked for. */
export const FORBIDDEN_WITHOUT_KEYS_MESSAGE =
  "Deploying through the API is allowed only from this machine (loopback): this server has no API keys (API_KEYS), " +
  "so none can unlock it. Set API_KEYS, or ALLOW_REMOTE_DEPLOY=true, on the server to allow it from elsewhere.";

/** A complete document's `.env` as the CLI (`generate --from`) and the UI's import take one, since
 *  it may be someone else's: only this stack's own variables, each value in the shape its variable
 *  must have, and every setting it changes beyond its secrets (the gateway's image, an endpoint
 *  the stack sends credentials to) named. What was left out or taken is said in `changes`. */
export function envOfDocument(documentEnv: string, generated: Pick<Generated, "files" | "secretNames" | "derivedSecrets" | "valuePatterns">): { text: string; changes: string[] } {
  const made = generated.files[".env"]!;
  const secrets = generated.secretNames;
  let merged: EnvMerge;
  try {
    merged = mergeEnv(documentEnv, made, secrets, generated.derivedSecrets, { keepExtra: false, patterns: generated.valuePatterns });
  } catch (error) {
    // A value whose quote never closes: name where it is, from the body's root.
    if (error instanceof StackgenError && !error.details) throw validationError(DEPLOY_MESSAGE, [{ field: DOCUMENT_ENV_FIELD, message: error.message }]);
    throw error;
  }
  const taken = settingsTaken(merged, made, secrets);
  const one = (names: string[]) => names.length === 1;
  const changes = [
    taken.length ? `.env of the document: ${taken.join(", ")} taken with ${one(taken) ? "a value" : "values"} other than this stackgen makes: check ${one(taken) ? "it" : "them"} on the platform if the document is not your own` : "",
    merged.extra.length ? `.env of the document: ${merged.extra.join(", ")} not taken (not ${one(merged.extra) ? "a variable" : "variables"} of this stack)` : "",
    merged.refused.length ? `.env of the document: ${merged.refused.join(", ")} not taken (not the shape ${one(merged.refused) ? "that setting" : "those settings"} must have); the generated ${one(merged.refused) ? "value was" : "values were"} sent` : "",
  ].filter(Boolean);
  return { text: merged.text, changes };
}

/** Runs a check of generate's on a deploy request: its errors say what was refused in this
 *  route's words ("Invalid deploy request"), not generate's. Messages of their own (CONTRACT §3's
 *  "No migration path from config version ...") stay. */
function asDeployRequest<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof StackgenError && error.message === GENERATE_MESSAGE) throw new StackgenError(error.code, DEPLOY_MESSAGE, error.status, error.details, error.exitCode);
    throw error;
  }
}

/** Where a complete document's .env is in a deploy request. */
const DOCUMENT_ENV_FIELD = "complete.files..env";

/** The body, once a complete document's `files` is an object: Elysia's check makes `"x"` into
 *  `{"0": "x"}` and `[]` or `5` into `{}` before judging a record, so such a document was deployed
 *  with its files quietly dropped. */
function documentFilesChecked(doc: Record<string, unknown>): Record<string, unknown> {
  const complete = doc.complete;
  if (!isJsonObject(complete) || complete.files === undefined || isJsonObject(complete.files)) return doc;
  throw validationError(DEPLOY_MESSAGE, [{ field: "complete.files", message: `Expected object, received ${jsonKind(complete.files)}` }]);
}

/** `keysConfigured`: whether the server has API keys (false words the refusal without them). */
export const deployRoutes = (catalog: Catalog, maxBodyBytes: number, policy: DeployPolicy, fetchImpl?: typeof fetch, keysConfigured = true) =>
  new Elysia({ name: "deploy-routes" }).post("/deploy", async ({ body, request }) => {
    if (!policy(request)) throw new StackgenError("FORBIDDEN", keysConfigured ? FORBIDDEN_MESSAGE : FORBIDDEN_WITHOUT_KEYS_MESSAGE, 403);
    if (!body.input && !body.complete?.input) throw validationError(DEPLOY_MESSAGE, [{ field: "input", message: "Required: a generation input (`input`) or a complete document (`complete`)" }]);
    // A complete document is generated as generate reads one posted back: through its `input`
    // (another format version is refused), its errors naming `complete.input.<field>`.
    const [source, sourceField] = body.input ? [body.input, "input"] : "formatVersion" in body.complete! ? [body.complete!, "complete"] : [body.complete!.input, "complete.input"];
    const inputField = body.input ? "input" : "complete.input";
    const generated = asDeployRequest(() => withFieldsUnder(sourceField, () => generateBundle(source, catalog)));
    const input = generated.input;
    const nameProblem = projectNameProblem(body.provider, input.projectName);
    if (nameProblem) throw validationError(DEPLOY_MESSAGE, [{ field: `${inputField}.projectName`, message: nameProblem }]);
    // A complete document's .env holds the values the user saw or downloaded: deploy those (new
    // variables get the fresh ones). The other files are regenerated from its input.
    const documentEnv = (body.complete?.files as Record<string, string> | undefined)?.[".env"];
    const { text: envText, changes: envChanges } = documentEnv === undefined ? { text: generated.files[".env"], changes: [] } : envOfDocument(documentEnv, generated);
    const files: Record<string, string> = { ...generated.files, ".env": envText };

    const encoder = new TextEncoder();
    const queue: string[] = [];
    let wake: (() => void) | undefined;
    const push = (line: unknown) => { queue.push(JSON.stringify(line) + "\n"); wake?.(); };
    let firstStep!: () => void;
    const started = new Promise<void>((r) => (firstStep = r));
    // A caller gone (closed tab, dropped connection) reads no result: like the CLI's Ctrl-C, the
    // call under way finishes and no further step starts, so less is left on the platform unseen.
    const gone = new AbortController();
    const leave = () => gone.abort();
    request.signal.addEventListener("abort", leave, { once: true });
    const run = deployBundle({
      signal: gone.signal,
      provider: body.provider,
      url: body.url,
      apiKey: body.apiKey,
      update: body.update,
      destination: body.destination,
      // An update through the API never replaces a value the platform has set: these secrets
      // were generated just now, and the running stack's data is locked with the old ones.
      keepExistingValues: true,
      freshSecrets: generated.secretNames,
      derivedSecrets: generated.derivedSecrets,
      projectName: input.projectName,
      composeYaml: files["docker-compose.yml"],
      envText,
      files,
      ...(fetchImpl ? { fetch: fetchImpl as never } : {}),
    }, (step: DeployStep) => { push({ type: "step", ...step }); firstStep(); });
    // Input the provider refuses outright fails before any call: answer it as a plain 400.
    await Promise.race([started, run]);

    let done = false;
    // What the document's .env was not taken for, or changed beyond its secrets, comes first.
    run.then((result) => push({ type: "result", result: envChanges.length ? { ...result, changes: [...envChanges, ...result.changes] } : result }), (e: unknown) => {
      const err = e instanceof StackgenError ? e : new StackgenError("INTERNAL_ERROR", "Deployment failed unexpectedly", 500);
      push({ type: "error", error: { code: err.code, message: err.message } });
    }).finally(() => { done = true; wake?.(); });

    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        while (queue.length === 0 && !done) await new Promise<void>((r) => (wake = r));
        while (queue.length) controller.enqueue(encoder.encode(queue.shift()!));
        if (done && queue.length === 0) controller.close();
      },
      cancel: leave,
    });
    return new Response(stream, { headers: { "content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-store" } });
  }, {
    // application/json only: it cannot come cross-origin without a preflight (see readJsonText).
    // Who may deploy is settled before the body is read: a caller who may not learns nothing
    // of what the route checks.
    parse: (context) => {
      if (!policy(context.request)) throw new StackgenError("FORBIDDEN", keysConfigured ? FORBIDDEN_MESSAGE : FORBIDDEN_WITHOUT_KEYS_MESSAGE, 403);
      return jsonObjectBody(DEPLOY_MESSAGE, maxBodyBytes, documentFilesChecked, true)(context);
    },
    body: routeSchema(DeployRequest),
    detail: {
      summary: "Generate and deploy to Coolify or Dokploy (streamed)",
      description: "Streams NDJSON: one `{type:\"step\", step, status, detail?}` line per deploy step, then `{type:\"result\", result}` " +
        "(or `{type:\"error\", error}`). Allowed for loopback clients and requests with a valid X-API-Key unless the server sets ALLOW_REMOTE_DEPLOY=true; otherwise 403 FORBIDDEN.",
      tags: ["stacks"],
      responses: {
        200: { description: "NDJSON stream of deploy steps ending with the result", content: { "application/x-ndjson": { schema: { type: "string" } } } },
        400: { description: "VALIDATION_ERROR (bad request, unknown provider, unusable URL)", content: { "application/json": { schema: ErrorBody } } },
        403: { description: "FORBIDDEN: not loopback, no valid key, and ALLOW_REMOTE_DEPLOY is not true", content: { "application/json": { schema: ErrorBody } } },
        409: { description: "CONFLICT_ERROR: the selection has conflicts", content: { "application/json": { schema: ErrorBody } } },
      } as never,
    },
  });
