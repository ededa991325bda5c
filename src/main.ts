#!/usr/bin/env bun
// Entry point of the binary: argv -> CLI.
import { run } from "./cli/index.ts";
import { endOnLostOutput } from "./cli/interrupt.ts";

const serving = process.argv.slice(2).includes("serve");
endOnLostOutput(serving);

const code = await run(process.argv.slice(2));
// `serve` keeps running; every other command ends here.
if (code !== 0 || !serving) process.exitCode = code;
