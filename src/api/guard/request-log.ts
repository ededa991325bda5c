// One JSON line per request on stdout (CONTRACT §1): method, path without its query, status,
// duration and request id. Never bodies, headers, keys, query strings or client secrets.
import type { LogLevel } from "./config.ts";

export type LogSink = (line: string) => void;

const RANK: Record<LogLevel, number> = { silent: 0, error: 1, warn: 2, info: 3, debug: 4 };
const MAX_PATH_CHARS = 256;
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestLine {
  method: string;
  path: string;
  status: number;
  ms: number;
  requestId: string;
}

export interface GuardLog {
  /** Whether request lines are written at this level (callers skip building them otherwise). */
  readonly logsRequests: boolean;
  request(line: RequestLine): void;
  event(level: Exclude<LogLevel, "silent">, message: string, fields?: Record<string, string>): void;
}

export const stdoutSink: LogSink = (line) => void process.stdout.write(line);

export function createGuardLog(level: LogLevel, sink: LogSink = stdoutSink): GuardLog {
  const emit = (lineLevel: Exclude<LogLevel, "silent">, fields: Record<string, unknown>) => {
    if (RANK[lineLevel] > RANK[level]) return;
    // JSON.stringify escapes control characters, so a crafted path cannot forge a log line.
    sink(JSON.stringify({ time: new Date().toISOString(), level: lineLevel, ...fields }) + "\n");
  };
  return {
    logsRequests: RANK.info <= RANK[level],
    request: (line) => {
      const lineLevel = line.status >= 500 ? "error" : "info";
      if (RANK[lineLevel] > RANK[level]) return; // dropped: build nothing
      emit(lineLevel, { msg: "request", ...line, path: line.path.slice(0, MAX_PATH_CHARS) });
    },
    event: (lineLevel, message, fields) => emit(lineLevel, { msg: message, ...fields }),
  };
}

/** The caller's X-Request-Id when it is short and plain, else a fresh UUID. */
export function requestIdFrom(incoming: string | null): string {
  return incoming !== null && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
}

/** Path of a request URL without query string or fragment. */
export function pathOf(url: string): string {
  const schemeEnd = url.indexOf("//");
  const start = url.indexOf("/", schemeEnd < 0 ? 0 : schemeEnd + 2);
  if (start < 0) return "/";
  const end = url.slice(start).search(/[?#]/);
  return end < 0 ? url.slice(start) : url.slice(start, start + end);
}
