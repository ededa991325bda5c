// `docker compose config` (Compose v2 itself, no engine needed) accepts every preset's bundle and
// every service alone, with the bundle's own .env: interpolation, mounts and keys as Compose reads them.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { fixedSecrets } from "../../src/core/generate/secrets.ts";
import { envValues, parseEnvText } from "../../src/core/parse-env.ts";
import { envValue } from "../../src/core/generate/env.ts";
import { envForPlatform } from "../../src/deploy/index.ts";
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

// stackgen reads .env files (an export's, a stack's, a backup's) to keep values, honour COMPOSE_*
// settings and filter out foreign ones. Reading them differently from Compose lets a value hide an
// assignment that Compose obeys: an escaped quote that does not close, a second assignment after a
// closing quote on the same line.
describe("dotenv as Compose reads it", () => {
  const texts = [
    "A='x' B=y\nC='p\\'\nD=1' \nE=last",
    "A=\"one \\\"two\\\" \\\\ \\$x \\n end\"\nB=\"multi\nline\" C=3 # note\nD=plain value # comment\nE=a#b",
    "export A=1\n  B = spaced  \nC: yaml-style\n# comment A=9\nD='single \\\\ kept'\nE=\"tab\\there\"",
    "A=x\nA=y\nB=''\nC=\"\"\nD='a\\\\'\nE='q\\'s' F=\"n\\\\nn\"",
    // A byte-order mark, `$$` (Compose's literal $) and escapes that make one.
    "\uFEFFA=bom\nB=pa$$word\nC=\"x\\$\\$ $$y\"\nD='s$$q'\nE=\"\\0101\\0777\"",
  ];
  test("the values stackgen sees are the ones Compose sees", async () => {
    if (!(await composeAvailable())) return;
    const dir = mkdtempSync(join(tmpdir(), "stackgen-dotenv-"));
    try {
      for (const text of texts) {
        const ours = envValues(text);
        const keys = [...ours.keys()];
        // A service that echoes every key back through interpolation, with a marker for unset.
        const environment = Object.fromEntries([..."ABCDEF"].map((k) => [k, `\${${k}-unset}`]));
        writeFileSync(join(dir, "docker-compose.yml"), JSON.stringify({ services: { a: { image: "busybox", environment } } }));
        writeFileSync(join(dir, ".env"), text);
        const out = await run(["docker", "compose", "--project-directory", dir, "-p", "dotenv", "config", "--format", "json"], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
        expect(out.code).toBe(0);
        const theirs: Record<string, string> = JSON.parse(out.stdout).services.a.environment;
        // `config` prints a literal $ as $$ (so that its output reads back the same).
        for (const k of "ABCDEF") expect({ text, key: k, value: ours.get(k) ?? "unset" }).toEqual({ text, key: k, value: theirs[k]!.replaceAll("$$", "$") });
        expect(keys.every((k) => "ABCDEF".includes(k))).toBe(true);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("references to variables set above are filled in as Compose fills them (what a deploy sends)", async () => {
    if (!(await composeAvailable())) return;
    const text = "A=x\nB=${A}y\nC='${A}'\nD=\"${A}z \\$A\"\nE=${UNSET_Q:-def}\nF=$A-$$A\nG=${A:+alt}${UNSET_Q+no}\nH=${A:-${UNSET_Q}}/$A/${B}\n";
    const ours = new Map(parseEnvText(envForPlatform(text).text).map((v) => [v.key, v.value]));
    const dir = mkdtempSync(join(tmpdir(), "stackgen-dotenv-"));
    try {
      const environment = Object.fromEntries([..."ABCDEFGH"].map((k) => [k, `\${${k}-unset}`]));
      writeFileSync(join(dir, "docker-compose.yml"), JSON.stringify({ services: { a: { image: "busybox", environment } } }));
      writeFileSync(join(dir, ".env"), text);
      const out = await run(["docker", "compose", "--project-directory", dir, "-p", "dotenv", "config", "--format", "json"], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
      expect(out.code).toBe(0);
      const theirs: Record<string, string> = JSON.parse(out.stdout).services.a.environment;
      for (const k of "ABCDEFGH") expect({ key: k, value: ours.get(k) }).toEqual({ key: k, value: theirs[k]!.replaceAll("$$", "$") });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("every value stackgen writes reads back the same in Compose", async () => {
    if (!(await composeAvailable())) return;
    const values = ["ends with a backslash\\", "it's", "both ' and \\", "$HOME and ${X}", "tab\there", "two\nlines", "back\\\\slash", "\"quoted\"", "#hash", "a #b"];
    const dir = mkdtempSync(join(tmpdir(), "stackgen-dotenv-"));
    try {
      const environment = Object.fromEntries(values.map((_, i) => [`V${i}`, `\${V${i}-unset}`]));
      writeFileSync(join(dir, "docker-compose.yml"), JSON.stringify({ services: { a: { image: "busybox", environment } } }));
      writeFileSync(join(dir, ".env"), values.map((v, i) => `V${i}=${envValue(v)}\n`).join(""));
      const out = await run(["docker", "compose", "--project-directory", dir, "-p", "dotenv", "config", "--format", "json"], { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
      expect(out.code).toBe(0);
      const theirs: Record<string, string> = JSON.parse(out.stdout).services.a.environment;
      expect(values.map((_, i) => theirs[`V${i}`]!.replaceAll("$$", "$"))).toEqual(values);
      expect(parseEnvText(readFileSync(join(dir, ".env"), "utf8")).map((v) => v.value)).toEqual(values);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
