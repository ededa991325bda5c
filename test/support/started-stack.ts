// A TestStack that a describe block sets up once: its images published to the local registry,
// its compose file written and the stack started before the block's tests, and all of it removed
// afterwards (also when a test fails).
import { afterAll, beforeAll } from "bun:test";
import { dockerUnavailable, type TestStack } from "../docker/helpers.ts";

/** In a describe block, before its tests: publish `images` (a reference → the Dockerfile lines
 *  after its FROM), write `compose` as docker-compose.yml (first a `name:` line with the stack's
 *  project, unless it names one of its own), and `start` the stack (by default `up -d --wait`).
 *  After them: the stack's cleanup. Returns the stack. */
export function startedStack<S extends TestStack>(stack: S, compose: string, images: Record<string, string[]>, start: () => Promise<unknown> = () => stack.up()): S {
  beforeAll(async () => {
    if (await dockerUnavailable()) return;
    for (const [ref, lines] of Object.entries(images)) await stack.publish(ref, lines);
    stack.write("docker-compose.yml", compose.startsWith("name:") ? compose : `name: ${stack.project}\n${compose}`);
    await start();
  }, 120_000);
  afterAll(() => stack.cleanup(), 60_000);
  return stack;
}
