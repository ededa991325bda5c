// The one reading of `${NAME:?…}` / `${NAME?…}` that generate, doctor and deploy share.
import { describe, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { nativeSecretGuard, requiredByCompose, requiredByNativeScripts, requiredReferences } from "../../src/core/required-variables.ts";

const base = parseYaml(`services:
  app:
    image: app
    # \${IN_COMMENT:?a comment is not read}
    environment:
      A: \${EMPTY_A:?a}
      B: \${EMPTY_B?b may be empty}
      C: "prefix-\${MISSING_C?c}"
      D: $\${ESCAPED:?a literal dollar}
      E: \${SET_E:?e}
      \${KEY_K:?keys are interpolated too}: k
`);
// An override file the user added: the same variable, now refusing an empty value.
const override = parseYaml(`services:
  app:
    command: ["run", "\${EMPTY_B:?}"]
`);

describe("required variables of a compose file", () => {
  test("every reference once, from values and keys, never from comments or $$", () => {
    expect(requiredReferences(base)).toEqual([
      { name: "EMPTY_A", refusesEmpty: true },
      { name: "EMPTY_B", refusesEmpty: false },
      { name: "MISSING_C", refusesEmpty: false },
      { name: "SET_E", refusesEmpty: true },
      { name: "KEY_K", refusesEmpty: true },
    ]);
  });

  test("`:?` refuses empty and unset (not spaces: compose starts with them), `?` only unset; later files add to earlier ones", () => {
    const env = "EMPTY_A=\nEMPTY_B=\nSET_E=x\nKEY_K='   '\n";
    expect(requiredByCompose([base], env)).toEqual(["EMPTY_A", "MISSING_C"]);
    expect(requiredByCompose([base, override], env)).toEqual(["EMPTY_A", "EMPTY_B", "MISSING_C"]);
    expect(requiredByCompose([base], "EMPTY_A=1\nEMPTY_B=\nMISSING_C=\nSET_E=x\nKEY_K=k\n")).toEqual([]);
  });
});

describe("secrets the native install scripts stop without", () => {
  test("the guard line generate writes is what is read back; only empty values count", () => {
    const script = ["#!/usr/bin/env bash", nativeSecretGuard("PG_PASSWORD"), nativeSecretGuard("OTHER"), 'echo "${NOT_GUARDED}"', `# ${nativeSecretGuard("IN_A_COMMENT")}`].join("\n");
    expect(requiredByNativeScripts([script, nativeSecretGuard("PG_PASSWORD")], "PG_PASSWORD=\nOTHER=set\n")).toEqual(["PG_PASSWORD"]);
    // Spaces pass the script's `-n`: only what stops it is named.
    expect(requiredByNativeScripts([script], "OTHER='  '\n")).toEqual(["PG_PASSWORD"]);
    expect(requiredByNativeScripts([script], "PG_PASSWORD=a\nOTHER=b\n")).toEqual([]);
  });
});
