// Signals while a command has the stack stopped (see src/cli/interrupt.ts), without an engine:
// the work must reach its end when the terminal goes away, and only a second Ctrl-C cuts it.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN } from "../support/tools.ts";

const CHILD = join(import.meta.dir, "..", "support", "deferred-work.ts");

async function runChild(send: (pid: number, stderr: ReadableStreamDefaultReader<Uint8Array>) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), "stackgen-interrupt-"));
  const marker = join(dir, "done");
  try {
    const proc = Bun.spawn([BUN, CHILD, marker], { stdout: "ignore", stderr: "pipe", stdin: "ignore" });
    const reader = proc.stderr.getReader();
    await reader.read(); // "working": the handlers are in place
    await send(proc.pid, reader);
    const code = await proc.exited;
    return { code, finished: existsSync(marker) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("deferred interrupts", () => {
  test("a terminal that closes (SIGHUP twice, then every write fails) does not cut the work short", async () => {
    const r = await runChild(async (pid, stderr) => {
      process.kill(pid, "SIGHUP");
      await Bun.sleep(100); // two deliveries (the kernel's and the shell's), not one merged signal
      process.kill(pid, "SIGHUP");
      await stderr.cancel(); // the reader is gone: later writes get EPIPE
    });
    expect(r).toEqual({ code: 0, finished: true });
  });

  test("Ctrl-C twice quits at once with 130", async () => {
    const r = await runChild(async (pid) => {
      process.kill(pid, "SIGINT");
      await Bun.sleep(100);
      process.kill(pid, "SIGINT");
    });
    expect(r).toEqual({ code: 130, finished: false });
  });
});
