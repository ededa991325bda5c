import { describe, expect, test } from "bun:test";
import { bindMountOf, isBundleRelative, splitOutsideBraces } from "../../src/core/bind-mounts.ts";

describe("bind mounts of a compose volumes entry", () => {
  test("the short form is a bind mount when its source starts like a path, with its mode", () => {
    expect(bindMountOf("./postgres/init:/docker-entrypoint-initdb.d:ro")).toEqual({ source: "./postgres/init", target: "/docker-entrypoint-initdb.d", readOnly: true });
    expect(bindMountOf("/srv/data:/data:rw,z")).toEqual({ source: "/srv/data", target: "/data", readOnly: false });
    expect(bindMountOf("~/media:/media")).toEqual({ source: "~/media", target: "/media", readOnly: false });
  });

  test("a variable's default with a colon stays in the source", () => {
    expect(bindMountOf("${DATA_DIR:-./data}:/data")).toEqual({ source: "${DATA_DIR:-./data}", target: "/data", readOnly: false });
    expect(splitOutsideBraces("[::1]:8080:80", ":")).toEqual(["[::1]", "8080", "80"]);
  });

  test("named and anonymous volumes, tmpfs and junk are not bind mounts", () => {
    expect(bindMountOf("pgdata:/var/lib/postgresql/data")).toBeNull();
    expect(bindMountOf("/data")).toBeNull();
    expect(bindMountOf({ type: "volume", source: "pgdata", target: "/data" })).toBeNull();
    expect(bindMountOf({ type: "tmpfs", target: "/tmp" })).toBeNull();
    expect(bindMountOf({ type: "bind", source: 5, target: "/x" })).toBeNull();
    for (const junk of [null, undefined, 7, ["./a", "/b"]]) expect(bindMountOf(junk)).toBeNull();
  });

  test("the long form, read-only or not", () => {
    expect(bindMountOf({ type: "bind", source: "./skills", target: "/skills", read_only: true })).toEqual({ source: "./skills", target: "/skills", readOnly: true });
    expect(bindMountOf({ type: "bind", source: "/srv", target: "/srv" })).toEqual({ source: "/srv", target: "/srv", readOnly: false });
  });

  test("a source relative to the compose file starts with a dot segment", () => {
    for (const source of [".", "./a", "../b"]) expect(isBundleRelative(source)).toBe(true);
    for (const source of ["/a", ".hidden", "~/a", "name"]) expect(isBundleRelative(source)).toBe(false);
  });
});
