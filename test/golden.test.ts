// Golden bundles: whole expected outputs for a few requests, compared byte for byte (secrets from
// a fixed source). After an intended change, rewrite them with UPDATE_GOLDEN=1 bun test test/golden.test.ts
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { getCatalog } from "../src/catalog/index.ts";
import { generateBundle } from "../src/core/generate/index.ts";
import { fixedSecrets } from "../src/core/generate/secrets.ts";

const GOLDEN = join(import.meta.dir, "golden");
const REQUESTS: Record<string, Record<string, unknown>> = {
  "minimal-redis": { projectName: "minimal", preset: "minimal", platform: "linux/amd64" },
  "devops-caddy-domain": { projectName: "ops", preset: "devops", domain: "example.com", platform: "linux/amd64", coreVersion: "2026.11.1" },
  "research-traefik-bare-metal": { projectName: "lab", services: ["postgresql", "redis"], skillPacks: ["research"], proxy: "traefik", deployment: "bare-metal", platform: "linux/amd64" },
  "no-secrets-gpu": { projectName: "gpu", services: ["ollama", "open-webui"], gpu: true, generateSecrets: false, platform: "linux/amd64" },
};

function readTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(root, p)] = readFileSync(p, "utf8");
    }
  };
  walk(root);
  return out;
}

describe("golden bundles", () => {
  for (const [name, body] of Object.entries(REQUESTS)) {
    test(name, () => {
      const { files } = generateBundle(body, getCatalog(), { secrets: fixedSecrets("golden"), now: () => new Date("2026-01-01T00:00:00Z") });
      const dir = join(GOLDEN, name);
      if (process.env.UPDATE_GOLDEN === "1") {
        rmSync(dir, { recursive: true, force: true });
        for (const [p, text] of Object.entries(files)) {
          mkdirSync(dirname(join(dir, p)), { recursive: true });
          writeFileSync(join(dir, p), text);
        }
      }
      const expected = readTree(dir);
      expect(Object.keys(files).sort()).toEqual(Object.keys(expected).sort());
      for (const p of Object.keys(files)) expect(files[p], `${name}/${p}`).toBe(expected[p]);
    });
  }
});
