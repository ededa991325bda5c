// Shared set-up for the guard tests: a real listening server on 127.0.0.1 and a redis-server on a
// free loopback port.
import { expect } from "bun:test";
import { getCatalog, type Catalog } from "../../src/catalog/index.ts";
import { startServers } from "../../src/api/server.ts";
import { createGuard, guardConfig, type GuardConfig } from "../../src/api/guard/index.ts";
import { freePort } from "../support/tools.ts";

/** The real catalog (checked at build time; test/catalog.test.ts covers its rules). */
export function testCatalog(): Catalog {
  return getCatalog();
}

export interface TestServer {
  base: string;
  uiBase?: string;
  logs: string[];
  health(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/** Starts the real listeners (API, optionally UI) on free loopback ports with `overrides`. */
export async function startTestServer(overrides: Partial<GuardConfig> = {}, withUi = false): Promise<TestServer> {
  const logs: string[] = [];
  const guard = createGuard(guardConfig({ logLevel: "info", ...overrides }), { logSink: (line) => void logs.push(line) });
  const servers = startServers({ port: 0, uiPort: withUi ? await freePort() : 0, host: "127.0.0.1", catalog: testCatalog(), guard });
  const base = `http://127.0.0.1:${servers.api.port}`;
  return {
    base,
    uiBase: servers.ui ? `http://127.0.0.1:${servers.ui.port}` : undefined,
    logs,
    health: async () => (await (await fetch(`${base}/v1/health`)).json()) as Record<string, string>,
    stop: async () => {
      await servers.stop();
      await guard.close();
    },
  };
}

/** Asserts the SPEC error body `{error: {code, message, details?}}` (or the flat one of /v1/skills). */
export function expectErrorShape(body: unknown, flat = false): void {
  const b = body as Record<string, any>;
  if (flat) {
    expect(typeof b.error).toBe("string");
    expect(typeof b.code).toBe("string");
    return;
  }
  expect(typeof b.error).toBe("object");
  expect(typeof b.error.code).toBe("string");
  expect(typeof b.error.message).toBe("string");
  if (b.error.details !== undefined) {
    expect(Array.isArray(b.error.details)).toBe(true);
    for (const d of b.error.details) {
      expect(typeof d.field).toBe("string");
      expect(typeof d.message).toBe("string");
    }
  }
}

export { freePort };

export const REDIS_SERVER = "/usr/bin/redis-server";

export interface RedisProcess {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** A throw-away redis-server (no persistence) on a free loopback port; waits until it answers. */
export async function startRedis(port?: number): Promise<RedisProcess> {
  const chosen = port ?? (await freePort());
  const proc = Bun.spawn([REDIS_SERVER, "--port", String(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes"], {
    stdout: "ignore",
    stderr: "ignore",
  });
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      const socket = await Bun.connect({ hostname: "127.0.0.1", port: chosen, socket: { data() {} } });
      socket.end();
      break;
    } catch {
      if (Date.now() > deadline || proc.exitCode !== null) {
        proc.kill();
        throw new Error(`redis-server did not start on port ${chosen}`);
      }
      await Bun.sleep(50);
    }
  }
  return {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    stop: async () => {
      proc.kill("SIGKILL");
      await proc.exited;
    },
  };
}

/** Polls `check` until it returns true (or fails after `ms`). */
export async function eventually(check: () => Promise<boolean>, ms = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}
