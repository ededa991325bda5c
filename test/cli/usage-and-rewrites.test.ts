// Bad command lines end with exit 2 before anything runs, and regenerating into a directory
// refuses or repairs exactly as a real run would: subprocesses and files on disk.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";
import { BUN, cli, expectOk, MAIN, run } from "../support/tools.ts";
import { renderUpdate, rollbackMessage } from "../../src/cli/update.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-usage-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1" };
const at = (name: string) => join(tmp, name);
const jsonError = (stdout: string) => JSON.parse(stdout).error as { code: string; message: string };

describe("command lines the CLI refuses (exit 2, nothing written)", () => {
  test("an unknown option, even a near miss of --dry-run, stops the command before it writes", async () => {
    const r = await cli(["generate", "--name", "typo", "--services", "redis", "--dir", at("typo"), "--dryrun", "--json"], { env });
    expect(r.code).toBe(2);
    expect(jsonError(r.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("Unknown option --dryrun for stackgen generate (did you mean --dry-run?)") });
    expect(existsSync(at("typo"))).toBe(false);
    for (const args of [["services", "--bogus"], ["validate", "--services", "redis", "--verbose"], ["skills", "-x"]]) {
      expect((await cli(args, { env })).code).toBe(2);
    }
    // A mistyped command or preset says what was meant.
    expect(jsonError((await cli(["genrate", "--json"], { env })).stdout).message).toContain('Unknown command "genrate" (did you mean "generate"?)');
    expect(jsonError((await cli(["presets", "devop", "--json"], { env })).stdout).message).toContain('Preset "devop" not found (did you mean "devops"?)');
  });

  test("an option given twice with two values is refused: the last one no longer wins unseen", async () => {
    const twice = await cli(["generate", "--name", "rp", "--services", "redis", "--services", "qdrant", "--dir", at("twice"), "--json"], { env });
    expect(twice.code).toBe(2);
    expect(jsonError(twice.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining('--services is given twice ("redis" and "qdrant"): give it once, the ids comma-separated (--services redis,qdrant)') });
    expect(existsSync(at("twice"))).toBe(false);
    for (const args of [["validate", "--preset", "minimal", "--preset=devops"], ["status", "--dir", at("a"), "--dir", at("b")]]) {
      const r = await cli([...args, "--json"], { env });
      expect(r.code).toBe(2);
      expect(jsonError(r.stdout).message).toContain("is given twice");
    }
    // The same value twice says nothing new and is taken.
    expectOk(await cli(["validate", "--services", "redis", "--services=redis", "--json"], { env }));
  });

  test("an option without its value, or followed by another option, is refused rather than swallowing it", async () => {
    const cwd = at("values");
    mkdirSync(cwd);
    for (const args of [
      ["generate", "--name", "v", "--services", "redis", "--dir"],
      ["generate", "--name", "v", "--services", "redis", "--dir", "--json"],
      ["generate", "--name", "v", "--services", "redis", "--from"],
      ["generate", "--name", "v", "--services=", "--dry-run"],
      ["services", "--category"],
      ["validate", "--services"],
    ]) {
      const r = await cli(args, { env, cwd });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toContain("needs a value");
    }
    expect(readdirSync(cwd)).toEqual([]);
    // --json still asks for a JSON answer: the error, as one document.
    const asJson = await cli(["generate", "--name", "v", "--services", "redis", "--dir", "--json"], { env, cwd });
    expect(jsonError(asJson.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("--dir needs a value") });
  });

  test("surplus words, boolean options given other values, and a group without its subcommand", async () => {
    const stray = await cli(["generate", "typo", "--name", "s", "--services", "redis", "--dry-run", "--json"], { env });
    expect(stray.code).toBe(2);
    expect(jsonError(stray.stdout).message).toContain('"typo"');
    expect((await cli(["presets", "minimal", "extra"], { env })).code).toBe(2);
    expect((await cli(["validate", "--services", "redis", "--gpu=maybe"], { env })).code).toBe(2);
    expectOk(await cli(["validate", "--services", "redis", "--gpu=false", "--json"], { env }));
    // A switch given both ways is refused (citty let the negation win whatever the order).
    for (const flags of [["--no-gpu", "--gpu"], ["--gpu", "--no-gpu"], ["--gpu=false", "--gpu"], ["--gpu", "--gpu=false"]]) {
      const both = await cli(["validate", "--services", "redis", ...flags, "--json"], { env });
      expect(both.code, flags.join(" ")).toBe(2);
      expect(jsonError(both.stdout).message).toContain("contradict");
    }
    expectOk(await cli(["validate", "--services", "redis", "--gpu", "--gpu=true", "--json"], { env }));
    // A negation with a value is refused: citty reads `--no-gpu=false` as GPU off.
    for (const flag of ["--no-gpu=false", "--no-gpu=true"]) {
      const valued = await cli(["validate", "--services", "ollama", flag, "--json"], { env });
      expect(valued.code, flag).toBe(2);
      expect(jsonError(valued.stdout).message).toBe("--no-gpu takes no value: give --no-gpu, or --gpu=true|false.");
    }
    const secrets = await cli(["generate", "--name", "s", "--services", "redis", "--no-secrets", "--secrets", "--dry-run", "--json"], { env });
    expect(secrets.code).toBe(2);
    expect(jsonError(secrets.stdout).message).toBe("--no-secrets and --secrets contradict each other: give one. Run stackgen generate --help.");

    const bare = await cli(["backup", "--json"], { env });
    expect(bare.code).toBe(2);
    expect(jsonError(bare.stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("create, list, verify, restore, prune") });
    // No colour codes in a message, whatever NO_COLOR says.
    const { NO_COLOR: _nc, ...plain } = process.env;
    const unknown = await cli(["backup", "bogus", "--json"], { env: plain });
    expect(unknown.code).toBe(2);
    expect(jsonError(unknown.stdout).message).toContain('"bogus"');
    expect(unknown.stdout + unknown.stderr).not.toContain("\x1b[");
  });

  test("--from a complete export of a later format version is refused, not guessed at", async () => {
    const file = at("future.json");
    writeFileSync(file, JSON.stringify({ formatVersion: "2", input: { projectName: "fut", services: ["redis"] }, files: {}, metadata: {} }));
    const r = await cli(["generate", "--from", file, "--dir", at("fut"), "--json"], { env });
    expect(r.code).toBe(2);
    expect(jsonError(r.stdout).message).toContain('format version "2"');
    expect(existsSync(at("fut"))).toBe(false);
  });

  test("a JSON file saved with a byte order mark (as Windows editors save it) is read: --file, --from, a bundle's stackgen.json", async () => {
    const bom = (value: unknown) => `\ufeff${JSON.stringify(value)}`;
    const file = at("bom.json");
    writeFileSync(file, bom({ projectName: "bom", services: ["redis"] }));
    const checked = await cli(["validate", "--file", file, "--json"], { env });
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    const dir = at("bom");
    expectOk(await cli(["generate", "--from", file, "--dir", dir, "--json"], { env }));
    const record = join(dir, "stackgen.json");
    writeFileSync(record, `\ufeff${readFileSync(record, "utf8")}`);
    const again = await cli(["generate", "--dir", dir, "--services", "qdrant", "--json"], { env });
    expectOk(again);
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("qdrant");
    const status = await cli(["doctor", "--dir", dir, "--json"], { env });
    expect(status.stdout + status.stderr).not.toContain("not valid JSON");
  });

  test("--from a broken complete export is named as one (its input, files or .env), not read as an empty input", async () => {
    const cases: [object, string, string][] = [
      [{ input: "x" }, "input", "Expected object, received string"],
      [{ input: { projectName: "brk", services: ["redis"] }, files: [] }, "files", "Expected object, received array"],
      [{ input: { projectName: "brk", services: ["redis"] }, files: { ".env": 7 } }, "files..env", "Expected string, received number"],
    ];
    for (const [doc, field, message] of cases) {
      const file = at("broken.json");
      writeFileSync(file, JSON.stringify({ formatVersion: "1", ...doc }));
      const r = await cli(["generate", "--from", file, "--dir", at("brk"), "--json"], { env });
      expect(r.code).toBe(2);
      expect(jsonError(r.stdout)).toMatchObject({ code: "VALIDATION_ERROR", message: expect.stringContaining("not a usable complete export"), details: [{ field, message }] });
      expect(existsSync(at("brk"))).toBe(false);
    }
  });

  test("an input file over 1 MiB is refused after reading just past the limit: /dev/zero, a huge sparse file", async () => {
    const big = at("huge.json");
    writeFileSync(big, "");
    truncateSync(big, 512 * 1024 * 1024); // sparse: no disk used
    const small = at("small.json");
    writeFileSync(small, "[]");
    const run = async (args: string[]) => {
      // Killed at the time limit, a run that reads the whole input fails here rather than hanging.
      const proc = Bun.spawn([BUN, MAIN, ...args, "--json"], { env, stdin: "ignore", stdout: "pipe", stderr: "pipe", timeout: 10_000, killSignal: "SIGKILL" });
      const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      return { stdout, code, maxRSS: proc.resourceUsage()!.maxRSS };
    };
    // The runtime's own footprint differs between machines: measured with a small refused file.
    const baseline = await run(["validate", "--file", small]);
    expect(baseline.code).toBe(2);
    for (const args of [["generate", "--from", "/dev/zero", "--dir", at("zero")], ["validate", "--file", big], ["generate", "--from", big, "--dir", at("huge")]]) {
      const { stdout, code, maxRSS } = await run(args);
      expect(code, args.join(" ")).toBe(2);
      expect(jsonError(stdout)).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("larger than 1 MiB") });
      // A read of the whole file would add its 512 MB.
      expect(maxRSS - baseline.maxRSS, args.join(" ")).toBeLessThan(200 * 1024 * 1024);
    }
    expect(existsSync(at("zero"))).toBe(false);
  });

  test("--json=true asks for a JSON error as it asks for JSON output; --no-json turns both off", async () => {
    const r = await cli(["generate", "--json=true", "--name", "Bad", "--services", "redis", "--dir", at("bad")], { env });
    expect(r.code).toBe(2);
    expect(jsonError(r.stdout)).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "projectName" }] });
    // citty's rule: the last --json[=value] wins, and --no-json wins over any of them.
    const cases: [string[], boolean][] = [[["--json", "--no-json"], false], [["--no-json", "--json"], false], [["--json=false"], false], [["--json=false", "--json"], true], [["--json=true", "--json=false"], false]];
    for (const [flags, json] of cases) {
      const [ok, bad] = await Promise.all([cli(["services", "--category", "database", ...flags], { env }), cli(["services", "--category", "bogus", ...flags], { env })]);
      expect(bad.code, flags.join(" ")).toBe(2);
      if (json) {
        expect(JSON.parse(ok.stdout).services.length).toBeGreaterThan(0);
        expect(jsonError(bad.stdout).message).toContain("bogus");
      } else {
        expect(ok.stdout, flags.join(" ")).not.toStartWith("{");
        expect(bad.stdout, flags.join(" ")).toBe("");
        expect(bad.stderr).toContain("bogus");
      }
    }
  });

  test("--dir naming a file, or a path under a file, is bad input", async () => {
    writeFileSync(at("afile"), "mine\n");
    for (const dir of [at("afile"), join(at("afile"), "sub")]) {
      const r = await cli(["generate", "--name", "f", "--services", "redis", "--dir", dir, "--json"], { env });
      expect(r.code).toBe(2);
      expect(jsonError(r.stdout).code).toBe("USAGE_ERROR");
    }
    expect(readFileSync(at("afile"), "utf8")).toBe("mine\n");
    // A folder that cannot be made: too long a name, a place nothing can be created.
    for (const [dir, message] of [[join(tmp, "a".repeat(300)), "the path is too long"], ["/proc/stackgen-nope", "Cannot make the folder /proc/stackgen-nope"]]) {
      const r = await cli(["generate", "--name", "f", "--services", "redis", "--dir", dir!, "--json"], { env });
      expect([r.code, jsonError(r.stdout).code, jsonError(r.stdout).message]).toEqual([2, "USAGE_ERROR", expect.stringContaining(message!)]);
    }
  });

  test("a stackgen.json of a newer version, or one that is not JSON, is refused rather than replaced", async () => {
    for (const [name, text, message] of [
      ["newer", '{"configVersion":9,"projectName":"n","services":["redis"]}', /^No migration path from config version 9\. Nothing was written/],
      ["broken", "{bad", /stackgen\.json is not valid JSON.*Nothing was written/],
      ["array", "[]", /must hold a JSON object/],
    ] as const) {
      mkdirSync(at(name));
      writeFileSync(join(at(name), "stackgen.json"), text);
      // With --dir, and with only --name naming the same folder.
      for (const args of [["--dir", at(name)], ["--name", name]]) {
        const r = await cli(["generate", "--services", "redis", ...args, "--json"], { env, cwd: tmp });
        expect(r.code).toBe(2);
        expect(jsonError(r.stdout).message).toMatch(message);
      }
      expect(readdirSync(at(name))).toEqual(["stackgen.json"]);
      expect(readFileSync(join(at(name), "stackgen.json"), "utf8")).toBe(text);
    }
  });
});

describe("a current directory removed under the shell", () => {
  test("is refused before anything is written: Bun resolved relative paths against the executable's folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stackgen-gone-"));
    const name = `gone-${process.pid}`;
    const beside = join(dirname(realpathSync(BUN)), name);
    try {
      const r = await run(["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" "$3" generate --name "$4" --services redis --json', "sh", dir, BUN, MAIN, name]);
      expect(r.code).toBe(1);
      expect(jsonError(r.stdout)).toMatchObject({ code: "NO_CURRENT_DIRECTORY", message: expect.stringContaining("Nothing was done") });
      expect(existsSync(beside)).toBe(false);
    } finally {
      rmSync(beside, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("regenerating into an existing bundle", () => {
  test("a --no-secrets bundle regenerated with secrets gets them; the user's own values stay", async () => {
    const dir = at("nosecrets");
    expectOk(await cli(["generate", "--name", "ns", "--preset", "devops", "--dir", dir, "--no-secrets"], { env }));
    const before = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    expect(before.get("REDIS_PASSWORD")).toBe("");
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8").replace(/^CORE_VERSION=.*$/m, "CORE_VERSION=2026.11.1") + "MY_OWN=kept\n");

    const filled = await cli(["generate", "--name", "ns", "--preset", "devops", "--dir", dir], { env });
    expectOk(filled);
    expect(filled.stdout).toContain("Kept the existing .env values, except the empty secrets, now generated (");
    expect(filled.stdout).toContain("REDIS_PASSWORD");
    const after = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    // Every generated secret is filled; values the user is to fill in (API keys made in an app) stay empty.
    const secrets = generateBundle({ projectName: "ns", preset: "devops" }, getCatalog()).secretNames;
    expect(secrets.size).toBeGreaterThan(5);
    for (const key of secrets) {
      expect(before.get(key), key).toBe("");
      expect(after.get(key), key).toMatch(/^[A-Za-z0-9]{32,}$/);
    }
    expect(after.get("N8N_API_KEY")).toBe("");
    expect(after.get("CORE_VERSION")).toBe("2026.11.1");
    expect(after.get("MY_OWN")).toBe("kept");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).not.toContain(":?");

    // Secrets the user set are never replaced.
    const password = after.get("REDIS_PASSWORD");
    expectOk(await cli(["generate", "--name", "ns", "--preset", "devops", "--dir", dir], { env }));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toBe(password);
  });

  test("adding a service whose port a running one holds moves the newcomer: the running service keeps its port and URL", async () => {
    const dir = at("ports");
    expectOk(await cli(["generate", "--name", "ports", "--skill-packs", "research-agent", "--dir", dir], { env }));
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain('"8080:8080"');
    const r = await cli(["generate", "--skill-packs", "research-agent", "--services", "nextcloud", "--dir", dir, "--json"], { env });
    expectOk(r);
    const compose = readFileSync(join(dir, "docker-compose.yml"), "utf8");
    expect(compose).toContain('"8080:8080"'); // searxng, as before
    expect(compose).toContain('"8081:80"'); // nextcloud, the newcomer
    const values = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    expect(values.get("SEARXNG_BASE_URL")).toBe("http://127.0.0.1:8080/");
    expect(values.get("NEXTCLOUD_PUBLIC_URL")).toBe("http://localhost:8081");
    expect(r.stderr).toContain("Host port 8080 of Nextcloud is used by SearXNG; Nextcloud is published on 8081 instead.");
  });

  test("a dry run over edited files ends as the real run would: refused, exit 1, nothing changed", async () => {
    const dir = at("edited");
    expectOk(await cli(["generate", "--name", "eb", "--preset", "devops", "--dir", dir], { env }));
    writeFileSync(join(dir, "Caddyfile"), readFileSync(join(dir, "Caddyfile"), "utf8") + "# mine\n");
    // The same input makes the Caddyfile as before: the edit stays and the rest is written.
    const same = await cli(["generate", "--name", "eb", "--preset", "devops", "--dir", dir, "--json"], { env });
    expectOk(same);
    expect(JSON.parse(same.stdout).files.find((f: { path: string }) => f.path === "Caddyfile").action).toBe("keep-edited");
    expect(readFileSync(join(dir, "Caddyfile"), "utf8")).toEndWith("# mine\n");
    // --force replaces the edited files that would change, not one made as before.
    writeFileSync(join(dir, "README.md"), readFileSync(join(dir, "README.md"), "utf8") + "mine\n");
    const forced = await cli(["generate", "--name", "eb", "--preset", "devops", "--services", "qdrant", "--dir", dir, "--force", "--json"], { env });
    expectOk(forced);
    const actions = Object.fromEntries(JSON.parse(forced.stdout).files.map((f: { path: string; action: string }) => [f.path, f.action]));
    expect(actions["README.md"]).toBe("overwrite-edited");
    expect(actions.Caddyfile).toBe("keep-edited");
    expect(readFileSync(join(dir, "Caddyfile"), "utf8")).toEndWith("# mine\n");
    expect(forced.stderr).not.toContain("Caddyfile");
    // Another domain changes the Caddyfile: that would overwrite the edit, so nothing is written.
    const dry = await cli(["generate", "--name", "eb", "--preset", "devops", "--domain", "lab.example.com", "--dir", dir, "--dry-run", "--json"], { env });
    expect(dry.code).toBe(1);
    expect(jsonError(dry.stdout)).toMatchObject({ code: "EDITED_FILES", message: expect.stringContaining("Caddyfile") });
    // With --diff, the one document also holds the plan and what --force would put in place of the edit.
    const shown = await cli(["generate", "--name", "eb", "--preset", "devops", "--domain", "lab.example.com", "--dir", dir, "--dry-run", "--diff", "--json"], { env });
    expect(shown.code).toBe(1);
    const document = JSON.parse(shown.stdout);
    expect(document.error.code).toBe("EDITED_FILES");
    expect(document.dryRun).toBe(true);
    expect(document.files.find((f: { path: string }) => f.path === "Caddyfile").action).toBe("skip-edited");
    expect(document.diffs.find((d: { path: string }) => d.path === "Caddyfile").diff).toContain("lab.example.com");
    const real = await cli(["generate", "--name", "eb", "--preset", "devops", "--domain", "lab.example.com", "--dir", dir, "--json"], { env });
    expect(real.code).toBe(1);
    expect(jsonError(real.stdout).code).toBe("EDITED_FILES");
    expect(readFileSync(join(dir, "Caddyfile"), "utf8")).toEndWith("# mine\n");
    expect(jsonError(real.stdout).message).not.toContain("override");
    // An edited compose file: the message says where such changes survive a regeneration.
    writeFileSync(join(dir, "docker-compose.yml"), readFileSync(join(dir, "docker-compose.yml"), "utf8") + "# mine\n");
    const compose = jsonError((await cli(["generate", "--name", "eb", "--preset", "devops", "--domain", "lab.example.com", "--dir", dir, "--json"], { env })).stdout);
    expect(compose.message).toContain("Caddyfile, docker-compose.yml");
    expect(compose.message).toContain("belong in docker-compose.override.yml");
  });

  test("a folder holding a compose file of the user's own is refused as such, not as an edit", async () => {
    const dir = at("theirs");
    mkdirSync(dir);
    writeFileSync(join(dir, "docker-compose.yml"), "services:\n  mine:\n    image: busybox\n");
    const r = await cli(["generate", "--name", "theirs", "--services", "redis", "--dir", dir, "--json"], { env });
    expect(r.code).toBe(1);
    const error = jsonError(r.stdout);
    expect(error.code).toBe("EDITED_FILES");
    expect(error.message).toContain("were not written by stackgen (there is no stackgen.json): docker-compose.yml");
    expect(error.message).not.toContain("changed since they were generated");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("mine:");

    // In a bundle, an edited file its stackgen.json no longer records (kept when Traefik was
    // dropped) is named as such, not as foreign to stackgen.
    const bundle = at("dropped-proxy");
    expectOk(await cli(["generate", "--name", "dp", "--services", "n8n", "--proxy", "traefik", "--dir", bundle], { env }));
    writeFileSync(join(bundle, "traefik", "traefik.yml"), readFileSync(join(bundle, "traefik", "traefik.yml"), "utf8") + "# mine\n");
    expectOk(await cli(["generate", "--name", "dp", "--services", "n8n", "--proxy", "caddy", "--dir", bundle], { env }));
    const back = jsonError((await cli(["generate", "--name", "dp", "--services", "n8n", "--proxy", "traefik", "--dir", bundle, "--json"], { env })).stdout);
    expect(back.message).toContain("not recorded by its stackgen.json (left from an earlier generation, or added by you), and would be overwritten: traefik/traefik.yml");
    expect(back.message).not.toContain("not written by stackgen");
  });

  test("regenerating in place: --from a bundle's stackgen.json writes into that bundle, and --dir alone takes the choices its stackgen.json records", async () => {
    const dir = at("inplace");
    expectOk(await cli(["generate", "--name", "inplace", "--services", "redis", "--dir", dir], { env }));
    const password = parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD");
    const before = readdirSync(dir).sort();
    // From inside the bundle, without --dir: the bundle itself, not a nested ./inplace with new
    // secrets for the same compose project (its services could no longer open their data).
    const again = await cli(["generate", "--from", "stackgen.json"], { env, cwd: dir });
    expectOk(again);
    expect(again.stderr).toContain(`Writing into the bundle stackgen.json belongs to, ${dir}`);
    expect(readdirSync(dir).sort()).toEqual(before);
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toBe(password);
    // --dir alone: the recorded selection, with the flags given on top.
    const more = await cli(["generate", "--dir", dir, "--proxy", "caddy", "--json"], { env });
    expectOk(more);
    expect(more.stderr).toContain("with the choices its stackgen.json records");
    const recorded = JSON.parse(readFileSync(join(dir, "stackgen.json"), "utf8"));
    expect(recorded.services).toEqual(expect.arrayContaining(["redis", "caddy"]));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toBe(password);
    // --dir elsewhere, or a --name of its own, makes a copy in that folder; the bundle stays as it was.
    const elsewhere = at("inplace-copy");
    expectOk(await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", elsewhere], { env }));
    expect(parseEnvValues(readFileSync(join(elsewhere, ".env"), "utf8")).get("REDIS_PASSWORD")).not.toBe(password);
    const record = readFileSync(join(dir, "stackgen.json"), "utf8");
    const renamed = await cli(["generate", "--from", join(dir, "stackgen.json"), "--name", "inplace-staging"], { env, cwd: tmp });
    expectOk(renamed);
    expect(readFileSync(join(at("inplace-staging"), "stackgen.json"), "utf8")).toContain('"projectName": "inplace-staging"');
    expect(readFileSync(join(dir, "stackgen.json"), "utf8")).toBe(record);
    // A stackgen.json of the user's own beside a compose file of theirs is no bundle: not written into.
    const foreign = at("inplace-foreign");
    mkdirSync(foreign);
    writeFileSync(join(foreign, "docker-compose.yml"), "services:\n  mine:\n    image: busybox\n");
    writeFileSync(join(foreign, "stackgen.json"), JSON.stringify({ projectName: "inplace-mine", services: ["redis"] }));
    const fromForeign = await cli(["generate", "--from", join(foreign, "stackgen.json")], { env, cwd: tmp });
    expectOk(fromForeign);
    expect(fromForeign.stderr).not.toContain("Writing into the bundle");
    expect(existsSync(join(at("inplace-mine"), "docker-compose.yml"))).toBe(true);
    expect(readFileSync(join(foreign, "docker-compose.yml"), "utf8")).toContain("mine:");
    const empty = at("inplace-empty");
    mkdirSync(empty);
    const none = await cli(["generate", "--dir", empty, "--json"], { env });
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stdout).error.details).toEqual([{ field: "services", message: "Select at least one service, skill pack or preset" }]);
  });

  test("a folder holding compose.yaml (which docker compose reads first) is refused, --force or not: up would not start the bundle", async () => {
    for (const name of ["compose.yaml", "compose.yml"]) {
      const dir = at(`shadow-${name}`);
      mkdirSync(dir);
      writeFileSync(join(dir, name), "services:\n  web:\n    image: nginx\n");
      for (const extra of [[], ["--force"], ["--dry-run"]]) {
        const r = await cli(["generate", "--name", "shadow", "--services", "redis", "--dir", dir, "--json", ...extra], { env });
        expect(r.code).toBe(1);
        expect(jsonError(r.stdout)).toMatchObject({ code: "EDITED_FILES", message: expect.stringContaining(`holds ${name}, which docker compose reads in place of the docker-compose.yml`) });
        expect(readdirSync(dir)).toEqual([name]);
      }
    }
    // A folder whose .env names the compose files: compose reads those, compose.yaml is no shadow.
    const pinned = at("shadow-pinned");
    mkdirSync(pinned);
    writeFileSync(join(pinned, "compose.yaml"), "services:\n  web:\n    image: nginx\n");
    writeFileSync(join(pinned, ".env"), "COMPOSE_FILE=docker-compose.yml\n");
    const r = await cli(["generate", "--name", "pinned", "--services", "redis", "--dir", pinned, "--json"], { env });
    expectOk(r);
    expect(readdirSync(pinned)).toContain("docker-compose.yml");
    expect(parseEnvValues(readFileSync(join(pinned, ".env"), "utf8")).get("COMPOSE_FILE")).toBe("docker-compose.yml");
    // One naming the user's file instead: up there would start that one, whatever is beside it.
    const elsewhere = at("shadow-elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "compose.yaml"), "services:\n  web:\n    image: nginx\n");
    writeFileSync(join(elsewhere, ".env"), "COMPOSE_FILE=compose.yaml\n");
    const refused = await cli(["generate", "--name", "elsewhere", "--services", "redis", "--dir", elsewhere, "--json"], { env });
    expect(refused.code).toBe(1);
    expect(jsonError(refused.stdout)).toMatchObject({ code: "EDITED_FILES", message: expect.stringContaining(`COMPOSE_FILE in ${join(elsewhere, ".env")} names ${join(elsewhere, "compose.yaml")} for docker compose to read, not the docker-compose.yml`) });
    expect(readdirSync(elsewhere).sort()).toEqual([".env", "compose.yaml"]);
  });

  test("the printed next step pastes as it reads: a folder with a space or a $ is quoted; --dir / is not taken for outside itself", async () => {
    const dir = at("My $(stack)");
    const r = await cli(["generate", "--name", "spaced", "--services", "redis", "--dir", dir], { env });
    expectOk(r);
    expect(r.stdout).toContain(`Next: cd '${dir}' && docker compose up -d`);
    const root = await cli(["generate", "--name", "rooted", "--services", "redis", "--dir", "/", "--dry-run", "--json"], { env });
    expectOk(root);
    expect(JSON.parse(root.stdout).dir).toBe("/");
  });

  test("a bundle whose .env is gone is warned that its new secrets are not the ones its databases hold", async () => {
    const dir = at("lost-env");
    expectOk(await cli(["generate", "--name", "lost", "--services", "postgresql", "--dir", dir], { env }));
    const kept = await cli(["generate", "--dir", dir], { env });
    expect(kept.stderr).not.toContain("is gone");
    rmSync(join(dir, ".env"));
    const dry = await cli(["generate", "--dir", dir, "--dry-run"], { env });
    expect(dry.stderr).toContain(`${join(dir, ".env")} is gone: a new one with new secrets would be written`);
    const r = await cli(["generate", "--dir", dir], { env });
    expectOk(r);
    expect(r.stderr).toContain("its databases still hold the old passwords");
  });

  test("a .env that is not UTF-8 is refused, byte for byte as it was: its values would be written back changed", async () => {
    const dir = at("latin1-env");
    expectOk(await cli(["generate", "--name", "latin", "--services", "redis", "--dir", dir], { env }));
    const path = join(dir, ".env");
    const text = readFileSync(path, "latin1").replace(/^REDIS_PASSWORD=.*$/m, "REDIS_PASSWORD=secr\xe9t");
    writeFileSync(path, Buffer.from(text, "latin1"));
    const before = readFileSync(path);
    const line = text.split("\n").findIndex((l) => l.startsWith("REDIS_PASSWORD=")) + 1;
    for (const extra of [[], ["--dry-run"], ["--services", "qdrant", "--json"]]) {
      const r = await cli(["generate", "--dir", dir, ...extra], { env });
      expect(r.code, extra.join(" ")).toBe(2);
      expect(r.stdout + r.stderr).toContain(`is not UTF-8 text: line ${line} holds other bytes`);
      expect(readFileSync(path).equals(before)).toBe(true);
    }
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).not.toContain("qdrant");
    // The same value in UTF-8 is kept as it is.
    writeFileSync(path, text.replace("secr\xe9t", "secr\u00e9t"), "utf8");
    expectOk(await cli(["generate", "--dir", dir, "--services", "qdrant"], { env }));
    expect(readFileSync(path, "utf8")).toContain("REDIS_PASSWORD=secr\u00e9t\n");
  });

  test("a dry run warns as the real run does, and --json lists what .env leaves empty", async () => {
    const dry = await cli(["generate", "--name", "warned", "--services", "comfyui", "--dir", at("warned"), "--dry-run"], { env });
    expectOk(dry);
    for (const code of ["EXPERIMENTAL_SERVICE", "GPU_REQUIRED"]) expect(dry.stderr).toContain(`${code}: `);
    expect(dry.stderr).toContain("ComfyUI needs an NVIDIA GPU; set gpu to true (--gpu on the command line)");
    expect(existsSync(at("warned"))).toBe(false);
    const empty = await cli(["generate", "--name", "empty", "--services", "redis,tailscale", "--no-secrets", "--dir", at("empty"), "--json"], { env });
    expectOk(empty);
    const out = JSON.parse(empty.stdout);
    expect(out.emptySecrets).toContain("REDIS_PASSWORD");
    expect(out.valuesToFill).toContainEqual({ name: "TAILSCALE_AUTHKEY", service: "Tailscale" });
    // On bare metal, the secrets only the native install uses too (compose has no PostgreSQL then).
    const native = await cli(["generate", "--name", "native", "--services", "postgresql", "--deployment", "bare-metal", "--no-secrets", "--dir", at("native"), "--json"], { env });
    expectOk(native);
    expect(JSON.parse(native.stdout).emptySecrets).toContain("POSTGRESQL_PASSWORD");
    const said = await cli(["generate", "--name", "native", "--services", "postgresql", "--deployment", "bare-metal", "--no-secrets", "--dir", at("native-text")], { env });
    expect(said.stdout).toContain("install.sh stops before the native install without them: POSTGRESQL_PASSWORD.");
    expect(said.stdout).not.toMatch(/compose refuses to start without them: [^\n]*POSTGRESQL_PASSWORD\b/);
    const filled = JSON.parse((await cli(["generate", "--name", "full", "--services", "redis", "--dir", at("full"), "--json"], { env })).stdout);
    expect([filled.emptySecrets, filled.valuesToFill]).toEqual([[], []]);
  });

  test("a --from file whose project name is a path cannot point generate at another bundle", async () => {
    const victim = at("victim");
    expectOk(await cli(["generate", "--name", "victim", "--services", "redis", "--dir", victim], { env }));
    const before = readFileSync(join(victim, "stackgen.json"), "utf8");
    const work = at("work");
    mkdirSync(work);
    for (const name of ["../victim", victim]) {
      writeFileSync(join(work, "shared.json"), JSON.stringify({ projectName: name, services: ["redis", "portainer"] }));
      const r = await cli(["generate", "--from", "shared.json", "--json"], { env, cwd: work });
      expect(r.code).toBe(2);
      expect(jsonError(r.stdout)).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "projectName" }] });
      expect(readFileSync(join(victim, "stackgen.json"), "utf8")).toBe(before);
    }
    expect(readdirSync(work)).toEqual(["shared.json"]);
  });

  test("a Caddy e-mail that would add lines to the Caddyfile is not taken from an export nor kept from the bundle's .env", async () => {
    const injected = 'CADDY_ACME_EMAIL="ops@example.com\n\tadmin 0.0.0.0:2019\n}"\n';
    const exported = generateBundle({ projectName: "acme", services: ["uptime-kuma"], proxy: "caddy", domain: "example.com" }, getCatalog());
    const doc = { formatVersion: "1", input: exported.input, files: { ...exported.files, ".env": exported.files[".env"] + injected }, metadata: exported.metadata };
    writeFileSync(at("acme.json"), JSON.stringify(doc));
    const dir = at("acme");
    const r = await cli(["generate", "--from", at("acme.json"), "--dir", dir], { env });
    expectOk(r);
    expect(r.stderr).toContain("Not taken from");
    expect(r.stderr).toContain("CADDY_ACME_EMAIL (its value does not have the shape it must have");
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("CADDY_ACME_EMAIL")).toBe("");
    // Settings other than secrets that the export changes are named (the gateway's image above all).
    const swapped = { ...doc, files: { ...doc.files, ".env": exported.files[".env"]!.replace(/^CORE_IMAGE=.*$/m, "CORE_IMAGE=attacker.example/backdoor") } };
    writeFileSync(at("swapped.json"), JSON.stringify(swapped));
    const taken = await cli(["generate", "--from", at("swapped.json"), "--dir", at("swapped")], { env });
    expectOk(taken);
    expect(taken.stderr).toContain("Settings taken from");
    expect(taken.stderr).toContain("differ from what this generation makes: CORE_IMAGE.");
    expect(r.stderr).not.toContain("Settings taken from");
    // Into a bundle whose .env wins over the export's, nothing is taken, and nothing is said to be.
    const into = await cli(["generate", "--from", at("swapped.json"), "--dir", dir], { env });
    expectOk(into);
    expect(into.stderr).not.toContain("Settings taken from");
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("CORE_IMAGE")).not.toContain("attacker");
    // Put into the bundle's own .env by hand: regenerating replaces it, and says so.
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8") + injected);
    const again = await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", dir], { env });
    expectOk(again);
    expect(again.stderr).toContain("Replaced in .env: CADDY_ACME_EMAIL");
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("CADDY_ACME_EMAIL")).toBe("");
  });

  test("a symlinked folder leading outside is refused before any file is written", async () => {
    const dir = at("linked");
    const outside = at("outside");
    mkdirSync(outside);
    mkdirSync(dir);
    symlinkSync(outside, join(dir, "prometheus"));
    const r = await cli(["generate", "--name", "sl", "--services", "prometheus,grafana", "--dir", dir, "--json"], { env });
    expect(r.code).toBe(2);
    expect(jsonError(r.stdout).code).toBe("UNSAFE_PATH");
    expect(readdirSync(dir)).toEqual(["prometheus"]);
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe("update's summary", () => {
  test("a rolled-back update does not say the services were updated", () => {
    const updated = [{ service: "db", image: "postgres:16", oldDigest: "sha256:aaaaaaaaaaaaaaaa", newDigest: "sha256:bbbbbbbbbbbbbbbb" }];
    const done = renderUpdate({ updated, unchanged: [], restarted: ["db"] });
    expect(done).toStartWith("Updated db (postgres:16)");
    const rolledBack = { services: ["db"], reason: "db unhealthy", recovered: true, newImagesStarted: true };
    const failed = renderUpdate({ updated, unchanged: [], restarted: ["db"], rolledBack });
    expect(failed).not.toContain("Updated db");
    expect(failed).toStartWith("Tried db (postgres:16)");
    expect(failed).toContain("Rolled back db: db unhealthy");
  });

  test("after a rollback: the data warning only when a new image started, and what no longer runs", () => {
    const rolledBack = { services: ["db"], reason: "db unhealthy", recovered: false, newImagesStarted: true, notRunning: ["api", "web"] };
    const started = rollbackMessage(rolledBack);
    expect(started).toContain("may have changed its data");
    expect(started).toContain("Not running now, though they ran before the update: api, web (`docker compose up -d api web` starts them");
    expect(rollbackMessage(rolledBack, { file: "/b/x.tar.gz", dir: "/srv/my stack" })).toContain("`stackgen backup restore /b/x.tar.gz --dir '/srv/my stack'`");
    // Interrupted while the stack was stopping: the new images never ran.
    const never = rollbackMessage({ ...rolledBack, reason: "interrupted", newImagesStarted: false, notRunning: undefined });
    expect(never).toContain("The new images never started, so the data is as it was.");
    expect(never).not.toContain("changed its data");
    expect(never).not.toContain("Not running now");
    // A service the user's files still name the failed image for: its names go back first.
    const named = rollbackMessage({ ...rolledBack, stillNamed: [{ service: "web", image: "web:2", restored: "web:1" }] });
    expect(named).toContain("starts them once the image names above are put back and the cause above is fixed");
  });
});
