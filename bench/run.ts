// `npm run bench`: one run, one table. Every figure is set against a baseline measured in the same
// run on the same machine, so the ratios are what to compare between machines, not the raw values.
// Results are also written to bench/results.json. Nothing here asserts a timing.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { getCatalog } from "../src/catalog/index.ts";
import { generateBundle } from "../src/core/generate/index.ts";
import { TARGETS, outfileOf } from "../build.ts";
import { SEVEN, cpuPinning, firstAnswer, freePort, load, median, memoryOf, percentile, readyPort, run, stop, type LoadResult } from "./lib.ts";

const ROOT = join(import.meta.dir, "..");
const BUN = process.execPath;
const CONCURRENCY = 32;
const COUNTS = {
  // Steady state: runs of a few thousand requests (a tenth of a second) mostly measured the JIT
  // still compiling the server's code, and swung by a third from run to run. A fresh guarded
  // server's generate throughput keeps rising for its first ~16,000 requests.
  validate: { warmup: 20000, measured: 10000 },
  generate: { warmup: 20000, measured: 10000 },
  /** Generates served before the loaded RSS is read. */
  memoryLoad: 1500,
  /** HTTP variants run in this many rounds, alternating their order (ABCD, DCBA, ...); figures are means. */
  httpRounds: 3,
  coldStarts: 15,
  cliRuns: 10,
  statusRuns: 10,
};

interface Row {
  section: string;
  metric: string;
  value: string;
  baseline: string;
  ratio: string;
  note?: string;
}
const rows: Row[] = [];
const results: Record<string, unknown> = {};
const notes: string[] = [];

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : "n/a");
const section = (title: string) => console.error(`[bench] ${title}`);

// ---------------------------------------------------------------------------------------------
function machine() {
  const cpuinfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  return {
    cpu: model.trim(),
    cores: os.cpus().length,
    memGiB: Number((os.totalmem() / 1024 ** 3).toFixed(1)),
    os: `${os.type()} ${os.release()} ${process.arch}`,
    bun: Bun.version,
    /** Other work on the machine skews every figure; shown so a reader can judge. */
    loadAverage1m: Number(os.loadavg()[0].toFixed(2)),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP: each server variant in its own process, the load generator here.

type Mode = "baseline" | "payload" | "guarded" | "unlimited" | "unguarded";

const pinning = cpuPinning();

async function withServer<T>(mode: Mode, body: (url: string) => Promise<T>): Promise<T> {
  const proc = Bun.spawn([...(pinning?.server ?? []), BUN, join(import.meta.dir, "server.ts"), mode], { cwd: ROOT, stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  try {
    const port = await readyPort(proc);
    return await body(`http://127.0.0.1:${port}`);
  } finally {
    await stop(proc);
  }
}

async function measureEndpoints(url: string, bodies: { validate: string; generate: string }) {
  const out: Record<string, LoadResult> = {};
  for (const endpoint of ["validate", "generate"] as const) {
    const spec = { url: `${url}/v1/${endpoint}`, method: "POST" as const, body: bodies[endpoint], concurrency: CONCURRENCY };
    await load({ ...spec, requests: COUNTS[endpoint].warmup });
    out[endpoint] = await load({ ...spec, requests: COUNTS[endpoint].measured });
  }
  return out;
}

/** Mean of the rounds' figures (requests and errors summed). */
function meanOf(rounds: LoadResult[]): LoadResult {
  const mean = (pick: (r: LoadResult) => number) => rounds.reduce((sum, r) => sum + pick(r), 0) / rounds.length;
  const unexpected: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.unexpected)) unexpected[k] = (unexpected[k] ?? 0) + v;
  return {
    requests: rounds.reduce((sum, r) => sum + r.requests, 0),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    unexpected,
    seconds: mean((r) => r.seconds),
    rps: mean((r) => r.rps),
    p50Ms: mean((r) => r.p50Ms),
    p99Ms: mean((r) => r.p99Ms),
  };
}

/** Size of the generate answer the `payload` server sends (the bench's 7-service stack). */
const payloadBytes = Buffer.byteLength(JSON.stringify({ files: generateBundle({ projectName: "bench", services: SEVEN }, getCatalog()).files, metadata: {} }));

async function httpFigures(bodies: { validate: string; generate: string }) {
  const modes: Mode[] = ["baseline", "payload", "guarded", "unlimited", "unguarded"];
  const rounds = {} as Record<Mode, Record<string, LoadResult>[]>;
  if (pinning && !pinning.pinSelf()) notes.push("could not pin the load generator to its cores");
  notes.push(`HTTP: ${pinning ? pinning.describe : "no CPU pinning (one core or no taskset)"}`);
  // Warm the load generator's own code up first: the first server measured would pay for it.
  section("HTTP warm-up");
  await withServer("baseline", (url) => measureEndpoints(url, bodies));
  for (let round = 0; round < COUNTS.httpRounds; round++) {
    // Alternate the order so that warming up the machine favours no variant.
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
      section(`HTTP ${mode} (round ${round + 1})`);
      (rounds[mode] ??= []).push(await withServer(mode, (url) => measureEndpoints(url, bodies)));
    }
  }
  const byMode = {} as Record<Mode, Record<string, LoadResult>>;
  for (const mode of modes) {
    byMode[mode] = { validate: meanOf(rounds[mode].map((r) => r.validate)), generate: meanOf(rounds[mode].map((r) => r.generate)) };
    for (const [endpoint, r] of Object.entries(byMode[mode])) {
      if (r.errors) notes.push(`HTTP ${mode} ${endpoint}: ${r.errors} unexpected answers ${JSON.stringify(r.unexpected)}`);
    }
  }
  pinning?.unpinSelf();
  results.http = { concurrency: CONCURRENCY, counts: COUNTS, pinning: pinning?.describe ?? "none", byMode, rounds };
  for (const endpoint of ["validate", "generate"]) {
    const base = byMode.baseline[endpoint];
    const full = byMode.guarded[endpoint];
    const label = `POST /v1/${endpoint}`;
    rows.push({ section: "HTTP (c=32)", metric: `${label} throughput`, value: `${fmt(full.rps, 0)} req/s`, baseline: `${fmt(base.rps, 0)} req/s`, ratio: ratio(full.rps, base.rps), note: "of baseline throughput" });
    rows.push({ section: "HTTP (c=32)", metric: `${label} p50`, value: `${fmt(full.p50Ms, 2)} ms`, baseline: `${fmt(base.p50Ms, 2)} ms`, ratio: ratio(full.p50Ms, base.p50Ms) });
    rows.push({ section: "HTTP (c=32)", metric: `${label} p99`, value: `${fmt(full.p99Ms, 2)} ms`, baseline: `${fmt(base.p99Ms, 2)} ms`, ratio: ratio(full.p99Ms, base.p99Ms) });
  }
  // What the size of generate's answer alone costs: the ceiling for any server sending it.
  const payload = byMode.payload.generate;
  rows.push({
    section: "HTTP (c=32)",
    metric: "trivial server sending a generate-sized answer",
    value: `${fmt(payload.rps, 0)} req/s`,
    baseline: `${fmt(byMode.baseline.generate.rps, 0)} req/s`,
    ratio: ratio(payload.rps, byMode.baseline.generate.rps),
    note: `the same ${fmt(payloadBytes / 1024, 0)} KiB of JSON, made once: the ceiling for POST /v1/generate`,
  });
  // The full guard against the same guard without counting, and against no guard at all.
  const comparisons = [
    { mode: "unlimited", metric: "limiter on vs off", meaning: "off = same guard, counter store counts nothing" },
    { mode: "unguarded", metric: "whole guard vs none", meaning: "none = app without keys/limits/CORS/headers" },
  ] as const;
  for (const endpoint of ["validate", "generate"]) {
    const full = byMode.guarded[endpoint];
    for (const { mode, metric, meaning } of comparisons) {
      const other = byMode[mode][endpoint];
      rows.push({
        section: "Rate limiter",
        metric: `/v1/${endpoint} ${metric}`,
        value: `${fmt(full.rps, 0)} req/s`,
        baseline: `${fmt(other.rps, 0)} req/s`,
        ratio: ratio(full.rps, other.rps),
        note: `p50 ${fmt(full.p50Ms, 2)} vs ${fmt(other.p50Ms, 2)} ms; ${meaning}`,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// In-process generation.

/** SEVEN, then catalog services in order, keeping each one the generator accepts alongside the rest. */
function compatibleSelection(size: number): string[] {
  const catalog = getCatalog();
  const chosen: string[] = [];
  const accepts = (ids: string[]) => {
    try {
      generateBundle({ projectName: "bench", services: ids }, catalog);
      return true;
    } catch {
      return false;
    }
  };
  for (const id of [...SEVEN, ...catalog.services.map((s) => s.id)]) {
    if (chosen.length >= size) break;
    if (!chosen.includes(id) && accepts([...chosen, id])) chosen.push(id);
  }
  return chosen;
}

function timeEach(iterations: number, fn: () => unknown): number[] {
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

function inProcessFigures() {
  section("in-process generate");
  const catalog = getCatalog();
  // Baseline: a trivial operation of the same shape (build and serialise a small object).
  const tiny = () => JSON.stringify({ status: "ok", version: "0.1.0", services: ["redis"] });
  timeEach(50_000, tiny);
  const batch = 1000;
  const batches = timeEach(200, () => { for (let i = 0; i < batch; i++) tiny(); }).map((t) => t / batch);
  const baselineMs = percentile(batches, 50);
  const sizes = [
    { requested: 1, ids: ["redis"], iterations: 400 },
    { requested: 7, ids: SEVEN, iterations: 200 },
    { requested: 40, ids: compatibleSelection(40), iterations: 60 },
  ];
  const out: Record<string, unknown>[] = [];
  for (const size of sizes) {
    const body = { projectName: "bench", services: size.ids };
    const resolved = generateBundle(body, catalog).metadata.totalServices;
    timeEach(Math.ceil(size.iterations / 4), () => generateBundle(body, catalog));
    const times = timeEach(size.iterations, () => generateBundle(body, catalog));
    const p50 = percentile(times, 50);
    out.push({ requested: size.ids.length, resolved, ids: size.ids, iterations: size.iterations, p50Ms: p50, p99Ms: percentile(times, 99) });
    rows.push({
      section: "In-process",
      metric: `generateBundle ${size.ids.length} service(s) (${resolved} resolved)`,
      value: `${fmt(p50, 3)} ms`,
      baseline: `${fmt(baselineMs * 1000, 3)} us`,
      ratio: ratio(p50, baselineMs),
      note: `p99 ${fmt(percentile(times, 99), 3)} ms; baseline = JSON.stringify of a small object`,
    });
    if (size.requested !== size.ids.length) notes.push(`only ${size.ids.length} mutually compatible services found for the ${size.requested}-service case`);
  }
  results.inProcess = { baselineMs, sizes: out };
}

// ---------------------------------------------------------------------------------------------
// The compiled binary: size, start-up, memory.

function newestMtime(paths: string[]): number {
  let newest = 0;
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const info = statSync(path);
    newest = Math.max(newest, info.isDirectory() ? newestMtime(readdirSync(path).map((name) => join(path, name))) : info.mtimeMs);
  }
  return newest;
}

/** The native binary, rebuilt when missing or older than the sources (figures must be of this tree). */
async function ensureBinary(): Promise<string> {
  const target = TARGETS.find((t) => t.arch === process.arch);
  if (!target) throw new Error(`no build target for ${process.arch}`);
  const binary = outfileOf(target);
  if (!existsSync(binary) || statSync(binary).mtimeMs < newestMtime([join(ROOT, "src"), join(ROOT, "catalog"), join(ROOT, "package.json")])) {
    section(`building ${binary}`);
    const built = await run([BUN, join(ROOT, "build.ts"), target.name], { cwd: ROOT });
    if (built.code !== 0) throw new Error(`build failed: ${built.stderr}`);
  }
  return binary;
}

async function compileBaseline(dir: string): Promise<string> {
  const outfile = join(dir, "baseline");
  // Compiled as build.ts compiles stackgen (minified, with bytecode), so the ratios compare the
  // programs and not the build settings.
  const built = await run([BUN, "build", "--compile", "--minify", "--bytecode", join(import.meta.dir, "baseline-binary.ts"), "--outfile", outfile], { cwd: ROOT });
  if (built.code !== 0) throw new Error(`baseline compile failed: ${built.stderr}`);
  return outfile;
}

/** Spawn to first /v1/health 200, median of N; each process is stopped before the next. */
async function coldStart(argvFor: (port: number, uiPort: number) => string[], cwd: string, env: Record<string, string>) {
  const times: number[] = [];
  for (let i = 0; i < COUNTS.coldStarts; i++) {
    const [port, uiPort] = [await freePort(), await freePort()];
    const started = performance.now();
    const proc = Bun.spawn(argvFor(port, uiPort), { cwd, env, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    try {
      times.push(await firstAnswer(`http://127.0.0.1:${port}/v1/health`, started, 20_000, () => proc.exitCode === null));
    } finally {
      await stop(proc);
    }
  }
  return times.sort((a, b) => a - b);
}

async function cliTimes(argv: string[], cwd: string) {
  const times: number[] = [];
  for (let i = 0; i < COUNTS.cliRuns; i++) {
    const r = await run(argv, { cwd, env: {} });
    if (r.code !== 0) throw new Error(`${argv.join(" ")} failed: ${r.stderr}`);
    times.push(r.ms);
  }
  return times.sort((a, b) => a - b);
}

async function binaryFigures(generateBody: string) {
  section("compiled binary");
  const binary = await ensureBinary();
  const work = await mkdtemp(join(os.tmpdir(), "stackgen-bench-"));
  try {
    const baseline = await compileBaseline(work);
    const size = statSync(binary).size;
    const baselineSize = statSync(baseline).size;
    rows.push({ section: "Binary", metric: "size (x64)", value: `${fmt(size / 1024 ** 2)} MiB`, baseline: `${fmt(baselineSize / 1024 ** 2)} MiB`, ratio: ratio(size, baselineSize), note: "baseline = trivial Bun.serve compiled the same way" });
    const arm = outfileOf({ name: "arm64" });
    if (existsSync(arm)) rows.push({ section: "Binary", metric: "size (arm64)", value: `${fmt(statSync(arm).size / 1024 ** 2)} MiB`, baseline: "", ratio: "" });

    const env = { LOG_LEVEL: "silent" };
    const stackgenStart = await coldStart((p, u) => [binary, "serve", "--host", "127.0.0.1", "--port", String(p), "--ui-port", String(u)], work, env);
    const baselineStart = await coldStart((p) => [baseline, "serve", String(p)], work, env);
    rows.push({
      section: "Binary",
      metric: `cold start to first /v1/health (median of ${COUNTS.coldStarts})`,
      value: `${fmt(median(stackgenStart))} ms`,
      baseline: `${fmt(median(baselineStart))} ms`,
      ratio: ratio(median(stackgenStart), median(baselineStart)),
      note: `min ${fmt(stackgenStart[0])} / max ${fmt(stackgenStart[stackgenStart.length - 1])} ms; API and UI listeners`,
    });
    const versionTimes = await cliTimes([binary, "--version"], work);
    const baselineRun = await cliTimes([baseline], work);
    rows.push({ section: "Binary", metric: `stackgen --version (median of ${COUNTS.cliRuns})`, value: `${fmt(median(versionTimes))} ms`, baseline: `${fmt(median(baselineRun))} ms`, ratio: ratio(median(versionTimes), median(baselineRun)) });

    // Memory: idle after start-up, then after a generate load (7 and 40 services).
    const memory = await binaryMemory(binary, baseline, work, generateBody);
    rows.push({
      section: "Binary",
      metric: "RSS idle (serve, 1 s after start)",
      value: `${fmt(memory.idle.rssMiB)} MiB`,
      baseline: `${fmt(memory.baselineIdle.rssMiB)} MiB`,
      ratio: ratio(memory.idle.rssMiB, memory.baselineIdle.rssMiB),
      note: `anonymous ${fmt(memory.idle.anonMiB)} + file-backed ${fmt(memory.idle.fileMiB)} MiB (baseline ${fmt(memory.baselineIdle.anonMiB)} + ${fmt(memory.baselineIdle.fileMiB)})`,
    });
    rows.push({ section: "Binary", metric: `RSS after ${COUNTS.memoryLoad} generates (c=32)`, value: `${fmt(memory.loaded.rssMiB)} MiB`, baseline: `${fmt(memory.baselineIdle.rssMiB)} MiB`, ratio: ratio(memory.loaded.rssMiB, memory.baselineIdle.rssMiB), note: `peak ${fmt(memory.loaded.peakMiB)} MiB; binary served ${fmt(memory.load.rps, 0)} req/s, p50 ${fmt(memory.load.p50Ms, 2)} ms` });
    results.binary = { size, baselineSize, coldStartMs: stackgenStart, baselineColdStartMs: baselineStart, versionMs: versionTimes, baselineRunMs: baselineRun, memory };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return binary;
}

async function binaryMemory(binary: string, baseline: string, cwd: string, generateBody: string) {
  const port = await freePort();
  const env = { LOG_LEVEL: "silent", RATE_LIMIT_STANDARD: "1000000000", RATE_LIMIT_GENERATE: "1000000000" };
  const proc = Bun.spawn([binary, "serve", "--host", "127.0.0.1", "--port", String(port), "--ui-port", String(await freePort())], { cwd, env, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  const basePort = await freePort();
  const base = Bun.spawn([baseline, "serve", String(basePort)], { cwd, env: {}, stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  try {
    await firstAnswer(`http://127.0.0.1:${port}/v1/health`, performance.now(), 20_000, () => proc.exitCode === null);
    await firstAnswer(`http://127.0.0.1:${basePort}/v1/health`, performance.now(), 20_000, () => base.exitCode === null);
    await Bun.sleep(1000);
    const idle = memoryOf(proc.pid);
    const baselineIdle = memoryOf(base.pid);
    const url = `http://127.0.0.1:${port}/v1/generate`;
    const forty = JSON.stringify({ projectName: "bench", services: compatibleSelection(40) });
    await load({ url, method: "POST", body: forty, concurrency: CONCURRENCY, requests: 200 });
    const loadResult = await load({ url, method: "POST", body: generateBody, concurrency: CONCURRENCY, requests: COUNTS.memoryLoad });
    const loaded = memoryOf(proc.pid);
    return { idle, baselineIdle, loaded, load: loadResult };
  } finally {
    await stop(proc);
    await stop(base);
  }
}

// ---------------------------------------------------------------------------------------------
// `stackgen status` vs `docker compose ps` on a 20-container stack.

async function dockerLack(): Promise<string | undefined> {
  if (Bun.which("docker") === null) return "docker is not installed";
  if ((await run(["docker", "info", "--format", "{{.ServerVersion}}"])).code !== 0) return "the docker engine is not running";
  if ((await run(["docker", "compose", "version"])).code !== 0) return "docker compose v2 is not installed";
  return undefined;
}

/** A busybox image: the test base image when present, else one built here from /bin/busybox. */
async function busyboxImage(work: string): Promise<{ image: string; built: boolean } | undefined> {
  const existing = "stackgen-test/busybox:latest";
  if ((await run(["docker", "image", "inspect", existing])).code === 0) return { image: existing, built: false };
  const busybox = ["/bin/busybox", "/usr/bin/busybox"].find(existsSync);
  if (!busybox) return undefined;
  const ctx = join(work, "img");
  mkdirSync(ctx);
  writeFileSync(join(ctx, "busybox"), readFileSync(busybox), { mode: 0o755 });
  writeFileSync(join(ctx, "Dockerfile"), 'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox","--install","-s","/bin"]\n');
  const image = `stackgen-bench/busybox:${process.pid}`;
  const built = await run(["docker", "build", "-q", "-t", image, ctx]);
  return built.code === 0 ? { image, built: true } : undefined;
}

async function statusFigures(binary: string) {
  section("status vs docker compose ps");
  const lack = await dockerLack();
  if (lack) {
    notes.push(`status vs docker compose ps skipped: ${lack}`);
    return;
  }
  const work = await mkdtemp(join(os.tmpdir(), "stackgen-bench-status-"));
  const project = `sgbench${process.pid}`;
  const stackDir = join(work, project);
  mkdirSync(stackDir);
  let image: { image: string; built: boolean } | undefined;
  let up = false;
  try {
    image = await busyboxImage(work);
    if (!image) {
      notes.push("status vs docker compose ps skipped: no busybox image and no busybox binary to build one");
      return;
    }
    const services = Array.from({ length: 20 }, (_, i) => `  s${String(i + 1).padStart(2, "0")}:\n    image: ${image!.image}\n    command: ["sleep", "86400"]\n    stop_signal: SIGKILL\n`);
    writeFileSync(join(stackDir, "docker-compose.yml"), `name: ${project}\nservices:\n${services.join("")}`);
    const started = await run(["docker", "compose", "up", "-d", "--quiet-pull"], { cwd: stackDir });
    up = true;
    if (started.code !== 0) throw new Error(`docker compose up failed: ${started.stderr}`);
    const stackgen: number[] = [];
    const compose: number[] = [];
    let running = -1;
    for (let i = 0; i <= COUNTS.statusRuns; i++) {
      const ours = await run([binary, "status", "--dir", stackDir, "--json"], { cwd: work, env: { PATH: process.env.PATH ?? "" } });
      if (ours.code !== 0) throw new Error(`stackgen status failed: ${ours.stderr}`);
      running = (JSON.parse(ours.stdout) as { summary: { running: number } }).summary.running;
      const theirs = await run(["docker", "compose", "ps"], { cwd: stackDir });
      if (theirs.code !== 0) throw new Error(`docker compose ps failed: ${theirs.stderr}`);
      if (i === 0) continue; // warm-up round
      stackgen.push(ours.ms);
      compose.push(theirs.ms);
    }
    stackgen.sort((a, b) => a - b);
    compose.sort((a, b) => a - b);
    rows.push({
      section: "Day-2 CLI",
      metric: `stackgen status, 20 containers (median of ${COUNTS.statusRuns})`,
      value: `${fmt(median(stackgen))} ms`,
      baseline: `${fmt(median(compose))} ms`,
      ratio: ratio(median(stackgen), median(compose)),
      note: `baseline = docker compose ps; stackgen saw ${running}/20 running`,
    });
    results.status = { stackgenMs: stackgen, composePsMs: compose, running };
  } finally {
    if (up) await run(["docker", "compose", "down", "-v", "-t", "0", "--remove-orphans"], { cwd: stackDir });
    if (image?.built) await run(["docker", "image", "rm", "-f", image.image]);
    await rm(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

function printTable(info: ReturnType<typeof machine>) {
  const header: Row = { section: "section", metric: "metric", value: "stackgen", baseline: "baseline", ratio: "ratio", note: "note" };
  const all = [header, ...rows];
  const keys = ["section", "metric", "value", "baseline", "ratio"] as const;
  const widths = keys.map((k) => Math.max(...all.map((r) => r[k].length)));
  const line = (r: Row) => [...keys.map((k, i) => r[k].padEnd(widths[i])), r.note ?? ""].join("  ").trimEnd();
  console.log(`Machine: ${info.cpu}, ${info.cores} cores, ${info.memGiB} GiB RAM, ${info.os}, Bun ${info.bun}, load average ${info.loadAverage1m} at start`);
  console.log(`Ratios: stackgen / baseline (for throughput, the share of the baseline's req/s; otherwise how many times the baseline's figure).`);
  console.log("");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
  if (notes.length) {
    console.log("");
    for (const n of notes) console.log(`note: ${n}`);
  }
}

async function main() {
  const info = machine();
  results.machine = info;
  results.startedAt = new Date().toISOString();
  const bodies = {
    validate: JSON.stringify({ services: SEVEN }),
    generate: JSON.stringify({ projectName: "bench", services: SEVEN }),
  };
  // `npm run bench -- http` (or `in-process`, `binary`) runs only those parts; the default is all.
  const only = new Set(process.argv.slice(2));
  const wanted = (part: string) => only.size === 0 || only.has(part);
  if (wanted("http")) await httpFigures(bodies);
  if (wanted("in-process")) inProcessFigures();
  if (wanted("binary")) await statusFigures(await binaryFigures(bodies.generate));
  printTable(info);
  if (only.size > 0) return; // a partial run leaves the last full run's results in place
  results.rows = rows;
  results.notes = notes;
  writeFileSync(join(import.meta.dir, "results.json"), JSON.stringify(results, null, 2) + "\n");
  console.log(`\nWrote ${join("bench", "results.json")}`);
}

await main();
