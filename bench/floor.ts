// `bun bench/floor.ts`: where a POST /v1/generate request spends its server time. One server
// process serves every variant below on its own path, and the load generator alternates between
// them, so the machine's drift during the run hits all variants alike. Each variant adds one
// layer to the previous; the table shows server CPU per request (from /proc) and throughput.
// Used to find the floor under the HTTP generate target (README, Benchmarks). Asserts nothing.
import { readFileSync } from "node:fs";
import { createGuard, guardConfig } from "../src/api/guard/index.ts";
import { EXPOSED_HEADERS } from "../src/api/guard/cors.ts";
import { hotRoutes } from "../src/api/hot-routes.ts";
import { bundleJson } from "../src/api/routes/generate.ts";
import { getCatalog } from "../src/catalog/index.ts";
import { generateBundle } from "../src/core/generate/index.ts";
import { cpuPinning, load, readyPort, stop, SEVEN } from "./lib.ts";

const VARIANTS = {
  "/static": "trivial handler, the generate answer made once",
  "/generate-static": "+ the hot route reads the body and generates (answer still made once)",
  "/generate-fresh": "+ the fresh answer carrying the new secrets",
  "/hot-headers": "+ the guard's nine response headers",
  "/guarded": "+ the whole guard (limiter, keys, request id, CORS, client address)",
} as const;
type Path = keyof typeof VARIANTS;
const BODY = JSON.stringify({ projectName: "bench", services: SEVEN });

function serve(): number {
  const catalog = getCatalog();
  const high = { standard: 1e9, generate: 1e9 };
  const guard = createGuard(guardConfig({ anonymousLimits: high, authenticatedLimits: high, logLevel: "silent" }));
  const hot = hotRoutes(catalog, 1 << 20);
  const made = bundleJson(generateBundle(JSON.parse(BODY), catalog));
  const json = { "content-type": "application/json" };
  let count = 0;
  const handlers: Record<Path, (req: Request, server: Bun.Server<unknown>) => Promise<Response> | Response> = {
    "/static": async (req) => {
      await req.arrayBuffer();
      return new Response(made, { headers: json });
    },
    "/generate-static": async (req) => {
      await hot(req, "/v1/generate")!;
      return new Response(made, { headers: json });
    },
    "/generate-fresh": async (req) => new Response((await hot(req, "/v1/generate")!).body, { headers: json }),
    "/hot-headers": async (req) => {
      const reply = await hot(req, "/v1/generate")!;
      return new Response(reply.body, {
        status: reply.status,
        headers: {
          "x-content-type-options": "nosniff", "x-frame-options": "DENY", "x-request-id": crypto.randomUUID(),
          "access-control-allow-origin": "*", "access-control-expose-headers": EXPOSED_HEADERS,
          "x-ratelimit-limit": "1000000000", "x-ratelimit-remaining": String(1e9 - count++), "x-ratelimit-reset": "1764115200", "content-type": reply.type,
        },
      });
    },
    "/guarded": (req, server) => guard.handle(req, server, (r) => hot(r, "/v1/generate")!),
  };
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req, s) => handlers[new URL(req.url).pathname as Path](req, s) });
  return server.port!;
}

/** User + system CPU seconds of a process so far (Linux /proc, clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function measure() {
  const pinning = cpuPinning();
  pinning?.pinSelf();
  const proc = Bun.spawn([...(pinning?.server ?? []), process.execPath, import.meta.path, "serve"], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  try {
    const port = await readyPort(proc);
    const paths = Object.keys(VARIANTS) as Path[];
    const spec = (path: Path, requests: number) => ({ url: `http://127.0.0.1:${port}${path}`, method: "POST" as const, body: BODY, concurrency: 32, requests });
    for (const path of paths) await load(spec(path, 3000));
    const rounds = 6;
    const requests = 4000;
    const cpu: Record<string, number[]> = {};
    const rps: Record<string, number[]> = {};
    for (let round = 0; round < rounds; round++) {
      for (const path of round % 2 ? [...paths].reverse() : paths) {
        const before = cpuSeconds(proc.pid);
        const result = await load(spec(path, requests));
        if (result.errors) throw new Error(`${path}: ${result.errors} failed requests ${JSON.stringify(result.unexpected)}`);
        (cpu[path] ??= []).push(((cpuSeconds(proc.pid) - before) * 1e6) / requests);
        (rps[path] ??= []).push(result.rps);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`Server CPU per request (µs) and throughput, ${rounds} alternating rounds of ${requests} requests, 32 in flight${pinning ? `; ${pinning.describe}` : ""}\n`);
    for (const path of paths) {
      console.log(`${mean(cpu[path]).toFixed(0).padStart(5)} µs  ${mean(rps[path]).toFixed(0).padStart(6)} req/s  ${VARIANTS[path]}`);
    }
  } finally {
    await stop(proc);
    pinning?.unpinSelf();
  }
}

if (process.argv[2] === "serve") process.stdout.write(`READY ${serve()}\n`);
else await measure();
