// The CLI as a user runs it: subprocesses, exit codes, --json documents, files on disk.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash, createHmac } from "node:crypto";
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getCatalog } from "../../src/catalog/index.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { PROVIDER_NAMES } from "../../src/deploy/index.ts";
import { EXAMPLES, loadCommand, main, subcommandsOf } from "../../src/cli/index.ts";
import { checkArgs } from "../../src/cli/strict-args.ts";
import { BUN, cli, expectOk, freePort, hasTool, MAIN, run } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1" };

describe("basics", () => {
  test("validate says, as generate does, that a domain without a proxy has no effect", async () => {
    const alone = await cli(["validate", "--services", "redis", "--domain", "example.com", "--json"], { env });
    expectOk(alone);
    expect(JSON.parse(alone.stdout).valid).toBe(true);
    expect(alone.stderr).toContain("--domain example.com has no effect without a reverse proxy");
    for (const proxied of [["--services", "redis", "--proxy", "caddy"], ["--services", "redis,traefik"]]) {
      const r = await cli(["validate", "--domain", "example.com", ...proxied], { env });
      expectOk(r);
      expect(r.stderr).not.toContain("has no effect");
    }
  });

  test("a bad port is named where it came from: the flag, or the environment variable", async () => {
    const fromEnv = await cli(["serve", "--json"], { env: { ...env, PORT: "abc" } });
    expect(fromEnv.code).toBe(2);
    expect(JSON.parse(fromEnv.stdout).error.message).toBe('PORT (from the environment) must be a port number (0-65535), got "abc"');
    const fromFlag = await cli(["serve", "--ui-port", "99999", "--json"], { env });
    expect(fromFlag.code).toBe(2);
    expect(JSON.parse(fromFlag.stdout).error.message).toBe('--ui-port must be a port number (0-65535), got "99999"');
  });

  test("a second server on the ports of a running one fails to start, rather than sharing its requests", async () => {
    const [port, uiPort] = [await freePort(), await freePort()];
    const env = { ...process.env, PORT: String(port), UI_PORT: String(uiPort), HOST: "0.0.0.0", LOG_LEVEL: "error" };
    const first = Bun.spawn([BUN, MAIN, "serve"], { env, stdout: "ignore", stderr: "ignore" });
    try {
      for (let i = 0; i < 100; i++) {
        if ((await fetch(`http://127.0.0.1:${port}/v1/health`).catch(() => undefined))?.ok) break;
        await Bun.sleep(50);
      }
      const second = await cli(["serve"], { env });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`Port ${port} on 0.0.0.0 is already in use`);
    } finally {
      first.kill();
      await first.exited;
    }
  });

  test("serve on an IPv6 address says its URL with the address in brackets", async () => {
    const server = Bun.spawn([BUN, MAIN, "serve", "--host", "::1", "--port", "0", "--ui-port", "0"], { env: { ...env, LOG_LEVEL: "error" }, stdout: "ignore", stderr: "pipe" });
    try {
      let said = "";
      const reader = server.stderr.getReader();
      while (!said.includes("\n")) {
        const chunk = await reader.read();
        if (chunk.done) break;
        said += new TextDecoder().decode(chunk.value);
      }
      expect(said).toMatch(/stackgen API on http:\/\/\[::1\]:\d+\/v1 /);
    } finally {
      server.kill();
      await server.exited;
    }
  });

  test("--help lists every command; --version prints the version", async () => {
    const help = await cli(["--help"], { env });
    expectOk(help);
    for (const c of ["serve", "validate", "generate", "services", "presets", "skills", "deploy", "status", "update", "backup", "completion"]) expect(help.stdout).toContain(c);
    // No rows padded to a terminal's width into a pipe.
    expect(help.stdout.split("\n").filter((line) => /[ \t]$/.test(line))).toEqual([]);
    const v = await cli(["--version"]);
    expect(v.stdout).toMatch(/^stackgen \d+\.\d+\.\d+/);
  });

  test("help ends with what every command takes and examples whose commands and options exist", async () => {
    const help = await cli(["help", "generate"], { env });
    expectOk(help);
    expect(help.stdout).toContain("--no-color (as NO_COLOR=1 does)");
    expect(help.stdout).toContain(`EXAMPLES\n\n  ${EXAMPLES.generate![0]}`);
    expect((await cli(["help"], { env })).stdout).toContain(`about a command.\n\nEvery command also takes --no-color`);
    expect((await cli(["help"], { env })).stdout).toContain(EXAMPLES[""]![0]);
    // Options before `help` are the help's: --json gives it as JSON.
    const asJson = await cli(["--json", "help", "generate"], { env });
    expect(JSON.parse(asJson.stdout).command).toBe("stackgen generate");
    // Every command and command group has some.
    const paths: string[] = [];
    const walk = async (cmd: typeof main, path: string[]) => {
      for (const [word, sub] of Object.entries((await subcommandsOf(cmd)) ?? {})) {
        paths.push([...path, word].join(" "));
        await walk(await loadCommand(sub), [...path, word]);
      }
    };
    await walk(main, []);
    expect(paths.length).toBeGreaterThan(15);
    expect(paths.filter((path) => !EXAMPLES[path]?.length)).toEqual([]);
    for (const line of Object.values(EXAMPLES).flat()) {
      // The command as typed: no comment, no pipe or redirection after it, no variables set before it.
      const words = line.replace(/#.*$/, "").split(/ [|>] /)[0]!.trim().split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
      expect([line, words[0]]).toEqual([line, "stackgen"]);
      let cmd = main;
      const path: string[] = [];
      for (const word of words.slice(1)) {
        const next = (await subcommandsOf(cmd))?.[word];
        if (!next) break;
        cmd = await loadCommand(next);
        path.push(word);
      }
      expect([line, path.length > 0]).toEqual([line, true]);
      expect(() => checkArgs(path.join(" "), cmd.args as never, words.slice(1 + path.length))).not.toThrow();
    }
  });

  test("options before the command: --json is the command's, a mistyped one is named with a suggestion", async () => {
    const listed = await cli(["--json", "services", "redis"], { env });
    expectOk(listed);
    expect(JSON.parse(listed.stdout).service.id).toBe("redis");
    for (const [typo, meant] of [["--hlep", "--help"], ["--verison", "--version"]]) {
      const r = await cli([typo], { env });
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining(`Unknown option "${typo}" (did you mean "${meant}"?)`)]);
    }
  });

  test("--version, --help and completion print one JSON document with --json", async () => {
    for (const args of [["--version", "--json"], ["--json", "--version"], ["--json", "-v"]]) {
      const v = await cli(args, { env });
      expectOk(v);
      expect(JSON.parse(v.stdout)).toMatchObject({ name: "stackgen", version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    }
    const help = await cli(["backup", "create", "--help", "--json"], { env });
    expectOk(help);
    expect(JSON.parse(help.stdout)).toMatchObject({ command: "stackgen backup create", usage: expect.stringContaining("--output") });
    const c = await cli(["completion", "fish", "--json"], { env });
    expectOk(c);
    expect(JSON.parse(c.stdout)).toEqual({ shell: "fish", script: (await cli(["completion", "fish"], { env })).stdout.replace(/\n$/, "") + "\n" });
  });

  test("help and option words are read where they stand: `help --json <command>`, the JSON switches alone, a wrong word after --version, --help after --", async () => {
    for (const args of [["help", "--json", "generate"], ["help", "generate", "--json"], ["--json", "help", "generate"]]) {
      const r = await cli(args, { env });
      expectOk(r);
      expect(JSON.parse(r.stdout).command, args.join(" ")).toBe("stackgen generate");
    }
    const alone = await cli(["--json"], { env });
    expectOk(alone);
    expect(JSON.parse(alone.stdout).command).toBe("stackgen");
    for (const args of [["--no-json"], ["--json=false"]]) {
      const r = await cli(args, { env });
      expectOk(r);
      expect(r.stdout).toContain("USAGE stackgen");
    }
    const wrong = await cli(["--version", "--bogus"], { env });
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringContaining('Unknown option "--bogus"')]);
    // Nothing else moves: an option's value stays with it, and --help goes before a `--`.
    for (const [args, command] of [[["help", "generate", "--"], ["generate"]], [["help", "services", "--", "--json"], ["services"]], [["help", "--", "services"], []], [["help", "backup", "--dir", "x"], ["backup"]]]) {
      const r = await cli(args, { env });
      expectOk(r);
      expect(r.stdout, args.join(" ")).toBe((await cli([...command, "--help"], { env })).stdout);
    }
    const afterEnd = await cli(["services", "--", "--help"], { env });
    expect([afterEnd.code, afterEnd.stderr]).toEqual([2, expect.stringContaining('Service "--help" not found')]);
  });

  test("npx stackgen does not load the .env of the directory it runs in (a stack's secrets and project name stay that stack's)", async () => {
    const work = join(tmp, "dotenv-cwd");
    mkdirSync(join(work, "elsewhere"), { recursive: true });
    expectOk(await cli(["generate", "--services", "redis", "--dir", join(work, "lab")], { env }));
    writeFileSync(join(work, "elsewhere", ".env"), "COMPOSE_PROJECT_NAME=wrongproj\n");
    const shim = new URL("../../bin/stackgen.cjs", import.meta.url).pathname;
    // No engine is needed: doctor names the project it found before it asks Docker anything.
    const r = await run(["node", shim, "doctor", "--dir", "../lab", "--json"], { cwd: join(work, "elsewhere"), env: { ...env, DOCKER_HOST: "unix:///nonexistent.sock" } });
    expect(JSON.parse(r.stdout).project).toBe("lab");
  });

  test("npx stackgen passes a SIGTERM on to stackgen and ends with its status, leaving nothing behind", async () => {
    const shim = new URL("../../bin/stackgen.cjs", import.meta.url).pathname;
    const port = await freePort();
    const proc = Bun.spawn(["node", shim, "serve", "--host", "127.0.0.1", "--port", String(port), "--ui-port", "0"], { stdout: "ignore", stderr: "ignore", env: { ...env, LOG_LEVEL: "silent" } });
    const deadline = Date.now() + 15_000;
    while (!(await fetch(`http://127.0.0.1:${port}/v1/health`).then((r) => r.ok, () => false))) {
      if (Date.now() > deadline) throw new Error("the server did not start");
      await Bun.sleep(100);
    }
    proc.kill("SIGTERM");
    // stackgen's own shutdown (exit 0), not the shim killed while the server runs on without it.
    expect(await proc.exited).toBe(0);
    expect(await fetch(`http://127.0.0.1:${port}/v1/health`).then(() => "still up", () => "stopped")).toBe("stopped");
  });

  test("a nested command's help names it in full", async () => {
    for (const sub of ["create", "list", "verify", "restore", "prune"]) {
      const r = await cli(["backup", sub, "--help"], { env });
      expectOk(r);
      expect(r.stdout).toMatch(new RegExp(`^USAGE stackgen backup ${sub} `, "m"));
    }
    // Prune's retention rules, each with what it keeps.
    const prune = (await cli(["backup", "prune", "--help"], { env })).stdout;
    expect(prune).toMatch(/--keep=<n>\s+How many of the newest backups to keep/);
    for (const [flag, unit] of [["daily", "days"], ["weekly", "weeks"], ["monthly", "months"]]) expect(prune).toMatch(new RegExp(`--keep-${flag}=<${unit}>\\s+Keep the newest backup of each of the last <${unit}>`));
  });

  test("help carries no colour codes into a pipe, whatever NO_COLOR holds, nor on a terminal with NO_COLOR", async () => {
    // No CI/TEST/NO_COLOR here: citty alone would colour it.
    const { CI: _ci, TEST: _test, NO_COLOR: _nc, FORCE_COLOR: _fc, CLICOLOR_FORCE: _cf, ...plain } = process.env;
    for (const extra of [{}, { NO_COLOR: "true" }]) {
      for (const args of [["--help"], ["generate", "--help"], ["backup", "restore", "--help"]]) {
        const r = await cli(args, { env: { ...plain, ...extra } });
        expectOk(r);
        expect(r.stdout).toContain("USAGE");
        expect(r.stdout).not.toContain("\x1b[");
      }
    }
    // FORCE_COLOR or CLICOLOR_FORCE (a CI log that shows colours) colour a pipe too, unless NO_COLOR
    // is set; "0" or "false" forces nothing. --json output is never coloured.
    const piped = async (extra: Record<string, string>, args = ["validate", "--services", "redis"]) => (await cli(args, { env: { ...plain, ...extra } })).stdout.includes("\x1b[");
    expect(await piped({})).toBe(false);
    expect(await piped({ FORCE_COLOR: "1" })).toBe(true);
    expect(await piped({ CLICOLOR_FORCE: "1" })).toBe(true);
    expect(await piped({ FORCE_COLOR: "1" }, ["--help"])).toBe(true);
    expect(await piped({ FORCE_COLOR: "0" })).toBe(false);
    expect(await piped({ FORCE_COLOR: "false" })).toBe(false);
    expect(await piped({ FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(false);
    expect(await piped({ FORCE_COLOR: "1" }, ["validate", "--services", "redis", "--no-color"])).toBe(false);
    expect(await piped({ FORCE_COLOR: "1" }, ["validate", "--services", "redis", "--json"])).toBe(false);
    // As Node reads it: set but empty forces colours too.
    expect(await piped({ FORCE_COLOR: "" })).toBe(true);
    if (hasTool("script")) {
      // A real terminal (util-linux script): coloured, unless NO_COLOR is set to anything.
      const onTty = (extra: Record<string, string>) =>
        run(["script", "-qec", `${process.execPath} ${new URL("../../src/main.ts", import.meta.url).pathname} --help`, "/dev/null"], { env: { ...plain, ...extra } });
      expect((await onTty({})).stdout).toContain("\x1b[");
      expect((await onTty({ NO_COLOR: "yes" })).stdout).not.toContain("\x1b[");
      // --no-color, on any command and in any place before `--`, does what NO_COLOR does.
      const main = new URL("../../src/main.ts", import.meta.url).pathname;
      const command = (args: string) => run(["script", "-qec", `${process.execPath} ${main} ${args}`, "/dev/null"], { env: plain });
      expect((await command("validate --services redis")).stdout).toContain("\x1b[");
      // FORCE_COLOR=0 turns a terminal's colours off, as Node and chalk read it.
      const off = await run(["script", "-qec", `${process.execPath} ${main} validate --services redis`, "/dev/null"], { env: { ...plain, FORCE_COLOR: "0" } });
      expect(off.stdout).not.toContain("\x1b[");
      for (const args of ["validate --services redis --no-color", "--no-color validate --services redis", "--no-color --help", "services redis --no-color"]) {
        const r = await command(args);
        expect([args, r.code]).toEqual([args, 0]);
        expect([args, r.stdout.includes("\x1b[")]).toEqual([args, false]);
      }
    }
  });

  test("a reader that stops early ends the command quietly (no EPIPE stack trace)", async () => {
    // ~150 KB of JSON into `head -c 20`: the pipe closes while stackgen still writes.
    const main = new URL("../../src/main.ts", import.meta.url).pathname;
    const r = await run(["bash", "-c", `"${process.execPath}" "${main}" services --json 2>"${tmp}/epipe.err" | head -c 20 >/dev/null; echo "\${PIPESTATUS[0]}"`], { env });
    expect(r.stdout.trim()).toBe("0");
    expect(readFileSync(join(tmp, "epipe.err"), "utf8")).toBe("");
    // A failure keeps its exit code when its error meets a closed pipe: a script with pipefail
    // must not read success. Both a reader that never reads and one that reads a byte.
    for (const reader of ["true", "head -c 1 >/dev/null"]) {
      const failed = await run(["bash", "-c", `"${process.execPath}" "${main}" validate --services nope --json 2>/dev/null | ${reader}; echo "\${PIPESTATUS[0]}"`], { env });
      expect({ reader, code: failed.stdout.trim() }).toEqual({ reader, code: "2" });
    }
  });

  test("a server whose log pipe closes exits 1, so a supervisor notices", async () => {
    const main = new URL("../../src/main.ts", import.meta.url).pathname;
    const port = await freePort();
    // The log reader takes 10 bytes and leaves; request lines keep coming until a write fails.
    const script = `( "${process.execPath}" "${main}" serve --host 127.0.0.1 --port ${port} --ui-port 0 2>/dev/null; echo $? > "${tmp}/serve.rc" ) | head -c 10 >/dev/null &
      for i in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:${port}/v1/health; [ -s "${tmp}/serve.rc" ] && break; sleep 0.1; done; wait`;
    await run(["bash", "-c", script], { env: { ...env, LOG_LEVEL: "info" } });
    expect(readFileSync(join(tmp, "serve.rc"), "utf8").trim()).toBe("1");
  });

  test("serve on a busy port: one clear line, exit 1, and no half-started server left behind", async () => {
    const busy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
    const apiPort = await freePort();
    try {
      // The API port is free, the UI port is taken: the API listener must not keep running.
      const r = await cli(["serve", "--host", "127.0.0.1", "--port", String(apiPort), "--ui-port", String(busy.port)], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Port ${busy.port} on 127.0.0.1 is already in use`);
      expect(r.stderr).not.toContain("    at ");
      for (const host of ["999.1.1.1", "bad host!"]) {
        const bad = await cli(["serve", "--host", host, "--port", "0", "--ui-port", "0"], { env });
        expect({ code: bad.code, stderr: bad.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`Cannot listen on ${host}: not an address of this machine`) });
      }
    } finally {
      busy.stop(true);
    }
  });

  test("generate without a project name says which flags give one", async () => {
    const r = await cli(["generate", "--services", "redis", "--dry-run", "--json"], { env, cwd: tmp });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.details).toEqual([{ field: "projectName", message: "Required" }]);
    expect(r.stderr).toContain("--name <name>, or give --dir <folder>");
    // A folder whose name makes no project name: where the name came from, and the flag that sets one.
    const folder = await cli(["generate", "--services", "redis", "--dir", join(tmp, "___"), "--dry-run"], { env });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain("--name <name> sets the project name; without it, it is the bundle's in --dir, else the --from file's, else the --dir folder's.");
  });

  test("unknown command and bad flags exit 2 with one line, no stack trace", async () => {
    const r = await cli(["frobnicate"], { env });
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain("    at ");
    // Asking for its help does not make an unknown command known; a positional argument is no command.
    for (const argv of [["frobnicate", "--help"], ["backup", "frobnicate", "--help"]]) {
      const help = await cli(argv, { env });
      expect([help.code, help.stderr]).toEqual([2, expect.stringContaining('Unknown command "frobnicate"')]);
    }
    expect((await cli(["backup", "restore", "x.tar.gz", "--help"], { env })).code).toBe(0);
    const bad = await cli(["services", "--category", "nope"], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("nope");
    // With --json, the codes the API answers for the same query.
    const category = await cli(["services", "--category", "nope", "--json"], { env });
    expect([category.code, JSON.parse(category.stdout).error.code]).toEqual([2, "VALIDATION_ERROR"]);
    // Naming the field as the API does for GET /v1/services?category=nope.
    expect(JSON.parse(category.stdout).error.details).toEqual([{ field: "category", message: expect.stringMatching(/^Expected one of "ai-agents", .*, received "nope"$/) }]);
    const maturity = await cli(["services", "--maturity", "nope", "--json"], { env });
    expect(JSON.parse(maturity.stdout).error.details).toEqual([{ field: "maturity", message: 'Expected one of "stable", "beta", "experimental", received "nope"' }]);
    const skills = await cli(["skills", "--services", "nope", "--json"], { env });
    expect([skills.code, JSON.parse(skills.stdout).error.code]).toEqual([2, "INVALID_SERVICE_ID"]);
    const near = await cli(["skills", "--services", "qdrnt"], { env });
    expect([near.code, near.stderr]).toEqual([2, expect.stringContaining('Unknown service id: qdrnt (did you mean "qdrant"?); stackgen services lists them')]);
    // What the user typed is quoted back with its control characters shown, never sent to the
    // terminal as escape sequences (colour, clear screen, window title).
    for (const args of [["generate", "--services", "redis,\x1b[31mX", "--dir", join(tmp, "esc")], ["services", "--category", "\x1b[2J"], ["presets", "\x1b]0;t\x07"]]) {
      const r = await cli(args, { env });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("\\x1b");
      expect(r.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f]/);
    }
  });

  test("validate --json prints the validate response; conflicts exit 1", async () => {
    const ok = await cli(["validate", "--services", "n8n", "--platform", "linux/amd64", "--json"], { env });
    expectOk(ok);
    expect(JSON.parse(ok.stdout)).toMatchObject({ valid: true, resolvedServices: ["postgresql", "n8n"] });
    const bad = await cli(["validate", "--services", "caddy,traefik", "--json"], { env });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).conflicts[0].code).toBe("SERVICE_CONFLICT");
    const unknown = await cli(["validate", "--services", "nope", "--json"], { env });
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error.code).toBe("VALIDATION_ERROR");
  });

  test("validate --file reads a request body", async () => {
    const file = join(tmp, "body.json");
    writeFileSync(file, JSON.stringify({ preset: "minimal", services: ["n8n"] }));
    const r = await cli(["validate", "--file", file, "--json"], { env });
    expectOk(r);
    expect(JSON.parse(r.stdout).resolvedServices).toEqual(["redis", "postgresql", "n8n"]);
  });

  test("services, presets, skills with --json", async () => {
    const s = JSON.parse((await cli(["services", "--category", "database", "--json"], { env })).stdout);
    expect(s.services.every((x: any) => x.category === "database")).toBe(true);
    const p = JSON.parse((await cli(["presets", "devops", "--json"], { env })).stdout);
    expect(p.preset.id).toBe("devops");
    const k = JSON.parse((await cli(["skills", "--services", "qdrant", "--json"], { env })).stdout);
    expect(k.packs.every((x: any) => x.compatibilityScore > 0)).toBe(true);
    expect((await cli(["presets", "nope"], { env })).code).toBe(2);
    // In words, a preset says both the memory it declares and what its services estimate (validate's sum).
    const shown = await cli(["presets", "content-creator"], { env });
    const estimate = JSON.parse((await cli(["validate", "--preset", "content-creator", "--json"], { env })).stdout).estimatedMemoryMB;
    expect(estimate).toBeGreaterThan(4096);
    expect(shown.stdout).toContain(`Memory: 4096 MB as the preset declares; its 6 services estimate ${estimate} MB`);
  });

  test("services <id> shows one service as GET /v1/services/{id} gives it, and in words what it needs, publishes and keeps", async () => {
    const json = JSON.parse((await cli(["services", "dify", "--json"], { env })).stdout);
    expect(json).toEqual({ service: getCatalog().servicesById.get("dify") });
    const text = await cli(["services", "coolify"], { env });
    expectOk(text);
    expect(text.stdout).toStartWith("Coolify (coolify): ");
    expect(text.stdout).toContain("Ports:        8000->8080 (web) Dashboard and REST API");
    expect(text.stdout).toContain("Needs:        postgresql: Coolify stores servers");
    expect(text.stdout).toContain("coolify-volume-owner (busybox:1.37.0, runs once before it starts)");
    expect(text.stdout).toContain("coolify-ssh -> /var/www/html/storage/app/ssh");
    expect(text.stdout).toContain("COOLIFY_DB_PASSWORD (generated secret): ");
    expect(text.stdout).toContain("COOLIFY_API_TOKEN (optional, yours to fill in): ");
    const unknown = await cli(["services", "postgres", "--json"], { env });
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error).toMatchObject({ code: "NOT_FOUND", message: 'Service "postgres" not found (did you mean "postgresql"?); stackgen services lists them' });
  });

  test("a listing's filters with one id, or an empty --services, are refused rather than ignored", async () => {
    const filtered = await cli(["services", "redis", "--category", "media"], { env });
    expect([filtered.code, filtered.stderr]).toEqual([2, expect.stringContaining("--category filters the list of services, and stackgen services redis shows that one service")]);
    const both = await cli(["services", "redis", "--maturity", "bogus", "--category", "media", "--json"], { env });
    expect(both.code).toBe(2);
    expect(JSON.parse(both.stdout).error.message).toStartWith("--category and --maturity filter the list");
    for (const empty of [",", " "]) {
      const r = await cli(["skills", "--services", empty, "--json"], { env });
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error).toMatchObject({ code: "USAGE_ERROR", message: expect.stringContaining("--services needs at least one service id") });
    }
  });

  test("a mistyped subcommand or shell gets a suggestion; a port is digits only (not 0x10, 1e3 or with blanks)", async () => {
    const sub = await cli(["backup", "creat"], { env });
    expect([sub.code, sub.stderr]).toEqual([2, expect.stringContaining('Unknown command "creat" for stackgen backup (did you mean "create"?)')]);
    const shell = await cli(["completion", "bsh"], { env });
    expect([shell.code, shell.stderr]).toEqual([2, expect.stringContaining('Unknown shell "bsh" (did you mean "bash"?)')]);
    for (const port of ["0x10", "1e3", " 80"]) {
      const serve = await cli(["serve", "--port", port], { env });
      expect([serve.code, serve.stderr], port).toEqual([2, expect.stringContaining(`--port must be a port number (0-65535), got "${port}"`)]);
      const probe = await cli(["healthcheck", "--port", port], { env });
      expect([probe.code, probe.stderr], port).toEqual([2, expect.stringContaining(`--port must be a port number (1-65535), got "${port}"`)]);
    }
  });

  test("completion scripts for bash, zsh and fish parse in their shells", async () => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const r = await cli(["completion", shell], { env });
      expectOk(r);
      expect(r.stdout).toContain("stackgen");
      expect(r.stdout).toContain("n8n");
      if (Bun.which(shell)) {
        const file = join(tmp, `completion.${shell}`);
        writeFileSync(file, r.stdout);
        const check = await run(shell === "fish" ? ["fish", "--no-execute", file] : [shell, "-n", file]);
        expect(check.code, check.stderr).toBe(0);
      }
    }
    expect(hasTool("bash")).toBe(true);
    expect((await cli(["completion", "powershell"], { env })).code).toBe(2);
  });

  test("completion offers files, directories, comma-list items, subcommands and flag values", async () => {
    const here = mkdtempSync(join(tmp, "complete-"));
    writeFileSync(join(here, "myfile.json"), "{}");
    mkdirSync(join(here, "subdir"));
    const script = async (shell: string) => {
      const r = await cli(["completion", shell], { env });
      expectOk(r);
      writeFileSync(join(tmp, `complete.${shell}`), r.stdout);
      return { file: join(tmp, `complete.${shell}`), text: r.stdout };
    };
    const values: [string, string[]][] = [
      ["--proxy", ["caddy", "traefik", "none"]],
      ["--platform", ["linux/amd64", "linux/arm64"]],
      ["--deployment", ["docker", "bare-metal", "local"]],
      ["--provider", PROVIDER_NAMES],
    ];
    // [words after `stackgen`, up to the cursor; candidates it must offer; candidates it must not]
    const cases: [string, string[], string[]][] = [
      ["generate --from my", ["myfile.json"], []],
      ["generate --from ", ["myfile.json", "subdir"], []],
      ["validate --file my", ["myfile.json"], []],
      ["generate --dir ", ["subdir"], ["myfile.json"]],
      ["backup create --output s", ["subdir"], []],
      ["backup restore my", ["myfile.json"], []],
      ["backup verify my", ["myfile.json"], []],
      ["backup verify --", ["--json"], ["--dir", "--yes"]],
      ["backup ", ["create", "list", "verify", "restore", "prune"], ["myfile.json"]],
      ["completion ", ["bash", "zsh", "fish"], ["myfile.json"]],
      ["hel", ["help"], []],
      ["help ", ["generate", "backup", "serve"], ["help", "myfile.json"]],
      ["generate ", [], ["myfile.json"]],
      ["generate --", ["--from", "--deployment"], []],
      ["serve --", ["--port"], ["--preset", "--from"]],
      ["generate --services redis,postg", ["redis,postgresql"], ["postgresql"]],
      ["generate --services ", ["redis", "postgresql"], []],
      ["services --category ai-", ["ai-agents", "ai-platforms", "ai-models"], ["database"]],
      ["services --maturity ", ["stable", "beta", "experimental"], ["myfile.json"]],
      // Each backup subcommand offers its own options only.
      ["backup list --", ["--dir", "--json", "--output"], ["--hot", "--keep", "--yes"]],
      ["backup prune --", ["--keep", "--dry-run", "--yes", "--output"], ["--hot"]],
      ["backup create --", ["--output", "--hot", "--no-pause"], ["--keep", "--yes"]],
      ["generate --", ["--no-secrets", "--secrets", "--force"], []],
      // After an option whose value is the user's own text: neither flags nor files.
      ["deploy --url ", [], ["--dir", "myfile.json", "subdir"]],
      ["generate --domain ", [], ["--dir", "myfile.json"]],
      ["presets --json ", ["minimal", "devops"], ["myfile.json"]],
      // An option's value is not a command: a stack named "backup" is still generated.
      ["generate --name backup ", [], ["create", "restore", "myfile.json"]],
      ["generate --name backup --", ["--from", "--dir"], ["--hot", "--keep"]],
      ["deploy --dir backup --", ["--provider", "--url"], ["--hot"]],
      ["presets minimal ", [], ["devops"]],
      // Options every command takes, before the command: it is completed as without them.
      ["--json ", ["services", "generate", "backup"], ["myfile.json"]],
      ["--no-color --json services --", ["--category", "--maturity"], ["--from"]],
      ["--json generate --proxy ", ["caddy", "traefik"], ["myfile.json"]],
      ["--json backup ", ["create", "restore"], ["myfile.json"]],
      ["services postg", ["postgresql"], ["myfile.json"]],
      ["services ", ["redis", "coolify"], ["myfile.json"]],
      ...values.map(([flag, v]): [string, string[], string[]] => [`${flag === "--provider" ? "deploy" : "generate"} ${flag} `, v, ["myfile.json"]]),
    ];
    // A negation the help names is offered (--no-gpu turns off a preset's GPU support).
    cases.push(["validate --", ["--gpu", "--no-gpu"], []]);
    // `--flag=value`, the form --help prints: bash hands it over split at "=", fish whole.
    const byShell: Record<string, [string, string[], string[]][]> = {
      bash: [["generate --preset = de", ["devops"], ["--dir", "minimal"]], ["generate --preset =", ["devops", "minimal"], ["--dir"]], ["generate --services = redis,postg", ["redis,postgresql"], []]],
      fish: [
        ["generate --preset=de", ["--preset=devops"], []],
        ["--", ["--help", "--version"], []],
        // A folder after `--dir=`: once, not `--dir=--dir=subdir`.
        ["generate --dir=", ["--dir=subdir"], ["--dir=--dir=subdir"]],
        ["backup create --output=s", ["--output=subdir"], []],
      ],
    };
    const candidates = (out: string) => out.split("\n").filter(Boolean).map((l) => l.split("\t")[0]!.replace(/\/$/, ""));
    const wrong: string[] = []; // every failing line at once, not just the first
    const check = async (shell: string, complete: (line: string) => Promise<{ stdout: string; stderr: string; code: number }>) => {
      for (const [line, want, not] of [...cases, ...(byShell[shell] ?? [])]) {
        const r = await complete(line);
        expect(r.code, `${shell}: ${line}: ${r.stderr}`).toBe(0);
        const got = candidates(r.stdout);
        if (want.some((w) => !got.includes(w)) || not.some((n) => got.includes(n))) wrong.push(`${shell}: stackgen ${line}<TAB> gave [${got.join(" ")}]`);
      }
    };

    // bash: drive the completion function as readline would.
    const bash = await script("bash");
    await check("bash", async (line) => {
      const driver = 'source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; _stackgen; printf "%s\\n" "${COMPREPLY[@]}"';
      const r = await run(["bash", "-c", driver, bash.file, "stackgen", ...line.split(" ")], { cwd: here, env });
      expect(r.stderr).toBe("");
      return r;
    });
    // fish: its own completion engine, on the same lines.
    if (hasTool("fish")) {
      const fish = await script("fish");
      await check("fish", (line) => run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C "stackgen $argv[2]"', fish.file, line], { cwd: here, env }));
    }
    // zsh: the same values are offered (zsh -n checks the syntax above).
    const zsh = (await script("zsh")).text;
    for (const [flag, v] of values) if (!new RegExp(`${flag}\\)[^\\n]* ${v.join(" ")};`).test(zsh)) wrong.push(`zsh: no ${flag} values`);
    expect(wrong).toEqual([]);
  });

  test("zsh completes from the script installed as _stackgen on $fpath, first TAB included, --flag=value too", async () => {
    if (!hasTool("zsh")) return;
    const fp = mkdtempSync(join(tmp, "fpath-"));
    const r = await cli(["completion", "zsh"], { env });
    expectOk(r);
    writeFileSync(join(fp, "_stackgen"), r.stdout);
    // An interactive zsh on a pseudo-terminal: type each line, press TAB, wait for the completion.
    const driver = [
      "zmodload zsh/zpty",
      "fp=$1; shift",
      "zpty -b z zsh -f -i",
      "zpty -w z \"PS1='> '; fpath=($fp \\$fpath); autoload -U compinit; compinit -u; stackgen() {}; setopt nobeep\"",
      "while (( $# )); do",
      "  zpty -w -n z $'\\x15'\"$1\"$'\\t'",
      "  zpty -r z out \"*$2*\" && print -r -- \"ok: $1\"",
      "  shift 2",
      "done",
      "zpty -d z",
    ].join("\n");
    const lines: [string, string][] = [["stackgen generate --preset=de", "--preset=devops"], ["stackgen presets --json min", "minimal"], ["stackgen validate --no-g", "--no-gpu"], ["stackgen backup cr", "create"], ["stackgen --json backup cr", "create"]];
    const out = await run(["timeout", "30", "zsh", "-f", "-c", driver, "zsh", fp, ...lines.flat()], { env });
    expect(out.stdout.split("\n").filter((l) => l.startsWith("ok: ")).sort()).toEqual(lines.map(([line]) => `ok: ${line}`).sort());
  });
});

describe("generate", () => {
  test("names the services with known limits (Meet does not work without a domain) and where they are explained", async () => {
    const limited = await cli(["generate", "--name", "meet", "--preset", "videoconf", "--dir", join(tmp, "meet")], { env });
    expectOk(limited);
    expect(limited.stderr).toContain(`Known limits of La Suite Meet (Backend): read "Known limits" in ${join(tmp, "meet", "README.md")}`);
    expect(readFileSync(join(tmp, "meet", "README.md"), "utf8")).toContain("## Known limits");
    const plain = await cli(["generate", "--name", "plain", "--services", "redis", "--dir", join(tmp, "plain")], { env });
    expectOk(plain);
    expect(plain.stderr).not.toContain("Known limits");
  });

  test("writes the bundle; .env is 0600 and scripts 0755", async () => {
    const dir = join(tmp, "g1");
    const r = await cli(["generate", "--name", "g1", "--services", "n8n,redis", "--deployment", "bare-metal", "--dir", dir, "--json"], { env });
    expectOk(r);
    const out = JSON.parse(r.stdout);
    expect(out.files.every((f: any) => f.action === "create")).toBe(true);
    expect(statSync(join(dir, ".env")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "install.sh")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("name: g1");
  });

  test("the text summary counts in the singular for one, and a bare-metal bundle's next step is install.sh", async () => {
    const one = await cli(["generate", "--name", "one", "--services", "redis", "--dir", join(tmp, "one")], { env });
    expectOk(one);
    expect(one.stdout).toContain("(1 service, ");
    expect(one.stdout).toContain("Next: cd ");
    expect(one.stdout).toContain("&& docker compose up -d");
    // Regenerated as it was: nothing changes, and nothing is said to be written; a .env left
    // readable by others gets its 0600 back all the same.
    chmodSync(join(tmp, "one", ".env"), 0o644);
    const again = await cli(["generate", "--name", "one", "--services", "redis", "--dir", join(tmp, "one")], { env });
    expect(again.stdout).toMatch(/, 0 files written\)/);
    expect(again.stdout).toContain("Kept the existing .env values.");
    expect(statSync(join(tmp, "one", ".env")).mode & 0o777).toBe(0o600);
    const bare = await cli(["generate", "--name", "bare", "--services", "redis", "--deployment", "bare-metal", "--dir", join(tmp, "bare")], { env });
    expectOk(bare);
    expect(existsSync(join(tmp, "bare", "install.sh"))).toBe(true);
    expect(bare.stdout).toContain("&& sudo ./install.sh");
    expect(bare.stdout).not.toContain("docker compose up");
    // A category of one service.
    expect((await cli(["services", "--category", "streaming"], { env })).stdout).toEndWith("\n1 service\n");
  });

  test("regenerating keeps .env values and notes and adds new keys", async () => {
    const dir = join(tmp, "g2");
    expectOk(await cli(["generate", "--name", "g2", "--services", "redis", "--dir", dir], { env }));
    const before = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8") + "MY_OWN=1\n\n# NOTE: old value was in the vault\n");
    expectOk(await cli(["generate", "--name", "g2", "--services", "redis,n8n", "--dir", dir], { env }));
    const text = readFileSync(join(dir, ".env"), "utf8");
    expect(text).toContain("\n# NOTE: old value was in the vault\n"); // the user's note is not dropped
    const after = parseEnvValues(text);
    expect(after.get("REDIS_PASSWORD")).toBe(before.get("REDIS_PASSWORD")!);
    expect(after.get("CORE_GATEWAY_TOKEN")).toBe(before.get("CORE_GATEWAY_TOKEN")!);
    expect(after.get("N8N_DB_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);
    expect(after.get("MY_OWN")).toBe("1");
    expect(statSync(join(dir, ".env")).mode & 0o777).toBe(0o600);
  });

  test("--proxy next to --from stackgen.json switches the proxy or drops it; keys added to stackgen.json by hand are named as lost", async () => {
    const base = join(tmp, "g-proxy");
    expectOk(await cli(["generate", "--name", "gp", "--preset", "devops", "--dir", base], { env }));
    const recorded = JSON.parse(readFileSync(join(base, "stackgen.json"), "utf8"));
    expect(recorded).toMatchObject({ proxy: "caddy", services: expect.arrayContaining(["caddy"]) });
    const traefik = join(tmp, "g-proxy-traefik");
    expectOk(await cli(["generate", "--from", join(base, "stackgen.json"), "--proxy", "traefik", "--dir", traefik], { env }));
    expect(existsSync(join(traefik, "Caddyfile"))).toBe(false);
    expect(JSON.parse(readFileSync(join(traefik, "stackgen.json"), "utf8")).services).toEqual(expect.arrayContaining(["traefik"]));
    expect(JSON.parse(readFileSync(join(traefik, "stackgen.json"), "utf8")).services).not.toContain("caddy");
    const none = join(tmp, "g-proxy-none");
    expectOk(await cli(["generate", "--from", join(base, "stackgen.json"), "--proxy", "none", "--dir", none], { env }));
    expect(existsSync(join(none, "Caddyfile"))).toBe(false);
    expect(readFileSync(join(none, "docker-compose.yml"), "utf8")).not.toMatch(/^  caddy:/m);

    writeFileSync(join(base, "stackgen.json"), JSON.stringify({ ...recorded, myNote: "staging box" }, null, 2));
    const again = await cli(["generate", "--dir", base, "--preset", "devops"], { env });
    expectOk(again);
    expect(again.stderr).toContain("what was added to it by hand (myNote) is not kept");
    // A setting stackgen itself recorded (the preset) and not given again is named as such.
    const later = await cli(["generate", "--dir", base, "--services", "redis"], { env });
    expectOk(later);
    expect(later.stderr).toContain("The previous run's preset was not given this time");
    expect(later.stderr).not.toContain("added to it by hand");
  });

  test("the core version: kept from the bundle when not given, written to .env when given, the user's .env edit kept otherwise", async () => {
    const dir = join(tmp, "g-core-version");
    const coreTag = (compose: string) => /\$\{CORE_VERSION:-([^}]+)\}/.exec(compose)?.[1];
    const read = () => ({
      env: parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("CORE_VERSION"),
      recorded: JSON.parse(readFileSync(join(dir, "stackgen.json"), "utf8")).coreVersion,
      fallback: coreTag(readFileSync(join(dir, "docker-compose.yml"), "utf8")),
    });
    expectOk(await cli(["generate", "--services", "redis", "--core-version", "2026.1.1", "--dir", dir], { env }));
    expect(read()).toEqual({ env: "2026.1.1", recorded: "2026.1.1", fallback: "2026.1.1" });
    // Adding a service without the flag does not move the gateway to latest, in any file.
    expectOk(await cli(["generate", "--services", "redis,n8n", "--dir", dir], { env }));
    expect(read()).toEqual({ env: "2026.1.1", recorded: "2026.1.1", fallback: "2026.1.1" });
    // The flag given again is the newest word: .env follows it, and the run says so.
    const moved = await cli(["generate", "--services", "redis,n8n", "--core-version", "2026.2.2", "--dir", dir, "--json"], { env });
    expectOk(moved);
    expect(read()).toEqual({ env: "2026.2.2", recorded: "2026.2.2", fallback: "2026.2.2" });
    expect(JSON.parse(moved.stdout).files.find((f: { path: string }) => f.path === ".env")).toEqual({ path: ".env", action: "keep-values", updatedValues: ["CORE_VERSION"] });
    expect(moved.stderr).toContain("CORE_VERSION in .env is now 2026.2.2");
    // A tag set by hand in .env (as the bundle README says) survives a run without the flag.
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8").replace(/^CORE_VERSION=.*$/m, "CORE_VERSION=2026.3.0"));
    const kept = await cli(["generate", "--services", "redis,n8n", "--dir", dir, "--json"], { env });
    expectOk(kept);
    expect(read().env).toBe("2026.3.0");
    expect(kept.stderr).not.toContain("CORE_VERSION");
  });

  test("adding a domain on regeneration moves public URLs off localhost, except values the user set", async () => {
    const dir = join(tmp, "g-domain");
    expectOk(await cli(["generate", "--name", "gd", "--services", "n8n,vaultwarden", "--dir", dir], { env }));
    const first = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    expect(first.get("N8N_WEBHOOK_URL")).toBe("http://localhost:5678/");
    // The user points Vaultwarden somewhere of their own.
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8").replace(/^VAULTWARDEN_DOMAIN=.*$/m, "VAULTWARDEN_DOMAIN=https://vault.mine.org"));
    const again = await cli(["generate", "--from", join(dir, "stackgen.json"), "--proxy", "caddy", "--domain", "example.com", "--dir", dir, "--json"], { env });
    expectOk(again);
    const after = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    expect(after.get("N8N_WEBHOOK_URL")).toBe("https://n8n.example.com/");
    expect(after.get("VAULTWARDEN_DOMAIN")).toBe("https://vault.mine.org");
    expect(after.get("N8N_DB_PASSWORD")).toBe(first.get("N8N_DB_PASSWORD")!);
    const envEntry = JSON.parse(again.stdout).files.find((f: { path: string }) => f.path === ".env");
    expect(envEntry).toEqual({ path: ".env", action: "keep-values", updatedValues: ["N8N_WEBHOOK_URL"] });
    expect(again.stderr).toContain("N8N_WEBHOOK_URL");
  });

  test("a service taken out on regeneration: its unedited files go, edited ones stay, and what it leaves behind is said", async () => {
    const dir = join(tmp, "g-removed");
    expectOk(await cli(["generate", "--name", "gr", "--services", "n8n,grafana", "--dir", dir], { env }));
    writeFileSync(join(dir, "skills", "grafana", "SKILL.md"), readFileSync(join(dir, "skills", "grafana", "SKILL.md"), "utf8") + "\nmy notes\n");
    const again = await cli(["generate", "--services", "redis", "--dir", dir, "--json"], { env });
    expectOk(again);
    const actions = Object.fromEntries(JSON.parse(again.stdout).files.map((f: { path: string; action: string }) => [f.path, f.action]));
    expect(actions["skills/n8n/SKILL.md"]).toBe("remove");
    expect(actions["postgres/init/10-databases.sh"]).toBe("remove");
    expect(actions["skills/grafana/SKILL.md"]).toBe("leave-edited");
    expect(existsSync(join(dir, "skills", "n8n"))).toBe(false);
    expect(existsSync(join(dir, "postgres"))).toBe(false);
    expect(readFileSync(join(dir, "skills", "grafana", "SKILL.md"), "utf8")).toContain("my notes");
    expect(existsSync(join(dir, "skills", "redis", "SKILL.md"))).toBe(true);
    expect(again.stderr).toContain("No longer in the stack: postgresql, n8n, prometheus, grafana.");
    expect(again.stderr).toContain("gr_n8n-data");
    const text = await cli(["generate", "--services", "n8n", "--dir", dir, "--dry-run"], { env });
    expect(text.stderr).toContain("No longer in the stack: redis.");
    // The secrets of the data those volumes still hold stay in .env.
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("N8N_DB_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);

    // A hand-edited stackgen.json naming the bundle's own files another way, the user's files,
    // or paths outside: nothing of that is removed, and the regeneration still runs.
    writeFileSync(join(dir, "docker-compose.override.yml"), "services: {}\n");
    const hashOf = (path: string) => createHash("sha256").update(readFileSync(join(dir, path))).digest("hex");
    const config = JSON.parse(readFileSync(join(dir, "stackgen.json"), "utf8"));
    config.files = {
      ...config.files,
      "./.env": hashOf(".env"),
      "skills/../docker-compose.yml": hashOf("docker-compose.yml"),
      ".env": hashOf(".env"),
      "docker-compose.override.yml": hashOf("docker-compose.override.yml"),
      "../outside.txt": "0".repeat(64),
      "/etc/hostname": "0".repeat(64),
      constructor: "x",
    };
    writeFileSync(join(dir, "stackgen.json"), JSON.stringify(config));
    writeFileSync(join(dir, "..", "outside.txt"), "keep me");
    const third = await cli(["generate", "--services", "redis", "--dir", dir], { env });
    expectOk(third);
    for (const path of [".env", "docker-compose.yml", "docker-compose.override.yml", "../outside.txt"]) expect([path, existsSync(join(dir, path))]).toEqual([path, true]);
    // Nothing was taken out this time: the usual next step; taking one out names the flag that
    // removes its container.
    expect(third.stdout).toContain("&& docker compose up -d\n");
    const fourth = await cli(["generate", "--services", "n8n", "--dir", dir], { env });
    expect(fourth.stdout).toContain("&& docker compose up -d --remove-orphans\n");
    // Renamed as well: what was taken out ran in the old project, which the new one's
    // --remove-orphans does not reach.
    const renamed = await cli(["generate", "--name", "gr2", "--services", "redis", "--dir", dir], { env });
    expectOk(renamed);
    expect(renamed.stderr).toContain("No longer in the stack: postgresql, n8n.");
    expect(renamed.stderr).toContain("(gr_postgresql-data, gr_n8n-data)");
    expect(renamed.stderr).toContain('keep running in the project "gr" until `docker compose -p gr down --remove-orphans`');
    expect(renamed.stderr).not.toContain("gr2_n8n-data");
    expect(renamed.stdout).toContain("&& docker compose up -d\n");
  });

  test("regenerating a bundle from before its API keys signs them with the JWT secret it keeps", async () => {
    const dir = join(tmp, "g-supabase");
    expectOk(await cli(["generate", "--name", "gs", "--services", "supabase", "--dir", dir], { env }));
    // As an older bundle had it: the secret (locked into running services) but no keys.
    const older = readFileSync(join(dir, ".env"), "utf8").replace(/^SUPABASE_(ANON|SERVICE_ROLE)_KEY=.*\n/gm, "");
    writeFileSync(join(dir, ".env"), older);
    expectOk(await cli(["generate", "--name", "gs", "--services", "supabase", "--dir", dir], { env }));
    const after = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    const secret = parseEnvValues(older).get("SUPABASE_JWT_SECRET")!;
    for (const name of ["SUPABASE_ANON_KEY", "SUPABASE_SERVICE_ROLE_KEY"]) {
      const [header, payload, signature] = after.get(name)!.split(".");
      expect(signature).toBe(createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url"));
    }
    expect(after.get("SUPABASE_JWT_SECRET")).toBe(secret);
  });

  test("a --domain without a proxy is said to do nothing, rather than silently left out", async () => {
    const r = await cli(["generate", "--name", "nodomain", "--services", "n8n", "--domain", "lab.example.org", "--dir", join(tmp, "nodomain")], { env });
    expectOk(r);
    expect(r.stderr).toContain("--domain lab.example.org has no effect without a reverse proxy");
    const proxied = await cli(["generate", "--name", "withproxy", "--services", "n8n", "--proxy", "caddy", "--domain", "lab.example.org", "--dir", join(tmp, "withproxy")], { env });
    expect(proxied.stderr).not.toContain("has no effect");
  });

  test("refuses to overwrite edited files unless --force; writes nothing then", async () => {
    const dir = join(tmp, "g3");
    expectOk(await cli(["generate", "--name", "g3", "--services", "redis", "--dir", dir], { env }));
    const compose = join(dir, "docker-compose.yml");
    writeFileSync(compose, readFileSync(compose, "utf8") + "# my edit\n");
    const readme = readFileSync(join(dir, "README.md"), "utf8");
    const r = await cli(["generate", "--name", "g3", "--services", "redis,n8n", "--dir", dir], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("docker-compose.yml");
    expect(readFileSync(compose, "utf8")).toContain("# my edit");
    expect(readFileSync(join(dir, "README.md"), "utf8")).toBe(readme);
    // Scripts get the files as details, a dry run too.
    for (const extra of [[], ["--dry-run"]]) {
      const json = await cli(["generate", "--name", "g3", "--services", "redis,n8n", "--dir", dir, "--json", ...extra], { env });
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout).error).toMatchObject({ code: "EDITED_FILES", details: [{ field: "docker-compose.yml", message: "changed since it was generated" }] });
    }
    const forced = await cli(["generate", "--name", "g3", "--services", "redis,n8n", "--dir", dir, "--force"], { env });
    expectOk(forced);
    expect(forced.stderr).toContain("Replaced files you had changed (--force): docker-compose.yml. Your text of each is kept beside it, in docker-compose.yml.edited");
    expect(readFileSync(compose, "utf8")).not.toContain("# my edit");
    // The edit is not lost: the replaced text is kept beside it, with the file's mode.
    expect(readFileSync(`${compose}.edited`, "utf8")).toEndWith("# my edit\n");
    expect(statSync(`${compose}.edited`).mode & 0o777).toBe(statSync(compose).mode & 0o777);
    // A planted link in its place is replaced, never written through.
    const elsewhere = join(tmp, "g3-elsewhere");
    writeFileSync(elsewhere, "untouched\n");
    rmSync(`${compose}.edited`);
    symlinkSync(elsewhere, `${compose}.edited`);
    writeFileSync(compose, readFileSync(compose, "utf8") + "# again\n");
    expectOk(await cli(["generate", "--name", "g3", "--services", "redis", "--dir", dir, "--force"], { env }));
    expect(readFileSync(elsewhere, "utf8")).toBe("untouched\n");
    expect(readFileSync(`${compose}.edited`, "utf8")).toEndWith("# again\n");
    // A hard link in its place is not written through either, and the copy gets the file's mode.
    rmSync(`${compose}.edited`);
    linkSync(elsewhere, `${compose}.edited`);
    chmodSync(elsewhere, 0o600);
    writeFileSync(compose, readFileSync(compose, "utf8") + "# third\n");
    expectOk(await cli(["generate", "--name", "g3", "--services", "redis,n8n", "--dir", dir, "--force"], { env }));
    expect(readFileSync(elsewhere, "utf8")).toBe("untouched\n");
    expect(readFileSync(`${compose}.edited`, "utf8")).toEndWith("# third\n");
    expect(statSync(`${compose}.edited`).mode & 0o777).toBe(statSync(compose).mode & 0o777);
  });

  test("unedited generated files are updated on regeneration", async () => {
    const dir = join(tmp, "g4");
    expectOk(await cli(["generate", "--name", "g4", "--services", "redis", "--dir", dir], { env }));
    expectOk(await cli(["generate", "--name", "g4", "--services", "redis,n8n", "--dir", dir], { env }));
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("n8n:");
  });

  test("--dry-run writes nothing", async () => {
    const dir = join(tmp, "g5");
    const r = await cli(["generate", "--name", "g5", "--services", "redis", "--dir", dir, "--dry-run", "--json"], { env });
    expectOk(r);
    expect(JSON.parse(r.stdout).dryRun).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  test("never writes outside --dir: path-like names and symlinks are refused", async () => {
    expect((await cli(["generate", "--name", "../evil", "--services", "redis", "--dir", join(tmp, "g6")], { env })).code).toBe(2);
    const dir = join(tmp, "g7");
    mkdirSync(dir);
    const outside = join(tmp, "outside");
    mkdirSync(outside);
    symlinkSync(outside, join(dir, "skills"));
    const r = await cli(["generate", "--name", "g7", "--services", "redis", "--dir", dir], { env });
    expect(r.code).not.toBe(0);
    expect(existsSync(join(outside, "redis"))).toBe(false);
    const dir2 = join(tmp, "g8");
    mkdirSync(dir2);
    symlinkSync(join(outside, "stolen"), join(dir2, ".env"));
    expect((await cli(["generate", "--name", "g8", "--services", "redis", "--dir", dir2], { env })).code).toBe(2);
    expect(existsSync(join(outside, "stolen"))).toBe(false);
    // A hard link is replaced by a file of its own: the secrets never reach the linked file.
    const dir3 = join(tmp, "g8b");
    expectOk(await cli(["generate", "--name", "g8b", "--services", "redis", "--dir", dir3], { env }));
    const linked = join(outside, "linked-env");
    writeFileSync(linked, "OUTSIDE=1\n");
    rmSync(join(dir3, ".env"));
    linkSync(linked, join(dir3, ".env"));
    expectOk(await cli(["generate", "--name", "g8b", "--services", "redis", "--dir", dir3], { env }));
    expect(readFileSync(linked, "utf8")).toBe("OUTSIDE=1\n");
    expect(readFileSync(join(dir3, ".env"), "utf8")).toContain("REDIS_PASSWORD=");
    expect(statSync(join(dir3, ".env")).nlink).toBe(1);
    expect(readdirSync(dir3).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    // Any other file is written in place: a container bind-mounting it sees the new text.
    const inode = statSync(join(dir3, "docker-compose.yml")).ino;
    expectOk(await cli(["generate", "--name", "g8b", "--services", "redis,qdrant", "--dir", dir3], { env }));
    expect(readFileSync(join(dir3, "docker-compose.yml"), "utf8")).toContain("qdrant");
    expect(statSync(join(dir3, "docker-compose.yml")).ino).toBe(inode);
  });

  test("--dir without --name names the project after the folder as Compose does", async () => {
    const dir = join(tmp, "My Stack.v2");
    const r = await cli(["generate", "--services", "redis", "--dir", dir, "--json"], { env });
    expectOk(r);
    expect(JSON.parse(r.stdout).metadata.projectName).toBe("mystackv2");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toMatch(/^name: mystackv2$/m);
    expect(r.stderr).toContain('Project name "mystackv2", made from the folder name My Stack.v2');
  });

  test("--from a complete export or a v1 stackgen.json", async () => {
    const complete = join(tmp, "complete.json");
    writeFileSync(complete, JSON.stringify({ formatVersion: "1", input: { projectName: "fromc", preset: "minimal", coreVersion: "9.9.9" }, files: {}, metadata: {} }));
    const dir = join(tmp, "g9");
    expectOk(await cli(["generate", "--from", complete, "--dir", dir], { env }));
    expect(readFileSync(join(dir, ".env"), "utf8")).toContain("CORE_VERSION=9.9.9");
    const v1 = join(tmp, "v1.json");
    writeFileSync(v1, JSON.stringify({ configVersion: 1, projectName: "fromv1", services: ["redis"] }));
    const dir2 = join(tmp, "g10");
    expectOk(await cli(["generate", "--from", v1, "--dir", dir2], { env }));
    expect(JSON.parse(readFileSync(join(dir2, "stackgen.json"), "utf8"))).toMatchObject({ configVersion: 2, deploymentType: "docker", projectName: "fromv1" });
    const v9 = join(tmp, "v9.json");
    writeFileSync(v9, JSON.stringify({ configVersion: 9, projectName: "x", services: ["redis"] }));
    const bad = await cli(["generate", "--from", v9, "--dir", join(tmp, "g11")], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("No migration path from config version 9");
    writeFileSync(join(tmp, "broken.json"), "{nope");
    expect((await cli(["generate", "--from", join(tmp, "broken.json"), "--dir", join(tmp, "g12")], { env })).code).toBe(2);
  });

  test("--from - and --file - read standard input (a piped export), named so in errors", async () => {
    const dir = join(tmp, "piped");
    const complete = JSON.stringify({ formatVersion: "1", input: { projectName: "piped", services: ["redis"], coreVersion: "9.9.8" }, files: {}, metadata: {} });
    expectOk(await cli(["generate", "--from", "-", "--dir", dir], { env, stdin: complete }));
    expect(readFileSync(join(dir, ".env"), "utf8")).toContain("CORE_VERSION=9.9.8");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toMatch(/^name: piped$/m);
    const broken = await cli(["generate", "--from", "-", "--dir", join(tmp, "piped-broken")], { env, stdin: "{nope" });
    expect([broken.code, broken.stderr]).toEqual([2, expect.stringContaining("standard input is not valid JSON")]);
    const checked = await cli(["validate", "--file", "-", "--json"], { env, stdin: JSON.stringify({ projectName: "piped", services: ["redis"] }) });
    expectOk(checked);
    expect(JSON.parse(checked.stdout).valid).toBe(true);
    // Spawned from Node, standard input is a socket (which /dev/stdin cannot open: ENXIO).
    const fromNode = `const r = require("child_process").spawnSync(process.argv[1], [process.argv[2], "validate", "--file", "-", "--json"], { input: '{"projectName":"piped","services":["redis"]}' }); process.stdout.write(String(r.stdout)); process.exit(r.status);`;
    const viaSocket = await run(["node", "-e", fromNode, BUN, MAIN], { env });
    expectOk(viaSocket);
    expect(JSON.parse(viaSocket.stdout).valid).toBe(true);
  });

  test("--from a complete export brings back its .env values; new variables get fresh ones; a .env in --dir still wins", async () => {
    const { generateJson } = await import("../../src/api/routes/generate.ts");
    const { getCatalog } = await import("../../src/catalog/index.ts");
    const exported = JSON.parse(generateJson({ projectName: "exp", services: ["n8n"] }, getCatalog(), true));
    const file = join(tmp, "export.json");
    writeFileSync(file, JSON.stringify(exported));
    const sent = parseEnvValues(exported.files[".env"]);
    expect(sent.get("N8N_DB_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);
    const dir = join(tmp, "imported");
    const r = await cli(["generate", "--from", file, "--dir", dir], { env });
    expectOk(r);
    expect(r.stdout).toContain("Took the .env values of");
    const imported = parseEnvValues(readFileSync(join(dir, ".env"), "utf8"));
    for (const [key, value] of sent) expect(imported.get(key), key).toBe(value);
    expect(statSync(join(dir, ".env")).mode & 0o777).toBe(0o600);
    // More services than the export had: its values stay, the new ones are drawn.
    const grown = join(tmp, "imported-grown");
    expectOk(await cli(["generate", "--from", file, "--services", "n8n,qdrant", "--dir", grown], { env }));
    const grownEnv = parseEnvValues(readFileSync(join(grown, ".env"), "utf8"));
    expect(grownEnv.get("N8N_DB_PASSWORD")).toBe(sent.get("N8N_DB_PASSWORD"));
    expect(grownEnv.get("QDRANT_API_KEY")).toMatch(/^[A-Za-z0-9]{32,}$/);
    // The stack already in --dir runs on its own .env: that one is kept over the export's.
    writeFileSync(join(dir, ".env"), readFileSync(join(dir, ".env"), "utf8").replace(`N8N_DB_PASSWORD=${sent.get("N8N_DB_PASSWORD")}`, "N8N_DB_PASSWORD=alreadyInUseByTheVolume0123456789"));
    expectOk(await cli(["generate", "--from", file, "--dir", dir], { env }));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("N8N_DB_PASSWORD")).toBe("alreadyInUseByTheVolume0123456789");
    // An export may be someone else's: only this stack's variables are taken from it. Compose's
    // own settings would otherwise run the new stack as another project, or from other files.
    // A secret crafted to end the connection URL it is put in early (`postgresql://agent:${…}@postgresql`)
    // would send the gateway's database login to another host: it is not taken either.
    const crafted = "x@collector.evil.example:5432/agent#";
    const tamperedEnv = (exported.files[".env"] as string).replace(/^POSTGRESQL_AGENT_PASSWORD=.*$/m, `POSTGRESQL_AGENT_PASSWORD=${crafted}`);
    expect(tamperedEnv).toContain(crafted);
    const tampered = { ...exported, files: { ...exported.files, ".env": `${tamperedEnv}COMPOSE_PROJECT_NAME=victim\nCOMPOSE_FILE=/tmp/other.yml\n` } };
    writeFileSync(file, JSON.stringify(tampered));
    const shared = join(tmp, "imported-shared");
    const taken = await cli(["generate", "--from", file, "--dir", shared], { env });
    expectOk(taken);
    expect(taken.stderr).toContain("Not taken from");
    expect(taken.stderr).toContain("COMPOSE_PROJECT_NAME, COMPOSE_FILE");
    const sharedEnv = parseEnvValues(readFileSync(join(shared, ".env"), "utf8"));
    expect(sharedEnv.has("COMPOSE_PROJECT_NAME")).toBe(false);
    expect(sharedEnv.has("COMPOSE_FILE")).toBe(false);
    expect(sharedEnv.get("N8N_DB_PASSWORD")).toBe(sent.get("N8N_DB_PASSWORD"));
    expect(taken.stderr).toContain("POSTGRESQL_AGENT_PASSWORD");
    expect(sharedEnv.get("POSTGRESQL_AGENT_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);
  });

  test("regenerating into an existing bundle without --name keeps its project name, not the folder's", async () => {
    // Another name would make compose start a new project with new, empty volumes.
    const dir = join(tmp, "folder-name");
    expectOk(await cli(["generate", "--name", "mylab", "--services", "redis", "--dir", dir], { env }));
    expectOk(await cli(["generate", "--services", "redis,n8n", "--dir", dir], { env }));
    expect(JSON.parse(readFileSync(join(dir, "stackgen.json"), "utf8")).projectName).toBe("mylab");
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("\nname: mylab\n");
    // A --from file of another project does not rename it either; --name does, with a warning.
    const other = join(tmp, "other-export");
    expectOk(await cli(["generate", "--name", "elsewhere", "--services", "qdrant", "--dir", other], { env }));
    const from = await cli(["generate", "--from", join(other, "stackgen.json"), "--dir", dir], { env });
    expectOk(from);
    expect(readFileSync(join(dir, "docker-compose.yml"), "utf8")).toContain("\nname: mylab\n");
    expect(from.stderr).toContain('Keeping the project name of the bundle');
    // What it leaves behind is named under the real project name.
    expect(from.stderr).toContain("mylab_redis-data");
    // A complete export's values do not replace a .env already there, and the output says so.
    const exportFile = join(tmp, "export-complete.json");
    writeFileSync(exportFile, JSON.stringify({ formatVersion: "1", input: { projectName: "mylab", services: ["redis"] }, files: { ".env": "REDIS_PASSWORD=fromexport0123456789abcdef012345\n" } }));
    expectOk(await cli(["generate", "--from", exportFile, "--dir", dir], { env }));
    const kept = await cli(["generate", "--from", exportFile, "--dir", dir], { env }); // .env now unchanged
    expectOk(kept);
    expect(kept.stdout).toContain("Kept the existing .env values");
    expect(kept.stdout).not.toContain("Took the .env values");
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).not.toBe("fromexport0123456789abcdef012345");
    const renamedRun = await cli(["generate", "--name", "mylab2", "--services", "redis", "--dir", dir], { env });
    expectOk(renamedRun);
    expect(renamedRun.stderr).toContain('Renaming the project from "mylab" to "mylab2"');
    // Without --dir the folder is named after the project; one holding another bundle is not
    // renamed silently either.
    mkdirSync(join(tmp, "named"), { recursive: true });
    expectOk(await cli(["generate", "--name", "inside", "--services", "redis", "--dir", join(tmp, "named", "foo")], { env }));
    const noDir = await run([BUN, MAIN, "generate", "--name", "foo", "--services", "redis"], { cwd: join(tmp, "named"), env });
    expectOk(noDir);
    expect(noDir.stderr).toContain('Renaming the project from "inside" to "foo"');
    // A stack without stackgen.json keeps its compose project's name too.
    const handmade = join(tmp, "handmade");
    mkdirSync(handmade);
    writeFileSync(join(handmade, "docker-compose.yml"), "name: prod\nservices:\n  app:\n    image: busybox\n");
    const over = await cli(["generate", "--services", "redis", "--dir", handmade, "--force"], { env });
    expectOk(over);
    expect(readFileSync(join(handmade, "docker-compose.yml"), "utf8")).toContain("\nname: prod\n");
    // A new folder still names the project.
    const fresh = join(tmp, "fresh-folder");
    expectOk(await cli(["generate", "--services", "redis", "--dir", fresh], { env }));
    expect(JSON.parse(readFileSync(join(fresh, "stackgen.json"), "utf8")).projectName).toBe("fresh-folder");
  });

  test("--no-secrets leaves secrets empty; --secrets next to --from stackgen.json fills them in", async () => {
    const dir = join(tmp, "g13");
    expectOk(await cli(["generate", "--name", "g13", "--services", "redis", "--no-secrets", "--dir", dir], { env }));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toBe("");
    // The file remembers --no-secrets: regenerated from it alone, still empty.
    expectOk(await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", dir], { env }));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toBe("");
    expectOk(await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", dir, "--secrets"], { env }));
    expect(parseEnvValues(readFileSync(join(dir, ".env"), "utf8")).get("REDIS_PASSWORD")).toMatch(/^[A-Za-z0-9]{32,}$/);
  });

  test("--memory-limits caps the containers and is kept by the next generate from stackgen.json; --no-memory-limits takes the caps off", async () => {
    const dir = join(tmp, "g14");
    const caps = () => readFileSync(join(dir, "docker-compose.yml"), "utf8").match(/memory: \d+M/g) ?? [];
    expectOk(await cli(["generate", "--name", "g14", "--services", "redis", "--memory-limits", "--dir", dir], { env }));
    expect(caps()).toEqual(["memory: 1024M", "memory: 256M"]); // the gateway, then Redis
    expectOk(await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", dir], { env }));
    expect(caps()).toHaveLength(2);
    const off = await cli(["generate", "--from", join(dir, "stackgen.json"), "--dir", dir, "--no-memory-limits", "--json"], { env });
    expectOk(off);
    expect(caps()).toEqual([]);
    expect(JSON.parse(readFileSync(join(dir, "stackgen.json"), "utf8")).memoryLimits).toBeUndefined();
    expect((await cli(["generate", "--name", "g14", "--services", "redis", "--memory-limits=maybe", "--dir", dir], { env })).code).toBe(2);
  });
});
void chmodSync;
