// `npm run build`: the self-contained binaries dist/stackgen-linux-x64 and dist/stackgen-linux-arm64.
// The catalog (macro), the web UI (HTML import) and the Swagger UI assets (file imports) are all
// bundled into the executable, so it needs nothing beside itself at runtime.
//
//   bun build.ts              both targets
//   bun build.ts arm64        only the named ones (x64, arm64)
//   STACKGEN_COMMIT=abc1234   overrides the commit read from .git
//   STACKGEN_BUN_RUNTIME_FROM_NPM=1  skip Bun's own runtime download for cross targets (see below)
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = import.meta.dir;
const DIST = join(ROOT, "dist");
const ENTRY = join(ROOT, "src", "main.ts");

interface Target {
  /** Short name used on the command line and in the file name. */
  name: "x64" | "arm64";
  bunTarget: "bun-linux-x64" | "bun-linux-arm64";
  /** npm package holding Bun's runtime for this target (fallback when Bun's download fails). */
  runtimePackage: string;
  /** `process.arch` of a machine that runs this target natively. */
  arch: string;
}

export const TARGETS: readonly Target[] = [
  { name: "x64", bunTarget: "bun-linux-x64", runtimePackage: "@oven/bun-linux-x64", arch: "x64" },
  { name: "arm64", bunTarget: "bun-linux-arm64", runtimePackage: "@oven/bun-linux-aarch64", arch: "arm64" },
];

export const outfileOf = (target: Pick<Target, "name">) => join(DIST, `stackgen-linux-${target.name}`);

export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
}

/** Where `.git` really is: a directory, or a `gitdir:` file (worktrees, submodules). */
function gitDirOf(root: string): string | undefined {
  const dotGit = join(root, ".git");
  if (!existsSync(dotGit)) return undefined;
  if (statSync(dotGit).isDirectory()) return dotGit;
  const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, "utf8"));
  // Git writes the path absolute (`git worktree add`) or relative to the folder (submodules).
  return pointer ? resolve(root, pointer[1].trim()) : undefined;
}

/** The commit of HEAD, read from the files (no git binary needed, e.g. inside a container build). */
export function headCommit(root = ROOT): string | undefined {
  const gitDir = gitDirOf(root);
  if (!gitDir) return undefined;
  const head = readFileSync(join(gitDir, "HEAD"), "utf8").trim();
  if (/^[0-9a-f]{40,64}$/.test(head)) return head; // detached HEAD
  const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
  if (!ref) return undefined;
  // Worktrees keep their refs in the common dir.
  const commonFile = join(gitDir, "commondir");
  const commonDir = existsSync(commonFile) ? resolve(gitDir, readFileSync(commonFile, "utf8").trim()) : gitDir;
  for (const dir of [gitDir, commonDir]) {
    const loose = join(dir, ref);
    if (existsSync(loose)) return readFileSync(loose, "utf8").trim();
  }
  const packed = join(commonDir, "packed-refs");
  if (existsSync(packed)) {
    for (const line of readFileSync(packed, "utf8").split("\n")) {
      const [sha, name] = line.trim().split(" ");
      if (name === ref && /^[0-9a-f]{40,64}$/.test(sha)) return sha;
    }
  }
  return undefined; // a branch with no commit yet
}

export function commitLabel(): string {
  const fromEnv = process.env.STACKGEN_COMMIT?.trim();
  if (fromEnv) return fromEnv;
  return headCommit()?.slice(0, 7) ?? "unknown";
}

async function run(cmd: string[], cwd: string): Promise<string> {
  const proc = Bun.spawn(cmd, { cwd, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err.trim() || out.trim()}`);
  return out;
}

/** Bun's runtime for `target`, fetched from the npm registry with npm itself and cached under node_modules/.cache. */
async function runtimeFromNpm(target: Target): Promise<string> {
  const cacheDir = join(ROOT, "node_modules", ".cache", "stackgen-build", `${target.runtimePackage.replace("/", "__")}-${Bun.version}`);
  const binary = join(cacheDir, "package", "bin", "bun");
  if (existsSync(binary)) return binary;
  mkdirSync(cacheDir, { recursive: true });
  const work = await mkdtemp(join(tmpdir(), "stackgen-runtime-"));
  try {
    const packed = (await run(["npm", "pack", "--silent", `${target.runtimePackage}@${Bun.version}`, "--pack-destination", work], work)).trim().split("\n").pop()!;
    await run(["tar", "-xzf", join(work, packed), "-C", cacheDir], work);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  if (!existsSync(binary)) throw new Error(`${target.runtimePackage}@${Bun.version} has no package/bin/bun`);
  return binary;
}

async function compile(target: Target, define: Record<string, string>, executablePath?: string) {
  const result = await Bun.build({
    entrypoints: [ENTRY],
    minify: true,
    sourcemap: "none",
    // Precompiled bytecode: start-up skips parsing the bundle (the catalog data included).
    bytecode: true,
    // Code splitting keeps each lazily imported command in its own chunk, with its own imports:
    // in one flat bundle the built-in modules of every command (zlib, stream, readline...) were
    // hoisted and loaded by all of them, `serve` included (~9 ms of its cold start).
    splitting: true,
    format: "esm",
    define,
    compile: {
      target: target.bunTarget,
      outfile: outfileOf(target),
      ...(executablePath ? { executablePath } : {}),
      // A stack directory holds a .env with secrets: the binary must not load it as its own config.
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    throw: false,
  });
  if (!result.success) throw new AggregateError(result.logs, `bun build failed for ${target.bunTarget}: ${result.logs.map(String).join("\n")}`);
}

async function buildTarget(target: Target, define: Record<string, string>): Promise<void> {
  const native = process.arch === target.arch;
  const preferNpm = !native && process.env.STACKGEN_BUN_RUNTIME_FROM_NPM === "1";
  if (!preferNpm) {
    try {
      return await compile(target, define);
    } catch (e) {
      // Cross targets need Bun's runtime for that platform; Bun downloads it itself, which can
      // fail behind a proxy. npm reaches the same package through its own configuration.
      if (native) throw e;
      console.warn(`[build] ${target.bunTarget}: Bun's runtime download failed (${(e as Error).message.split("\n")[0]}); fetching ${target.runtimePackage} with npm`);
    }
  }
  await compile(target, define, await runtimeFromNpm(target));
}

async function main(argv: string[]) {
  const wanted = argv.length ? TARGETS.filter((t) => argv.includes(t.name)) : TARGETS;
  const unknown = argv.filter((a) => !TARGETS.some((t) => t.name === a));
  if (unknown.length) throw new Error(`unknown target(s) ${unknown.join(", ")}; use ${TARGETS.map((t) => t.name).join(", ")}`);
  const version = packageVersion();
  const commit = commitLabel();
  const define = { STACKGEN_VERSION: JSON.stringify(version), STACKGEN_COMMIT: JSON.stringify(commit) };
  mkdirSync(DIST, { recursive: true });
  for (const target of wanted) {
    const started = performance.now();
    await buildTarget(target, define);
    const mb = (statSync(outfileOf(target)).size / 1024 / 1024).toFixed(1);
    console.log(`[build] ${outfileOf(target)} (${target.bunTarget}, ${mb} MiB, ${Math.round(performance.now() - started)} ms)`);
  }
  // Prove the native binary starts and carries the right version before anyone ships it.
  const native = wanted.find((t) => t.arch === process.arch);
  if (native) {
    const out = (await run([outfileOf(native), "--version"], tmpdir())).trim();
    if (out !== `stackgen ${version} (${commit})`) throw new Error(`${outfileOf(native)} --version printed "${out}"`);
    console.log(`[build] ${out}`);
  }
}

if (import.meta.main) {
  await main(process.argv.slice(2)).catch((e) => {
    console.error(`[build] ${(e as Error).message}`);
    process.exit(1);
  });
}
