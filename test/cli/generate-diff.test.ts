// `stackgen generate --diff`: each file a regeneration changes, as a unified diff against the
// folder, read before anything is written; .env by variable with every value hidden.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { envDiff } from "../../src/cli/bundle-diff.ts";
import { envValues } from "../../src/core/parse-env.ts";
import { cli } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-diff-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1" };

/** Every file of a folder with its text, to tell that a dry run wrote nothing. */
const snapshot = (dir: string) => Object.fromEntries(readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => [join(e.parentPath, e.name), readFileSync(join(e.parentPath, e.name), "utf8")]));

describe("generate --diff", () => {
  const dir = join(tmp, "lab");

  test("a dry run shows each changed file as a diff and writes nothing; .env by variable, values hidden", async () => {
    expect((await cli(["generate", "--name", "lab", "--services", "redis,n8n", "--dir", dir], { env })).code).toBe(0);
    const before = snapshot(dir);
    const r = await cli(["generate", "--services", "redis,n8n,qdrant", "--dir", dir, "--dry-run", "--diff", "--json"], { env });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { dryRun: boolean; diffs: { path: string; action: string; diff: string }[] };
    expect(out.dryRun).toBe(true);
    const byPath = Object.fromEntries(out.diffs.map((d) => [d.path, d]));
    // Only files that change: unchanged skills are not listed.
    expect(Object.keys(byPath)).toContain("skills/qdrant/SKILL.md");
    expect(Object.keys(byPath)).not.toContain("skills/redis/SKILL.md");
    expect(byPath[".env"]).toEqual({ path: ".env", action: "keep-values", diff: "--- a/.env\n+++ b/.env\n+QDRANT_API_KEY=***\n" });
    expect(byPath["docker-compose.yml"]!.diff).toStartWith("--- a/docker-compose.yml\n+++ b/docker-compose.yml\n@@ ");
    expect(byPath["docker-compose.yml"]!.diff).toContain("\n+  qdrant:\n");
    expect(byPath["skills/qdrant/SKILL.md"]).toMatchObject({ action: "create", diff: expect.stringContaining("@@ -0,0 +1,") });
    expect(snapshot(dir)).toEqual(before);
  });

  test("a real run shows the same diffs (text), then writes; no value of .env is ever printed", async () => {
    const r = await cli(["generate", "--services", "redis,n8n,qdrant", "--dir", dir, "--diff"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("--- a/.env\n+++ b/.env\n+QDRANT_API_KEY=***\n");
    expect(r.stdout).toContain("+++ b/docker-compose.yml");
    expect(r.stdout.indexOf("+++ b/docker-compose.yml")).toBeLessThan(r.stdout.indexOf("Generated lab"));
    // The generated secrets: 32 or more random letters and digits (CONTRACT §4).
    const secrets = [...envValues(readFileSync(join(dir, ".env"), "utf8")).values()].filter((v) => /^[A-Za-z0-9]{32,}$/.test(v));
    expect(secrets.length).toBeGreaterThan(2);
    for (const secret of secrets) expect(r.stdout + r.stderr).not.toContain(secret);
    // Nothing left to change: no diffs.
    const again = await cli(["generate", "--services", "redis,n8n,qdrant", "--dir", dir, "--diff", "--dry-run", "--json"], { env });
    expect(JSON.parse(again.stdout).diffs).toEqual([]);
  });

  test("a file you edited: the diff shows what --force would put in place of your edit", async () => {
    const compose = join(dir, "docker-compose.yml");
    writeFileSync(compose, readFileSync(compose, "utf8").replace("restart: unless-stopped", "restart: always"));
    const r = await cli(["generate", "--services", "redis,n8n", "--dir", dir, "--dry-run", "--diff"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("skip-edited      docker-compose.yml");
    expect(r.stderr).toContain("-    restart: always\n+    restart: unless-stopped");
  });

  test("envDiff: added, changed and removed variables, comments ignored, values never shown", () => {
    const before = "# a comment\nA=secret-one\nB=kept\nGONE=x\nEMPTY=\n";
    const after = "# another comment\nA=secret-two\nB=kept\nEMPTY=\nNEW=value\nNEW_EMPTY=\n";
    expect(envDiff(before, after)).toBe("--- a/.env\n+++ b/.env\n~A=*** (value changed)\n+NEW=***\n+NEW_EMPTY=\n-GONE\n");
    expect(envDiff("# one\nA=1\n", "# two\nA=1\n")).toBe("--- a/.env\n+++ b/.env\n (no variable added, removed or changed: comments only)\n");
  });
});
