#!/usr/bin/env bun
// Entry point of the binary: argv -> CLI.
import { run } from "./cli/index.ts";

const serving = process.argv.slice(2).includes("serve");

// A reader that stops early (`stackgen services --json | head`) closes the pipe under us: that
// ends a command quietly, as it does for other Unix tools, instead of with a stack trace. A
// server that lost its log pipe exits 1, so that whatever supervises it notices.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE" && stream === process.stdout) process.stderr.write(`[error] cannot write the output: ${error.message}\n`);
    process.exit(error.code === "EPIPE" && !serving ? 0 : 1);
  });
}

const code = await run(process.argv.slice(2));
// `serve` keeps running; every other command ends here.
if (code !== 0 || !serving) process.exitCode = code;
