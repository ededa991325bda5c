// The generated PostgreSQL init script against a real PostgreSQL server (Debian's postgresql-15):
// every service gets its own login with its own password, Synapse gets a C-collated database,
// and running the script twice changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { fixedSecrets } from "../../src/core/generate/secrets.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { IN_CI, run } from "../support/tools.ts";
import { parse as parseYaml } from "yaml";

const PG_ROOT = "/usr/lib/postgresql";
const version = existsSync(PG_ROOT) ? readdirSync(PG_ROOT).filter((v) => existsSync(join(PG_ROOT, v, "bin", "initdb"))).sort().at(-1) : undefined;
const bin = (name: string) => join(PG_ROOT, version ?? "", "bin", name);
const available = version !== undefined && process.getuid?.() === 0;
if (!available) {
  if (IN_CI) throw new Error("PostgreSQL server binaries (postgresql-15) and root are required in CI");
  console.warn("[skip] PostgreSQL server binaries not installed (apt-get install postgresql-15): init script not run for real");
}

const dir = mkdtempSync(join(tmpdir(), "stackgen-pg-"));
const data = join(dir, "data");
const socket = dir;
const SUPER_PW = "superSecretForTests0123456789abcd";
const as = (cmd: string[], env: Record<string, string> = {}, stdin?: string) =>
  run(["runuser", "-u", "postgres", "--", "env", ...Object.entries({ PGHOST: socket, PGPORT: "55432", ...env }).map(([k, v]) => `${k}=${v}`), ...cmd], { stdin });

const { files } = generateBundle({ projectName: "pg", services: ["n8n", "matrix-synapse", "outline"], platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pg") });
const envValues = parseEnvValues(files[".env"]);
const script = join(dir, "10-databases.sh");

beforeAll(async () => {
  if (!available) return;
  const id = (flag: string) => Number(new TextDecoder().decode(Bun.spawnSync(["id", flag, "postgres"]).stdout).trim());
  chownSync(dir, id("-u"), id("-g"));
  const pwfile = join(dir, "pw");
  writeFileSync(pwfile, SUPER_PW);
  chmodSync(pwfile, 0o644);
  expect((await as([bin("initdb"), "-D", data, "-U", "postgres", "--pwfile", pwfile, "--auth=scram-sha-256", "--locale=C", "--encoding=SQL_ASCII"])).code).toBe(0);
  // TCP on loopback too: the bundle's health check reaches the server that way.
  const started = await as([bin("pg_ctl"), "-D", data, "-w", "-o", `-k ${socket} -c listen_addresses=127.0.0.1 -p 55432`, "-l", join(dir, "log"), "start"]);
  expect(started.code, started.stderr).toBe(0);
  writeFileSync(script, files["postgres/init/10-databases.sh"]);
  chmodSync(script, 0o755);
}, 60_000);

afterAll(async () => {
  if (available) await as([bin("pg_ctl"), "-D", data, "-m", "immediate", "stop"]);
  rmSync(dir, { recursive: true, force: true });
});

const passwords = () => ({
  POSTGRES_USER: "postgres",
  PGPASSWORD: SUPER_PW,
  N8N_DB_PASSWORD: envValues.get("N8N_DB_PASSWORD")!,
  MATRIX_SYNAPSE_DB_PASSWORD: envValues.get("MATRIX_SYNAPSE_DB_PASSWORD")!,
  OUTLINE_DB_PASSWORD: envValues.get("OUTLINE_DB_PASSWORD")!,
  POSTGRESQL_AGENT_PASSWORD: envValues.get("POSTGRESQL_AGENT_PASSWORD")!,
});
const psqlAs = (user: string, password: string, db: string, sql: string) =>
  as([bin("psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", user, "-d", db, "-c", sql], { PGPASSWORD: password });

describe("postgres init script", () => {
  test("creates each service's user and database with its own password", async () => {
    if (!available) return;
    const r = await as(["sh", script], passwords());
    expect(r.code, r.stderr).toBe(0);
    // The gateway's own database too (its agents work there, not as the superuser).
    for (const [user, db, varName] of [["n8n", "n8n", "N8N_DB_PASSWORD"], ["synapse", "synapse", "MATRIX_SYNAPSE_DB_PASSWORD"], ["outline", "outline", "OUTLINE_DB_PASSWORD"], ["agent", "agent", "POSTGRESQL_AGENT_PASSWORD"]]) {
      const ok = await psqlAs(user, envValues.get(varName)!, db, "select current_user, current_database()");
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout.trim()).toBe(`${user}|${db}`);
      const wrong = await psqlAs(user, "not-the-password", db, "select 1");
      expect(wrong.code).not.toBe(0);
    }
    // One user cannot use another's password.
    expect((await psqlAs("n8n", envValues.get("OUTLINE_DB_PASSWORD")!, "n8n", "select 1")).code).not.toBe(0);
  });

  test("Synapse's database is C-collated and UTF8", async () => {
    if (!available) return;
    const r = await psqlAs("postgres", SUPER_PW, "postgres", "select datcollate, datctype, pg_encoding_to_char(encoding) from pg_database where datname = 'synapse'");
    // UTF8 also in a cluster made without a locale (SQL_ASCII, as a bare-metal host may make it):
    // Synapse refuses any other encoding.
    expect(r.stdout.trim()).toBe("C|C|UTF8");
  });

  test("running it again is harmless", async () => {
    if (!available) return;
    const r = await as(["sh", script], passwords());
    expect(r.code, r.stderr).toBe(0);
    const count = await psqlAs("postgres", SUPER_PW, "postgres", "select count(*) from pg_database where datname in ('n8n','synapse','outline')");
    expect(count.stdout.trim()).toBe("3");
  });

  test("a service added to a stack whose database already ran gets its own from PostgreSQL's health check", async () => {
    if (!available) return;
    // The image runs init scripts only on an empty volume; the regenerated bundle's health check
    // (what compose runs in the container every 10 s) applies the script instead.
    const grown = generateBundle({ projectName: "pg", services: ["n8n", "matrix-synapse", "outline", "mattermost"], platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pg") });
    const grownEnv = parseEnvValues(grown.files[".env"]);
    const compose = parseYaml(grown.files["docker-compose.yml"]) as { services: Record<string, { healthcheck: { test: string[] }; volumes: string[] }> };
    const postgres = compose.services.postgresql!;
    const [kind, shell] = postgres.healthcheck.test;
    expect(kind).toBe("CMD-SHELL");
    const mount = postgres.volumes.find((v) => v.startsWith("./postgres/init:"))!.split(":")[1]!;
    const grownScript = join(dir, "grown.sh");
    writeFileSync(grownScript, grown.files["postgres/init/10-databases.sh"]);
    chmodSync(grownScript, 0o755);
    // Compose turns `$$` into `$`; the script is where the bundle mounts it.
    const command = shell!.replaceAll("$$", "$").replace(`${mount}/10-databases.sh`, grownScript);
    const before = await psqlAs("postgres", SUPER_PW, "postgres", "select count(*) from pg_database where datname = 'mattermost'");
    expect(before.stdout.trim()).toBe("0");
    const env = { ...passwords(), PGPASSWORD: "", POSTGRES_PASSWORD: SUPER_PW, MATTERMOST_DB_PASSWORD: grownEnv.get("MATTERMOST_DB_PASSWORD")! };
    const check = await as(["sh", "-c", command], env);
    expect(check.code, check.stderr).toBe(0);
    const login = await psqlAs("mattermost", grownEnv.get("MATTERMOST_DB_PASSWORD")!, "mattermost", "select current_user, current_database()");
    expect(login.stdout.trim()).toBe("mattermost|mattermost");
    // A healthy check again: nothing left to do, still passes.
    expect((await as(["sh", "-c", command], env)).code).toBe(0);
    // And it is a health check: with the server down it fails.
    expect((await as(["sh", "-c", command.replace("-h 127.0.0.1", "-h 127.0.0.1 -p 1")], env)).code).not.toBe(0);
  });

  test("a password with quotes and backslashes is stored as given, never parsed as SQL", async () => {
    if (!available) return;
    const nasty = `a'b"c\\d;DROP ROLE n8n;--$x`;
    const r = await as(["sh", script], { ...passwords(), OUTLINE_DB_PASSWORD: nasty });
    expect(r.code, r.stderr).toBe(0); // role exists already: unchanged, and no SQL ran from the value
    const check = await psqlAs("postgres", SUPER_PW, "postgres", "select count(*) from pg_roles where rolname = 'n8n'");
    expect(check.stdout.trim()).toBe("1");
    const fresh = generateBundle({ projectName: "pg2", services: ["umami"], platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pg2") });
    const script2 = join(dir, "20.sh");
    writeFileSync(script2, fresh.files["postgres/init/10-databases.sh"]);
    chmodSync(script2, 0o755);
    const made = await as(["sh", script2], { POSTGRES_USER: "postgres", PGPASSWORD: SUPER_PW, UMAMI_DB_PASSWORD: nasty, POSTGRESQL_AGENT_PASSWORD: envValues.get("POSTGRESQL_AGENT_PASSWORD")! });
    expect(made.code, made.stderr).toBe(0);
    const login = await psqlAs("umami", nasty, "umami", "select current_user");
    expect(login.stdout.trim()).toBe("umami");
  });

  test("a password with line breaks is stored as given: its lines never reach psql as commands", async () => {
    if (!available) return;
    const marker = join(dir, "ran-from-a-password");
    const nasty = `x\n\\! touch ${marker}\nCOPY (SELECT 1) TO PROGRAM 'touch ${marker}';\nend\n`;
    const fresh = generateBundle({ projectName: "pg4", services: ["umami"], platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pg4") });
    const script4 = join(dir, "40.sh");
    writeFileSync(script4, fresh.files["postgres/init/10-databases.sh"]);
    chmodSync(script4, 0o755);
    await psqlAs("postgres", SUPER_PW, "postgres", "DROP DATABASE IF EXISTS umami");
    await psqlAs("postgres", SUPER_PW, "postgres", "DROP ROLE IF EXISTS umami");
    const made = await as(["sh", script4], { POSTGRES_USER: "postgres", PGPASSWORD: SUPER_PW, UMAMI_DB_PASSWORD: nasty, POSTGRESQL_AGENT_PASSWORD: envValues.get("POSTGRESQL_AGENT_PASSWORD")! });
    expect(made.code, made.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    const login = await psqlAs("umami", nasty, "umami", "select current_user");
    expect(login.stdout.trim()).toBe("umami");
    expect((await psqlAs("umami", "x", "umami", "select 1")).code).not.toBe(0);
  });

  test("no password is ever among psql's arguments (any user of the host can list them, and this runs with every health check)", async () => {
    if (!available) return;
    // A psql that records its arguments, then runs the real one.
    const shim = join(dir, "shim");
    const argvLog = join(dir, "argv.log");
    rmSync(shim, { recursive: true, force: true });
    mkdirSync(shim);
    writeFileSync(join(shim, "psql"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${argvLog}\nexec ${bin("psql")} "$@"\n`);
    chmodSync(shim, 0o755);
    chmodSync(join(shim, "psql"), 0o755);
    writeFileSync(argvLog, "");
    chmodSync(argvLog, 0o666);
    const grown = generateBundle({ projectName: "pg3", services: ["n8n", "litellm"], platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pg3") });
    const values = parseEnvValues(grown.files[".env"]);
    const script3 = join(dir, "30.sh");
    writeFileSync(script3, grown.files["postgres/init/10-databases.sh"]);
    chmodSync(script3, 0o755);
    const env = { POSTGRES_USER: "postgres", PGPASSWORD: SUPER_PW, PATH: `${shim}:/usr/bin:/bin`, N8N_DB_PASSWORD: values.get("N8N_DB_PASSWORD")!, LITELLM_DB_PASSWORD: values.get("LITELLM_DB_PASSWORD")!, POSTGRESQL_AGENT_PASSWORD: values.get("POSTGRESQL_AGENT_PASSWORD")! };
    const r = await as(["sh", script3], env);
    expect(r.code, r.stderr).toBe(0);
    const argv = readFileSync(argvLog, "utf8");
    expect(argv).toContain("-d postgres");
    for (const name of ["N8N_DB_PASSWORD", "LITELLM_DB_PASSWORD", "POSTGRESQL_AGENT_PASSWORD"]) expect(argv).not.toContain(values.get(name)!);
    expect(argv).not.toContain(SUPER_PW);
    const login = await psqlAs("litellm", values.get("LITELLM_DB_PASSWORD")!, "litellm", "select current_user");
    expect(login.stdout.trim()).toBe("litellm");
  });

  test("the bare-metal install creates the databases as postgres from a folder postgres cannot read", async () => {
    if (!available) return;
    const bundle = generateBundle({ projectName: "pgbm", services: ["nocodb", "paperless-ngx"], deployment: "bare-metal", platform: "linux/amd64" }, getCatalog(), { secrets: fixedSecrets("pgbm") });
    const native = bundle.files["native/postgresql.sh"]!;
    const line = native.split("\n").find((l) => l.includes("runuser -u postgres -- sh -c"))!;
    expect(line).toBeDefined();
    // The bundle as root unpacked it under its own home: mode 0700.
    const home = mkdtempSync(join(tmpdir(), "stackgen-root-home-"));
    chmodSync(home, 0o700);
    try {
      mkdirSync(join(home, "postgres", "init"), { recursive: true });
      writeFileSync(join(home, "postgres", "init", "10-databases.sh"), bundle.files["postgres/init/10-databases.sh"]);
      writeFileSync(join(home, ".env"), bundle.files[".env"]);
      // What native/postgresql.sh does around that line: its values read from .env, then the line itself.
      const loader = native.slice(native.indexOf("# The values this script needs"), native.indexOf("done < ./.env") + "done < ./.env".length);
      const r = await run(["bash", "-c", `set -euo pipefail; cd "${home}"; ${loader}; ${line}`], { env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", PGHOST: socket, PGPORT: "55432", PGPASSWORD: SUPER_PW } });
      expect(r.code, r.stderr).toBe(0);
      const values = parseEnvValues(bundle.files[".env"]);
      for (const [user, varName] of [["nocodb", "NOCODB_DB_PASSWORD"], ["paperless", "PAPERLESS_NGX_DB_PASSWORD"]]) {
        const login = await psqlAs(user, values.get(varName)!, user, "select current_user");
        expect(login.stdout.trim(), user).toBe(user);
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  test("the bare-metal install sets the superuser's password as given, quotes and all, through psql's input", async () => {
    if (!available) return;
    const catalogEntry = getCatalog().servicesById.get("postgresql")!;
    const configure = catalogEntry.native!.configure!;
    const lines = configure.slice(configure.findIndex((l) => l.startsWith("PW_SQL=")));
    expect(lines[1]).toContain("ALTER ROLE postgres");
    const setTo = (password: string, current: string) =>
      run(["bash", "-c", `set -euo pipefail; ${lines.slice(0, 2).join("\n")}`], { env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", PGHOST: socket, PGPORT: "55432", PGPASSWORD: current, POSTGRESQL_PASSWORD: password } });
    const nasty = `q'uo"te\\back$slash;--`;
    const r = await setTo(nasty, SUPER_PW);
    expect(r.code, r.stderr).toBe(0);
    expect((await psqlAs("postgres", nasty, "postgres", "select 1")).stdout.trim()).toBe("1");
    expect((await psqlAs("postgres", SUPER_PW, "postgres", "select 1")).code).not.toBe(0);
    // Back as it was for anything after this.
    const back = await setTo(SUPER_PW, nasty);
    expect(back.code, back.stderr).toBe(0);
  });
});
