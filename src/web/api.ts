// Calls to the stackgen API. The UI listener answers every /v1 route, so URLs are relative.
import type { CatalogService, Preset, SkillPack, Category } from "../schema/catalog.ts";
import type { ValidateResponse, CompleteDocument } from "../schema/api.ts";

export type { CatalogService, Preset, SkillPack, Category, ValidateResponse, CompleteDocument };

export interface ServicesReply { services: CatalogService[]; categories: Category[]; total: number }
export interface PresetsReply { presets: Preset[] }
export interface SkillsReply { packs: SkillPack[] }

export interface DeployStepEvent { type: "step"; step: string; status: string; detail?: string }
export interface DeployResultEvent {
  type: "result";
  result: {
    success: boolean;
    steps: { step: string; status: string; detail?: string }[];
    dashboardUrl?: string;
    error?: string;
    hint?: string;
    changes?: string[];
    /** What a failed run left on the platform, and what a call without an answer may have made. */
    created?: string[];
    possiblyCreated?: string[];
  };
}
/** The server could not run the deployment at all (its own failure, not the provider's). */
export interface DeployErrorEvent { type: "error"; error: { code: string; message: string } }
export type DeployEvent = DeployStepEvent | DeployResultEvent | DeployErrorEvent;

/** An error answer of the API, with its code and per-field details when given. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly details: { field: string; message: string }[] = [],
    /** Over the rate limit: the server's Retry-After, the seconds until its calls are taken again. */
    readonly retryAfterSeconds?: number) {
    super(message);
  }
  /** One line for the user: message plus the offending fields. `keyField` says where a server
   *  key is entered, for the advice over the rate limit. */
  describe(keyField = 'as the "stackgen server key" in step 5'): string {
    // A detail that only repeats the message (field `body`, or a conflict's text after its code) adds nothing.
    const repeats = (text: string) => this.message.includes(text.replace(/^[A-Z_]+: /, ""));
    const fields = this.details.filter((d) => !repeats(d.message)).map((d) => `${d.field}: ${d.message}`).join("; ");
    const text = fields ? `${this.message} (${fields})` : this.message;
    // The person at this page is often the one who runs the server.
    return this.code === "RATE_LIMITED"
      ? `${text} Whoever runs the stackgen server can raise its limits (RATE_LIMIT_STANDARD, RATE_LIMIT_GENERATE) or give you one of its API keys: enter it ${keyField}, and every call of this page uses it.`
      : text;
  }
}

async function errorFrom(res: Response): Promise<ApiError> {
  const retryAfter = Number(res.headers.get("retry-after"));
  const retryAfterSeconds = res.status === 429 && retryAfter > 0 ? retryAfter : undefined;
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return new ApiError(res.status, "HTTP_ERROR", `The server answered ${res.status} ${res.statusText}`.trim());
  }
  const err = (body as { error?: unknown; code?: unknown })?.error;
  if (err && typeof err === "object") {
    const e = err as { code?: string; message?: string; details?: { field: string; message: string }[] };
    return new ApiError(res.status, e.code ?? "HTTP_ERROR", e.message ?? `HTTP ${res.status}`, e.details ?? [], retryAfterSeconds);
  }
  // /v1/skills uses a flat error shape (SPEC §7).
  if (typeof err === "string") return new ApiError(res.status, String((body as { code?: string }).code ?? "HTTP_ERROR"), err, [], retryAfterSeconds);
  return new ApiError(res.status, "HTTP_ERROR", `The server answered ${res.status}`);
}

/** The stackgen server's own key (X-API-Key), when the user entered one: kept in memory only, and
 *  sent on every call (a key has its own, higher limits). */
let serverKey: string | undefined;
export const useServerKey = (key: string | undefined) => (serverKey = key || undefined);
export const serverKeyInUse = (): string | undefined => serverKey;

/** How long a catalog, validate or generate call may take: they answer in milliseconds, so a
 *  call still open after this has stalled, and the page says so instead of waiting for ever. */
export const REQUEST_TIMEOUT_MS = 20_000;

async function request(path: string, init: RequestInit = {}, timeoutMs: number | null = REQUEST_TIMEOUT_MS): Promise<Response> {
  let res: Response;
  const abort = new AbortController();
  let timedOut = false;
  const timer = timeoutMs === null ? undefined : setTimeout(() => { timedOut = true; abort.abort(); }, timeoutMs);
  try {
    const headers = serverKey ? { ...(init.headers as Record<string, string> | undefined), "x-api-key": serverKey } : init.headers;
    res = await fetch(path, { ...init, headers, signal: abort.signal });
  } catch {
    if (timedOut) throw new ApiError(0, "TIMEOUT", `The stackgen server did not answer within ${timeoutMs! / 1000} s. Is it overloaded, or stuck behind a proxy?`);
    throw new ApiError(0, "NETWORK_ERROR", "Cannot reach the stackgen server. Is it still running?");
  } finally {
    clearTimeout(timer);
  }
  if (!res.ok) {
    const error = await errorFrom(res);
    // The server refuses every call that carries a key it does not know, not only a deploy.
    if (res.status === 401 && serverKey) {
      throw new ApiError(401, error.code, `${error.message} The "stackgen server key" entered in step 5 is not one of this server's keys: correct it, or empty the field.`, error.details);
    }
    throw error;
  }
  return res;
}

const jsonPost = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** The answer's JSON. One cut off on the way, or not JSON at all (a proxy's error page sent with
 *  200), is said as such rather than in the parser's words ("Unterminated string in JSON"). */
async function requestJson<T>(path: string, init?: RequestInit): Promise<T> {
  const res = await request(path, init);
  try {
    return (await res.json()) as T;
  } catch {
    throw new ApiError(res.status, "BAD_ANSWER", "The server's answer arrived incomplete or is not JSON (a proxy in between, or the connection dropped). Try again.");
  }
}

export const getServices = () => requestJson<ServicesReply>("/v1/services");
export const getPresets = () => requestJson<PresetsReply>("/v1/presets");
export const getSkills = () => requestJson<SkillsReply>("/v1/skills");
export const validate = (body: object) => requestJson<ValidateResponse>("/v1/validate", jsonPost(body));
export const generateComplete = (body: object) => requestJson<CompleteDocument>("/v1/generate?format=complete", jsonPost(body));

/** Starts a deployment and yields each NDJSON event as it arrives. The server key (see
 *  useServerKey) is how a page opened from another machine may deploy. */
export async function* deploy(body: object): AsyncGenerator<DeployEvent> {
  const init = jsonPost(body);
  // No time limit: the answer is a progress stream that lasts as long as the deployment.
  const res = await request("/v1/deploy", init, null);
  if (!res.body) throw new ApiError(res.status, "HTTP_ERROR", "The server sent no progress stream.");
  yield* readNdjson(res.body);
}

/** Splits a byte stream into JSON lines; a partial last line waits for the next chunk. */
export async function* readNdjson(stream: ReadableStream<Uint8Array>): AsyncGenerator<DeployEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
    const lines = buffered.split("\n");
    buffered = done ? "" : lines.pop() ?? "";
    for (const line of lines) if (line.trim()) yield JSON.parse(line) as DeployEvent;
    if (done) return;
  }
}
