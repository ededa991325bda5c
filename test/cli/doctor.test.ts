// `stackgen doctor` without an engine: every other check still runs and reports (ports, memory,
// platform, GPU, .env). The engine's own part is in test/docker/doctor.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publishedPorts } from "../../src/docker/doctor.ts";
import { cli, freePort } from "../support/tools.ts";

const tmp = mkdtempSync(join(tmpdir(), "stackgen-doctor-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const env = { ...process.env, NO_COLOR: "1", DOCKER_HOST: "unix:///nonexistent.sock" };
type Check = { id: string; status: string; message: string };

describe("publishedPorts reads what compose would publish", () => {
  test("short and long syntax, addresses, protocols; variables and ranges are named, not guessed", () => {
    const compose = {
      services: {
        web: { ports: ["8080:80", "127.0.0.1:5432:5432", "[::1]:6379:6379", "53:53/udp", "9000", "${WEB_PORT}:80", "7000-7002:7000-7002"] },
        api: { ports: [{ target: 3000, published: "3001", host_ip: "127.0.0.1" }, { target: 3002 }, { target: 53, published: 5353, protocol: "udp" }] },
        none: {},
      },
    };
    const { ports, unchecked } = publishedPorts(compose);
    expect(ports).toEqual([
      { service: "web", host: "0.0.0.0", port: 8080, protocol: "tcp", container: "80" },
      { service: "web", host: "127.0.0.1", port: 5432, protocol: "tcp", container: "5432" },
      { service: "web", host: "::1", port: 6379, protocol: "tcp", container: "6379" },
      { service: "web", host: "0.0.0.0", port: 53, protocol: "udp", container: "53" },
      { service: "api", host: "127.0.0.1", port: 3001, protocol: "tcp", container: "3000" },
      { service: "api", host: "0.0.0.0", port: 5353, protocol: "udp", container: "53" },
    ]);
    expect(unchecked).toEqual(["web: ${WEB_PORT}:80: set through a variable or a range, not checked", "web: 7000-7002:7000-7002: set through a variable or a range, not checked"]);
    expect(publishedPorts(null)).toEqual({ ports: [], unchecked: [], invalid: [] });
  });

  test("a number that is no port is invalid, not a probe that crashes; SCTP is named, not probed as TCP", () => {
    const found = publishedPorts({ services: { bad: { ports: ["70000:80", { target: 80, published: 70000 }, { target: 81, published: -1 }, "0:82", "8080:80/sctp", { target: 83, published: 8083, protocol: "sctp" }] } } });
    expect(found.ports).toEqual([]);
    expect(found.invalid).toEqual([
      "bad: 70000:80: 70000 is not a port number (1 to 65535)",
      "bad: 70000: 70000 is not a port number (1 to 65535)",
      "bad: -1: -1 is not a port number (1 to 65535)",
    ]);
    // 0: the engine picks a free port, nothing fixed to check.
    expect(found.unchecked).toEqual(["bad: 8080:80/sctp: sctp, not checked", "bad: 8083: sctp, not checked"]);
  });
});

describe("stackgen doctor", () => {
  test("several taken ports of one service: each of its lines offers the one override line that moves them all", async () => {
    const [first, second, kept] = [await freePort(), await freePort(), await freePort()];
    const holders = [first, second].map((port) => Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }));
    try {
      const dir = join(tmp, "two-taken");
      mkdirSync(dir);
      writeFileSync(join(dir, "docker-compose.yml"), `name: two\nservices:\n  web:\n    image: busybox\n    ports: ["127.0.0.1:${first}:80", "127.0.0.1:${second}:81", "127.0.0.1:${kept}:82"]\n`);
      const report = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
      const lines = report.checks.filter((c) => c.status === "fail" && c.id.startsWith("port ")).map((c) => /(services: \{web: \{ports: !override \[.*\]\}\})$/.exec(c.message)?.[1]);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toBeDefined();
      expect(lines[1]).toBe(lines[0]);
      // Followed as given, no port of the service is taken any more, and the untaken one stays.
      writeFileSync(join(dir, "docker-compose.override.yml"), `${lines[0]}\n`);
      const after = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
      const ports = after.checks.filter((c) => c.id.startsWith("port "));
      expect(ports.filter((c) => c.status !== "ok")).toEqual([]);
      expect(ports.map((c) => c.id)).toContain(`port ${kept}/tcp`);
      expect(ports.map((c) => c.id)).not.toContain(`port ${first}/tcp`);
    } finally {
      for (const holder of holders) holder.stop(true);
    }
  });

  test("a port another program holds fails; the rest is still checked and reported", async () => {
    const held = await freePort();
    const free = await freePort();
    const holder = Bun.listen({ hostname: "127.0.0.1", port: held, socket: { data() {} } });
    try {
      const dir = join(tmp, "busy");
      mkdirSync(dir);
      writeFileSync(
        join(dir, "docker-compose.yml"),
        `name: busy
services:
  app:
    image: busybox
    environment: {TOKEN: "\${APP_TOKEN}"}
    ports: ["127.0.0.1:${held}:80", "127.0.0.1:${free}:81"]
    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}
`,
      );
      writeFileSync(join(dir, ".env"), "APP_TOKEN=secret\n");
      chmodSync(join(dir, ".env"), 0o644);
      const other = process.arch === "arm64" ? "linux/amd64" : "linux/arm64";
      writeFileSync(join(dir, "stackgen.json"), JSON.stringify({ configVersion: 2, projectName: "busy", services: ["redis"], platform: other }));

      const r = await cli(["doctor", "--dir", dir, "--json"], { env });
      expect(r.code, r.stderr).toBe(1);
      const report = JSON.parse(r.stdout) as { ok: boolean; project: string; checks: Check[] };
      expect(report).toMatchObject({ ok: false, project: "busy" });
      const by = Object.fromEntries(report.checks.map((c) => [c.id, c]));
      expect(by.engine).toMatchObject({ status: "fail", message: expect.stringContaining("nonexistent.sock") });
      // Read first: toMatchObject with a matcher leaves the matcher in the object it checked.
      const clash = by[`port ${held}/tcp`]!.message;
      expect(by[`port ${held}/tcp`]).toMatchObject({ status: "fail", message: expect.stringContaining("another program already uses it") });
      // The way out keeps the compose file as generated: the override file, with a port now free.
      const suggested = Number(/publish app on (\d+), which is free/.exec(clash)?.[1]);
      expect(suggested).toBeGreaterThan(held);
      expect(suggested).not.toBe(free); // the stack's own other port is never offered
      // The line keeps the service's other port: !override replaces the whole list.
      const line = /(services: \{app: \{ports: !override \[.*\]\}\})$/.exec(clash)?.[1];
      expect(line).toBe(`services: {app: {ports: !override ["127.0.0.1:${suggested}:80", "127.0.0.1:${free}:81"]}}`);
      // Followed as given, the clash is gone, and compose's tag is read without a warning.
      writeFileSync(join(dir, "docker-compose.override.yml"), `${line}\n`);
      const after = await cli(["doctor", "--dir", dir, "--json"], { env });
      const afterBy = Object.fromEntries((JSON.parse(after.stdout) as { checks: Check[] }).checks.map((c) => [c.id, c]));
      expect(afterBy[`port ${held}/tcp`]).toBeUndefined();
      expect(afterBy[`port ${suggested}/tcp`]).toMatchObject({ status: "ok" });
      expect(after.stderr).not.toContain("Unresolved tag");
      rmSync(join(dir, "docker-compose.override.yml"));
      expect(by[`port ${free}/tcp`]).toMatchObject({ status: "ok" });
      expect(by.memory).toMatchObject({ status: "ok", message: expect.stringMatching(/^about \d+ MB needed/) });
      expect(by.platform).toMatchObject({ status: "warn", message: expect.stringContaining(other) });
      expect(by.gpu).toMatchObject({ status: "warn" });
      expect(by.env).toMatchObject({ status: "warn", message: expect.stringContaining("chmod 600 .env") });

      const text = await cli(["doctor", "--dir", dir], { env });
      expect(text.code).toBe(1);
      expect(text.stdout).toMatch(new RegExp(`fail\\s+port ${held}/tcp`));
      expect(text.stdout).toContain("check(s) failed");
    } finally {
      holder.stop(true);
    }
  });

  test("a compose file that needs .env without one fails; a free, private stack passes with the engine's absence as its only failure", async () => {
    const dir = join(tmp, "noenv");
    mkdirSync(dir);
    const port = await freePort();
    writeFileSync(join(dir, "docker-compose.yml"), `name: noenv\nservices:\n  app:\n    image: busybox\n    environment: {A: "\${A}"}\n    ports: ["127.0.0.1:${port}:80"]\n`);
    const first = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(first.checks.find((c) => c.id === "env")).toMatchObject({ status: "fail", message: expect.stringMatching(/^docker-compose\.yml refers to .* but there is no \.env/) });
    expect(first.checks.find((c) => c.id === "memory")).toMatchObject({ status: "ok", message: expect.stringContaining("no stackgen.json") });
    expect(first.checks.some((c) => c.id === "gpu")).toBe(false);

    // The message names the file that needs .env, also when only the user's override does.
    writeFileSync(join(dir, "docker-compose.yml"), `name: noenv\nservices:\n  app:\n    image: busybox\n    ports: ["127.0.0.1:${port}:80"]\n`);
    writeFileSync(join(dir, "compose.override.yaml"), `services:\n  app:\n    environment: {A: "\${A}"}\n`);
    const overridden = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(overridden.checks.find((c) => c.id === "env")).toMatchObject({ status: "fail", message: expect.stringMatching(/^compose\.override\.yaml refers to .* but there is no \.env/) });

    writeFileSync(join(dir, ".env"), "A=1\n", { mode: 0o600 });
    const second = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(second.checks.filter((c) => c.status === "fail").map((c) => c.id)).toEqual(["engine"]);
  });

  test("ports and GPU reservations the override file adds are checked too", async () => {
    const held = await freePort();
    const holder = Bun.listen({ hostname: "127.0.0.1", port: held, socket: { data() {} } });
    try {
      const dir = join(tmp, "override");
      mkdirSync(dir);
      writeFileSync(join(dir, "docker-compose.yml"), "name: over\nservices:\n  app:\n    image: busybox\n");
      writeFileSync(
        join(dir, "docker-compose.override.yml"),
        `services:\n  app:\n    ports: ["127.0.0.1:${held}:80"]\n    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]}}}\n`,
      );
      const report = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
      const by = Object.fromEntries(report.checks.map((c) => [c.id, c]));
      expect(by[`port ${held}/tcp`]).toMatchObject({ status: "fail", message: expect.stringContaining("app publishes") });
      expect(by.gpu).toMatchObject({ status: "warn" });
    } finally {
      holder.stop(true);
    }
  });

  test("a clash on a port clients expect where it is (a proxy's 80) is not answered with another port", async () => {
    let holder: { stop(closeActive?: boolean): void };
    try {
      holder = Bun.listen({ hostname: "127.0.0.1", port: 80, socket: { data() {} } });
    } catch {
      return; // not root, or something holds 80 already: nothing to hold it with here
    }
    try {
      const dir = join(tmp, "fixed-port");
      mkdirSync(dir);
      writeFileSync(join(dir, "docker-compose.yml"), `name: fixed\nservices:\n  caddy:\n    image: caddy\n    ports: ["127.0.0.1:80:80"]\n`);
      const r = await cli(["doctor", "--dir", dir, "--json"], { env });
      const check = (JSON.parse(r.stdout) as { checks: Check[] }).checks.find((c) => c.id === "port 80/tcp")!;
      expect(check.status).toBe("fail");
      expect(check.message).toContain("clients expect caddy on 80, so it cannot move");
      expect(check.message).not.toContain("!override");
    } finally {
      holder.stop(true);
    }
  });

  test("values a service does not start without, empty in .env, are named by generate and doctor", async () => {
    const dir = join(tmp, "tofill");
    const generated = await cli(["generate", "--services", "usesend", "--dir", dir], { env });
    expect(generated.code).toBe(0);
    expect(generated.stdout).toMatch(/Fill in before the first start .*USESEND_AWS_ACCESS_KEY \(useSend\)/);
    const before = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    const check = before.checks.find((c) => c.id === "values")!;
    expect(check.status).toBe("warn");
    expect(check.message).toContain("USESEND_AWS_ACCESS_KEY (useSend)");
    // Filled in: doctor says so, and a regeneration no longer asks.
    const env2 = (await Bun.file(join(dir, ".env")).text()).replace(/^(USESEND_[A-Z_]+)=.*$/gm, "$1=filled");
    writeFileSync(join(dir, ".env"), env2, { mode: 0o600 });
    const after = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(after.checks.find((c) => c.id === "values")!.status).toBe("ok");
    const again = await cli(["generate", "--services", "usesend", "--dir", dir], { env });
    expect(again.stdout).not.toContain("Fill in before the first start");
    // A stack without such values gets no such check.
    const plain = join(tmp, "plain");
    expect((await cli(["generate", "--services", "redis", "--dir", plain], { env })).code).toBe(0);
    const none = JSON.parse((await cli(["doctor", "--dir", plain, "--json"], { env })).stdout) as { checks: Check[] };
    expect(none.checks.some((c) => c.id === "values")).toBe(false);
  });

  test("secrets left empty (--no-secrets), which compose refuses to start without, are named by generate and fail doctor", async () => {
    const dir = join(tmp, "nosecrets");
    const generated = await cli(["generate", "--services", "n8n", "--no-secrets", "--dir", dir], { env });
    expect(generated.code).toBe(0);
    expect(generated.stdout).toMatch(/Empty in \.env, and compose refuses to start without them: [^\n]*N8N_ENCRYPTION_KEY/);
    expect(generated.stdout).toContain(`stackgen generate --dir ${dir} --from ${join(dir, "stackgen.json")} --secrets`);
    const before = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(before.checks.find((c) => c.id === "values")).toMatchObject({ status: "fail", message: expect.stringContaining("POSTGRESQL_PASSWORD") });
    // Said once: compose's own refusal (the first empty one only) is not a second failure.
    expect(before.checks.filter((c) => c.status === "fail").map((c) => c.id)).toEqual(["engine", "values"]);
    // The command it gives makes them; then nothing is left to fill in.
    expect((await cli(["generate", "--dir", dir, "--from", join(dir, "stackgen.json"), "--secrets"], { env })).code).toBe(0);
    const after = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(after.checks.some((c) => c.id === "values" && c.status !== "ok")).toBe(false);
  });

  test("on bare metal, a secret only the native install uses, left empty, fails the values check too", async () => {
    const dir = join(tmp, "native-empty");
    expect((await cli(["generate", "--services", "postgresql", "--deployment", "bare-metal", "--no-secrets", "--dir", dir], { env })).code).toBe(0);
    // Compose's secrets filled in: only install.sh's is left, which compose never reads.
    const envText = (await Bun.file(join(dir, ".env")).text()).replace(/^(?!POSTGRESQL_PASSWORD=)([A-Z][A-Z0-9_]*(?:PASSWORD|TOKEN))=$/gm, "$1=filledfilledfilledfilledfilled12");
    writeFileSync(join(dir, ".env"), envText, { mode: 0o600 });
    const report = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    const values = report.checks.find((c) => c.id === "values")!;
    expect(values.status).toBe("fail");
    expect(values.message).toContain("install.sh stops before the native install without them: POSTGRESQL_PASSWORD");
    expect(values.message).not.toContain("compose refuses");
  });

  test("a bundle beside a compose.yaml, which docker compose reads in its place, fails", async () => {
    const dir = join(tmp, "shadowed");
    expect((await cli(["generate", "--services", "redis", "--dir", dir], { env })).code).toBe(0);
    const clear = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(clear.checks.some((c) => c.id === "compose-file")).toBe(false);
    writeFileSync(join(dir, "compose.yaml"), "services:\n  web:\n    image: nginx\n");
    const r = await cli(["doctor", "--dir", dir, "--json"], { env });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { checks: Check[] };
    expect(report.checks.find((c) => c.id === "compose-file")).toEqual({ id: "compose-file", status: "fail", message: expect.stringContaining(`docker compose reads compose.yaml in ${dir}, not the bundle's docker-compose.yml`) });
  });

  test("files compose refuses (a port that is no list, in the user's override) fail, though every other check passes", async () => {
    const dir = join(tmp, "refused");
    expect((await cli(["generate", "--services", "redis", "--dir", dir], { env })).code).toBe(0);
    const clear = JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] };
    expect(clear.checks.find((c) => c.id === "compose-config")).toEqual({ id: "compose-config", status: "ok", message: "docker-compose.yml read by compose" });
    writeFileSync(join(dir, "docker-compose.override.yml"), 'services:\n  redis:\n    ports: "oops"\n');
    const r = await cli(["doctor", "--dir", dir, "--json"], { env });
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { checks: Check[] };
    expect(report.checks.find((c) => c.id === "compose-config")).toMatchObject({ status: "fail", message: expect.stringContaining("docker compose refuses the stack's files") });
  });

  test("config the containers read through bind mounts but other users may not (a bundle written under umask 077) is named", async () => {
    const dir = join(tmp, "closed-mounts");
    expect((await cli(["generate", "--services", "n8n,grafana", "--dir", dir], { env })).code).toBe(0);
    const checks = async () => (JSON.parse((await cli(["doctor", "--dir", dir, "--json"], { env })).stdout) as { checks: Check[] }).checks;
    expect((await checks()).some((c) => c.id === "mount-modes")).toBe(false);
    // A data folder of the user's own, bind-mounted in the override file, is 0700 on purpose
    // (PostgreSQL's must be): not the bundle's, never named.
    mkdirSync(join(dir, "pgdata"), { mode: 0o700 });
    writeFileSync(join(dir, "docker-compose.override.yml"), "services:\n  postgresql:\n    volumes: [\"./pgdata:/var/lib/postgresql/data\"]\n");
    expect((await checks()).some((c) => c.id === "mount-modes")).toBe(false);
    chmodSync(join(dir, "postgres", "init"), 0o700);
    chmodSync(join(dir, "grafana", "provisioning", "datasources"), 0o711);
    // .env is private by design and mounted nowhere: not named.
    expect((await checks()).find((c) => c.id === "mount-modes")).toEqual({
      id: "mount-modes",
      status: "warn",
      message: expect.stringContaining("grafana/provisioning/datasources (711), postgres/init (700); `chmod -R a+rX`"),
    });
  });

  test("a directory that is not a stack is bad input (exit 2)", async () => {
    const r = await cli(["doctor", "--dir", tmp, "--json"], { env });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.code).toBe("STACK_NOT_FOUND");
  });
});
