// A local HTTP server that answers for a provider and checks every request against that
// provider's published OpenAPI document (research §7): the request must match an operation
// (method + path), and its parameters and body must validate. Anything else is recorded as a
// violation, which the tests assert to be empty. Provider-specific server rules (auth, content
// type, fields the spec cannot express) live in the provider fakes, on top of this.
import OpenAPIBackend, { type Operation, type Request as OpenApiRequest } from "openapi-backend";
import addFormats from "ajv-formats";

export interface RecordedCall {
  method: string;
  /** Path below the API root, e.g. `/projects/abc` (Coolify) or `/project.one` (Dokploy). */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  operationId?: string;
  status: number;
}

export interface Reply {
  status: number;
  /** JSON body (ignored when `text` is set). */
  body?: unknown;
  text?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/** Answer an operation with a fixed reply (after validation, so state is untouched). */
export interface Injection {
  operationId: string;
  reply: Reply;
  /** Only the nth matching call (1-based); every call when absent. */
  nth?: number;
}

export interface RequestContext {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** Parsed JSON, or the raw text when the body is not JSON, or undefined when empty. */
  body: unknown;
  rawBody: string;
  operationId: string;
  params: Record<string, string>;
}

export interface ProviderRules {
  /** Checks that run before schema validation (auth, content type). A reply ends the request. */
  before(ctx: RequestContext, violate: (why: string) => void): Reply | null;
  /** The provider's answer when schema validation fails. */
  validationFailed(errors: string[]): Reply;
  /** The operation itself, against the fake's state. */
  handle(ctx: RequestContext, violate: (why: string) => void): Reply | Promise<Reply>;
  /** The provider's answer to a path the document has, asked with another method. */
  methodNotAllowed?(path: string, allowed: string[]): Reply;
}

const specCache = new Map<string, Promise<OpenAPIBackend>>();

/** One OpenAPIBackend per document and API root, built once per test process. */
function loadSpec(specPath: string, apiRoot: string): Promise<OpenAPIBackend> {
  const key = `${specPath}#${apiRoot}`;
  let api = specCache.get(key);
  if (!api) {
    api = (async () => {
      const definition = JSON.parse(await Bun.file(specPath).text());
      const backend = new OpenAPIBackend({
        definition,
        apiRoot,
        // quick: validators compile lazily per operation (the full Coolify document takes ~13 s eagerly).
        // The documents themselves are checked by specs.test.ts.
        quick: true,
        coerceTypes: true,
        // strict:false: Coolify's 3.0-style `nullable` (Ajv knows it) and `example` keywords.
        ajvOpts: { strict: false, allErrors: true, logger: false },
        customizeAjv: (ajv) => {
          addFormats(ajv);
          return ajv;
        },
      });
      await backend.init();
      return backend;
    })();
    specCache.set(key, api);
  }
  return api;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

export class SpecFake {
  readonly calls: RecordedCall[] = [];
  readonly violations: string[] = [];
  injections: Injection[] = [];
  /** Answer everything with a redirect to this origin (to prove the client does not follow). */
  redirectTo?: string;
  /** Delay every answer (timeouts). */
  delayMs = 0;
  private server?: ReturnType<typeof Bun.serve>;
  private api?: OpenAPIBackend;

  constructor(
    private readonly specPath: string,
    /** The path prefix of the API on the instance, e.g. `/api/v1`. */
    readonly apiRoot: string,
    private readonly rules: ProviderRules,
  ) {}

  async start(): Promise<this> {
    this.api = await loadSpec(this.specPath, this.apiRoot);
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => this.answer(req) });
    return this;
  }

  /** Instance URL the client is given (without the API root). */
  get url(): string {
    if (!this.server) throw new Error("fake not started");
    return `http://127.0.0.1:${this.server.port}`;
  }

  async stop(): Promise<void> {
    await this.server?.stop(true);
    this.server = undefined;
  }

  /** `METHOD /path` of each call, for sequence assertions. */
  sequence(): string[] {
    return this.calls.map((c) => `${c.method} ${c.path}`);
  }

  private async answer(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const headers: Record<string, string> = {};
    req.headers.forEach((value, key) => (headers[key.toLowerCase()] = value));
    const rawBody = await req.text();
    const query = Object.fromEntries(url.searchParams);
    const relPath = url.pathname.startsWith(this.apiRoot) ? url.pathname.slice(this.apiRoot.length) : url.pathname;
    const call: RecordedCall = { method: req.method, path: relPath, query, headers, body: parseBody(rawBody), status: 0 };
    this.calls.push(call);

    const reply = await this.route(req.method.toLowerCase(), url.pathname, query, headers, rawBody, call);
    call.status = reply.status;
    if (this.delayMs) await Bun.sleep(this.delayMs);
    return toResponse(reply);
  }

  private async route(
    method: string,
    fullPath: string,
    query: Record<string, string>,
    headers: Record<string, string>,
    rawBody: string,
    call: RecordedCall,
  ): Promise<Reply> {
    const where = `${method.toUpperCase()} ${fullPath}`;
    const violate = (why: string) => this.violations.push(`${where}: ${why}`);
    if (this.redirectTo) return { status: 302, headers: { location: `${this.redirectTo}${fullPath}` }, text: "" };

    const api = this.api!;
    const oaRequest: OpenApiRequest = { method, path: fullPath, query, headers, body: call.body };
    const operation = api.matchOperation(oaRequest) as Operation | undefined;
    if (!operation?.operationId) {
      const allowed = METHODS.filter((m) => m !== method && api.matchOperation({ ...oaRequest, method: m }));
      violate(allowed.length ? "method not allowed by the spec" : "no such path in the spec");
      if (!allowed.length) return { status: 404, body: { message: "Not found." } };
      const upper = allowed.map((m) => m.toUpperCase());
      return this.rules.methodNotAllowed?.(fullPath, upper) ?? { status: 405, headers: { allow: upper.join(", ") }, body: { message: "Method Not Allowed" } };
    }
    call.operationId = operation.operationId;
    const params = (api.router.parseRequest(oaRequest, operation).params ?? {}) as Record<string, string>;
    const ctx: RequestContext = { method, path: fullPath, query, headers, body: call.body, rawBody, operationId: operation.operationId, params };

    const early = this.rules.before(ctx, violate);
    if (early) return early;

    const result = api.validator.validateRequest(oaRequest, operation);
    if (result.errors?.length) {
      const messages = result.errors.map((e) => `${e.instancePath || "/"} ${e.message}`);
      violate(`request does not match the spec (${operation.operationId}): ${messages.join("; ")}`);
      return this.rules.validationFailed(messages);
    }

    const seen = this.calls.filter((c) => c.operationId === operation.operationId).length;
    const injected = this.injections.find((i) => i.operationId === operation.operationId && (i.nth === undefined || i.nth === seen));
    if (injected) return injected.reply;

    return this.rules.handle(ctx, violate);
  }
}

function parseBody(raw: string): unknown {
  if (raw === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function toResponse(reply: Reply): Response {
  const headers = new Headers(reply.headers);
  if (reply.text !== undefined) {
    if (!headers.has("content-type") && reply.contentType) headers.set("content-type", reply.contentType);
    return new Response(reply.text, { status: reply.status, headers });
  }
  headers.set("content-type", reply.contentType ?? "application/json");
  return new Response(reply.body === undefined ? "" : JSON.stringify(reply.body), { status: reply.status, headers });
}

export const randomId = (length = 24) => {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let out = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(length))) out += alphabet[byte % alphabet.length];
  return out;
};
