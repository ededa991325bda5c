// "Did you mean": close enough to be a typo, never a guess at an unrelated word.
import { describe, expect, test } from "bun:test";
import { getCatalog } from "../../src/catalog/index.ts";
import { unknownIdIssues } from "../../src/core/check-input.ts";
import { closestMatch } from "../../src/core/suggest.ts";

const catalog = getCatalog();
const serviceIds = [...catalog.servicesById.keys()];

describe("closestMatch", () => {
  test("a typo, a word cut short or in capitals finds its id; an unrelated word finds none", () => {
    expect(closestMatch("postgres", serviceIds)).toBe("postgresql");
    expect(closestMatch("qdrnt", serviceIds)).toBe("qdrant");
    expect(closestMatch("Grafana", serviceIds)).toBe("grafana");
    expect(closestMatch("nextclod", serviceIds)).toBe("nextcloud");
    expect(closestMatch("kubernetes", serviceIds)).toBeUndefined();
    expect(closestMatch("zz", serviceIds)).toBeUndefined();
    // The word itself is no suggestion.
    expect(closestMatch("redis", serviceIds)).toBeUndefined();
  });
});

describe("unknown ids in a body", () => {
  test("name the id, and the id meant or the other kind it belongs to", () => {
    const issues = unknownIdIssues({ preset: "devop", services: ["postgres", "research-agent", "kubernetes"], skillPacks: ["redis", "reserch"] }, catalog);
    expect(issues).toEqual([
      { field: "preset", message: 'Unknown preset id "devop" (did you mean "devops"?)' },
      { field: "services.0", message: 'Unknown service id "postgres" (did you mean "postgresql"?)' },
      { field: "services.1", message: 'Unknown service id "research-agent" ("research-agent" is a skill pack)' },
      { field: "services.2", message: 'Unknown service id "kubernetes"' },
      { field: "skillPacks.0", message: 'Unknown skill pack id "redis" ("redis" is a service)' },
      // The short names a pack is also known by (CONTRACT's aliases) are meant too.
      { field: "skillPacks.1", message: 'Unknown skill pack id "reserch" (did you mean "research"?)' },
    ]);
  });
});
