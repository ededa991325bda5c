// The UI's reading of the host ports a bundle publishes, from its docker-compose.yml.
import { describe, expect, test } from "bun:test";
import { parsePortEntry, publishedPorts } from "../../src/web/ports.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";

describe("published ports", () => {
  test("every form of a compose port entry", () => {
    expect(parsePortEntry("8081:80")).toEqual({ host: "8081", container: "80", protocol: "tcp", hostIp: null, localOnly: false });
    expect(parsePortEntry("127.0.0.1:5432:5432")).toEqual({ host: "5432", container: "5432", protocol: "tcp", hostIp: "127.0.0.1", localOnly: true });
    expect(parsePortEntry("0.0.0.0:53:53/udp")).toEqual({ host: "53", container: "53", protocol: "udp", hostIp: null, localOnly: false });
    expect(parsePortEntry("[::1]:8080:80")).toMatchObject({ host: "8080", container: "80", hostIp: "::1", localOnly: true });
    expect(parsePortEntry("192.168.1.5:8080:80")).toMatchObject({ host: "8080", hostIp: "192.168.1.5", localOnly: false });
    expect(parsePortEntry("9000-9001:9000-9001")).toMatchObject({ host: "9000-9001", container: "9000-9001" });
    expect(parsePortEntry("3000")).toMatchObject({ host: null, container: "3000" });
    expect(parsePortEntry(3000)).toMatchObject({ host: null, container: "3000" });
    expect(parsePortEntry({ target: 80, published: "8080", host_ip: "127.0.0.1", protocol: "tcp" })).toEqual({ host: "8080", container: "80", protocol: "tcp", hostIp: "127.0.0.1", localOnly: true });
    expect(parsePortEntry({ target: 80 })).toMatchObject({ host: null, container: "80", localOnly: false });
    expect(parsePortEntry({ published: 80 })).toBeUndefined();
    expect(parsePortEntry(null)).toBeUndefined();
  });

  test("a generated bundle: a port moved off a clash where it went, loopback ones as such, unpublished services left out", () => {
    const { files } = generateBundle({ projectName: "ports", services: ["searxng", "nextcloud", "postgresql", "ffmpeg"], proxy: "caddy" }, getCatalog());
    const ports = publishedPorts(files["docker-compose.yml"]!);
    const of = (service: string) => ports.find((p) => p.service === service)?.ports;
    expect(of("searxng")).toEqual([{ host: "8080", container: "8080", protocol: "tcp", hostIp: null, localOnly: false }]);
    expect(of("nextcloud")).toEqual([{ host: "8081", container: "80", protocol: "tcp", hostIp: null, localOnly: false }]);
    expect(of("postgresql")?.every((p) => p.localOnly && p.hostIp === "127.0.0.1")).toBe(true);
    expect(of("caddy")?.map((p) => p.host)).toContain("80");
    expect(of("core")?.length).toBeGreaterThan(0);
    expect(of("ffmpeg")).toBeUndefined();
    // No two services publish the same host port.
    const hosts = ports.flatMap((s) => s.ports.map((p) => `${p.host}/${p.protocol}`));
    expect(new Set(hosts).size).toBe(hosts.length);
  });

  test("a compose file without services publishes nothing", () => {
    expect(publishedPorts("name: x\n")).toEqual([]);
    expect(publishedPorts("")).toEqual([]);
  });
});
