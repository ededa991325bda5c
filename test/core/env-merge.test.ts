// Regenerating `.env` over the user's: their values stay, new variables arrive, nothing is lost.
import { describe, expect, test } from "bun:test";
import { mergeEnv, parseEnvValues } from "../../src/core/env-merge.ts";
import { envValues } from "../../src/core/parse-env.ts";
import { derivedSecrets, signJwt } from "../../src/core/generate/secrets.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";

const generated = ["# header", "DB_PASSWORD=fresh-secret-0123456789abcdefghijkl", "API_TOKEN=fresh-token-0123456789abcdefghijklm", "SITE_URL=http://localhost:8080", "NEW_SETTING=on", ""].join("\n");

describe("mergeEnv", () => {
  test("keeps every old value, adds new variables, keeps the user's own at the end", () => {
    const old = ["export DB_PASSWORD=old-password", "SITE_URL=https://mine.example", "", "# my note", "# on two lines", "MY_OWN=kept", "export EXPORTED=also kept", ""].join("\n");
    const merged = mergeEnv(old, generated, new Set(["DB_PASSWORD", "API_TOKEN"]));
    const values = parseEnvValues(merged.text);
    expect(values.get("DB_PASSWORD")).toBe("old-password");
    expect(values.get("SITE_URL")).toBe("https://mine.example");
    expect(values.get("API_TOKEN")).toBe("fresh-token-0123456789abcdefghijklm");
    expect(values.get("NEW_SETTING")).toBe("on");
    expect(values.get("MY_OWN")).toBe("kept");
    expect(values.get("EXPORTED")).toBe("also kept");
    expect(merged.added.sort()).toEqual(["API_TOKEN", "NEW_SETTING"]);
    expect(merged.extra.sort()).toEqual(["EXPORTED", "MY_OWN"]);
    // `export` stays where the user wrote it (a .env a shell sources too), and so do notes above such a line.
    const noted = mergeEnv("# why this password\nexport DB_PASSWORD=old-password\n", generated, new Set(["DB_PASSWORD", "API_TOKEN"]));
    expect(noted.text).toContain("# why this password\nexport DB_PASSWORD=old-password\n");
    expect(merged.text).toContain("# my note\n# on two lines\nMY_OWN=kept\nexport EXPORTED=also kept\n");
    expect(merged.text).toContain("\nexport DB_PASSWORD=old-password\n");
    // Regenerating again changes nothing: no second header, the notes stay once.
    const again = mergeEnv(merged.text, generated, new Set(["DB_PASSWORD", "API_TOKEN"]));
    expect(again.text).toBe(merged.text);
  });

  test("settings the previous input made (and the user never changed) follow the new input; the rest stays", () => {
    // The previous input rendered today: localhost URLs. The user changed only ADMIN_URL.
    const env = ["DB_PASSWORD=other-random-value", "SITE_URL=http://localhost:8080", "ADMIN_URL=http://localhost:9000", "IMAGE_TAG=1.2", "NEW_SETTING=on", ""].join("\n");
    const old = ["DB_PASSWORD=old-password", "SITE_URL=http://localhost:8080", "ADMIN_URL=https://admin.mine.example", "IMAGE_TAG=1.2", "NEW_SETTING=on", ""].join("\n");
    const next = ["DB_PASSWORD=new-random-value-0123456789abcdef", "SITE_URL=https://site.example.com", "ADMIN_URL=https://admin.example.com", "IMAGE_TAG=latest", "NEW_SETTING=on", ""].join("\n");
    const addressNames = new Set(["SITE_URL", "ADMIN_URL", "DB_PASSWORD"]);
    const merged = mergeEnv(old, next, new Set(["DB_PASSWORD"]), [], { previous: { env, addressNames } });
    const values = parseEnvValues(merged.text);
    expect(values.get("SITE_URL")).toBe("https://site.example.com");
    expect(values.get("ADMIN_URL")).toBe("https://admin.mine.example");
    expect(values.get("DB_PASSWORD")).toBe("old-password");
    expect(merged.updated).toEqual(["SITE_URL"]);
    // Only addresses move: another setting the previous input made (an image tag) stays.
    expect(values.get("IMAGE_TAG")).toBe("1.2");
    // A secret is never replaced, even when the old one matches the previous render's text.
    const same = mergeEnv("DB_PASSWORD=x\n", "DB_PASSWORD=y\n", new Set(["DB_PASSWORD"]), [], { previous: { env: "DB_PASSWORD=x\n", addressNames: new Set() } });
    expect(parseEnvValues(same.text).get("DB_PASSWORD")).toBe("x");
    // An unchanged value over several lines is not reported as moved.
    const pem = "KEY_URL=\"line1\nline2\"\n";
    expect(mergeEnv(pem, pem, new Set(), [], { previous: { env: pem, addressNames: new Set(["KEY_URL"]) } }).updated).toEqual([]);
    // Without the previous render every old value stays, as before.
    expect(parseEnvValues(mergeEnv(old, next).text).get("SITE_URL")).toBe("http://localhost:8080");
  });

  test("a setting given explicitly (follow) takes the new value over the user's; a secret never does", () => {
    const old = "DB_PASSWORD=old-password\nIMAGE_TAG=mine\nSITE_URL=https://mine.example\n";
    const next = "DB_PASSWORD=new-random-value-0123456789abcdef\nIMAGE_TAG=2.0\nSITE_URL=http://localhost:8080\n";
    const merged = mergeEnv(old, next, new Set(["DB_PASSWORD"]), [], { follow: new Set(["IMAGE_TAG", "DB_PASSWORD"]) });
    const values = parseEnvValues(merged.text);
    expect(values.get("IMAGE_TAG")).toBe("2.0");
    expect(values.get("DB_PASSWORD")).toBe("old-password");
    expect(values.get("SITE_URL")).toBe("https://mine.example");
    expect(merged.updated).toEqual(["IMAGE_TAG"]);
    // Already the value asked for: nothing to report.
    expect(mergeEnv(merged.text, next, new Set(["DB_PASSWORD"]), [], { follow: new Set(["IMAGE_TAG"]) }).updated).toEqual([]);
  });

  test("a value without the shape its variable must have (it reaches a config file as text) is replaced and named", () => {
    const email = /^([A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+)?$/;
    const withEmail = `${generated}CADDY_ACME_EMAIL=\n`;
    const hostile = `CADDY_ACME_EMAIL="ops@example.com\n\tadmin 0.0.0.0:2019\n}"\nSITE_URL=https://mine.example\n`;
    const merged = mergeEnv(hostile, withEmail, new Set(), [], { patterns: new Map([["CADDY_ACME_EMAIL", email]]) });
    expect(merged.refused).toEqual(["CADDY_ACME_EMAIL"]);
    expect(parseEnvValues(merged.text).get("CADDY_ACME_EMAIL")).toBe("");
    expect(parseEnvValues(merged.text).get("SITE_URL")).toBe("https://mine.example");
    // A value of that shape is kept as any other.
    const fine = mergeEnv("CADDY_ACME_EMAIL=ops@example.com\n", withEmail, new Set(), [], { patterns: new Map([["CADDY_ACME_EMAIL", email]]) });
    expect(fine.refused).toEqual([]);
    expect(parseEnvValues(fine.text).get("CADDY_ACME_EMAIL")).toBe("ops@example.com");
    // Judged as compose reads it: in quotes, or with a comment after it, it is the same address.
    for (const line of ['CADDY_ACME_EMAIL="ops@example.com"', "CADDY_ACME_EMAIL='ops@example.com' # renewals"]) {
      const quoted = mergeEnv(`${line}\n`, withEmail, new Set(), [], { patterns: new Map([["CADDY_ACME_EMAIL", email]]) });
      expect(quoted.refused, line).toEqual([]);
      expect(envValues(quoted.text).get("CADDY_ACME_EMAIL"), line).toBe("ops@example.com");
    }
  });

  test("the gateway's image settings keep an image reference's shape: a tag or a tag pinned to a digest, a repository", () => {
    const made = generateBundle({ projectName: "p", services: ["redis"] }, getCatalog());
    const merge = (env: string) => mergeEnv(env, made.files[".env"]!, made.secretNames, made.derivedSecrets, { keepExtra: false, patterns: made.valuePatterns });
    const digest = `1.2.3@sha256:${"ab".repeat(32)}`;
    for (const [env, refused] of [
      ["CORE_VERSION=$(id)\nCORE_IMAGE=ghcr.io/me/gateway\n", ["CORE_VERSION"]],
      ["CORE_VERSION=1.0\nCORE_IMAGE=evil image\n", ["CORE_IMAGE"]],
      ["CORE_VERSION=1.0:x\nCORE_IMAGE=Upper/Case\n", ["CORE_VERSION", "CORE_IMAGE"]],
      [`CORE_VERSION=${digest}\nCORE_IMAGE=registry.local:5000/team/gateway\n`, []],
      ['CORE_VERSION="2.0"\nCORE_IMAGE=\n', []],
    ] as const) {
      const merged = merge(env);
      expect(merged.refused, env).toEqual([...refused]);
      const values = parseEnvValues(merged.text);
      if (refused.includes("CORE_VERSION" as never)) expect(values.get("CORE_VERSION")).toBe("latest");
      if (refused.includes("CORE_IMAGE" as never)) expect(values.get("CORE_IMAGE")).toBe("");
    }
    expect(parseEnvValues(merge(`CORE_VERSION=${digest}\n`).text).get("CORE_VERSION")).toBe(digest);
  });

  test("an export's .env cannot slip a COMPOSE_PROJECT_NAME past the filter behind an escaped quote", () => {
    const generated = "# header\nCORE_VERSION=1.0\nCORE_IMAGE=ghcr.io/openclaw/openclaw\n";
    const hostile = "CORE_VERSION='latest\\'\nCORE_IMAGE=x' COMPOSE_PROJECT_NAME=hijacked\n";
    const merged = mergeEnv(hostile, generated, new Set(), [], { keepExtra: false });
    expect(merged.extra).toEqual(["COMPOSE_PROJECT_NAME"]);
    const read = envValues(merged.text);
    expect(read.has("COMPOSE_PROJECT_NAME")).toBe(false);
    // The odd value is kept whole, as Compose reads it, and ends before anything else begins.
    expect(read.get("CORE_VERSION")).toBe("latest'\nCORE_IMAGE=x");
    expect(read.get("CORE_IMAGE")).toBe("ghcr.io/openclaw/openclaw");
  });

  test("a secret of someone else's file is taken only in the characters generated ones have; the user's own file keeps any", () => {
    const generated = "# Redis password (generated secret)\nREDIS_PASSWORD=fresh0123456789\nAPI_JWT=eyJh.eyJz.c2ln-_\n";
    const secrets = new Set(["REDIS_PASSWORD", "API_JWT"]);
    for (const crafted of ["x@evil.example:6379/0#", "a b", "a$b", "a/b", "'a?b'"]) {
      const foreign = mergeEnv(`REDIS_PASSWORD=${crafted}\nAPI_JWT=eyJ0.eyJ1.sig_-\n`, generated, secrets, [], { keepExtra: false });
      expect(foreign.refused).toEqual(["REDIS_PASSWORD"]);
      expect(parseEnvValues(foreign.text).get("REDIS_PASSWORD")).toBe("fresh0123456789");
      expect(parseEnvValues(foreign.text).get("API_JWT")).toBe("eyJ0.eyJ1.sig_-");
      // A bundle's own .env is the user's: a password set by hand is in the data already.
      const own = mergeEnv(`REDIS_PASSWORD=${crafted}\n`, generated, secrets);
      expect(own.refused).toEqual([]);
      expect(parseEnvValues(own.text).get("REDIS_PASSWORD")).toBe(crafted);
    }
    for (const fine of ["Zk3q9TPx0bL7", '"Zk3q-9T_Px.0"', "'abc'", "Zk3q9TPx0bL7 # set by hand"]) {
      expect(mergeEnv(`REDIS_PASSWORD=${fine}\n`, generated, secrets, [], { keepExtra: false }).kept).toContain("REDIS_PASSWORD");
    }
  });

  test("a quote that never closes is refused, not written back where a later quote would close it", () => {
    // Written at REDIS_PASSWORD's place (after CORE_VERSION's), the swallowed rest would close on
    // the quote of a later line and make COMPOSE_PROJECT_NAME an assignment.
    const hostile = `REDIS_PASSWORD='" COMPOSE_PROJECT_NAME=hijacked #'\nCORE_VERSION="x\n`;
    expect(() => mergeEnv(hostile, "CORE_VERSION=1\nREDIS_PASSWORD=fresh\n", new Set(), [], { keepExtra: false })).toThrow("quoted value that never closes (CORE_VERSION, line 2)");
  });

  test("a quoted value over several lines (a key, a certificate) is kept whole, and the lines after it too", () => {
    const cert = '"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"';
    const old = [`SITE_URL=${cert}`, `TLS_KEY=${cert}`, "SMTP_PASS=p4ss", ""].join("\n");
    const merged = mergeEnv(old, generated);
    expect(merged.text).toContain(`SITE_URL=${cert}\n`);
    expect(merged.text).toContain(`TLS_KEY=${cert}\n`);
    expect(merged.extra.sort()).toEqual(["SMTP_PASS", "TLS_KEY"]);
    expect(parseEnvValues(merged.text).get("SMTP_PASS")).toBe("p4ss");
    // Stable on a second regeneration.
    expect(mergeEnv(merged.text, generated).text).toBe(merged.text);
  });

  test("the user's notes stay: above the variable they explain, and on their own at the end; ours are not doubled", () => {
    const make = () => generateBundle({ projectName: "notes", services: ["redis"] }, getCatalog());
    const first = make();
    const env = first.files[".env"]!
      // As an earlier stackgen wrote its introduction: still ours, not a note.
      .replace(/generated by stackgen \S+\./, "generated by stackgen 0.0.9.")
      .replace(/^(REDIS_PASSWORD=.*)$/m, "# rotated 2026-11-02, old one in the vault\n$1")
      .concat("\n# NOTE: backups go to the NAS\n# (ask Sam)\nFROM_SHELL\nnot an assignment\n");
    const second = make();
    const merged = mergeEnv(env, second.files[".env"]!, second.secretNames);
    const lines = merged.text.split("\n");
    const at = lines.findIndex((l) => l.startsWith("REDIS_PASSWORD="));
    expect(lines[at - 1]).toBe("# rotated 2026-11-02, old one in the vault");
    expect(lines[at - 2]).toMatch(/\(generated secret\)$/); // the generated comment stays above the note
    expect(merged.text).toEndWith("# --- Your notes from the previous .env ---\n# NOTE: backups go to the NAS\n# (ask Sam)\nFROM_SHELL\nnot an assignment\n");
    expect(merged.text.match(/generated by stackgen/g)).toHaveLength(1);
    expect(merged.text.match(/\(generated secret\)/g)).toHaveLength(first.files[".env"]!.match(/\(generated secret\)/g)!.length);
    expect(parseEnvValues(merged.text).get("REDIS_PASSWORD")).toBe(parseEnvValues(env).get("REDIS_PASSWORD"));
    // Stable on the next regeneration.
    expect(mergeEnv(merged.text, make().files[".env"]!, second.secretNames).text).toBe(merged.text);
    // Someone else's export brings its values, not its notes.
    expect(mergeEnv(env, second.files[".env"]!, second.secretNames, [], { keepExtra: false }).text).not.toContain("NAS");
  });

  test("a note inside a quoted value is the value's, not a note", () => {
    const old = ['SITE_URL="line one', "# part of the value", 'line three"', ""].join("\n");
    const merged = mergeEnv(old, generated);
    expect(merged.text).not.toContain("Your notes");
    expect(parseEnvValues(merged.text).get("SITE_URL")).toBe('"line one\n# part of the value\nline three"');
  });

  test("an empty secret (from --no-secrets) is filled; an empty setting the user chose stays empty", () => {
    for (const empty of ["", '""', "''"]) {
      const old = [`DB_PASSWORD=${empty}`, `API_TOKEN=${empty}`, `SITE_URL=${empty}`, ""].join("\n");
      const merged = mergeEnv(old, generated, new Set(["DB_PASSWORD", "API_TOKEN"]));
      const values = parseEnvValues(merged.text);
      expect(values.get("DB_PASSWORD")).toBe("fresh-secret-0123456789abcdefghijkl");
      expect(values.get("API_TOKEN")).toBe("fresh-token-0123456789abcdefghijklm");
      expect(values.get("SITE_URL")).toBe(empty);
      expect(merged.filled.sort()).toEqual(["API_TOKEN", "DB_PASSWORD"]);
    }
    // Regenerated without secrets, an empty secret stays empty (nothing to fill it with).
    const noSecrets = generated.replace(/^(DB_PASSWORD|API_TOKEN)=.*$/gm, "$1=");
    expect(mergeEnv("DB_PASSWORD=\n", noSecrets, new Set(["DB_PASSWORD"])).filled).toEqual([]);
  });

  describe("an API key signed with a secret", () => {
    const derived = derivedSecrets([{ name: "API_KEY", jwt: { secret: "JWT_SECRET", role: "anon" } }]);
    const secrets = new Set(["JWT_SECRET", "API_KEY"]);
    const fresh = (secret: string) => ["JWT_SECRET=" + secret, "API_KEY=" + signJwt(secret, { role: "anon" }), ""].join("\n");
    const newText = fresh("new-secret-0123456789abcdefghijklmnopq");

    test("new beside a kept secret: signed with the kept one, not the one it was generated with", () => {
      const merged = mergeEnv("JWT_SECRET=old-secret-0123456789abcdefghijklmnopq\n", newText, secrets, derived);
      const values = parseEnvValues(merged.text);
      expect(values.get("JWT_SECRET")).toBe("old-secret-0123456789abcdefghijklmnopq");
      expect(values.get("API_KEY")).toBe(signJwt("old-secret-0123456789abcdefghijklmnopq", { role: "anon" }));
      expect(merged.added).toEqual(["API_KEY"]);
    });

    test("an exported kept secret signs the key too, and both keep their export", () => {
      const merged = mergeEnv("export JWT_SECRET=old-secret-0123456789abcdefghijklmnopq\nexport API_KEY=\n", newText, secrets, derived);
      expect(parseEnvValues(merged.text).get("API_KEY")).toBe(signJwt("old-secret-0123456789abcdefghijklmnopq", { role: "anon" }));
      expect(merged.text).toStartWith("export JWT_SECRET=old-secret-0123456789abcdefghijklmnopq\nexport API_KEY=");
    });

    test("a kept secret over several lines signs the key too; a note above such a value stays", () => {
      const merged = mergeEnv('# my secret\nJWT_SECRET="old-secret-0123456789\nabcdefghijklmnopq"\n', newText, secrets, derived);
      expect(parseEnvValues(merged.text).get("API_KEY")).toBe(signJwt("old-secret-0123456789\nabcdefghijklmnopq", { role: "anon" }));
      expect(merged.text).toContain('# my secret\nJWT_SECRET="old-secret-0123456789\nabcdefghijklmnopq"\n');
    });

    test("a quoted kept secret is read as compose reads it", () => {
      const merged = mergeEnv("JWT_SECRET='old secret with spaces 0123456789abcdef'\n", newText, secrets, derived);
      expect(parseEnvValues(merged.text).get("API_KEY")).toBe(signJwt("old secret with spaces 0123456789abcdef", { role: "anon" }));
    });

    test("both kept: left as they are; an empty secret filled: the kept key is signed again", () => {
      const old = fresh("old-secret-0123456789abcdefghijklmnopq");
      expect(mergeEnv(old, newText, secrets, derived).text).toBe(old);
      const filled = mergeEnv("JWT_SECRET=\nAPI_KEY=\n", newText, secrets, derived);
      expect(filled.text).toBe(newText);
      const stale = mergeEnv(`JWT_SECRET=\nAPI_KEY=${signJwt("other", { role: "anon" })}\n`, newText, secrets, derived);
      expect(parseEnvValues(stale.text).get("API_KEY")).toBe(signJwt("new-secret-0123456789abcdefghijklmnopq", { role: "anon" }));
    });
  });
});
