// `stackgen serve`: API on --port (3456) and UI on --ui-port (3654). Flags win over env (CONTRACT §1).
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { defineCommand } from "citty";
import { failure, usageError } from "../errors.ts";
import { log } from "./output.ts";
import { urlHost } from "./healthcheck.ts";

function portOf(name: string, flag: string | undefined, env: string | undefined, fallback: number, envName: string): number {
  const raw = flag ?? env;
  if (raw === undefined || raw === "") return fallback;
  // Digits only: Number() would also read 0x10, 1e3 or " 80" as ports.
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  // Named as the user gave it: a bad value in the environment is not a bad flag.
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw usageError(`${flag !== undefined ? name : `${envName} (from the environment)`} must be a port number (0-65535), got "${raw}"`);
  return n;
}

export default defineCommand({
  meta: { name: "serve", description: "Serve the HTTP API (port 3456) and the web UI (port 3654)" },
  args: {
    port: { type: "string", description: "API port (env PORT, default 3456)" },
    "ui-port": { type: "string", description: "UI port, 0 disables the UI listener (env UI_PORT, default 3654)" },
    host: { type: "string", description: "Interface to listen on (env HOST, default 0.0.0.0)" },
  },
  async run({ args }) {
    const { startServers } = await import("../api/server.ts");
    const { readGuardConfig } = await import("../api/guard/config.ts");
    // Keys, limits, CORS, Redis, logging: read once; a bad value is a usage error (exit 2).
    const guardConfig = readGuardConfig(process.env);
    const port = portOf("--port", args.port, process.env.PORT, 3456, "PORT");
    const uiPort = portOf("--ui-port", args["ui-port"], process.env.UI_PORT, 3654, "UI_PORT");
    const host = args.host ?? process.env.HOST ?? "0.0.0.0";
    await checkHost(host);
    const servers = listening(() => startServers({ port, uiPort, host, guardConfig }), host);
    const shown = urlHost(host);
    log.info(`stackgen API on http://${shown}:${servers.api.port}/v1 (docs at /v1/docs)`);
    if (servers.ui) log.info(`stackgen UI on http://${shown}:${servers.ui.port}/`);
    const stop = async () => { await servers.stop(); process.exit(0); };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    await new Promise(() => {});
  },
});

const cannotListen = (host: string) => `Cannot listen on ${host}: not an address of this machine, nor a name that resolves to one (--host / HOST).`;

/** A host name is looked up before listening: Bun's listen reports a failed lookup under
 *  whatever errno the resolver's code happens to match (EAGAIN, ENOTTY). */
async function checkHost(host: string): Promise<void> {
  if (isIP(host)) return;
  try {
    await lookup(host);
  } catch {
    throw usageError(cannotListen(host));
  }
}

/** Bun's listen errors, said in terms of the flags that cause them. */
function listening<T>(start: () => T, host: string): T {
  try {
    return start();
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    const port = /port (\d+)/.exec(message ?? "")?.[1];
    if (code === "EADDRINUSE") throw failure("LISTEN_FAILED", `Port ${port ?? "?"} on ${host} is already in use; choose another with --port / --ui-port (0 disables the UI).`);
    if (code === "EACCES") throw failure("LISTEN_FAILED", `Not allowed to listen on ${host}${port ? `:${port}` : ""}; ports below 1024 need privileges.`);
    if (code === "EINVAL" || code === "EADDRNOTAVAIL") throw usageError(cannotListen(host));
    throw error;
  }
}
