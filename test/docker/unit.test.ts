// Pure logic of the day-2 commands: layering, uptime, tar and archive member checks, references.
import { describe, expect, test } from "bun:test";
import { checkMember, checkMembers, resolveInside } from "../../src/docker/archive-safety.ts";
import { buildArchive, verifyArchive, backupFileName } from "../../src/docker/backup.ts";
import { normaliseModel } from "../../src/docker/compose.ts";
import { formatPorts, formatUptime, uptimeOf } from "../../src/docker/format.ts";
import { readiness } from "../../src/docker/health.ts";
import { dependencyLayers } from "../../src/docker/layers.ts";
import { parseChallenge, parseImageRef, registryBaseUrl } from "../../src/docker/registry.ts";
import { normaliseProjectName, projectNameOf } from "../../src/docker/stack.ts";
import { summarise, healthOf } from "../../src/docker/status.ts";
import { fileEntry, readTar, writeTar, type TarEntry } from "../../src/docker/tar.ts";
import { digestOf, splitTag } from "../../src/docker/update.ts";

const entry = (name: string, type: TarEntry["type"] = "file", linkname = ""): TarEntry => ({
  ...fileEntry(name, type === "file" ? "x" : ""),
  type,
  linkname,
});

describe("dependencyLayers", () => {
  test("orders services so each layer depends only on earlier ones", () => {
    const layers = dependencyLayers({ web: ["api"], api: ["db", "cache"], db: [], cache: [], worker: ["db"] });
    expect(layers).toEqual([["cache", "db"], ["api", "worker"], ["web"]]);
  });
  test("ignores dependencies outside the set and rejects cycles", () => {
    expect(dependencyLayers({ a: ["ghost"] })).toEqual([["a"]]);
    expect(() => dependencyLayers({ a: ["b"], b: ["a"], c: [] })).toThrow(/cycle among: a, b/);
  });
});

describe("uptime", () => {
  test("formats the two largest units", () => {
    expect(formatUptime(45_000)).toBe("45s");
    expect(formatUptime(12 * 60_000 + 30_000)).toBe("12m30s");
    expect(formatUptime(3 * 3600_000 + 12 * 60_000 + 59_000)).toBe("3h12m");
    expect(formatUptime(2 * 86400_000 + 5 * 3600_000)).toBe("2d5h");
  });
  test("is empty when not running", () => {
    const now = Date.parse("2024-01-01T03:12:00Z");
    expect(uptimeOf(true, "2024-01-01T00:00:00Z", now)).toBe("3h12m");
    expect(uptimeOf(false, "2024-01-01T00:00:00Z", now)).toBe("");
    expect(uptimeOf(true, "0001-01-01T00:00:00Z", now)).toBe("");
  });
});

describe("status helpers", () => {
  test("ports are formatted and de-duplicated", () => {
    expect(
      formatPorts([
        { IP: "0.0.0.0", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { IP: "0.0.0.0", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { IP: "::", PrivatePort: 80, PublicPort: 8080, Type: "tcp" },
        { PrivatePort: 6379, Type: "tcp" },
      ]),
    ).toEqual(["0.0.0.0:8080->80/tcp", "[::]:8080->80/tcp", "6379/tcp"]);
  });
  test("health is none unless running, summary counts", () => {
    expect(healthOf({ State: { Status: "exited", Health: { Status: "unhealthy" } } } as any)).toBe("none");
    expect(healthOf({ State: { Status: "running", Health: { Status: "unhealthy" } } } as any)).toBe("unhealthy");
    expect(healthOf({ State: { Status: "running" } } as any)).toBe("none");
    const s = (state: string, health: any) => ({ name: "x", container: "x", state, status: "", uptime: "", health, image: "", ports: [] });
    expect(summarise([s("running", "healthy"), s("running", "unhealthy"), s("exited", "none")])).toEqual({
      total: 3,
      running: 2,
      stopped: 1,
      healthy: 1,
      unhealthy: 1,
    });
  });
  test("readiness", () => {
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "healthy" } }]).ok).toBe(true);
    expect(readiness("a", [{ Status: "running", ExitCode: 0 }]).ok).toBe(true);
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "starting" } }])).toMatchObject({ ok: false, final: false });
    expect(readiness("a", [{ Status: "running", ExitCode: 0, Health: { Status: "unhealthy" } }])).toMatchObject({ ok: false, final: true });
    expect(readiness("a", [{ Status: "exited", ExitCode: 0 }]).ok).toBe(true);
    expect(readiness("a", [{ Status: "exited", ExitCode: 2 }])).toMatchObject({ ok: false, final: true });
    expect(readiness("a", [])).toMatchObject({ ok: false, final: false });
  });
});

describe("project names and compose model", () => {
  test("compose name, then stackgen.json, then the directory", () => {
    expect(projectNameOf("fromcompose", "fromconfig", "/x/Dir")).toBe("fromcompose");
    expect(projectNameOf(undefined, "fromconfig", "/x/Dir")).toBe("fromconfig");
    expect(projectNameOf("${NAME}", undefined, "/x/My.Stack")).toBe("mystack");
    expect(normaliseProjectName("_Hello World-1")).toBe("helloworld-1");
  });
  test("depends_on in list and map form; volume names", () => {
    const m = normaliseModel(
      {
        services: { a: { image: "x", depends_on: ["b"] }, b: { image: "y", depends_on: { c: { condition: "service_healthy" } } }, c: { build: "." } },
        volumes: { data: {}, named: { name: "custom" }, ext: { external: true, name: "outside" } },
      },
      "proj",
    );
    expect(m.services.map((s) => [s.name, s.dependsOn, s.hasBuild])).toEqual([
      ["a", ["b"], false],
      ["b", ["c"], false],
      ["c", [], true],
    ]);
    expect(m.volumes).toEqual([
      { key: "data", name: "proj_data", external: false },
      { key: "named", name: "custom", external: false },
      { key: "ext", name: "outside", external: true },
    ]);
  });
});

describe("image references", () => {
  test("parse like the docker CLI", () => {
    expect(parseImageRef("redis")).toEqual({ registry: "docker.io", repository: "library/redis", tag: "latest" });
    expect(parseImageRef("grafana/grafana:11.1")).toEqual({ registry: "docker.io", repository: "grafana/grafana", tag: "11.1" });
    expect(parseImageRef("127.0.0.1:5000/a/b:1")).toEqual({ registry: "127.0.0.1:5000", repository: "a/b", tag: "1" });
    expect(parseImageRef("ghcr.io/o/r@sha256:abc")).toMatchObject({ registry: "ghcr.io", repository: "o/r", digest: "sha256:abc" });
    expect(registryBaseUrl("127.0.0.1:5000")).toBe("http://127.0.0.1:5000");
    expect(registryBaseUrl("docker.io")).toBe("https://registry-1.docker.io");
    expect(registryBaseUrl("ghcr.io")).toBe("https://ghcr.io");
  });
  test("bearer challenge", () => {
    expect(parseChallenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/redis:pull"')).toEqual({
      scheme: "bearer",
      params: { realm: "https://auth.docker.io/token", service: "registry.docker.io", scope: "repository:library/redis:pull" },
    });
  });
  test("digests and tags", () => {
    const image = { Id: "sha256:id", RepoTags: [], RepoDigests: ["other/x@sha256:no", "127.0.0.1:5000/a/b@sha256:yes"] };
    expect(digestOf(image, "127.0.0.1:5000/a/b:1")).toBe("sha256:yes");
    expect(digestOf({ ...image, RepoDigests: [] }, "x")).toBe("sha256:id");
    expect(splitTag("127.0.0.1:5000/a/b:1")).toEqual({ repo: "127.0.0.1:5000/a/b", tag: "1" });
    expect(splitTag("127.0.0.1:5000/a/b")).toEqual({ repo: "127.0.0.1:5000/a/b", tag: "latest" });
    expect(splitTag("a/b@sha256:x")).toBeUndefined();
  });
});

describe("tar", () => {
  test("round-trips files, links, directories and long names", () => {
    const long = `dir/${"n".repeat(150)}/file.txt`;
    const entries: TarEntry[] = [
      { ...entry("dir", "dir"), mode: 0o755 },
      fileEntry("dir/a.txt", "hello", 0o600),
      fileEntry(long, "long"),
      entry("dir/link", "symlink", "a.txt"),
    ];
    const back = readTar(writeTar(entries));
    expect(back.map((e) => [e.name, e.type, e.linkname])).toEqual([
      ["dir", "dir", ""],
      ["dir/a.txt", "file", ""],
      [long, "file", ""],
      ["dir/link", "symlink", "a.txt"],
    ]);
    expect(new TextDecoder().decode(back[1].data)).toBe("hello");
    expect(back[1].mode).toBe(0o600);
  });
  test("is readable by the system tar", async () => {
    const tar = writeTar([fileEntry("x/y.txt", "content"), fileEntry(`x/${"z".repeat(120)}`, "long")]);
    const path = `/tmp/stackgen-unit-${process.pid}.tar`;
    await Bun.write(path, tar);
    const out = await new Response(Bun.spawn(["tar", "tf", path]).stdout).text();
    await Bun.$`rm -f ${path}`.quiet();
    expect(out.trim().split("\n")).toEqual(["x/y.txt", `x/${"z".repeat(120)}`]);
  });
  test("rejects a corrupted header", () => {
    const tar = writeTar([fileEntry("a", "b")]);
    tar[10] ^= 0xff;
    expect(() => readTar(tar)).toThrow(/checksum/);
  });
});

describe("archive member checks", () => {
  const outer = { allowLinks: false };
  const volume = { allowLinks: true, root: "vol" };
  test("rejects absolute paths, .. and links in the outer archive", () => {
    expect(checkMember(entry("/etc/passwd"), outer)).toMatch(/absolute/);
    expect(checkMember(entry("config/../../x"), outer)).toMatch(/'\.\.'/);
    expect(checkMember(entry("a\\..\\b"), outer)).toMatch(/backslash/);
    expect(checkMember(entry("config/l", "symlink", "x"), outer)).toMatch(/link/);
    expect(checkMember(entry("config/ok.txt"), outer)).toBeUndefined();
  });
  test("volume members stay under their root and links stay inside", () => {
    expect(checkMember(entry("vol/a"), volume)).toBeUndefined();
    expect(checkMember(entry("other/a"), volume)).toMatch(/outside "vol\/"/);
    expect(checkMember(entry("vol/l", "symlink", "../vol/a"), volume)).toBeUndefined();
    expect(checkMember(entry("vol/l", "symlink", "../../etc"), volume)).toMatch(/outside/);
    expect(checkMember(entry("vol/l", "symlink", "/etc/passwd"), volume)).toMatch(/outside/);
    expect(checkMember(entry("vol/l", "symlink", ".."), volume)).toMatch(/outside "vol\/"/);
    expect(checkMember(entry("vol/dev", "char"), volume)).toMatch(/forbidden type/);
  });
  test("chained symlinks cannot escape", () => {
    expect(resolveInside(["vol", "a"], "../b")).toEqual(["vol", "b"]);
    const problems = checkMembers([entry("vol/d", "dir"), entry("vol/d/up", "symlink", ".."), entry("vol/esc", "symlink", "d/up/..")], volume);
    expect(problems.join("\n")).toMatch(/esc/);
  });
  test("hardlinks must point at an earlier member inside", () => {
    expect(checkMembers([entry("vol/a"), entry("vol/h", "hardlink", "vol/a")], volume)).toEqual([]);
    expect(checkMembers([entry("vol/h", "hardlink", "vol/a"), entry("vol/a")], volume)[0]).toMatch(/not in the archive before/);
    expect(checkMembers([entry("vol/h", "hardlink", "../x")], volume)[0]).toMatch(/'\.\.'/);
  });
});

describe("backup archive verification", () => {
  const volumeTar = writeTar([{ ...entry("proj_data", "dir"), mode: 0o755 }, fileEntry("proj_data/f.txt", "data")]);
  const make = () =>
    buildArchive({
      project: "proj",
      hot: false,
      services: [{ name: "db", image: "x:1" }],
      files: [{ path: "docker-compose.yml", data: new TextEncoder().encode("services: {}\n"), mode: 0o644 }],
      volumes: [{ name: "proj_data", key: "data", tar: volumeTar }],
    });
  test("a fresh archive verifies and lists its members", () => {
    const { gz, manifest } = make();
    const v = verifyArchive(gz);
    expect(v.manifest.project).toBe("proj");
    expect(manifest.members.map((m) => m.path)).toEqual(["config/docker-compose.yml", "volumes/proj_data.tar"]);
    expect(v.files[0].path).toBe("docker-compose.yml");
    expect(v.volumes[0].name).toBe("proj_data");
  });
  const rewrite = (gz: Uint8Array, change: (entries: TarEntry[]) => TarEntry[]) => Bun.gzipSync(writeTar(change(readTar(Bun.gunzipSync(gz as Uint8Array<ArrayBuffer>)))) as Uint8Array<ArrayBuffer>);
  test("a changed member fails its checksum", () => {
    const bad = rewrite(make().gz, (es) => es.map((e) => (e.name === "config/docker-compose.yml" ? fileEntry(e.name, "services: {evil: {}}\n") : e)));
    expect(() => verifyArchive(bad)).toThrow(/size|sha256/);
  });
  test("an unlisted or escaping member is refused", () => {
    expect(() => verifyArchive(rewrite(make().gz, (es) => [...es, fileEntry("config/extra", "x")]))).toThrow(/not listed/);
    expect(() => verifyArchive(rewrite(make().gz, (es) => [...es, fileEntry("config/../../evil", "x")]))).toThrow(/'\.\.'/);
    expect(() => verifyArchive(rewrite(make().gz, (es) => [...es, entry("config/l", "symlink", "/etc")]))).toThrow(/link/);
  });
  test("a volume tar with an escaping link is refused", () => {
    const evil = writeTar([entry("proj_data", "dir"), entry("proj_data/l", "symlink", "../../../etc")]);
    const { gz } = buildArchive({ project: "proj", hot: false, services: [], files: [], volumes: [{ name: "proj_data", key: "data", tar: evil }] });
    expect(() => verifyArchive(gz)).toThrow(/volume proj_data: symlink/);
  });
  test("garbage is refused", () => {
    expect(() => verifyArchive(new Uint8Array([1, 2, 3]))).toThrow(/not a readable/);
  });
  test("file names sort by time", () => {
    expect(backupFileName("p", new Date("2024-01-02T03:04:05.678Z"))).toBe("p-20240102T030405678Z.tar.gz");
    expect(backupFileName("p", new Date("2024-01-02T03:04:05.678Z"), "pre-restore")).toBe("p-pre-restore-20240102T030405678Z.tar.gz");
  });
});
