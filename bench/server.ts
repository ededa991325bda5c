// One HTTP server variant for bench/run.ts, in its own process so the load generator does not share
// its event loop. Prints `READY <port>` once listening on 127.0.0.1.
//   baseline   trivial Bun.serve answering a small JSON (reads the body of a POST)
//   payload    the same, answering with a generate response for the bench's stack, made once
//   guarded    stackgen as served: startServers with the full guard (in-memory limiter, high limits)
//   unlimited  the same guard, but its counter store counts nothing (the rate limiter's work removed)
//   unguarded  stackgen's app and hot routes with no guard at all (no limiter, keys, CORS, security headers, log)
import { createApp } from "../src/api/app.ts";
import { startServers } from "../src/api/server.ts";
import { createGuard, guardConfig, MAX_BODY_BYTES, type CounterStore } from "../src/api/guard/index.ts";
import { hotRoutes } from "../src/api/hot-routes.ts";
import { pathOf } from "../src/api/guard/request-log.ts";
import { getCatalog } from "../src/catalog/index.ts";
import { generateBundle } from "../src/core/generate/index.ts";
import { SEVEN } from "./lib.ts";

/** Far above any bench count, so nothing is ever refused. */
const HIGH_LIMITS = { standard: 1_000_000_000, generate: 1_000_000_000 };
// Silent: a log line per request would measure the pipe to this bench rather than the server.
const config = guardConfig({ anonymousLimits: HIGH_LIMITS, authenticatedLimits: HIGH_LIMITS, logLevel: "silent" });

/** A store that never counts: every request sees an empty window. */
class CountNothingStore implements CounterStore {
  async hit(_key: string, windowMs: number) {
    return { count: 0, resetAt: Date.now() + windowMs };
  }
  async peek(_key: string, windowMs: number) {
    return { count: 0, resetAt: Date.now() + windowMs };
  }
  health() {
    return { rateLimitStore: "none" };
  }
  async close() {}
}

const SERVE = { port: 0, uiPort: 0, host: "127.0.0.1" } as const;

/** A trivial Bun.serve: reads the body of a POST, answers `payload` as JSON. */
function trivialServer(payload: string): number {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      if (req.method === "POST") await req.arrayBuffer();
      return new Response(payload, { headers: { "content-type": "application/json" } });
    },
  });
  return server.port!;
}

function start(mode: string): number {
  switch (mode) {
    case "baseline":
      return trivialServer(JSON.stringify({ status: "ok", valid: true, warnings: [] }));
    case "payload": {
      const generated = generateBundle({ projectName: "bench", services: SEVEN }, getCatalog());
      return trivialServer(`{"files":${generated.filesJson()},"metadata":${JSON.stringify(generated.metadata)}}`);
    }
    case "guarded":
      return startServers({ ...SERVE, guardConfig: config }).api.port!;
    case "unlimited":
      return startServers({ ...SERVE, guard: createGuard(config, { store: new CountNothingStore() }) }).api.port!;
    case "unguarded": {
      const app = createApp();
      const hot = hotRoutes(getCatalog(), MAX_BODY_BYTES);
      const fetch = async (req: Request) => {
        const reply = hot(req, pathOf(req.url));
        if (!reply) return app.handle(req);
        const { status, type, body } = await reply;
        return new Response(body, { status, headers: { "content-type": type } });
      };
      return Bun.serve({ port: 0, hostname: "127.0.0.1", fetch }).port!;
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

process.stdout.write(`READY ${start(process.argv[2] ?? "")}\n`);
