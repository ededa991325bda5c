// The path helpers behind every "never outside the target" check and every printed command.
import { describe, expect, test } from "bun:test";
import { isWithin, shellWord } from "../../src/core/paths.ts";

describe("isWithin", () => {
  test("a folder holds itself and what lies below it, not a sibling that shares its prefix", () => {
    expect(isWithin("/srv/stack", "/srv/stack")).toBe(true);
    expect(isWithin("/srv/stack", "/srv/stack/.env")).toBe(true);
    expect(isWithin("/srv/stack", "/srv/stack-old/.env")).toBe(false);
    expect(isWithin("/srv/stack", "/srv")).toBe(false);
  });

  test("the file system's root holds every path (it already ends in the separator)", () => {
    expect(isWithin("/", "/")).toBe(true);
    expect(isWithin("/", "/.env")).toBe(true);
    expect(isWithin("/", "/srv/stack/.env")).toBe(true);
  });
});

describe("shellWord", () => {
  test("plain paths stay bare; anything else pastes back into a shell as the same single word", async () => {
    expect(shellWord("/srv/stack-1/stackgen.json")).toBe("/srv/stack-1/stackgen.json");
    const hostile = ["/tmp/My Stack", "/tmp/$(touch /tmp/pwned)", "/tmp/it's", "/tmp/a\"b`c`", "/tmp/new\nline", "/tmp/*", ""];
    for (const word of hostile) {
      const quoted = shellWord(word);
      expect(quoted, word).not.toBe(word);
      // The shell sees exactly one argument, equal to the text, and runs nothing in it.
      const r = Bun.spawnSync(["bash", "-c", `printf '%s\\0' ${quoted}`]);
      expect(r.stdout.toString(), word).toBe(`${word}\0`);
    }
  });
});
