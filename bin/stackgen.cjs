#!/usr/bin/env node
// npx shim: run the TypeScript entry with the Bun pinned in devDependencies.
const { spawnSync } = require("node:child_process");
const { join } = require("node:path");
const root = join(__dirname, "..");
const bun = join(root, "node_modules", ".bin", "bun");
// --no-env-file: Bun would otherwise load the .env of the directory it runs in, and a stack
// directory's .env (its secrets, COMPOSE_PROJECT_NAME) must reach only that stack's compose,
// never the CLI's own environment. The compiled binary is built without that loading too.
const r = spawnSync(bun, ["--no-env-file", join(root, "src", "main.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status === null ? 1 : r.status);
