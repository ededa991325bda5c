// `docker compose config` (Compose v2 itself, no engine needed) accepts every preset's bundle and
// every service alone, with the bundle's own .env: interpolation, mounts and keys as Compose reads them.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { fixedSecrets } from "../../src/core/generate/secrets.ts";
import { IN_CI, run } from "../support/tools.ts";

async function composeAvailable(): Promise<boolean> {
  const ok = Bun.which("docker") !== null && (await run(["docker", "compose", "version"])).code === 0;
  if (!ok) {
    if (IN_CI) throw new Error("docker compose (v2) is required in CI");
    console.warn("[skip] docker compose v2 not installed: bundles not checked by Compose itself");
  }
  return ok;
}

describe("docker compose config", () => {
  test("accepts every preset and every service alone", async () => {
    if (!(await composeAvailable())) return;
    const catalog = getCatalog();
    const bodies: Record<string, unknown>[] & { projectName: string }[] = [
      ...catalog.presets.map((p) => ({ projectName: `p-${p.id}`, preset: p.id, platform: "linux/amd64" })),
      ...catalog.presets.map((p) => ({ projectName: `q-${p.id}`, preset: p.id, proxy: "traefik", domain: "example.com", generateSecrets: false, deployment: "bare-metal", platform: "linux/amd64" })),
      ...catalog.services.map((s) => ({ projectName: `s-${s.id}`, services: [s.id], platform: s.platforms[0] })),
    ];
    const root = mkdtempSync(join(tmpdir(), "stackgen-compose-"));
    try {
      for (let i = 0; i < bodies.length; i += 8) {
        await Promise.all(bodies.slice(i, i + 8).map(async (body) => {
          let files;
          try {
            files = generateBundle(body, catalog, { secrets: fixedSecrets() }).files;
          } catch {
            return; // a conflicting combination (e.g. caddy preset + traefik) is refused, not generated
          }
          const dir = join(root, String(body.projectName));
          for (const [p, text] of Object.entries(files)) {
            mkdirSync(dirname(join(dir, p)), { recursive: true });
            writeFileSync(join(dir, p), text);
          }
          // Secrets left empty make compose refuse on purpose (`${VAR:?}`): fill them for this check.
          if (body.generateSecrets === false) writeFileSync(join(dir, ".env"), files[".env"].replace(/^([A-Z0-9_]+)=$/gm, "$1=filled-for-the-check"));
          const r = await run(["docker", "compose", "--project-directory", dir, "-f", join(dir, "docker-compose.yml"), "config", "--quiet"], { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
          expect(r.code, `${body.projectName}: ${r.stderr}`).toBe(0);
          expect(r.stderr, String(body.projectName)).not.toMatch(/WARN|variable is not set/i);
        }));
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 300_000);

  test("an empty secret makes compose refuse with a message naming it", async () => {
    if (!(await composeAvailable())) return;
    const { files } = generateBundle({ projectName: "nosecrets", services: ["redis"], generateSecrets: false }, getCatalog());
    const dir = mkdtempSync(join(tmpdir(), "stackgen-compose-"));
    try {
      for (const [p, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), text);
      }
      const r = await run(["docker", "compose", "--project-directory", dir, "config", "--quiet"], { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
      expect(r.code).not.toBe(0);
      // Compose names the first empty secret it meets (its order varies).
      expect(r.stderr).toMatch(/(REDIS_PASSWORD|CORE_GATEWAY_TOKEN) is empty - set it in \.env/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
