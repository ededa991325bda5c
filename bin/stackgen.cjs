#!/usr/bin/env node
// npx shim: run the TypeScript entry with the Bun pinned in devDependencies.
const { spawn } = require("node:child_process");
const { constants } = require("node:os");
const { join } = require("node:path");
const root = join(__dirname, "..");
const bun = join(root, "node_modules", ".bin", "bun");
// --no-env-file: Bun would otherwise load the .env of the directory it runs in, and a stack
// directory's .env (its secrets, COMPOSE_PROJECT_NAME) must reach only that stack's compose,
// never the CLI's own environment. The compiled binary is built without that loading too.
const child = spawn(bun, ["--no-env-file", join(root, "src", "main.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
// Ctrl-C reaches stackgen itself (the terminal signals the whole process group), and stackgen
// decides when to stop: an update or restore first puts the stack back. So the shim does not die
// first and hand the prompt back while that runs; signals sent to the shim alone are passed on.
process.on("SIGINT", () => {});
for (const name of ["SIGTERM", "SIGHUP"]) process.on(name, () => child.kill(name));
child.on("error", (error) => {
  process.stderr.write(`[error] cannot start ${bun}: ${error.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
