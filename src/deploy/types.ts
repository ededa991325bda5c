// Shared shapes of the deployers (SPEC §4.2, CONTRACT §5). The CLI, the HTTP API and the tests
// all speak these types, so they stay free of any provider detail.
import type { EnvVar } from "../core/parse-env.ts";
import type { DerivedSecret } from "../core/generate/secrets.ts";

export type { EnvVar };

export type ProviderName = "coolify" | "dokploy";

export type StepStatus = "running" | "ok" | "failed" | "skipped";

/** One progress event. A step is reported "running" first, then exactly once more with its
 *  outcome; in between, "running" again with a detail while a call waits to be tried again. */
export interface DeployStep {
  step: string;
  status: StepStatus;
  detail?: string;
}

export interface DeployResult {
  success: boolean;
  provider: ProviderName;
  /** Final state of every step that was reached, in order (no "running" entries). */
  steps: DeployStep[];
  /** Coolify project uuid / Dokploy projectId. */
  projectId?: string;
  /** Coolify service uuid / Dokploy composeId. */
  stackId?: string;
  /** The same id under the name the reference tool's result gives it, for its clients. */
  composeId?: string;
  dashboardUrl?: string;
  /** What the compose adaptation changed (or could not change) for the platform. */
  changes: string[];
  /** One line; for HTTP failures exactly `<Provider> API <status>: <reason>`. Never holds the key. */
  error?: string;
  /** The step that failed, when success is false. */
  failedStep?: string;
  /** What to check, for a failure the platform's answer explains (a wrong or disabled key). */
  hint?: string;
  /** Resources this run created on the platform (so a failed run can be cleaned up or retried with --update). */
  created: string[];
  /** Resources a create call may have made though its answer never came (a timeout, a dropped
   *  connection, an answer that cannot be read); only present when there are some. */
  possiblyCreated?: string[];
}

export type StepHandler = (event: DeployStep) => void;

/** What a provider needs to deploy one prepared bundle. */
export interface DeployTarget {
  /** Instance base URL without trailing slash and without an `/api` suffix. */
  baseUrl: string;
  apiKey: string;
  update: boolean;
  projectName: string;
  /** The compose file after adaptation. */
  composeYaml: string;
  /** The `.env` text as written in the bundle. */
  envText: string;
  /** The same variables, parsed. */
  envVars: EnvVar[];
  /** Coolify: the Docker destination (uuid, name or network) to use on a server with several. */
  destination?: string;
  /** On update, values the platform has set stay (the bundle was generated just now, its secrets
   *  are new); see existing-env.ts. */
  keepExistingValues: boolean;
  /** The variables generated just now (with keepExistingValues): when the platform's own values
   *  cannot be read, these are treated as set there and not sent. */
  freshSecrets: ReadonlySet<string>;
  /** With keepExistingValues: the signed API keys among them, signed again with a secret the
   *  platform keeps. */
  derivedSecrets: readonly DerivedSecret[];
  fetch?: FetchLike;
  timeoutMs?: number;
  /** Waits between tries of a call the platform asked to slow down (tests count them). */
  sleep?: (ms: number) => Promise<unknown>;
  /** Aborted (Ctrl-C): no call is tried again. */
  signal?: AbortSignal;
  /** Told before a call is tried again after `seconds` (see http.ts retryWait). */
  onWait?: (seconds: number, refusal: { message: string }) => void;
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/**
 * The step runner a provider drives. `run` reports running/ok/failed around one step;
 * `skip` reports a step that was not needed; `note` records ids and created resources so
 * that a failure later on can still say what exists; `creating` wraps a create call.
 */
export interface StepContext {
  run<T>(step: string, work: () => Promise<StepOutcome<T>>): Promise<T>;
  skip(step: string, detail: string): void;
  note(fields: { projectId?: string; stackId?: string; dashboardUrl?: string; created?: string }): void;
  /** Runs the call that creates `what`; when it fails without the platform's refusal (its outcome
   *  unknown), records `what` as possibly created before passing the failure on. */
  creating<T>(what: string, call: () => Promise<T>): Promise<T>;
}

export interface StepOutcome<T> {
  value: T;
  detail?: string;
}

/** One deployer. `deploy` throws on failure; the step context already knows where it stopped. */
export interface DeployProvider {
  readonly name: ProviderName;
  /** Display name used in messages: `Coolify API 401: Unauthorized`. */
  readonly label: string;
  /** A project name the platform would refuse (checked before any call): a one-line problem, or null. */
  checkProjectName?(name: string): string | null;
  /** Values of the .env the platform would fail over (checked before any call), each problem a line. */
  checkEnv?(envText: string, vars: readonly EnvVar[]): string[];
  /** What to check after the platform refused a call (`status`, its message `detail`), or
   *  undefined: the fixed error text (SPEC §7) says only the status. */
  hintFor?(status: number, detail: string): string | undefined;
  deploy(target: DeployTarget, steps: StepContext): Promise<void>;
}
