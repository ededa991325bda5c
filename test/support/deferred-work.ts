// Child of test/cli/interrupt.test.ts: runs 1.5 s of "work" with the signals deferred, as update,
// backup and restore do, and writes `done` to the file named in argv when that work finished.
import { writeFileSync } from "node:fs";
import { endOnLostOutput, withDeferredInterrupts } from "../../src/cli/interrupt.ts";

endOnLostOutput(false);
await withDeferredInterrupts("the test work", async () => {
  process.stderr.write("working\n");
  for (let i = 0; i < 15; i++) {
    await Bun.sleep(100);
    process.stderr.write(`step ${i}\n`); // fails once the reader has gone (EPIPE), as on a lost terminal
  }
});
writeFileSync(process.argv[2]!, "done");
