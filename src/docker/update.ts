// `stackgen update`: pull every image first, then stop and start layer by layer in dependency
// order, waiting for health; on failure put the previous images back and start them again.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import YAML from "yaml";
import { failure, interruptedError } from "../errors.ts";
import { createBackup, oversizedConfig } from "./backup-ops.ts";
import { lastLine, type Compose, type ComposeModel } from "./compose.ts";
import type { ContainerSummary, Engine, ImageInspect } from "./engine.ts";
import { waitReady } from "./health.ts";
import { dependencyLayers } from "./layers.ts";
import { parseImageRef, remoteDigest } from "./registry.ts";
import type { Stack } from "./stack.ts";

export interface UpdatedImage {
  service: string;
  image: string;
  /** The image the container ran under another name (the compose files now name a new tag). */
  oldImage?: string;
  oldDigest: string;
  newDigest: string;
}

export interface UpdateResult {
  dryRun?: boolean;
  updated: UpdatedImage[];
  unchanged: string[];
  restarted: string[];
  failed?: { service: string; image: string; error: string }[];
  /** The backup taken with the stack stopped, right before the new images started (--backup). */
  backup?: string;
  rolledBack?: {
    services: string[];
    reason: string;
    recovered: boolean;
    /** Services whose compose files now name another image than the one put back: they still
     *  name the failed one, which the next `docker compose up` starts. */
    stillNamed?: StillNamed[];
  };
}

/** A service started again on the image it ran before, while the compose files name a new one. */
export interface StillNamed {
  service: string;
  /** What the compose files name (the new, failed version). */
  image: string;
  /** The reference it ran under before the update: what to put back in the files. */
  restored: string;
  /** Set when that reference names another image by now: the tag of stackgen's it runs under. */
  runsAs?: string;
}

/** " Your compose files still name …" for each such service ("" for none). */
export const stillNamedNote = (entries: readonly StillNamed[] = []): string =>
  entries.map((n) => ` Your compose files still name ${n.image} for ${n.service}, which runs its previous image again${n.runsAs ? ` (as ${n.runsAs}: ${n.restored} names another image by now)` : ""}: put ${n.restored} back (docker-compose.override.yml, if you set it there), or the next \`docker compose up\` starts the failed version.`).join("");

/** Every service the `running` ones depend on, directly or not. */
function dependenciesOf(running: ReadonlySet<string>, model: ComposeModel): Set<string> {
  const dependsOn = new Map(model.services.map((s) => [s.name, s.dependsOn]));
  const out = new Set<string>();
  const visit = (name: string) => {
    for (const dep of dependsOn.get(name) ?? []) if (!out.has(dep)) { out.add(dep); visit(dep); }
  };
  for (const name of running) visit(name);
  return out;
}

/** Whether two references name the same repository, or (`exact`) the same tag or digest of it
 *  too (`redis` is `docker.io/library/redis:latest`). */
const sameName = (a: string, b: string, exact = false) => {
  const x = parseImageRef(a);
  const y = parseImageRef(b);
  return x.registry === y.registry && x.repository === y.repository && (!exact || (x.tag === y.tag && x.digest === y.digest));
};

/** The registry digest of a local image for `ref`'s repository; the image id when it has none. */
export function digestOf(image: ImageInspect | undefined, ref: string): string {
  if (!image) return "";
  const digests = image.RepoDigests ?? [];
  const match = digests.find((d) => sameName(d.split("@")[0], ref)) ?? digests[0];
  return match ? match.slice(match.indexOf("@") + 1) : image.Id;
}

/** "repo:tag" split for re-tagging; undefined for digest-pinned references. */
export function splitTag(ref: string): { repo: string; tag: string } | undefined {
  if (ref.includes("@")) return undefined;
  const slash = ref.lastIndexOf("/");
  const colon = ref.lastIndexOf(":");
  if (colon > slash) return { repo: ref.slice(0, colon), tag: ref.slice(colon + 1) };
  return { repo: ref, tag: "latest" };
}

interface ServiceImage {
  service: string;
  image: string;
  /** Image id the service's container runs now ("" when it has no container). */
  currentId: string;
  current?: ImageInspect;
  /** Without a container: the image its tag named before the pull (a change is a moved tag). */
  localId?: string;
  /** The reference the container was created from, when the compose files now name another (a
   *  new tag set in the override file): its own tag is not the one to put back on a rollback. */
  ranImage?: string;
}

/** The image a service ran (or its tag named) before the update: what a rollback puts back. */
const imageBefore = (s: ServiceImage) => s.currentId || s.localId;

/** The services the update starts again: those whose containers run (a crash-looping one counts)
 *  and jobs that ran to completion (exit 0, no restart policy that would keep them up: an init or
 *  migration job, run again on its new image). One the user stopped stays stopped. */
function servicesToStart(containers: ContainerSummary[], model: ComposeModel): Set<string> {
  const restartOf = new Map(model.services.map((s) => [s.name, s.restart]));
  const isJob = (service: string) => ["no", "on-failure"].includes((restartOf.get(service) ?? "no").split(":")[0]!);
  const start = new Set<string>();
  for (const c of containers) {
    const service = c.Labels["com.docker.compose.service"];
    if (!service) continue;
    const completed = c.State === "exited" && /^Exited \(0\)/.test(c.Status) && isJob(service);
    if (c.State === "running" || c.State === "restarting" || completed) start.add(service);
  }
  return start;
}

async function currentImages(engine: Engine, containers: ContainerSummary[], model: ComposeModel): Promise<ServiceImage[]> {
  const out: ServiceImage[] = [];
  for (const svc of model.services) {
    if (!svc.image) continue;
    const container = containers.find((c) => c.Labels["com.docker.compose.service"] === svc.name);
    const currentId = container ? container.ImageID : "";
    const localId = currentId ? undefined : (await engine.inspectImage(svc.image))?.Id;
    // The list names an image by id once its tag moved on: the container's own record keeps the reference.
    const ranImage = container ? (await engine.inspectContainer(container.Id)).Config.Image : undefined;
    out.push({
      service: svc.name, image: svc.image, currentId, current: currentId ? await engine.inspectImage(currentId) : undefined,
      ...(localId ? { localId } : {}), ...(ranImage && !sameName(ranImage, svc.image, true) ? { ranImage } : {}),
    });
  }
  return out;
}

export interface UpdateOptions {
  timeoutMs: number;
  progress: (message: string) => void;
  /** Back up volumes and config once the stack is stopped and before the new images start: a
   *  rollback puts the old images back, but a new version may already have migrated the data. */
  backup?: boolean;
  /** Aborted on Ctrl-C: before anything stopped the update just ends (tags put back); once the
   *  stack is stopped it rolls back to the previous images, as after a failed start. */
  signal?: AbortSignal;
}

export async function dryRunUpdate(engine: Engine, stack: Stack, model: ComposeModel, opts: UpdateOptions): Promise<UpdateResult> {
  // Images built here are not pulled by the update, so no registry is asked about them (a plain
  // name would otherwise go to Docker Hub): they stay as they are.
  const built = model.services.filter((s) => s.hasBuild && s.image).map((s) => s.name);
  const containers = await engine.listProjectContainers(stack.project);
  const images = (await currentImages(engine, containers, model)).filter((s) => !built.includes(s.service));
  const result: UpdateResult = { dryRun: true, updated: [], unchanged: built, restarted: [] };
  const remote = new Map<string, Promise<string>>();
  for (const s of images) {
    if (!remote.has(s.image)) {
      opts.progress(`Checking ${s.image}`);
      remote.set(s.image, remoteDigest(s.image));
    }
  }
  for (const s of images) {
    let newDigest: string;
    try {
      newDigest = await remote.get(s.image)!;
    } catch (e) {
      (result.failed ??= []).push({ service: s.service, image: s.image, error: (e as Error).message });
      continue;
    }
    const oldDigest = s.current ? digestOf(s.current, s.ranImage ?? s.image) : digestOf(await engine.inspectImage(s.image), s.image);
    if (oldDigest === newDigest && !s.ranImage) result.unchanged.push(s.service);
    else result.updated.push({ service: s.service, image: s.image, ...(s.ranImage ? { oldImage: s.ranImage } : {}), oldDigest, newDigest });
  }
  // The running services restart, as the real update does, when one of them changes.
  const running = servicesToStart(containers, model);
  if (result.updated.some((u) => running.has(u.service))) result.restarted = model.services.map((s) => s.name).filter((name) => running.has(name)).sort();
  result.unchanged.sort();
  return result;
}

const rollbackRepo = (project: string) => `stackgen-rollback/${project}`;
const rollbackTag = (project: string, service: string) => `${rollbackRepo(project)}:${service}`;

/** Point each service's image tag at the image its container ran before the update (or, for a
 *  service without a container, the image its tag named before the pull). Not a tag the compose
 *  files name anew: it never named the old image, and stays what the registry serves. */
async function retag(engine: Engine, services: ServiceImage[]): Promise<void> {
  for (const s of services) {
    if (s.ranImage) continue;
    const tag = splitTag(s.image);
    const before = imageBefore(s);
    if (before && tag && (await engine.inspectImage(s.image))?.Id !== before) await engine.tagImage(before, tag.repo, tag.tag);
  }
}

/** Start services layer by layer; returns a failure reason or undefined. With `signal` (the
 *  forward start only: a rollback runs to the end) an abort ends it as "interrupted". */
async function startInOrder(engine: Engine, stack: Stack, compose: Compose, layers: string[][], opts: UpdateOptions, signal?: AbortSignal): Promise<string | undefined> {
  for (const [i, layer] of layers.entries()) {
    if (signal?.aborted) return "interrupted";
    opts.progress(`Starting layer ${i + 1}/${layers.length}: ${layer.join(", ")}`);
    // Never pull here: a rollback has just tagged the previous images, and a `pull_policy: always`
    // would fetch the new ones again (Compose v1 and v2 before 2.6 have no --pull; v1 never pulls on up).
    // Not --no-deps: compose hashes a container made that way without its dependencies, and the
    // user's next plain `docker compose up -d` would make it again. The earlier layers are up.
    const up = await compose.run(["up", "--detach", ...(compose.cli.upPullNever ? ["--pull", "never"] : []), ...layer]);
    if (up.code !== 0) {
      const failed = `starting ${layer.join(", ")} failed: ${lastLine(up.stderr) || lastLine(up.stdout) || `exit code ${up.code}`}`;
      return signal?.aborted ? `interrupted (${failed})` : failed;
    }
    const report = (pending: { service: string; reason: string }[]) => opts.progress(`Waiting for ${pending.map((x) => `${x.service} (${x.reason})`).join(", ")}`);
    const failedServices = await waitReady(engine, stack.project, layer, opts.timeoutMs, report, signal);
    if (failedServices.length > 0) return failedServices.map((f) => `${f.service} ${f.reason}`).join("; ");
  }
  return undefined;
}

export async function runUpdate(engine: Engine, stack: Stack, compose: Compose, model: ComposeModel, opts: UpdateOptions): Promise<UpdateResult> {
  const containers = await engine.listProjectContainers(stack.project);
  const running = servicesToStart(containers, model);
  const layers = dependencyLayers(Object.fromEntries(model.services.map((s) => [s.name, s.dependsOn])))
    .map((layer) => layer.filter((name) => running.has(name)))
    .filter((layer) => layer.length > 0);
  const before = await currentImages(engine, containers, model);
  // --backup takes its backup once the stack is stopped: what would refuse it is found now.
  const oversized = opts.backup ? oversizedConfig(stack.dir) : undefined;
  if (oversized) throw failure("BACKUP_FAILED", `The pre-update backup could not hold the stack directory: ${oversized} Nothing was pulled or stopped.`);

  // Keep the images in use reachable under a tag of ours while pulls move the real tags.
  for (const s of before) if (imageBefore(s)) await engine.tagImage(imageBefore(s)!, rollbackRepo(stack.project), s.service);
  const keptRollbackTags = new Set<string>();
  const dropRollbackTags = async () => {
    for (const s of before) {
      const tag = rollbackTag(stack.project, s.service);
      if (imageBefore(s) && !keptRollbackTags.has(tag)) await engine.removeImage(tag);
    }
  };

  try {
    // 1. Pull everything first; any failure stops here with nothing stopped.
    const pulled = new Set<string>();
    const pullErrors: string[] = [];
    for (const svc of model.services) {
      if (opts.signal?.aborted) break;
      if (!svc.image || svc.hasBuild || pulled.has(svc.image)) continue;
      pulled.add(svc.image);
      opts.progress(`Pulling ${svc.image}`);
      const res = await compose.pull(svc.name, opts.signal);
      if (res.code !== 0) pullErrors.push(`${svc.image}: ${lastLine(res.stderr) || `exit ${res.code}`}`);
      else opts.progress(`Pulled ${svc.image}`);
    }
    if (opts.signal?.aborted) {
      await retag(engine, before);
      throw interruptedError("Interrupted while pulling: nothing was stopped and the images were left as they were.");
    }
    if (pullErrors.length > 0) {
      // The pulls that worked moved their tags; put them back, or a later `docker compose up`
      // would start the new images without health checks or a way back.
      await retag(engine, before);
      throw failure("PULL_FAILED", `Pull failed, nothing was stopped and the images were left as they were: ${pullErrors.join("; ")}`);
    }

    // 2. What changed.
    const result: UpdateResult = { updated: [], unchanged: [], restarted: [] };
    const changed: ServiceImage[] = [];
    for (const s of before) {
      const now = await engine.inspectImage(s.image);
      if (!now) throw failure("PULL_FAILED", `Image ${s.image} is not present after the pull.`);
      // A new name counts as a change even for the same image: the container is made again under it.
      if (now.Id === imageBefore(s) && !s.ranImage) result.unchanged.push(s.service);
      else {
        changed.push(s);
        result.updated.push({ service: s.service, image: s.image, ...(s.ranImage ? { oldImage: s.ranImage } : {}), oldDigest: digestOf(s.current, s.ranImage ?? s.image), newDigest: digestOf(now, s.image) });
      }
    }
    result.unchanged.sort();
    if (changed.length === 0) {
      opts.progress("Every image is up to date; nothing restarted");
      return result;
    }
    // Compose starts what a running service depends on along with it: those do not stay stopped.
    const needed = dependenciesOf(running, model);
    const stopped = model.services.map((s) => s.name).filter((name) => !running.has(name) && !needed.has(name));
    if (!changed.some((c) => running.has(c.service))) {
      opts.progress(`Only services that are not running have new images (${changed.map((c) => c.service).join(", ")}): they start on them when you start them; nothing restarted`);
      return result;
    }
    if (stopped.length) opts.progress(`Leaving ${stopped.join(", ")} stopped, as before the update`);
    const startedAsNeeded = [...needed].filter((name) => !running.has(name)).sort();
    if (startedAsNeeded.length) opts.progress(`Starting ${startedAsNeeded.join(", ")} too: services that run depend on ${startedAsNeeded.length === 1 ? "it" : "them"}`);

    /** Start the stopped stack again on the images it ran: tags put back, and a service whose
     *  compose files name a new tag started on the reference it ran under, given to compose in
     *  a file of our own on top of the user's (their files are left as they are). */
    const startOnPrevious = async () => {
      await retag(engine, changed);
      const names = new Map<string, string>();
      const stillNamed: StillNamed[] = [];
      for (const c of changed.filter((c) => c.ranImage && imageBefore(c))) {
        const name = await nameOfImageBefore(engine, stack.project, c);
        if (name === rollbackTag(stack.project, c.service)) keptRollbackTags.add(name);
        names.set(c.service, name);
        stillNamed.push({ service: c.service, image: c.image, restored: c.ranImage!, ...(name !== c.ranImage ? { runsAs: name } : {}) });
      }
      const again = await withImagesNamed(compose, names, (previous) => startInOrder(engine, stack, previous, layers, opts));
      return { again, stillNamed };
    };

    // 3. Stop all, start layer by layer, wait for health. Interrupted before that: nothing stops.
    if (opts.signal?.aborted) {
      await retag(engine, changed);
      throw interruptedError("Interrupted before anything was stopped: the images were left as they were.");
    }
    opts.progress("Stopping the stack");
    await compose.stop();
    if (opts.backup) {
      try {
        result.backup = (await createBackup(stack, engine, compose, model, { hot: false, stopServices: false, kind: "pre-update", progress: opts.progress, signal: opts.signal })).file;
      } catch (e) {
        // No backup, no update: the stack goes back up on the images it ran.
        opts.progress("The backup failed; starting the stack again on its previous images");
        const { again, stillNamed } = await startOnPrevious();
        const after = `${again ? `, but is not healthy: ${again}` : ""}.${stillNamedNote(stillNamed)}`;
        if (opts.signal?.aborted) throw interruptedError(`Interrupted before the new images started; the stack was started again on its previous images${after}`);
        throw failure("BACKUP_FAILED", `The pre-update backup failed (${(e as Error).message}), so nothing was updated; the stack was started again on its previous images${after}`);
      }
    }
    const order = layers.flat();
    const problem = await startInOrder(engine, stack, compose, layers, opts, opts.signal);
    result.restarted = order;
    if (!problem) return result;

    // 4. Roll back: the previous images, then the same ordered start.
    opts.progress(`Update failed (${problem}); rolling back ${changed.map((c) => c.service).join(", ")}`);
    await compose.stop();
    const { again, stillNamed } = await startOnPrevious();
    result.rolledBack = {
      services: changed.filter((c) => c.currentId).map((c) => c.service),
      reason: problem,
      recovered: again === undefined,
      ...(stillNamed.length ? { stillNamed } : {}),
    };
    if (again) opts.progress(`After the rollback the stack is still not healthy: ${again}`);
    return result;
  } finally {
    await dropRollbackTags();
  }
}

/** The reference a renamed service starts on in a rollback: the one it ran under, while it still
 *  names that image; else our own rollback tag, which is then kept (the container needs a name). */
async function nameOfImageBefore(engine: Engine, project: string, s: ServiceImage): Promise<string> {
  return (await engine.inspectImage(s.ranImage!))?.Id === imageBefore(s) ? s.ranImage! : rollbackTag(project, s.service);
}

/** Run `work` with compose given, on top of the stack's files, one that sets these services'
 *  images (none: the stack's own compose). The file is removed afterwards. */
async function withImagesNamed<T>(compose: Compose, images: ReadonlyMap<string, string>, work: (compose: Compose) => Promise<T>): Promise<T> {
  if (images.size === 0) return work(compose);
  const dir = mkdtempSync(join(tmpdir(), "stackgen-rollback-"));
  try {
    const file = join(dir, "rollback.compose.yml");
    const services = Object.fromEntries([...images].map(([service, image]) => [service, { image }]));
    writeFileSync(file, YAML.stringify({ services }));
    return await work(compose.withFile(file, { services }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
