// The catalog's volume-owner jobs on a real engine: a new named volume mounted where the image has
// no folder is root's, so an app running as its own user cannot write it (Coolify's SSH keys,
// Dify's storage) until the job has handed it over. The job's own command runs here, in the base
// image; only its image is swapped.
import { afterAll, describe, expect } from "bun:test";
import { getCatalog } from "../../src/catalog/index.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { BASE_IMAGE, dockerTest, TestStack } from "./helpers.ts";

const e2e = await dockerTest();

const CASES = [
  { service: "coolify", job: "coolify-volume-owner", uid: "9999" },
  { service: "dify", job: "dify-storage-owner", uid: "1001" },
  { service: "flowise", job: "flowise-data-owner", uid: "1000" },
] as const;

describe("volume-owner jobs", () => {
  const stacks: TestStack[] = [];
  afterAll(async () => {
    for (const stack of stacks) await stack.cleanup();
  });

  for (const { service, job, uid } of CASES) {
    e2e(
      `${job} lets ${service}'s user (${uid}) write every volume it hands over, files already there included`,
      async () => {
        const stack = TestStack.unique("vo");
        stacks.push(stack);
        const { files } = generateBundle({ projectName: stack.project, services: [service] }, getCatalog());
        stack.write("docker-compose.yml", files["docker-compose.yml"]!);
        stack.write(".env", files[".env"]!);
        stack.write("docker-compose.override.yml", `services:\n  ${job}:\n    image: ${BASE_IMAGE}\n    pull_policy: never\n`);
        const targets = (await stack.compose("config", "--format", "json")).stdout;
        const mounts: string[] = JSON.parse(targets).services[job].volumes.map((v: { target: string }) => v.target);
        expect(mounts.length).toBeGreaterThan(0);

        /** Run a shell script in the job's container (its volumes), as `user`. */
        const shell = (user: string, script: string) =>
          stack.compose("run", "--rm", "--no-deps", "--user", user, "--entrypoint", "sh", job, "-c", script);
        const writeEach = `for d in ${mounts.join(" ")}; do touch "$d/written" || exit 1; done`;

        // Before the job: the app's user is refused, and root leaves a file of its own inside.
        const refused = await shell(`${uid}:${uid}`, writeEach);
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toMatch(/Permission denied/);
        expect((await shell("0:0", `mkdir -p ${mounts[0]}/keys && touch ${mounts[0]}/keys/left-by-root`)).code).toBe(0);

        // The job, with its own command; a second run (every start of the stack) changes nothing and works.
        for (let i = 0; i < 2; i++) {
          const ran = await stack.compose("run", "--rm", "--no-deps", job);
          expect({ code: ran.code, stderr: ran.stderr.replace(/.*(Creating|Created|Container).*\n/g, "") }).toEqual({ code: 0, stderr: "" });
        }

        const written = await shell(`${uid}:${uid}`, writeEach);
        expect({ code: written.code, stderr: written.stderr }).toEqual({ code: 0, stderr: "" });
        const owners = await shell("0:0", `stat -c %u ${mounts.join(" ")} ${mounts[0]}/keys ${mounts[0]}/keys/left-by-root`);
        expect(owners.stdout.trim().split("\n")).toEqual(Array(mounts.length + 2).fill(uid));
      },
      120_000,
    );
  }
});
