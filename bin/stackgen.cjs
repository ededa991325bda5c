#!/usr/bin/env node
// npx shim: run the TypeScript entry with the Bun pinned in devDependencies.
const { spawnSync } = require("node:child_process");
const { join } = require("node:path");
const root = join(__dirname, "..");
const bun = join(root, "node_modules", ".bin", "bun");
const r = spawnSync(bun, [join(root, "src", "main.ts"), ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status === null ? 1 : r.status);
