// `update --dry-run` asks registries for the digest a tag points at now (src/docker/registry.ts).
// Docker Hub, GHCR and most private registries want a bearer token first. This runs the real
// registry (Debian's docker-registry, i.e. distribution) with token authentication, and plays
// the token service the way Docker Hub's does: ES256 JWTs, signed with a key whose self-signed
// certificate the registry trusts, handed out anonymously for public repositories and only
// with the right Basic credentials for private ones. Everything listens on 127.0.0.1.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { remoteDigest } from "../../src/docker/registry.ts";
import { freePort, hasTool, run } from "../support/tools.ts";

const REGISTRY_BIN = "docker-registry";
const ready = hasTool(REGISTRY_BIN) && hasTool("openssl");
const suite = ready ? describe : describe.skip;

const SERVICE = "stackgen-test-registry";
const ISSUER = "stackgen-test-token-service";
const USER = "robot";
const PASSWORD = "s3cret-Pass";
/** Repositories anyone may pull; any other one needs USER/PASSWORD. */
const PUBLIC = new Set(["library/public"]);

const b64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64url");

interface Scope {
  type: string;
  name: string;
  actions: string[];
}

/** `repository:team/app:pull,push` → the access claim distribution expects. */
function scopesOf(param: string | null): Scope[] {
  if (!param) return [];
  return param.split(" ").map((s) => {
    const [type, name, actions] = [s.slice(0, s.indexOf(":")), s.slice(s.indexOf(":") + 1, s.lastIndexOf(":")), s.slice(s.lastIndexOf(":") + 1)];
    return { type, name, actions: actions.split(",") };
  });
}

class TokenService {
  /** Every token request, for the assertions. */
  readonly requests: { scope: string | null; service: string | null; basic: string | null }[] = [];
  private server?: ReturnType<typeof Bun.serve>;

  constructor(private readonly key: CryptoKey, private readonly certDer: Uint8Array) {}

  get realm() {
    return `http://127.0.0.1:${this.server!.port}/token`;
  }

  start() {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.answer(req) });
  }

  stop() {
    this.server?.stop(true);
  }

  async sign(access: Scope[], subject: string): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const header = { typ: "JWT", alg: "ES256", x5c: [Buffer.from(this.certDer).toString("base64")] };
    const claims = { iss: ISSUER, sub: subject, aud: SERVICE, exp: now + 300, nbf: now - 10, iat: now, jti: crypto.randomUUID(), access };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    // WebCrypto's ECDSA signature is r||s, the JWS form.
    const signature = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.key, new TextEncoder().encode(input)));
    return `${input}.${b64url(signature)}`;
  }

  private async answer(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const basic = req.headers.get("authorization");
    this.requests.push({ scope: url.searchParams.get("scope"), service: url.searchParams.get("service"), basic });
    if (url.pathname !== "/token" || url.searchParams.get("service") !== SERVICE) return new Response("bad request", { status: 400 });
    const authenticated = basic === `Basic ${btoa(`${USER}:${PASSWORD}`)}`;
    if (basic !== null && !authenticated) return new Response("wrong credentials", { status: 401 });
    const requested = scopesOf(url.searchParams.get("scope"));
    // Like Docker Hub: anonymous callers get pull on public repositories and nothing else.
    const granted = requested.filter((s) => authenticated || (PUBLIC.has(s.name) && s.actions.every((a) => a === "pull")));
    if (granted.length < requested.length && !authenticated) return new Response("authentication required", { status: 401 });
    const token = await this.sign(granted, authenticated ? USER : "");
    return Response.json({ token, access_token: token, expires_in: 300 });
  }
}

let work: string;
let tokens: TokenService;
let registry: ReturnType<typeof Bun.spawn> | undefined;
let registryHost: string;
const pushed: Record<string, string> = {};

/** Pushes a small image (config + one layer + manifest) over the registry API; returns its digest. */
async function push(repository: string, tag: string): Promise<string> {
  const token = await tokens.sign([{ type: "repository", name: repository, actions: ["pull", "push"] }], USER);
  const auth = { Authorization: `Bearer ${token}` };
  const base = `http://${registryHost}/v2/${repository}`;
  const upload = async (bytes: Uint8Array<ArrayBuffer>) => {
    const digest = `sha256:${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}`;
    const started = await fetch(`${base}/blobs/uploads/`, { method: "POST", headers: auth });
    expect(started.status).toBe(202);
    const location = new URL(started.headers.get("location")!, `http://${registryHost}`);
    location.searchParams.set("digest", digest);
    const done = await fetch(location, { method: "PUT", headers: { ...auth, "content-type": "application/octet-stream" }, body: bytes });
    expect(done.status).toBe(201);
    return { digest, size: bytes.length };
  };
  const config = await upload(new TextEncoder().encode(JSON.stringify({ architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [] }, config: { Labels: { repository, tag } } })));
  const layer = await upload(Bun.gzipSync(new TextEncoder().encode(`${repository}:${tag}`)));
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.docker.distribution.manifest.v2+json",
    config: { mediaType: "application/vnd.docker.container.image.v1+json", ...config },
    layers: [{ mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip", ...layer }],
  });
  const put = await fetch(`${base}/manifests/${tag}`, { method: "PUT", headers: { ...auth, "content-type": "application/vnd.docker.distribution.manifest.v2+json" }, body: manifest });
  expect(put.status).toBe(201);
  const digest = put.headers.get("docker-content-digest")!;
  expect(digest).toBe(`sha256:${new Bun.CryptoHasher("sha256").update(manifest).digest("hex")}`);
  return digest;
}

/** remoteDigest with DOCKER_CONFIG pointing at a config.json holding `auths` (or `config`, or
 *  nothing), and the test's credential helpers first on PATH. */
async function digestWith(image: string, auths?: Record<string, { auth: string }>, config?: Record<string, unknown>) {
  const dir = mkdtempSync(join(work, "docker-config-"));
  if (auths || config) writeFileSync(join(dir, "config.json"), JSON.stringify(config ?? { auths }));
  const before = { DOCKER_CONFIG: process.env.DOCKER_CONFIG, PATH: process.env.PATH };
  process.env.DOCKER_CONFIG = dir;
  process.env.PATH = `${join(work, "bin")}:${before.PATH}`;
  try {
    return await remoteDigest(image, { timeoutMs: 10_000 });
  } finally {
    for (const [key, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

/** A `docker-credential-<name>` program answering `get` for one server, as the real ones do. */
function credentialHelper(name: string, server: string, username: string, secret: string) {
  mkdirSync(join(work, "bin"), { recursive: true });
  const file = join(work, "bin", `docker-credential-${name}`);
  writeFileSync(file, `#!/bin/sh
read -r server
if [ "$1" = get ] && [ "$server" = "${server}" ]; then
  printf '{"ServerURL":"%s","Username":"%s","Secret":"%s"}' "$server" "${username}" "${secret}"
else
  echo "credentials not found in native keychain"; exit 1
fi
`, { mode: 0o755 });
}

suite("registry digests behind token authentication (real docker-registry)", () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "stackgen-registry-auth-"));
    const keyFile = join(work, "key.pem");
    const certFile = join(work, "cert.pem");
    const made = await run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", `/CN=${ISSUER}`]);
    if (made.code !== 0) throw new Error(`openssl failed: ${made.stderr}`);
    const pkcs8 = await run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", keyFile, "-outform", "DER", "-out", join(work, "key.der")]);
    if (pkcs8.code !== 0) throw new Error(`openssl pkcs8 failed: ${pkcs8.stderr}`);
    const der = await run(["openssl", "x509", "-in", certFile, "-outform", "DER", "-out", join(work, "cert.der")]);
    if (der.code !== 0) throw new Error(`openssl x509 failed: ${der.stderr}`);
    const key = await crypto.subtle.importKey("pkcs8", await Bun.file(join(work, "key.der")).arrayBuffer(), { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
    tokens = new TokenService(key, new Uint8Array(await Bun.file(join(work, "cert.der")).arrayBuffer()));
    tokens.start();

    const port = await freePort();
    registryHost = `127.0.0.1:${port}`;
    mkdirSync(join(work, "storage"));
    const config = join(work, "config.yml");
    writeFileSync(config, [
      "version: 0.1",
      "log: { level: error }",
      `storage: { filesystem: { rootdirectory: ${JSON.stringify(join(work, "storage"))} } }`,
      `http: { addr: ${JSON.stringify(registryHost)} }`,
      "auth:",
      "  token:",
      `    realm: ${JSON.stringify(tokens.realm)}`,
      `    service: ${SERVICE}`,
      `    issuer: ${ISSUER}`,
      `    rootcertbundle: ${JSON.stringify(certFile)}`,
      "",
    ].join("\n"));
    registry = Bun.spawn([REGISTRY_BIN, "serve", config], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const deadline = Date.now() + 15_000;
    for (;;) {
      const answer = await fetch(`http://${registryHost}/v2/`).catch(() => undefined);
      if (answer?.status === 401) break;
      if (registry.exitCode !== null || Date.now() > deadline) {
        throw new Error(`docker-registry did not start: ${await new Response(registry.stderr as ReadableStream).text()}`);
      }
      await Bun.sleep(50);
    }
    pushed.public = await push("library/public", "1.0");
    pushed.private = await push("team/private-app", "2.1");
  });

  afterAll(async () => {
    registry?.kill();
    await registry?.exited;
    tokens?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test("the registry really demands a token", async () => {
    const anonymous = await fetch(`http://${registryHost}/v2/library/public/manifests/1.0`, { method: "HEAD" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain(`realm="${tokens.realm}"`);
  });

  test("a public repository: anonymous token for the challenged scope, then the digest", async () => {
    tokens.requests.length = 0;
    expect(await digestWith(`${registryHost}/library/public:1.0`)).toBe(pushed.public);
    expect(tokens.requests).toEqual([{ scope: "repository:library/public:pull", service: SERVICE, basic: null }]);
  });

  test("a private repository: the token is fetched with the credentials of docker login", async () => {
    tokens.requests.length = 0;
    const auth = btoa(`${USER}:${PASSWORD}`);
    expect(await digestWith(`${registryHost}/team/private-app:2.1`, { [registryHost]: { auth } })).toBe(pushed.private);
    expect(tokens.requests).toEqual([{ scope: "repository:team/private-app:pull", service: SERVICE, basic: `Basic ${auth}` }]);
  });

  test("credentials kept by a credential helper (credsStore, credHelpers) are used as docker login put them there", async () => {
    const basic = `Basic ${btoa(`${USER}:${PASSWORD}`)}`;
    credentialHelper("sgstore", registryHost, USER, PASSWORD);
    credentialHelper("sgother", "some.other.registry", USER, "wrong");
    credentialHelper("sgtoken", registryHost, "<token>", "an-identity-token");
    const image = `${registryHost}/team/private-app:2.1`;
    // The default store, with only a placeholder in auths (what docker login writes then).
    tokens.requests.length = 0;
    expect(await digestWith(image, undefined, { auths: { [registryHost]: {} }, credsStore: "sgstore" })).toBe(pushed.private);
    expect(tokens.requests.map((r) => r.basic)).toEqual([basic]);
    // A registry's own helper wins over the default store.
    tokens.requests.length = 0;
    expect(await digestWith(image, undefined, { credsStore: "sgother", credHelpers: { [registryHost]: "sgstore" } })).toBe(pushed.private);
    expect(tokens.requests.map((r) => r.basic)).toEqual([basic]);
    // A helper without an entry for this registry, an identity token (not Basic), a name that is
    // a path, a helper that is not installed: no credentials, so the private repository is refused.
    for (const config of [{ credsStore: "sgother" }, { credsStore: "sgtoken" }, { credsStore: "../../bin/sh" }, { credsStore: "not-installed" }]) {
      tokens.requests.length = 0;
      await expect(digestWith(image, undefined, config)).rejects.toThrow(/answered 401/);
      expect(tokens.requests.map((r) => r.basic)).toEqual([null]);
    }
  });

  test("a private repository without credentials fails with the token service's answer", async () => {
    await expect(digestWith(`${registryHost}/team/private-app:2.1`)).rejects.toThrow(/token request to 127\.0\.0\.1:\d+ answered 401/);
  });

  test("wrong credentials are refused, never retried anonymously", async () => {
    tokens.requests.length = 0;
    const wrong = btoa(`${USER}:not-the-password`);
    await expect(digestWith(`${registryHost}/team/private-app:2.1`, { [registryHost]: { auth: wrong } })).rejects.toThrow(/answered 401/);
    expect(tokens.requests.map((r) => r.basic)).toEqual([`Basic ${wrong}`]);
  });

  test("a tag the registry does not have is named as not found", async () => {
    const auth = btoa(`${USER}:${PASSWORD}`);
    await expect(digestWith(`${registryHost}/team/private-app:9.9`, { [registryHost]: { auth } })).rejects.toThrow(`team/private-app:9.9 not found on ${registryHost}`);
  });
});
