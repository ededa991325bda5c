// `stackgen healthcheck`: asks the local API for /v1/health and exits 0 when it answers "ok".
// The container image has no shell or curl, so its HEALTHCHECK runs the binary itself.
import { defineCommand } from "citty";
import { failure, usageError } from "../errors.ts";
import { printJson, printText } from "./output.ts";
import { jsonArg } from "../docker/cli-support.ts";

/** Hosts that mean "every interface": probe loopback instead. */
const WILDCARD_HOSTS = new Set(["", "0.0.0.0", "::", "[::]"]);

/** A host as a URL names it: an IPv6 address in brackets (http://[::1]:3456). */
export const urlHost = (host: string) => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host);

export function probeUrl(port: string | undefined, host: string | undefined): string {
  const portText = port === undefined || port === "" ? "3456" : port;
  const n = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw usageError(`--port must be a port number (1-65535), got "${portText}"`);
  const rawHost = (host ?? "").trim();
  const target = WILDCARD_HOSTS.has(rawHost) ? "127.0.0.1" : rawHost;
  const bracketed = urlHost(target);
  // A host name or address only: a `/`, `?` or `@` would move the probe to another URL.
  if (!/^(\[[0-9A-Fa-f:.%A-Za-z]+\]|[A-Za-z0-9._-]+)$/.test(bracketed)) throw usageError(`--host must be a host name or IP address, got "${rawHost}"`);
  return `http://${bracketed}:${n}/v1/health`;
}

export default defineCommand({
  meta: { name: "healthcheck", description: "Exit 0 when the local API answers /v1/health (for container health checks)" },
  args: {
    port: { type: "string", description: "API port to probe (env PORT, default 3456)" },
    host: { type: "string", description: "Host to probe (env HOST; 0.0.0.0 or unset probes 127.0.0.1)" },
    timeout: { type: "string", description: "Give up after this many milliseconds (default 3000)" },
    json: jsonArg,
  },
  async run({ args }) {
    const url = probeUrl(args.port ?? process.env.PORT, args.host ?? process.env.HOST);
    const timeoutMs = Number(args.timeout ?? 3000);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw usageError(`--timeout must be a positive number of milliseconds`);
    let status: number;
    let body: { status?: unknown; version?: unknown; error?: { code?: unknown } } = {};
    try {
      const answer = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      status = answer.status;
      body = (await answer.json().catch(() => ({}))) as typeof body;
    } catch (e) {
      throw failure("UNHEALTHY", `No answer from ${url}: ${(e as Error).message}`);
    }
    // /v1/health counts against the caller's rate limit like any route, and the probe shares
    // 127.0.0.1's window with local clients: the server's own 429 means it is up and answering.
    // Reported healthy, or a busy server would be restarted by whatever watches its health.
    if (status === 429 && body.error?.code === "RATE_LIMITED") {
      if (args.json) printJson({ status: "ok", version: null, url, rateLimited: true });
      else printText("ok (rate limited: the server answered with its own limit)");
      return;
    }
    if (status !== 200 || body.status !== "ok") throw failure("UNHEALTHY", `${url} answered ${status}`);
    if (args.json) printJson({ status: "ok", version: body.version ?? null, url });
    else printText(`ok ${String(body.version ?? "")}`.trim());
  },
});
