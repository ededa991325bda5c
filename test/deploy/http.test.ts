import { describe, expect, test } from "bun:test";
import { compareVersions, createJsonClient, DeployError, MAX_ANSWER_BYTES, parseVersion, redactor } from "../../src/deploy/http.ts";

const redact = (text: string, secret: string) => redactor(secret)(text);
import { mergeEnv } from "../../src/core/env-merge.ts";
import { checkInstanceAddress, instanceAddressAllowed, normaliseInstanceUrl, parseEnvText, pinnedFetch, sendsKeyInClear, envForPlatform } from "../../src/deploy/index.ts";
import { envValues } from "../../src/core/parse-env.ts";
import { envTextForUpdate, variablesToPush } from "../../src/deploy/existing-env.ts";
import { derivedSecrets, signJwt } from "../../src/core/generate/secrets.ts";
import { rejection } from "./fixtures.ts";

const v = (s: string) => parseVersion(s)!;

const failure = (call: Promise<unknown>) => rejection<DeployError>(call);

describe("version order", () => {
  test("betas sort below the release, numerically", () => {
    const ordered = ["3.12.36", "4.0.0-beta.9", "4.0.0-beta.398", "4.0.0-beta.399", "4.0.0-beta.474", "4.0.0", "v4.0.1", "4.3.10", "4.10.0"];
    for (let i = 1; i < ordered.length; i++) {
      expect(compareVersions(v(ordered[i - 1]!), v(ordered[i]!))).toBeLessThan(0);
      expect(compareVersions(v(ordered[i]!), v(ordered[i - 1]!))).toBeGreaterThan(0);
    }
    expect(compareVersions(v("v0.30.2"), v("0.30.2"))).toBe(0);
    expect(parseVersion("latest")).toBeNull();
  });
});

describe("parseEnvText", () => {
  test("comments, export, quotes, multi-line, last wins", () => {
    const text = '# c\nA=1\nexport B="two words"\nC=\'$lit\'\nD=x # note\nE="line1\\nline2"\nF="a\nb"\nA=3\n\nBAD LINE\n';
    expect(parseEnvText(text)).toEqual([
      { key: "A", value: "3" },
      { key: "B", value: "two words" },
      { key: "C", value: "$lit" },
      { key: "D", value: "x" },
      { key: "E", value: "line1\nline2" },
      { key: "F", value: "a\nb" },
    ]);
  });

  test("a quote left open over half a million lines, or a megabyte of spaces (a 1 MiB body), is read in one pass", () => {
    // Searched again per line, this took minutes and held the server's only thread.
    const lines = 500_000;
    const open = `A="${"\n".repeat(lines)}`;
    // Never closed: Compose refuses the file; the value is left out, a merge refuses it.
    expect(parseEnvText(open)).toEqual([]);
    expect(parseEnvText(`${open}"\nB=2\n`)).toEqual([{ key: "A", value: "\n".repeat(lines) }, { key: "B", value: "2" }]);
    expect(() => mergeEnv(`${open}\n`, "A=fresh\nB=2\n")).toThrow("quoted value that never closes (A, line 1)");
    expect(mergeEnv(`${open}"\n`, "A=fresh\nB=2\n").kept).toEqual(["A"]);
    // A value with a megabyte of spaces before its end (and no comment).
    expect(parseEnvText(`C=x${" ".repeat(1_000_000)}y\n`)).toEqual([{ key: "C", value: `x${" ".repeat(1_000_000)}y` }]);
  });
});

describe("local compose settings", () => {
  test("are read by statement, as Compose reads them: one after a closing quote is dropped, a line inside a quoted value is not", () => {
    const text = "A='x' COMPOSE_PROJECT_NAME=evil\nB=\"multi\nCOMPOSE_FILE=inside\"\nC=3\n";
    const { text: sent, settings: dropped } = envForPlatform(text);
    expect(dropped).toEqual(["COMPOSE_PROJECT_NAME"]);
    expect(parseEnvText(sent)).toEqual([{ key: "A", value: "x" }, { key: "B", value: "multi\nCOMPOSE_FILE=inside" }, { key: "C", value: "3" }]);
    // Nothing to leave out: the text goes as it is.
    expect(envForPlatform("A=1\n\n# note\nB=2\n").text).toBe("A=1\n\n# note\nB=2\n");
  });
  test("a platform update keeps statement by statement too", () => {
    const { text, kept } = envTextForUpdate("# db\nDB_PASSWORD=new\nA='x' C=3\nB=\"multi\nDB_PASSWORD=inside\"\n", "DB_PASSWORD=old\n", true);
    expect(kept).toEqual(["DB_PASSWORD"]);
    expect(parseEnvText(text)).toEqual([{ key: "DB_PASSWORD", value: "old" }, { key: "A", value: "x" }, { key: "C", value: "3" }, { key: "B", value: "multi\nDB_PASSWORD=inside" }]);
    expect(text).toContain("# db\nDB_PASSWORD=old\n");
  });
});

describe("normaliseInstanceUrl", () => {
  test.each([
    ["https://coolify.example.com", "https://coolify.example.com"],
    ["https://coolify.example.com/", "https://coolify.example.com"],
    ["https://coolify.example.com/api/v1/", "https://coolify.example.com"],
    ["http://10.0.0.5:3000/api", "http://10.0.0.5:3000"],
    ["https://example.com/dokploy", "https://example.com/dokploy"],
  ])("%s -> %s", (input, expected) => expect(normaliseInstanceUrl(input)).toBe(expected));

  test("rejects non-http URLs and credentials", () => {
    expect(() => normaliseInstanceUrl("ftp://x")).toThrow("http:// or https://");
    expect(() => normaliseInstanceUrl("not a url")).toThrow("not a URL");
    expect(() => normaliseInstanceUrl("https://u:p@x")).toThrow("credentials");
    // A URL that does not parse is quoted back without the credentials pasted into it.
    let message = "";
    try {
      normaliseInstanceUrl("https://user:SECRETTOKEN123@host:99999/");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("not a URL");
    expect(message).toContain("//***@host:99999");
    expect(message).not.toContain("SECRETTOKEN123");
    expect(message).not.toContain("user:");
    // A password holding / or @ is hidden whole too.
    for (const password of ["Pa/ssW0rd", "Pa@ssW0rd"]) {
      let said = "";
      try {
        normaliseInstanceUrl(`https://admin:${password}@host:99999/`);
      } catch (e) {
        said = (e as Error).message;
      }
      expect(said).toContain("not a URL");
      expect(said).not.toContain("W0rd");
    }
  });

  test("refuses link-local, unspecified and multicast addresses, where no instance runs (the cloud metadata service is one)", async () => {
    for (const url of ["http://169.254.169.254/latest/meta-data", "http://0.0.0.0:8000", "http://[fe80::1]:3000", "http://[::]:8000", "http://224.0.0.1", "http://[::ffff:169.254.169.254]/"]) {
      expect(() => normaliseInstanceUrl(url), url).toThrow("link-local, unspecified or multicast");
    }
    // This machine and the LAN are where instances usually are.
    for (const address of ["127.0.0.1", "::1", "10.0.0.5", "192.168.1.20", "172.17.0.1", "fd00::5", "2001:db8::1", "8.8.8.8"]) expect(instanceAddressAllowed(address), address).toBe(true);
    for (const address of ["169.254.0.1", "0.0.0.0", "fe80::1", "febf::1", "ff02::1", "::", "239.1.1.1", "::ffff:169.254.1.1"]) expect(instanceAddressAllowed(address), address).toBe(false);
    // IPv6 forms that carry an IPv4 address lead where it does: mapped, compatible, NAT64, 6to4.
    for (const address of ["::ffff:a9fe:a9fe", "::169.254.169.254", "::a9fe:a9fe", "64:ff9b::a9fe:a9fe", "64:ff9b::169.254.169.254", "2002:a9fe:a9fe::1", "::ffff:100.100.100.200"]) expect(instanceAddressAllowed(address), address).toBe(false);
    for (const address of ["::ffff:10.0.0.5", "64:ff9b::808:808", "2002:c0a8:0101::1", "::ffff:7f00:1"]) expect(instanceAddressAllowed(address), address).toBe(true);
    // A name is checked by what it resolves to; one that does not resolve is left to the first call.
    await checkInstanceAddress("http://localhost:8000");
    await checkInstanceAddress("https://no-such-host.invalid");
    // Metadata services outside the link-local ranges: Alibaba Cloud's, AWS's over IPv6 (any spelling).
    for (const address of ["100.100.100.200", "fd00:ec2::254", "fd00:ec2:0:0::254", "FD00:EC2::254"]) expect(instanceAddressAllowed(address), address).toBe(false);
    for (const address of ["100.100.100.100", "100.64.0.7", "fd00:ec2::253"]) expect(instanceAddressAllowed(address), address).toBe(true);
  });

  test("plain-http calls go to the address that was checked: a name answering otherwise the second time (DNS rebinding) cannot redirect them", async () => {
    const calls: { url: string; host: string | null }[] = [];
    const record = async (input: string, init: RequestInit) => {
      calls.push({ url: input, host: new Headers(init.headers).get("host") });
      return new Response("v4.0.0");
    };
    // The first answer is this machine, every later one the metadata service.
    let asked = 0;
    const rebinding = async () => [{ address: asked++ === 0 ? "127.0.0.1" : "169.254.169.254", family: 4 }];
    const pinned = pinnedFetch(record, rebinding);
    await pinned("http://coolify.test:8000/api/v1/version", { method: "GET", headers: { Authorization: "Bearer k" } });
    expect(calls).toEqual([{ url: "http://127.0.0.1:8000/api/v1/version", host: "coolify.test:8000" }]);
    // Resolved again for the next call: now refused, and nothing is sent.
    expect(pinned("http://coolify.test:8000/api/v1/projects", { method: "GET" })).rejects.toThrow("169.254.169.254 (coolify.test)");
    expect(calls).toHaveLength(1);
    // IPv6 answers are bracketed; HTTPS and literal addresses are left to fetch.
    await pinnedFetch(record, async () => [{ address: "fd00::5", family: 6 }])("http://coolify.test/x", { method: "GET" });
    expect(calls.at(-1)!.url).toBe("http://[fd00::5]/x");
    await pinnedFetch(record, rebinding)("https://coolify.test/x", { method: "GET" });
    await pinnedFetch(record, rebinding)("http://10.0.0.5:8000/x", { method: "GET" });
    expect(calls.slice(-2).map((c) => c.url)).toEqual(["https://coolify.test/x", "http://10.0.0.5:8000/x"]);
    // The next checked address when one refuses the connection (::1 first, the instance on IPv4).
    const tried: string[] = [];
    const ipv4Only = async (input: string) => {
      tried.push(input);
      if (input.includes("[::1]")) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      return new Response("ok");
    };
    const both = async () => [{ address: "::1", family: 6 }, { address: "127.0.0.1", family: 4 }];
    expect(await (await pinnedFetch(ipv4Only, both)("http://coolify.test:8000/x", { method: "GET" })).text()).toBe("ok");
    expect(tried).toEqual(["http://[::1]:8000/x", "http://127.0.0.1:8000/x"]);
    // A call that may have reached the platform (the connection dropped) is not sent again: a
    // create would run twice.
    tried.length = 0;
    const dropping = async (input: string) => {
      tried.push(input);
      throw Object.assign(new Error("socket closed"), { code: "ECONNRESET" });
    };
    expect(pinnedFetch(dropping, both)("http://coolify.test:8000/api/v1/projects", { method: "POST" })).rejects.toThrow("socket closed");
    await Bun.sleep(0);
    expect(tried).toEqual(["http://[::1]:8000/api/v1/projects"]);
  });

  test("knows when the key would cross the network unencrypted (plain http to another machine)", () => {
    for (const url of ["http://10.0.0.5:8000", "http://coolify.example.com", "http://[fd00::5]:3000"]) expect(sendsKeyInClear(url), url).toBe(true);
    for (const url of ["https://coolify.example.com", "http://127.0.0.1:8000", "http://localhost:3000", "http://[::1]:3000", "http://coolify.localhost"]) expect(sendsKeyInClear(url), url).toBe(false);
  });

  test("reads the scheme in any case, as URLs do", () => {
    expect(normaliseInstanceUrl("HTTPS://Coolify.Example.com/api/v1")).toBe("https://coolify.example.com");
  });
});

describe("createJsonClient", () => {
  const fakeFetch = (res: () => Response, seen: RequestInit[] = []) =>
    (async (_url: string, init: RequestInit) => {
      seen.push(init);
      return res();
    });

  test("asks fetch not to follow redirects and reports a 3xx", async () => {
    const seen: RequestInit[] = [];
    const client = createJsonClient({
      provider: "Coolify",
      baseUrl: "http://127.0.0.1:9/api/v1",
      headers: { Authorization: "Bearer secret-key-1" },
      secret: "secret-key-1",
      fetch: fakeFetch(() => new Response("", { status: 301, headers: { location: "https://other.example/api/v1/version" } }), seen),
    });
    const error = await failure(client.call("GET", "/version"));
    expect(seen[0]!.redirect).toBe("manual");
    expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(error.message).toBe("Coolify API 301: Moved Permanently");
    expect(error.detail).toContain("https://other.example/api/v1/version");
  });

  test("error bodies: message and field errors in detail; key redacted", async () => {
    const client = createJsonClient({
      provider: "Coolify",
      baseUrl: "http://127.0.0.1:9",
      headers: {},
      secret: "secret-key-1",
      fetch: fakeFetch(() => Response.json({ message: "Validation failed.", errors: { name: ["bad secret-key-1"] } }, { status: 422 })),
    });
    const error = await failure(client.call("POST", "/projects", { body: {} }));
    expect(error.message).toBe("Coolify API 422: Unprocessable Entity");
    expect(error.detail).toBe("Validation failed.; name: bad [redacted]");
  });

  test("Dokploy's zod issues name each refused field", async () => {
    const client = createJsonClient({
      provider: "Dokploy",
      baseUrl: "http://127.0.0.1:9/api",
      headers: {},
      secret: "secret-key-1",
      fetch: fakeFetch(() => Response.json({
        message: "Input validation failed",
        code: "BAD_REQUEST",
        issues: [{ code: "too_small", path: ["name"], message: "String must contain at least 1 character(s)" }, { path: [], message: "Required" }],
        data: { code: "BAD_REQUEST", httpStatus: 400 },
      }, { status: 400 })),
    });
    const error = await failure(client.call("POST", "/compose.create", { body: {} }));
    expect(error.detail).toBe("Input validation failed; name: String must contain at least 1 character(s); Required");
  });

  test("an answer past the size cap is not read to its end (a huge body ends in a clear error); a JSON answer cut short says so", async () => {
    let sent = 0;
    const chunk = new TextEncoder().encode(`[${'{"uuid":"x"},'.repeat(10_000)}`);
    // 64 MiB, as good as endless here (and bounded, should the cap fail).
    const endless = () => new Response(new ReadableStream({ pull(controller) {
      if (sent > 64 * 1024 * 1024) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    } }), { headers: { "content-type": "application/json" } });
    const client = (answer: () => Response) => createJsonClient({ provider: "Coolify", baseUrl: "http://127.0.0.1:9/api/v1", headers: {}, secret: "secret-key-1", fetch: fakeFetch(answer) });
    const error = await failure(client(endless).call("GET", "/servers"));
    expect(error.message).toBe("Coolify API 200: the answer is larger than 8 MiB, so it was not read; check that --url points at the Coolify instance");
    expect(sent).toBeLessThan(MAX_ANSWER_BYTES + 4 * chunk.length);
    // A length announced past the cap is refused before any of it is read.
    const announced = await failure(client(() => new Response("[]", { headers: { "content-length": String(MAX_ANSWER_BYTES + 1) } })).call("GET", "/servers"));
    expect(announced.message).toContain("larger than 8 MiB");
    const cut = await failure(client(() => new Response('[{"uuid":"x"},{"uu', { headers: { "content-type": "application/json; charset=utf-8" } })).call("GET", "/servers"));
    expect(cut.message).toBe("Coolify API 200: its application/json answer is not valid JSON");
  });

  test("a fetch rejection that mentions the key is redacted", async () => {
    const client = createJsonClient({
      provider: "Dokploy",
      baseUrl: "http://127.0.0.1:9/api",
      headers: {},
      secret: "secret-key-1",
      fetch: async () => {
        throw new TypeError("bad header value secret-key-1");
      },
    });
    const error = await failure(client.call("GET", "/project.all"));
    expect(error.message).toBe("Cannot reach Dokploy at http://127.0.0.1:9 (bad header value [redacted])");
  });

  test("the key is hidden in whatever form the platform echoes it, and before any text is cut short", async () => {
    const key = "7|Zk9sQ2xvbmdTZWNyZXRUb2tlblZhbHVlWFla+/=";
    const b64 = (t: string) => Buffer.from(t).toString("base64");
    const echoes = [
      `bad token ${encodeURIComponent(key)}`,
      `header ${b64(`Bearer ${key}`)} refused`,
      `token ${b64(key)} refused`,
      `TOKEN ${key.toUpperCase()}`,
      JSON.stringify({ token: key }),
      // Long enough that a cut at 200 characters falls inside the key.
      `${"x".repeat(180)} ${key}`,
    ];
    for (const echo of echoes) {
      const client = createJsonClient({
        provider: "Coolify", baseUrl: "http://127.0.0.1:9", headers: {}, secret: key,
        fetch: fakeFetch(() => Response.json({ message: echo }, { status: 401 })),
      });
      const error = await failure(client.call("GET", "/servers"));
      expect(error.detail, echo).toContain("[redacted]");
      for (const part of [key.slice(2, 30), encodeURIComponent(key).slice(3, 30), b64(key).slice(0, 30), b64(`Bearer ${key}`).slice(0, 30)]) {
        expect(error.detail!.toLowerCase(), echo).not.toContain(part.toLowerCase());
      }
    }
    // A version answer that holds it (a login page), cut to 60 characters in the message.
    const version = createJsonClient({ provider: "Coolify", baseUrl: "http://127.0.0.1:9", headers: {}, secret: key, fetch: fakeFetch(() => new Response(`unauthorized for token ${key}`)) });
    expect(await version.call("GET", "/version", { expect: "text" })).toBe("unauthorized for token [redacted]");
    // A redirect is named by its address, never its query (a login page may carry the token).
    const redirected = createJsonClient({
      provider: "Coolify", baseUrl: "http://127.0.0.1:9", headers: {}, secret: key,
      fetch: fakeFetch(() => new Response("", { status: 302, headers: { location: "https://login.example/sso?next=/api&t=abc" } })),
    });
    const moved = await failure(redirected.call("GET", "/version"));
    expect(moved.detail).toContain("https://login.example/sso (query left out)");
    expect(moved.detail).not.toContain("t=abc");
    // Spaces around the key do not keep it from being hidden.
    expect(redact(`x ${key} y`, ` ${key} `)).toBe("x [redacted] y");
  });

  test("a very short secret is hidden where it stands alone, not inside other words", () => {
    expect(redact("abc abc", "abc")).toBe("[redacted] [redacted]");
    expect(redact('{"echo":"Bearer k3y"} k3yboard 401', "k3y")).toBe('{"echo":"Bearer [redacted]"} k3yboard 401');
    expect(redact("Coolify API 401: Unauthorized", "1")).toBe("Coolify API 401: Unauthorized");
    // Padding is not part of what is matched, and never shortens a form below 4 characters.
    expect(redact("Dokploy API 401: Unauthorized", "====")).toBe("Dokploy API 401: Unauthorized");
    expect(redact("about ab and AB", "ab==")).toBe("about ab and AB");
    expect(redact("x-long-secret-x", "long-secret")).toBe("x-[redacted]-x");
  });
});

describe("envTextForUpdate", () => {
  test("the platform's lines are copied as written (Dokploy reads them with its own parser)", () => {
    const platform = [`POSTGRES_PASSWORD="Pa'ss$w0rd"`, `EXTRA_REGEX="^\\d+$"`, "MY-VAR=1", "FOO: bar", "X=`a'b\"c`", `CERT="-----BEGIN-----`, "abc", `-----END-----"`].join("\n");
    const { text, kept, carried } = envTextForUpdate("POSTGRES_PASSWORD=fresh\nCORE_VERSION=1\n", platform, true);
    expect(kept).toEqual(["POSTGRES_PASSWORD"]);
    expect(carried).toEqual(["EXTRA_REGEX", "MY-VAR", "FOO", "X", "CERT"]);
    for (const line of platform.split("\n")) expect(text).toContain(line);
    expect(text).not.toContain("fresh");
    expect(text).toContain("CORE_VERSION=1");
  });

  test("values put back or carried over read back unchanged, however they are written", () => {
    const awkward = ["plain-Value_1", "with space", "it's", 'a "quoted" $HOME', "two\nlines", "back\\slash"];
    const platform = awkward.map((v, i) => `K${i}=${JSON.stringify(v)}`).join("\n").replace(/\\\\/g, "\\\\");
    const stored = envValues(platform);
    // Kept (the bundle has the key, fresh) and carried (only the platform has it).
    const ours = "# ours\nK0=new\nK1=new\nK2=new\nOURS=1\n";
    const { text, kept, carried } = envTextForUpdate(ours, platform, true);
    expect(kept).toEqual(["K0", "K1", "K2"]);
    expect(carried).toEqual(["K3", "K4", "K5"]);
    const after = envValues(text);
    for (const [key, value] of stored) expect(after.get(key)).toBe(value);
    expect(after.get("OURS")).toBe("1");
    expect(text.startsWith("# ours\n")).toBe(true);
    // Without keeping, the bundle's values win and the platform-only ones are still carried.
    const mine = envValues(envTextForUpdate(ours, platform, false).text);
    expect(mine.get("K0")).toBe("new");
    expect(mine.get("K5")).toBe(stored.get("K5"));
  });
});

describe("a signed API key on an update that keeps the platform's secret", () => {
  const derived = derivedSecrets([{ name: "SB_ANON_KEY", jwt: { secret: "SB_JWT_SECRET", role: "anon" } }]);
  const fresh = `SB_JWT_SECRET=new-secret\nSB_ANON_KEY=${signJwt("new-secret", { role: "anon" })}\n`;
  const signedWithOld = signJwt("old 'secret'", { role: "anon" });

  test("Dokploy: the key goes in signed with the secret the platform keeps", () => {
    const { text, kept } = envTextForUpdate(fresh, `SB_JWT_SECRET="old 'secret'"\n`, true, derived);
    expect(kept).toEqual(["SB_JWT_SECRET"]);
    const after = envValues(text);
    expect(after.get("SB_JWT_SECRET")).toBe("old 'secret'");
    expect(after.get("SB_ANON_KEY")).toBe(signedWithOld);
    // Both on the platform: both stay as they are.
    const both = envTextForUpdate(fresh, `SB_JWT_SECRET=old\nSB_ANON_KEY=theirs\n`, true, derived);
    expect(parseEnvText(both.text).find((v) => v.key === "SB_ANON_KEY")!.value).toBe("theirs");
  });

  test("Coolify: signed with the platform's value, or not sent when the platform hides it", () => {
    const ours = parseEnvText(fresh);
    const shown = variablesToPush(ours, new Map([["SB_JWT_SECRET", "old 'secret'"]]), true, derived);
    expect(shown.push).toEqual([{ key: "SB_ANON_KEY", value: signedWithOld }]);
    const hidden = variablesToPush(ours, new Map([["SB_JWT_SECRET", undefined]]), true, derived);
    expect(hidden.push).toEqual([]);
    // A first deploy (nothing on the platform) sends both as generated.
    expect(variablesToPush(ours, new Map(), true, derived).push).toEqual(ours);
  });
});
