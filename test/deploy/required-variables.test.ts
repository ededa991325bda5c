// Variables the compose file stops without (`${NAME:?…}`, `${NAME?…}`): a platform accepts such a
// stack and then fails to start it, so an empty or missing one is refused before any call.
import { describe, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { deployBundle, unsetRequiredVariables } from "../../src/deploy/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";
import { StackgenError } from "../../src/errors.ts";
import { CoolifyFake } from "./fakes/coolify-fake.ts";
import { DokployFake } from "./fakes/dokploy-fake.ts";
import { ENV_TEXT, fixtureOptions, rejection, trackFakes } from "./fixtures.ts";

const track = trackFakes<CoolifyFake | DokployFake>();

const refusal = (run: Promise<unknown>) => rejection<StackgenError>(run);

describe("required variables", () => {
  test("a bundle generated without secrets (as the API relay makes it with generateSecrets false) is refused before any call, naming them", async () => {
    const bundle = generateBundle({ projectName: "nosec", services: ["redis", "postgresql"], generateSecrets: false }, getCatalog());
    const coolify = (await track(new CoolifyFake())) as CoolifyFake;
    const dokploy = (await track(new DokployFake())) as DokployFake;
    for (const [provider, fake, key] of [["coolify", coolify, coolify.token], ["dokploy", dokploy, dokploy.apiKey]] as const) {
      const error = await refusal(deployBundle({ ...fixtureOptions(provider, fake.url, key), projectName: "nosec", composeYaml: bundle.files["docker-compose.yml"]!, envText: bundle.files[".env"]!, files: bundle.files }));
      expect(error).toMatchObject({ code: "USAGE_ERROR", exitCode: 2, status: 400 });
      expect(error.message).toContain("REDIS_PASSWORD (empty)");
      expect(error.message).toContain("Set them in .env");
      expect(fake.calls).toHaveLength(0);
    }
  });

  test("`:?` refuses empty and unset, `?` only unset; `$$` and comments are not references", () => {
    const compose = `services:
  app:
    image: app
    # \${IN_COMMENT:?not read}
    environment:
      A: \${EMPTY_A:?a}
      B: \${EMPTY_B?b may be empty}
      C: "\${MISSING_C?c}"
      D: $\${ESCAPED:?literal}
      E: \${SET_E:?e}
`;
    const env = [{ key: "EMPTY_A", value: "" }, { key: "EMPTY_B", value: "" }, { key: "SET_E", value: "x" }];
    expect(unsetRequiredVariables(parseYaml(compose), env, false, false)).toEqual({ refused: ["EMPTY_A (empty)", "MISSING_C (not in .env)"], leftToPlatform: [] });
    // --update from the CLI: an empty value would replace the platform's, a missing one is kept there.
    expect(unsetRequiredVariables(parseYaml(compose), env, true, false)).toEqual({ refused: ["EMPTY_A (empty)"], leftToPlatform: ["MISSING_C (not in .env)"] });
    // An update that keeps the platform's set values (the relay): both may be set there.
    expect(unsetRequiredVariables(parseYaml(compose), env, true, true)).toEqual({ refused: [], leftToPlatform: ["EMPTY_A (empty)", "MISSING_C (not in .env)"] });
  });

  test("on --update a variable the platform may hold is left to it and named among the changes", async () => {
    const fake = (await track(new CoolifyFake())) as CoolifyFake;
    expect((await deployBundle(fixtureOptions("coolify", fake.url, fake.token))).success).toBe(true);
    const envText = ENV_TEXT.replace(/^POSTGRES_PASSWORD=.*\n/m, "");
    const result = await deployBundle(fixtureOptions("coolify", fake.url, fake.token, { update: true, envText }));
    expect(result.success).toBe(true);
    expect(fake.services[0]!.envs.get("POSTGRES_PASSWORD")!.value).toBe("Zk3q9TPx0bL7mNw2Rv5YcA8dHf1JgEs4");
    expect(result.changes.some((c) => c.startsWith(".env: POSTGRES_PASSWORD (not in .env) required by docker-compose.yml"))).toBe(true);
    // Without --update there is nothing on the platform to keep: refused.
    expect((await refusal(deployBundle(fixtureOptions("coolify", fake.url, fake.token, { envText })))).message).toContain("POSTGRES_PASSWORD (not in .env)");
  });
});
