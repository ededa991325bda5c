// One error model for every shell: the API maps `status` + `code` to the SPEC error body, the CLI
// maps `exitCode` to its exit status and prints `message` as one line.
export interface FieldIssue {
  field: string;
  message: string;
}

export class StackgenError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 500,
    readonly details?: FieldIssue[],
    /** CLI exit code: 1 failure, 2 bad usage or input. */
    readonly exitCode = status >= 400 && status < 500 ? 2 : 1,
  ) {
    super(message);
    this.name = "StackgenError";
  }
}

export const validationError = (message: string, details?: FieldIssue[]) =>
  new StackgenError("VALIDATION_ERROR", message, 400, details);
export const notFound = (message: string) => new StackgenError("NOT_FOUND", message, 404);
export const conflictError = (message: string, details?: FieldIssue[]) => new StackgenError("CONFLICT_ERROR", message, 409, details, 1);
/** A failure of the CLI's environment or an operation (exit 1). */
export const failure = (code: string, message: string) => new StackgenError(code, message, 500, undefined, 1);
/** The conventional exit status of a command ended by Ctrl-C. */
export const INTERRUPTED_EXIT = 130;
/** An operation stopped at a safe point after Ctrl-C (SIGINT, SIGTERM, SIGHUP), exit 130. */
export const interruptedError = (message: string) => new StackgenError("INTERRUPTED", message, 500, undefined, INTERRUPTED_EXIT);
/** Bad flags or input files (exit 2). `field` names the input it is about, for the API (whose
 *  VALIDATION_ERROR details name it) when the same check serves both. */
export const usageError = (message: string, field?: string) => new StackgenError("USAGE_ERROR", message, 400, field ? [{ field, message }] : undefined, 2);

/** An address as messages may show it: without its user part (`tcp://user:pass@host` names a
 *  password, a pasted `https://user:token@…` a token). */
export const withoutUserPart = (address: string) => address.replace(/\/\/.*@/, "//***@");

/** Field paths of `issues` as seen from a document that holds them under `prefix`. */
export const issuesUnder = (prefix: string, issues: FieldIssue[]): FieldIssue[] =>
  issues.map((d) => ({ ...d, field: d.field === "body" ? prefix : `${prefix}.${d.field}` }));

/** Runs `check` on a part of a document: the fields its errors name are given from the document's root. */
export function withFieldsUnder<T>(prefix: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof StackgenError) || !error.details) throw error;
    throw new StackgenError(error.code, error.message, error.status, issuesUnder(prefix, error.details), error.exitCode);
  }
}
