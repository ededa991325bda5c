// The UI listener sends its page and assets compressed to clients that accept it, over a real
// listener: every coding decodes to the very bytes sent uncompressed, with its own ETag and length.
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { brotliDecompressSync } from "node:zlib";
import { startTestServer, type TestServer } from "./guard-helpers.ts";
import { chooseCoding, etagFor } from "../../src/api/guard/ui-page.ts";

const DECODERS: Record<string, (bytes: Uint8Array<ArrayBuffer>) => Uint8Array> = {
  br: (bytes) => new Uint8Array(brotliDecompressSync(bytes)),
  zstd: (bytes) => new Uint8Array(Bun.zstdDecompressSync(bytes)),
  gzip: (bytes) => new Uint8Array(Bun.gunzipSync(bytes)),
};

/** An answer as it came over the wire: fetch neither adds its own Accept-Encoding nor decodes. */
async function raw(url: string, acceptEncoding: string, init: RequestInit = {}) {
  const response = await fetch(url, { ...init, headers: { "accept-encoding": acceptEncoding, ...(init.headers as Record<string, string>) }, decompress: false });
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
}

describe("the UI's page and assets, compressed", () => {
  let server: TestServer;
  let assets: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({}, true);
    const html = await (await fetch(`${server.uiBase}/`)).text();
    assets = ["/", ...[...html.matchAll(/(?:src|href)="(\/[^"/][^"]*)"/g)].map((m) => m[1]).filter((path) => !path.startsWith("/v1/"))];
  });
  afterAll(() => server?.stop());

  test("every coding decodes to the uncompressed bytes, with its own length and ETag and the same caching", async () => {
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
    for (const asset of assets) {
      const url = server.uiBase + asset;
      const plain = await raw(url, "identity");
      expect(plain.response.status, asset).toBe(200);
      expect(plain.response.headers.get("content-encoding"), asset).toBeNull();
      expect(plain.response.headers.get("vary"), asset).toBe("Accept-Encoding");
      expect(Number(plain.response.headers.get("content-length")), asset).toBe(plain.bytes.byteLength);
      const plainTag = plain.response.headers.get("etag");
      expect(plainTag, asset).toBeTruthy();
      const tags = new Set([plainTag]);
      for (const coding of ["br", "zstd", "gzip"]) {
        const packed = await raw(url, coding);
        const headers = packed.response.headers;
        expect([asset, headers.get("content-encoding")]).toEqual([asset, coding]);
        expect(headers.get("vary"), asset).toBe("Accept-Encoding");
        expect(Number(headers.get("content-length")), asset).toBe(packed.bytes.byteLength);
        expect(packed.bytes.byteLength, asset).toBeLessThan(plain.bytes.byteLength);
        expect(DECODERS[coding](packed.bytes), `${asset} ${coding}`).toEqual(plain.bytes);
        expect(headers.get("content-type"), asset).toBe(plain.response.headers.get("content-type"));
        expect(headers.get("cache-control"), asset).toBe(plain.response.headers.get("cache-control"));
        expect(headers.get("content-security-policy"), asset).toBe(plain.response.headers.get("content-security-policy"));
        expect(headers.get("etag"), asset).toBe(etagFor(plainTag!, coding as never));
        tags.add(headers.get("etag"));
        // HEAD says what a GET in the same coding sends.
        const head = await raw(url, coding, { method: "HEAD" });
        expect(head.bytes.byteLength).toBe(0);
        expect(head.response.headers.get("content-encoding")).toBe(coding);
        expect(Number(head.response.headers.get("content-length")), asset).toBe(packed.bytes.byteLength);
      }
      expect(tags.size, asset).toBe(4);
    }
  });

  test("the client's preferences decide; what it does not accept it never gets", async () => {
    const url = `${server.uiBase}/`;
    const cases: [string, string | null][] = [
      ["gzip, deflate, br, zstd", "br"],
      ["gzip;q=1, br;q=0.5, zstd;q=0.2", "gzip"],
      ["br;q=0, gzip", "gzip"],
      ["x-gzip", "gzip"],
      ["ZSTD", "zstd"],
      ["*", "br"],
      ["*;q=0", null],
      ["deflate", null],
      ["identity", null],
      ["gzip;q=0.5, identity", null],
      ["", null],
    ];
    for (const [accept, coding] of cases) {
      const { response, bytes } = await raw(url, accept);
      expect([accept, response.headers.get("content-encoding")]).toEqual([accept, coding]);
      expect(Number(response.headers.get("content-length")), accept).toBe(bytes.byteLength);
    }
    // No Accept-Encoding at all: the bytes as they are.
    const bare = await new Promise<string>((done, fail) => {
      const { hostname, port } = new URL(url);
      const socket = Bun.connect({
        hostname,
        port: Number(port),
        socket: {
          open: (s) => void s.write("GET / HTTP/1.1\r\nHost: ui\r\nConnection: close\r\n\r\n"),
          data: (_, chunk) => void (text += chunk.toString("latin1")),
          close: () => done(text),
          error: (_, e) => fail(e),
        },
      });
      let text = "";
      void socket;
    });
    expect(bare.toLowerCase()).not.toContain("content-encoding");
    expect(bare).toContain("<!doctype html>");
  });

  test("a conditional request is answered against the ETag of the coding it would get", async () => {
    const url = `${server.uiBase}/`;
    const br = (await raw(url, "br")).response.headers.get("etag")!;
    const plain = (await raw(url, "identity")).response.headers.get("etag")!;
    const again = await raw(url, "br", { headers: { "if-none-match": `"other", ${br}` } });
    expect(again.response.status).toBe(304);
    expect(again.bytes.byteLength).toBe(0);
    expect(again.response.headers.get("etag")).toBe(br);
    expect(again.response.headers.get("vary")).toBe("Accept-Encoding");
    expect(again.response.headers.get("cache-control")).toBe("no-cache");
    // The tag of another coding is another representation: the whole answer, in the coding asked for.
    const other = await raw(url, "gzip", { headers: { "if-none-match": br } });
    expect(other.response.status).toBe(200);
    expect(other.response.headers.get("content-encoding")).toBe("gzip");
    expect((await raw(url, "identity", { headers: { "if-none-match": plain } })).response.status).toBe(304);
    expect((await raw(url, "br", { headers: { "if-none-match": plain } })).response.status).toBe(200);
    expect((await raw(url, "br", { headers: { "if-none-match": `W/${br}` } })).response.status).toBe(304);
  });

  test("each asset is compressed once, not per request", async () => {
    const fresh = await startTestServer({}, true);
    const zstd = spyOn(Bun, "zstdCompress");
    try {
      for (let i = 0; i < 5; i++) await Promise.all(assets.map((a) => raw(fresh.uiBase + a, "zstd")));
      expect(zstd).toHaveBeenCalledTimes(assets.length);
    } finally {
      zstd.mockRestore();
      await fresh.stop();
    }
  });

  test("API answers on the UI listener are not compressed", async () => {
    for (const path of ["/v1/services", "/v1/openapi.json"]) {
      const { response, bytes } = await raw(server.uiBase + path, "gzip, br, zstd");
      expect(response.headers.get("content-encoding"), path).toBeNull();
      expect(JSON.parse(new TextDecoder().decode(bytes))).toBeTruthy();
    }
    const generated = await raw(`${server.uiBase}/v1/generate`, "gzip, br, zstd", { method: "POST", body: JSON.stringify({ projectName: "enc", services: ["redis"] }) });
    expect(generated.response.status).toBe(200);
    expect(generated.response.headers.get("content-encoding")).toBeNull();
  });

  test("with CORS_ORIGINS set, Vary names both Origin and Accept-Encoding", async () => {
    const cors = await startTestServer({ corsOrigins: ["https://a.example"] }, true);
    try {
      const { response } = await raw(`${cors.uiBase}/`, "br", { headers: { origin: "https://a.example" } });
      expect(response.headers.get("content-encoding")).toBe("br");
      expect(response.headers.get("vary")?.split(/,\s*/).sort()).toEqual(["Accept-Encoding", "Origin"]);
    } finally {
      await cors.stop();
    }
  });
});

test("chooseCoding follows the q-values of Accept-Encoding", () => {
  expect(chooseCoding(null)).toBeUndefined();
  expect(chooseCoding("gzip;q=0.8, zstd;q=0.9")).toBe("zstd");
  expect(chooseCoding("br;q=abc, gzip")).toBe("gzip");
  expect(chooseCoding("gzip;q=0.5, identity;q=0.6")).toBeUndefined();
  expect(chooseCoding("*;q=0.1, br;q=0")).toBe("zstd");
});
