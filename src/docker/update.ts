// `stackgen update`: pull every image first, then stop and start layer by layer in dependency
// order, waiting for health; on failure put the previous images back and start them again.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import YAML from "yaml";
import { failure, interruptedError, StackgenError } from "../errors.ts";
import { composeAsItRuns, composeCommand, createBackup, oversizedConfig } from "./backup-create.ts";
import { lastLine, pulledFromRegistry, restartsForGood, type Compose, type ComposeModel } from "./compose.ts";
import { EngineError, type ContainerSummary, type Engine, type ImageInspect } from "./engine.ts";
import { servicesNotRunning, waitReady } from "./health.ts";
import { awaitedJobs, dependenciesByService, dependenciesOf, exitCodeOf, ranToCompletion, startLayers, stillStarting } from "./layers.ts";
import { insecureRegistries, parseImageRef, remoteDigest, remoteManifest, type RegistryAccess } from "./registry.ts";
import type { Stack } from "./stack.ts";
import { LOCK_FILE } from "./stack-lock.ts";

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
  /** Dry run: services whose image the registry's answer does not tell apart from the local one
   *  without a pull (`digest`: the registry's for the tag), and why. Neither updated nor unchanged. */
  unknown?: { service: string; image: string; digest: string; reason: string }[];
  /** Services unhealthy or crash-looping before the update, whose image did not change: started
   *  again but not waited for, so they do not roll back the services that were updated. */
  unhealthyBefore?: string[];
  /** Services with containers that the compose files (as read now) do not have: not updated. */
  notInCompose?: string[];
  /** Dry run: the refusal the update would end with, before stopping anything (its error code
   *  and message), when the stack is not in a state a restart would bring back. */
  wouldRefuse?: { code: UpdateRefusal["code"]; message: string };
  /** Services the user had paused, restarted with the stack: running, no longer paused. */
  unpaused?: string[];
  /** The backup taken with the stack stopped, right before the new images started (--backup). */
  backup?: string;
  rolledBack?: {
    services: string[];
    reason: string;
    recovered: boolean;
    /** Whether a new image was started before the rollback (only then can it have changed data). */
    newImagesStarted: boolean;
    /** Services whose compose files now name another image than the one put back: they still
     *  name the failed one, which the next `docker compose up` starts. */
    stillNamed?: StillNamed[];
    /** Services that ran before the update and, the rollback having failed too, do not now. */
    notRunning?: string[];
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
  entries.map((n) => ` Your compose files still name ${n.image} for ${n.service}, which runs its previous image again${n.runsAs ? ` (as ${n.runsAs}: ${n.restored} names another image by now)` : ""}: put ${n.restored} back where you set the new one (docker-compose.override.yml, or a variable in .env), or the next \`docker compose up\` starts the failed version.`).join("");

/** " Not running now, though … ran before the update: …", with the command that starts them once
 *  the images the compose files still name are put back: started from the user's files, a service
 *  they still name a failed image for would run it ("" for none). */
export function notRunningNote(notRunning: readonly string[] = [], stillNamed: readonly StillNamed[] = []): string {
  if (notRunning.length === 0) return "";
  const one = notRunning.length === 1;
  const namesFirst = stillNamed.some((n) => notRunning.includes(n.service)) ? "the image names above are put back and " : "";
  return ` Not running now, though ${one ? "it" : "they"} ran before the update: ${notRunning.join(", ")} (\`docker compose up -d ${notRunning.join(" ")}\` starts ${one ? "it" : "them"} once ${namesFirst}the cause above is fixed).`;
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

/** Whether the registry's `digest` for `ref` is one this local image was pulled as. An image has
 *  one RepoDigest per manifest it came by: when a tag moves to a new multi-platform index whose
 *  entry for this platform is unchanged, the pull adds the index's digest beside the old one. */
export function pulledAs(image: ImageInspect | undefined, ref: string, digest: string): boolean {
  return (image?.RepoDigests ?? []).some((d) => d.slice(d.indexOf("@") + 1) === digest && sameName(d.split("@")[0]!, ref));
}

/** The platform a pull picks from a multi-platform index (containerd's normal form: arm64 has no
 *  variant, arm is v7 unless said). */
export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

/** The engine's kernel architecture (`uname -m`) as an image platform names it. */
const ARCHITECTURE_OF: Record<string, [string, string?]> = {
  x86_64: ["amd64"], amd64: ["amd64"], aarch64: ["arm64"], arm64: ["arm64"], armv7l: ["arm", "v7"], armhf: ["arm", "v7"],
  armv6l: ["arm", "v6"], armel: ["arm", "v6"], i386: ["386"], i686: ["386"], ppc64le: ["ppc64le"], s390x: ["s390x"], riscv64: ["riscv64"],
};

export function normalPlatform(p: { os?: string; architecture?: string; variant?: string }): Platform {
  const [architecture, impliedVariant] = ARCHITECTURE_OF[p.architecture ?? ""] ?? [p.architecture ?? ""];
  let variant = p.variant || impliedVariant;
  if (architecture === "arm64" && (variant === "v8" || variant === "8")) variant = undefined;
  if (architecture === "arm" && !variant) variant = "v7";
  return { os: p.os || "linux", architecture, ...(variant ? { variant } : {}) };
}

/** What a pull asks an index for: DOCKER_DEFAULT_PLATFORM (compose passes it on), else the engine's own. */
export function pullPlatform(info: { OSType?: string; Architecture?: string }, defaultPlatform = process.env.DOCKER_DEFAULT_PLATFORM): Platform {
  if (defaultPlatform) {
    const [os, architecture, variant] = defaultPlatform.split("/");
    return normalPlatform({ os, architecture, variant });
  }
  return normalPlatform({ os: info.OSType, architecture: info.Architecture });
}

const samePlatform = (a: Platform, b: Platform) => a.os === b.os && a.architecture === b.architecture && a.variant === b.variant;

/** What a pull of `image` (the registry's `digest` for it) would give: the image ids it may get
 *  (its config's digest, the engine's id of an image; or, with containerd's image store, the
 *  digest pulled), or why that cannot be told without pulling. `failure`: the pull itself would fail. */
export async function idsAPullGives(image: string, digest: string, platform: Platform, access: RegistryAccess = {}): Promise<{ ids: string[] } | { unknown: string } | { failure: string }> {
  let manifest = await remoteManifest(image, digest, access);
  const entries = manifest.body.manifests;
  if (Array.isArray(entries)) {
    const entry = entries.find((m) => typeof m?.digest === "string" && typeof m.platform === "object" && m.platform !== null && samePlatform(normalPlatform(m.platform), platform));
    const name = [platform.os, platform.architecture, platform.variant].filter(Boolean).join("/");
    if (!entry) return { failure: `the registry's index for it has no image for ${name}, so a pull would fail` };
    manifest = await remoteManifest(image, entry.digest, access);
  }
  const config = manifest.body.config?.digest;
  if (typeof config === "string" && config) return { ids: [config, digest] };
  if (manifest.body.schemaVersion === 1) return { unknown: "the registry serves it as a schema 1 manifest, which does not name the image id a pull would give" };
  return { unknown: `the registry's manifest (${manifest.mediaType || "no media type"}) names no image config` };
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

/** What the update starts again, and how. */
interface StartPlan {
  /** Services whose containers run (a crash-looping or paused one counts) and jobs that ran to
   *  completion (exit 0, no restart policy that would keep them up: an init or migration job) that
   *  one of those depends on, run again on their new image. One the user stopped stays stopped. */
  start: Set<string>;
  /** Of those, the ones that must keep running: exiting, even with 0, is failure for them. */
  mustStayUp: Set<string>;
  /** Services the user paused: the stop ends the pause, and they come back running. */
  paused: Set<string>;
  /** Containers per service, for those the user scaled past one (`up --scale`): kept as they are. */
  scales: Map<string, number>;
  /** Services already unhealthy or crash-looping before the update: not a reason to roll back
   *  another service's new image (unless their own image changes). */
  brokenBefore: Set<string>;
  /** Containers of services the compose model does not have (a profile not enabled, a service
   *  taken out of the files): the update cannot see, pull or restart them. */
  outsideModel: string[];
}

/** Seconds since its last start within which a container the engine restarted counts as crash-looping. */
const CRASH_LOOP_WINDOW_S = 120;

/** Services whose running container the engine restarted (its restart policy) within the last
 *  two minutes: crash-looping, though the container list shows it `running` between two crashes. */
async function crashLooping(engine: Engine, containers: ContainerSummary[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const c of containers) {
    const service = c.Labels["com.docker.compose.service"];
    // Healthy now: it restarted while something it needs came up, and recovered.
    if (!service || c.State !== "running" || /\(healthy\)/.test(c.Status)) continue;
    // Removed since the list was made: nothing to judge.
    const info = await engine.inspectContainer(c.Id).catch(() => undefined);
    if (!info) continue;
    const sinceStart = (Date.now() - Date.parse(info.State.StartedAt)) / 1000;
    if ((info.RestartCount ?? 0) > 0 && sinceStart < CRASH_LOOP_WINDOW_S) out.add(service);
  }
  return out;
}


function startPlan(containers: ContainerSummary[], model: ComposeModel, looping: ReadonlySet<string>): StartPlan {
  const serviceNamed = new Map(model.services.map((s) => [s.name, s]));
  const isJob = (service: string) => !restartsForGood(serviceNamed.get(service)!);
  const plan: StartPlan = { start: new Set(), mustStayUp: new Set(), paused: new Set(), scales: new Map(), brokenBefore: new Set(), outsideModel: [] };
  const completedJobs = new Set<string>();
  for (const c of containers) {
    const service = c.Labels["com.docker.compose.service"];
    if (!service) continue;
    if (!serviceNamed.has(service)) {
      if (!plan.outsideModel.includes(service)) plan.outsideModel.push(service);
      continue;
    }
    if (ranToCompletion(c) && isJob(service)) completedJobs.add(service);
    // `compose stop` stops a paused container as well: it is started again, not left down.
    const up = c.State === "running" || c.State === "restarting" || c.State === "paused";
    if (c.State === "paused") plan.paused.add(service);
    if (up) {
      plan.mustStayUp.add(service);
      plan.scales.set(service, (plan.scales.get(service) ?? 0) + 1);
      if (c.State === "restarting" || /\(unhealthy\)/.test(c.Status) || looping.has(service)) plan.brokenBefore.add(service);
    }
    if (up) plan.start.add(service);
  }
  // A job that ran to completion looks exactly like a service the user stopped (exit 0, no
  // restart policy: `docker compose stop` leaves most servers so). It runs again only for a
  // running service that depends on it, as compose runs it along with that service; one nothing
  // running needs stays as it is, its new image pulled for the next time it is run.
  for (const s of model.services) {
    if (plan.mustStayUp.has(s.name)) for (const dep of s.dependsOn) if (completedJobs.has(dep)) plan.start.add(dep);
  }
  for (const [service, n] of plan.scales) if (n < 2) plan.scales.delete(service);
  plan.outsideModel.sort();
  return plan;
}

/** The note for containers the update cannot see ("" for none). */
const outsideModelNote = (services: string[]) =>
  services.length === 0 ? "" : `${services.join(", ")} ${services.length === 1 ? "has" : "have"} containers but ${services.length === 1 ? "is" : "are"} not in the compose files as compose reads them now (a profile that is not enabled, or taken out of the files): not checked, pulled or restarted. Give the profile as compose takes it (COMPOSE_PROFILES=<name> in the environment or .env) to include ${services.length === 1 ? "it" : "them"}.`;

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

export async function dryRunUpdate(engine: Engine, stack: Stack, compose: Compose, model: ComposeModel, opts: UpdateOptions): Promise<UpdateResult> {
  // Images built here (or kept local by pull_policy) are not pulled by the update, so no registry
  // is asked about them (a plain name would otherwise go to Docker Hub): they stay as they are.
  const local = model.services.filter((s) => s.image && !pulledFromRegistry(s)).map((s) => s.name);
  const unfinished = readUnfinishedUpdate(stack.dir);
  if (unfinished) opts.progress(`The update of ${unfinished.startedAt} stopped the stack and did not finish: the real update starts again what ran before it (${unfinished.start.join(", ") || "nothing"}), and finishes or rolls back; this dry run compares with what runs now`);
  const containers = await engine.listProjectContainers(stack.project);
  const images = (await currentImages(engine, containers, model)).filter((s) => !local.includes(s.service));
  const result: UpdateResult = { dryRun: true, updated: [], unchanged: local, restarted: [] };
  const remote = new Map<string, Promise<string>>();
  let platform: Platform | undefined;
  // Registries the engine pulls from over plain HTTP (its insecure-registries) are asked so too.
  const info = await engine.info().catch(() => undefined);
  const access: RegistryAccess = { plainHttp: insecureRegistries(info) };
  for (const s of images) {
    if (!remote.has(s.image)) {
      opts.progress(`Checking ${s.image}`);
      const digest = remoteDigest(s.image, access);
      // Awaited in order below; one that fails before its turn must not count as unhandled.
      digest.catch(() => {});
      remote.set(s.image, digest);
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
    const local = s.current ?? (await engine.inspectImage(s.image));
    const oldDigest = digestOf(local, s.ranImage ?? s.image);
    const updated = () => result.updated.push({ service: s.service, image: s.image, ...(s.ranImage ? { oldImage: s.ranImage } : {}), oldDigest, newDigest });
    // A new name is a change, and without a local image anything pulled is new.
    if (s.ranImage || !local) updated();
    else if (oldDigest === newDigest || pulledAs(local, s.image, newDigest)) result.unchanged.push(s.service);
    else {
      // Not pulled as that digest (`docker load`ed, built and tagged here, or the tag moved to an
      // index with the same image for this platform): the update compares image ids after its
      // pull, so compare the id this platform's pull would give.
      let pull: Awaited<ReturnType<typeof idsAPullGives>>;
      try {
        platform ??= pullPlatform(info ?? (await engine.info()));
        pull = await idsAPullGives(s.image, newDigest, platform, access);
      } catch (e) {
        pull = { unknown: `asking the registry for its manifest failed (${(e as Error).message})` };
      }
      if ("ids" in pull) {
        if (pull.ids.includes(local.Id)) result.unchanged.push(s.service);
        else updated();
      } else if ("failure" in pull) (result.failed ??= []).push({ service: s.service, image: s.image, error: pull.failure });
      else (result.unknown ??= []).push({ service: s.service, image: s.image, digest: newDigest, reason: `the local image was not pulled as the registry's digest (loaded, or built and tagged here), and ${pull.unknown}` });
    }
  }
  // The running services restart, as the real update does, when one of them changes.
  const plan = startPlan(containers, model, await crashLooping(engine, containers));
  // In the order the update would start them, layer by layer.
  // One only a pull can tell about (`unknown`) may get a new image, which the update tries.
  const mayChange = new Set([...result.updated, ...(result.unknown ?? [])].map((u) => u.service));
  if (accountForPlan(result, plan, model)) {
    const dependsOn = dependenciesByService(model);
    result.restarted = startLayers(dependsOn, plan.start).flat();
    // What the update would refuse once it had pulled, said now.
    const refusal = refusalBeforeStop(compose, containers, model, dependsOn, plan, mayChange);
    if (refusal) result.wouldRefuse = { code: refusal.code, message: refusal.message("The update would pull the new images, then stop nothing and put the old tags back.") };
  }
  // As the update says it: only when it starts them again.
  const unhealthy = [...plan.brokenBefore].filter((name) => !mayChange.has(name)).sort();
  if (unhealthy.length && result.restarted.length) result.unhealthyBefore = unhealthy;
  return result;
}

/** What the plan adds to the result once the changed images are known, the same for the dry run
 *  and the update: services built here under no image name as unchanged (an update neither pulls
 *  nor rebuilds them: `docker compose build` does), containers outside the model as notInCompose
 *  and, when a running service's image changed so the stack restarts, the paused services as
 *  unpaused (the stop ends their pause). Returns whether the stack restarts. */
function accountForPlan(result: UpdateResult, plan: StartPlan, model: ComposeModel): boolean {
  result.unchanged.push(...model.services.filter((s) => !s.image && s.hasBuild).map((s) => s.name));
  result.unchanged.sort();
  if (plan.outsideModel.length) result.notInCompose = plan.outsideModel;
  const restarts = result.updated.some((u) => plan.start.has(u.service));
  if (restarts && plan.paused.size) result.unpaused = [...plan.paused].sort();
  return restarts;
}

/** `name` itself when Docker `takes` it, else `prefix-` and the start of its sha256. */
const orDigest = (name: string, takes: boolean, prefix: string) => (takes ? name : `${prefix}-${createHash("sha256").update(name).digest("hex").slice(0, 16)}`);
/** A name as Docker takes it for an image's repository path component and its tag; a compose
 *  project or service name that is not one (`.hidden`, `a_-b`, 129 characters) is replaced by
 *  a digest of it, or tagging would fail before anything is pulled. 200: the whole repository
 *  name (with `stackgen-rollback/`) stays under Docker's 255. */
const asRepoComponent = (name: string) => orDigest(name, name.length <= 200 && /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/.test(name), "p");
const asTag = (name: string) => orDigest(name, /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(name), "s");
const rollbackRepo = (project: string) => `stackgen-rollback/${asRepoComponent(project)}`;
export const rollbackTag = (project: string, service: string) => `${rollbackRepo(project)}:${asTag(service)}`;

/** What a second Ctrl-C, quitting an update at once, leaves and how to recover: the pulls may
 *  have moved tags to new images that never passed a health check, and only our rollback tags
 *  still name the previous ones (until the next update tags what runs then). */
export function quitUpdateNote(project: string, services: readonly string[]): string {
  // A service name Docker refuses as a tag has a tag of its own: say which.
  const renamed = services.filter((s) => asTag(s) !== s).map((s) => `${s}: ${rollbackTag(project, s)}`);
  return `the stack may be left stopped, and the image tags of updated services may name the new images, never checked. \`stackgen update\` again starts what ran and finishes the update, or rolls back to the previous images if the new ones do not come up healthy. Those are tagged ${rollbackRepo(project)}:<service> (\`docker image ls ${rollbackRepo(project)}\`${renamed.length ? `; ${renamed.join(", ")}` : ""}): to go back by hand instead, put each back with \`docker tag ${rollbackRepo(project)}:<service> <the image the service names>\` before \`docker compose up -d\`, then remove ${UNFINISHED_UPDATE_FILE} (the record the next update would resume from).`;
}

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

/** How the stopped services start again. */
interface StartOrder {
  layers: string[][];
  /** Each service's dependencies, as the compose files give them. */
  dependsOn: Readonly<Record<string, readonly string[]>>;
  scales: ReadonlyMap<string, number>;
  mustStayUp: ReadonlySet<string>;
  /** Started but not waited for (unhealthy before the update, on the same image). */
  notWaited: ReadonlySet<string>;
  /** Told of each layer `compose up` was run for, before its outcome (it may start some and fail). */
  onUp?: (layer: string[]) => void;
}

/** How a start goes on when a layer fails. The forward start stops there, to roll back (an abort
 *  of its signal ends it as "interrupted"). A rollback starts every later layer anyway, so the
 *  services that can run again do (one that still fails must not keep those after it stopped),
 *  and waits for those once at the end: a stack that stays down costs one timeout, not one per layer. */
type StartMode = { kind: "forward"; signal?: AbortSignal } | { kind: "rollback" };

/** Start services layer by layer; returns a failure reason or undefined. */
async function startInOrder(engine: Engine, stack: Stack, compose: Compose, order: StartOrder, opts: UpdateOptions, mode: StartMode): Promise<string | undefined> {
  const { layers, dependsOn, scales, mustStayUp, notWaited } = order;
  const signal = mode.kind === "forward" ? mode.signal : undefined;
  const report = (pending: { service: string; reason: string }[]) => opts.progress(`Waiting for ${pending.map((x) => `${x.service} (${x.reason})`).join(", ")}`);
  const wait = async (services: string[]) => {
    const failedServices = await waitReady(engine, stack.project, services.filter((s) => !notWaited.has(s)), { timeoutMs: opts.timeoutMs, onProgress: report, signal, mustStayUp });
    return failedServices.length > 0 ? failedServices.map((f) => `${f.service} ${f.reason}`).join("; ") : undefined;
  };
  const problems: string[] = [];
  // A rollback's layers after its first failure: started, waited for once at the end.
  const startedAfterFailure: string[] = [];
  // Jobs (not kept running: an init or migration job) an earlier layer has run to completion.
  const jobsRun = new Set<string>();
  for (const [i, layer] of layers.entries()) {
    if (signal?.aborted) return "interrupted";
    opts.progress(`Starting layer ${i + 1}/${layers.length}: ${layer.join(", ")}`);
    // Never pull here: a rollback has just tagged the previous images, and a `pull_policy: always`
    // would fetch the new ones again (Compose v1 and v2 before 2.6 have no --pull; v1 never pulls on up).
    // Not --no-deps: compose hashes a container made that way without its dependencies, and the
    // user's next plain `docker compose up -d` would make it again. The earlier layers are up.
    // A service the user scaled keeps its count (plain `up` would make it one container again),
    // on every layer's `up`: compose reconciles the dependencies it starts with the layer too, so
    // a later layer's `up` would scale one of an earlier layer back to one.
    const scaled = [...scales].flatMap(([name, n]) => ["--scale", `${name}=${n}`]);
    const upArgs = [...(compose.cli.upTakesPull ? ["--pull", "never"] : []), ...scaled, ...layer];
    order.onUp?.(layer);
    // Compose's `up` starts every dependency that is not running, so it would run a job again for
    // each later layer that needs it (a migration three times): when every dependency was started
    // by an earlier layer and the jobs among them have finished, they are left as they are. A job
    // still running is left to compose, which waits for it to finish and does not start it again.
    const needs = [...dependenciesOf(layer, dependsOn)];
    const jobs = needs.filter((name) => jobsRun.has(name));
    const leave = jobs.length > 0 && needs.every((name) => layers.slice(0, i).some((l) => l.includes(name))) && (await finished(engine, stack.project, jobs));
    // Bounded: compose waits for a job it runs again (a dependency of the layer) with no limit.
    const deadlineMs = opts.timeoutMs;
    const up = leave ? await upLeavingDependencies(compose, upArgs, layer, deadlineMs) : await compose.run(["up", "--detach", ...upArgs], { deadlineMs });
    for (const name of layer) if (!mustStayUp.has(name)) jobsRun.add(name);
    if (up.code !== 0) {
      const pending = up.overran ? stillStarting(await engine.listProjectContainers(stack.project).catch(() => [])) : [];
      const failed = up.overran
        ? `starting ${layer.join(", ")} did not finish within ${deadlineMs / 1000}s, so it was stopped: compose was still waiting${pending.length ? ` on ${pending.join(", ")}` : " for a one-shot job it ran first to end"} (--timeout gives it longer)`
        : `starting ${layer.join(", ")} failed: ${lastLine(up.stderr) || lastLine(up.stdout) || `exit code ${up.code}`} (\`docker compose logs ${layer.join(" ")}\` shows why)`;
      if (mode.kind === "forward") return signal?.aborted ? `interrupted (${failed})` : failed;
      problems.push(failed);
      continue;
    }
    if (problems.length) {
      startedAfterFailure.push(...layer);
      continue;
    }
    const problem = await wait(layer);
    if (problem && mode.kind === "forward") return problem;
    if (problem) problems.push(problem);
  }
  if (problems.length) {
    const late = startedAfterFailure.length ? await wait(startedAfterFailure) : undefined;
    return [...problems, ...(late ? [late] : [])].join("; ");
  }
  // Once all are up, every service once more: one judged started early may have died while the
  // later layers came up (an app that gives up on its database after some seconds).
  return layers.length > 1 ? wait(layers.flat()) : undefined;
}

/** Whether every container of `services` has exited with code 0. */
async function finished(engine: Engine, project: string, services: readonly string[]): Promise<boolean> {
  const containers = (await engine.listProjectContainers(project)).filter((c) => services.includes(c.Labels["com.docker.compose.service"] ?? ""));
  return containers.length > 0 && containers.every(ranToCompletion);
}


/** `up` for `layer` (`upArgs`: its options, then the layer) that starts none of its dependencies:
 *  `up --no-start` makes its containers as `up` does, then `restart --no-deps` starts just them.
 *  Not `up --no-deps`: compose hashes a container made that way without its dependencies, and the
 *  user's next plain `docker compose up -d` would make it again. A compose without `restart
 *  --no-deps` (v1, early v2) gets the plain `up`, which runs the jobs once more. */
async function upLeavingDependencies(compose: Compose, upArgs: string[], layer: string[], deadlineMs: number) {
  const created = await compose.run(["up", "--no-start", ...upArgs]);
  if (created.code !== 0) return created;
  const started = await compose.run(["restart", "--no-deps", ...layer]);
  return started.code === 0 ? started : compose.run(["up", "--detach", ...upArgs], { deadlineMs });
}

/** Why an update that restarts the stack would leave down what runs now, found before it stops
 *  anything: the dry run foresees it and the update refuses. `message` takes what was done
 *  ("Nothing was stopped..."), said before the way out. */
export interface UpdateRefusal {
  code: "JOB_FAILED" | "DEPENDENCY_UNHEALTHY";
  message: (done: string) => string;
}

function refusalBeforeStop(compose: Compose, containers: ContainerSummary[], model: ComposeModel, dependsOn: Record<string, string[]>, plan: StartPlan, changed: ReadonlySet<string>): UpdateRefusal | undefined {
  const running = plan.start;
  const dir = compose.stack.dir;
  // A job that had failed before, on an image that did not change: compose would run it again to
  // start the services waiting for it, fail, and roll back an update it did not cause.
  const failedJob = failedJobNeeded(containers, running, dependsOn, changed);
  if (failedJob) {
    const { job, code, dependents } = failedJob;
    const one = dependents.length === 1;
    return { code: "JOB_FAILED", message: (done) => `${job}, a one-shot job that ${dependents.join(", ")} ${one ? "waits" : "wait"} for, exited with code ${code} before the update: compose would run it again to start ${one ? "that service" : "them"}, and while it fails ${one ? "it" : "they"} would stay down. ${done} \`${composeCommand(compose, "logs", [job])}\` in ${dir} shows why; once it runs to completion, update again.` };
  }
  // A service that was unhealthy before, on an image that does not change, which a service to be
  // started again waits for to be healthy: compose would refuse to start that one, and the
  // rollback the same, leaving down a service that ran.
  const unhealthyNeeded = unhealthyDependenciesNeeded(model, running, plan.brokenBefore, changed);
  if (unhealthyNeeded.length) {
    const deps = unhealthyNeeded.map((u) => u.dependency);
    const dependents = [...new Set(unhealthyNeeded.flatMap((u) => u.dependents))].sort();
    const which = unhealthyNeeded.map((u) => `${u.dependents.join(", ")} ${u.dependents.length === 1 ? "waits" : "wait"} for ${u.dependency} to be healthy`).join("; ");
    const one = deps.length === 1;
    return { code: "DEPENDENCY_UNHEALTHY", message: (done) => `${deps.join(", ")} ${one ? "was" : "were"} unhealthy or restarting before the update, on ${one ? "an image" : "images"} that did not change, and ${which} (depends_on condition service_healthy): compose would refuse to start ${dependents.join(", ")} again, and the rollback too, leaving down what runs now. ${done} \`${composeCommand(compose, "logs", deps)}\` in ${dir} shows why; once ${deps.join(", ")} ${one ? "is" : "are"} healthy again (\`${composeCommand(compose, "restart", deps)}\` may be enough), update again.` };
  }
  return undefined;
}

/** A one-shot job a running service waits for (service_completed_successfully) whose container
 *  ended with an error: the first such, with its exit code and the running services that need it. */
function failedJobNeeded(containers: ContainerSummary[], running: ReadonlySet<string>, dependsOn: Record<string, string[]>, changed: ReadonlySet<string>): { job: string; code: number; dependents: string[] } | undefined {
  const needed = dependenciesOf(running, dependsOn);
  for (const job of [...awaitedJobs(containers)].sort()) {
    // A new image of the job may be its fix: the update runs it, and rolls back if it fails again.
    if (!needed.has(job) || running.has(job) || changed.has(job)) continue;
    const code = containers.filter((c) => c.Labels["com.docker.compose.service"] === job).map(exitCodeOf).find((n) => n !== undefined && n !== 0);
    if (code === undefined) continue;
    // The running services that name it, else those that need it through a service not running.
    const direct = [...running].filter((name) => dependsOn[name]?.includes(job));
    return { job, code, dependents: (direct.length ? direct : [...running].filter((name) => dependenciesOf([name], dependsOn).has(job))).sort() };
  }
  return undefined;
}

/** Services unhealthy or crash-looping before the update, on an image that does not change, that a
 *  service the update starts again waits for to be healthy (`service_healthy`): compose's `up` of
 *  that service refuses ("dependency failed to start"), and so would the rollback's. Each with the
 *  services that wait for it, sorted. A new image of the dependency may be its fix: it is started
 *  and waited for, and rolls back if it stays unhealthy. */
function unhealthyDependenciesNeeded(model: ComposeModel, start: ReadonlySet<string>, brokenBefore: ReadonlySet<string>, changed: ReadonlySet<string>): { dependency: string; dependents: string[] }[] {
  const waiting = new Map<string, string[]>();
  for (const s of model.services) {
    if (!start.has(s.name)) continue;
    for (const [dep, condition] of Object.entries(s.dependsOnConditions ?? {})) {
      if (condition !== "service_healthy" || !brokenBefore.has(dep) || changed.has(dep)) continue;
      waiting.set(dep, [...(waiting.get(dep) ?? []), s.name]);
    }
  }
  return [...waiting].sort(([a], [b]) => a.localeCompare(b)).map(([dependency, dependents]) => ({ dependency, dependents: dependents.sort() }));
}

/** What an update that stopped the stack records first (in the stack folder), and removes once
 *  the stack runs again, new images or old: found by the next update, it says what ran before a
 *  killed update (an OOM kill, a lost SSH session, a second Ctrl-C), so that one finishes the
 *  update or rolls back to those images, rather than take the stopped stack for the user's. */
export const UNFINISHED_UPDATE_FILE = `${LOCK_FILE}.update`; // beside the lock: no backup holds it

interface UnfinishedUpdate {
  startedAt: string;
  /** The plan's sets, as lists. */
  start: string[];
  mustStayUp: string[];
  paused: string[];
  brokenBefore: string[];
  scales: [string, number][];
  /** Per service, the image it ran before that update, and the reference it was created from. */
  images: Record<string, { id: string; ranImage?: string }>;
}

/** The record of an update that did not finish, if the stack folder holds one of ours. */
function readUnfinishedUpdate(dir: string): UnfinishedUpdate | undefined {
  let record: UnfinishedUpdate;
  try {
    record = JSON.parse(readFileSync(join(dir, UNFINISHED_UPDATE_FILE), "utf8")) as UnfinishedUpdate;
  } catch {
    return undefined; // none (the usual case), or not JSON
  }
  const names = (l: unknown) => Array.isArray(l) && l.every((x) => typeof x === "string");
  const scale = (pair: unknown) => Array.isArray(pair) && pair.length === 2 && typeof pair[0] === "string" && Number.isInteger(pair[1]) && pair[1] > 1 && pair[1] <= 1000;
  const image = (ran: unknown) => typeof ran === "object" && ran !== null && typeof (ran as { id?: unknown }).id === "string" && ["string", "undefined"].includes(typeof (ran as { ranImage?: unknown }).ranImage);
  const ours = typeof record === "object" && record !== null && typeof record.startedAt === "string"
    && [record.start, record.mustStayUp, record.paused, record.brokenBefore].every(names)
    && Array.isArray(record.scales) && record.scales.every(scale)
    && typeof record.images === "object" && record.images !== null && !Array.isArray(record.images) && Object.values(record.images).every(image);
  return ours ? record : undefined;
}

/** What `status` says of an update record left behind (see UNFINISHED_UPDATE_FILE), also once
 *  another command has taken over the lock that update left. */
export function unfinishedUpdateNote(dir: string): string | undefined {
  const record = readUnfinishedUpdate(dir);
  return record && `The update of ${record.startedAt} stopped the stack and did not finish (${record.start.join(", ") || "nothing"} ran before it): \`stackgen update\` again starts what is still down and finishes the update or rolls back.`;
}

/** The plan and images of the update that left `record`, for the services this one still has:
 *  what ran before it is what this update starts again, and rolls back to. */
async function resumeUnfinished(engine: Engine, record: UnfinishedUpdate, plan: StartPlan, before: ServiceImage[], model: ComposeModel): Promise<{ down: string[]; resumed: string[] }> {
  const known = new Set(model.services.map((s) => s.name));
  // A service that runs again (started by hand since) runs as the user now has it: only those
  // still down take what the record says.
  const upNow = new Set(plan.start);
  const down = (name: string) => known.has(name) && !upNow.has(name);
  for (const name of record.start) if (down(name)) plan.start.add(name);
  for (const name of record.mustStayUp) if (down(name)) plan.mustStayUp.add(name);
  for (const name of record.paused) if (down(name)) plan.paused.add(name);
  for (const name of record.brokenBefore) if (down(name)) plan.brokenBefore.add(name);
  for (const [name, n] of record.scales) if (down(name)) plan.scales.set(name, n);
  const resumed: string[] = [];
  for (const s of before) {
    const ran = record.images[s.service];
    if (!ran || !down(s.service)) continue;
    // The rollback tag of that update keeps the image; one removed since cannot be put back.
    const image = await engine.inspectImage(ran.id);
    if (!image) continue;
    s.currentId = ran.id;
    s.current = image;
    delete s.localId;
    // The name it ran under then: a rollback puts that back, not the name the files give now.
    if (ran.ranImage !== undefined && !sameName(ran.ranImage, s.image, true)) s.ranImage = ran.ranImage;
    else delete s.ranImage;
    resumed.push(s.service);
  }
  return { down: record.start.filter(down), resumed };
}

export async function runUpdate(engine: Engine, stack: Stack, compose: Compose, model: ComposeModel, opts: UpdateOptions): Promise<UpdateResult> {
  const containers = await engine.listProjectContainers(stack.project);
  const plan = startPlan(containers, model, await crashLooping(engine, containers));
  const before = await currentImages(engine, containers, model);
  let unfinished = readUnfinishedUpdate(stack.dir);
  if (unfinished) {
    const { down, resumed } = await resumeUnfinished(engine, unfinished, plan, before, model);
    if (down.length === 0) {
      // Everything it stopped runs again (started by hand): nothing of it is left to finish.
      opts.progress(`The update of ${unfinished.startedAt} did not finish, but what it stopped runs again: its record (${UNFINISHED_UPDATE_FILE}) is dropped`);
      rmSync(join(stack.dir, UNFINISHED_UPDATE_FILE), { force: true });
      unfinished = undefined;
    } else opts.progress(`The update of ${unfinished.startedAt} stopped the stack and did not finish: this one starts again what ran before it (${down.join(", ")})${resumed.length ? `, and rolls back to the images ${resumed.join(", ")} ran then if the new ones do not come up healthy` : ""}`);
  }
  /** Whether this run started the stack again (new images or old): a resumed run's record goes only then. */
  let stackStarted = false;
  const running = plan.start;
  const dependsOn = dependenciesByService(model);
  const layers = startLayers(dependsOn, running);
  if (plan.outsideModel.length) opts.progress(outsideModelNote(plan.outsideModel));
  // --backup takes its backup once the stack is stopped: what would refuse it is found now.
  const oversized = opts.backup ? oversizedConfig(stack.dir) : undefined;
  if (oversized) throw failure("BACKUP_FAILED", `The pre-update backup could not hold the stack directory: ${oversized} Nothing was pulled or stopped.`);

  // Keep the images in use reachable under a tag of ours while pulls move the real tags.
  for (const s of before) if (imageBefore(s)) await engine.tagImage(imageBefore(s)!, rollbackRepo(stack.project), asTag(s.service));
  const keptRollbackTags = new Set<string>();
  // Set when an error we did not expect (the engine's) ends the update part way: every rollback
  // tag stays, as the pulls may have moved the real tags and ours may be all that names the old images.
  let keepRollbackTags = false;
  const dropRollbackTags = async () => {
    if (keepRollbackTags) return;
    for (const s of before) {
      const tag = rollbackTag(stack.project, s.service);
      if (imageBefore(s) && !keptRollbackTags.has(tag)) await engine.removeImage(tag);
    }
  };
  /** What to do when the update ends with the tags perhaps still on the new images. */
  const quitNote = () => quitUpdateNote(stack.project, before.filter(imageBefore).map((s) => s.service));
  /** What the update was doing when an unexpected error ended it: said before that error. */
  let doing = "";

  try {
    // 1. Pull everything first; any failure stops here with nothing stopped.
    const pulled = new Set<string>();
    const pullErrors: string[] = [];
    for (const svc of model.services) {
      if (opts.signal?.aborted) break;
      if (!svc.image || !pulledFromRegistry(svc) || pulled.has(svc.image)) continue;
      pulled.add(svc.image);
      opts.progress(`Pulling ${svc.image}`);
      const res = await compose.pull(svc.name, opts.signal);
      if (res.code !== 0) pullErrors.push(`${svc.name} (${svc.image}): ${lastLine(res.stderr) || `exit ${res.code}`}`);
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
      throw failure("PULL_FAILED", `Pull failed, nothing was stopped and the images were left as they were: ${pullErrors.join("; ")}. Check the image name and tag the compose files give, the registry's address, and \`docker login <registry>\` for a private one.`);
    }

    // 2. What changed.
    const result: UpdateResult = { updated: [], unchanged: [], restarted: [] };
    const changed: ServiceImage[] = [];
    const notPulled = new Set(model.services.filter((svc) => !pulledFromRegistry(svc)).map((svc) => svc.name));
    for (const s of before) {
      const now = await engine.inspectImage(s.image);
      // One the update does not pull (built here, pull_policy never or build), absent from the
      // engine: nothing new came for it, as the dry run says (compose builds or refuses it on up).
      if (!now && notPulled.has(s.service)) {
        result.unchanged.push(s.service);
        continue;
      }
      if (!now) throw failure("PULL_FAILED", `Image ${s.image} is not present after the pull, so nothing was stopped and the images were left as they were.`);
      // A new name counts as a change even for the same image: the container is made again under it.
      if (now.Id === imageBefore(s) && !s.ranImage) result.unchanged.push(s.service);
      else {
        changed.push(s);
        result.updated.push({ service: s.service, image: s.image, ...(s.ranImage ? { oldImage: s.ranImage } : {}), oldDigest: digestOf(s.current, s.ranImage ?? s.image), newDigest: digestOf(now, s.image) });
      }
    }
    // Resuming a killed update, the services it stopped start again even with nothing new.
    const restarts = accountForPlan(result, plan, model) || unfinished !== undefined;
    if (changed.length === 0 && !unfinished) {
      opts.progress("Every image is up to date; nothing restarted");
      return result;
    }
    // Compose starts what a running service depends on along with it: those do not stay stopped.
    const needed = dependenciesOf(running, dependsOn);
    const stopped = model.services.map((s) => s.name).filter((name) => !running.has(name) && !needed.has(name));
    if (!restarts) {
      // `compose start` would run their old containers again, on the old images.
      const names = changed.map((c) => c.service);
      opts.progress(`Only services that are not running have new images (${names.join(", ")}); nothing restarted. \`${composeCommand(compose, "up -d", names)}\` in ${stack.dir} starts ${names.length === 1 ? "it" : "them"} on the new ${names.length === 1 ? "image" : "images"} (\`docker compose start\` would run the old containers)`);
      return result;
    }
    // Refused while nothing is stopped yet, the pulled tags put back (see refusalBeforeStop).
    const refusal = refusalBeforeStop(compose, containers, model, dependsOn, plan, new Set(changed.map((c) => c.service)));
    if (refusal) {
      await retag(engine, changed);
      throw failure(refusal.code, refusal.message("Nothing was stopped, and the images were left as they were."));
    }
    if (stopped.length) {
      const newer = stopped.filter((name) => changed.some((c) => c.service === name));
      opts.progress(`Leaving ${stopped.join(", ")} stopped, as before the update${newer.length ? `; \`${composeCommand(compose, "up -d", newer)}\` starts ${newer.join(", ")} on ${newer.length === 1 ? "its" : "their"} new ${newer.length === 1 ? "image" : "images"}` : ""}`);
    }
    const startedAsNeeded = [...needed].filter((name) => !running.has(name)).sort();
    if (startedAsNeeded.length) opts.progress(`Starting ${startedAsNeeded.join(", ")} too: services that run depend on ${startedAsNeeded.length === 1 ? "it" : "them"}`);
    // A service that was already failing, on an image that did not change, says nothing about the
    // new images: waiting for it would roll back every update while it stays broken.
    const notWaited = new Set([...plan.brokenBefore].filter((name) => !changed.some((c) => c.service === name)));
    if (notWaited.size) {
      result.unhealthyBefore = [...notWaited].sort();
      opts.progress(`${result.unhealthyBefore.join(", ")} ${notWaited.size === 1 ? "was" : "were"} unhealthy or restarting before the update, on an image that did not change: started again, not waited for`);
    }
    const startOrder: StartOrder = { layers, dependsOn, scales: plan.scales, mustStayUp: plan.mustStayUp, notWaited };
    if (result.unpaused) {
      const one = result.unpaused.length === 1;
      opts.progress(`${result.unpaused.join(", ")} ${one ? "is" : "are"} paused: stopping the stack ends that, so ${one ? "it runs" : "they run"} after the update (\`docker compose pause ${result.unpaused.join(" ")}\` pauses again)`);
    }

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
      const again = await withImagesNamed(compose, names, (previous) => startInOrder(engine, stack, previous, startOrder, opts, { kind: "rollback" }));
      stackStarted = true;
      return { again, stillNamed };
    };
    // Those failing before the update did not really run: not named as stopped by it.
    const ranBefore = [...plan.mustStayUp].filter((name) => !plan.brokenBefore.has(name)).sort();
    /** After an update that never started a new image: how the stack started again stands, with
     *  what is left down and the command that starts it (", but is not healthy: …." or "."). */
    const startedAgain = async ({ again, stillNamed }: Awaited<ReturnType<typeof startOnPrevious>>) =>
      `${again ? `, but is not healthy: ${again}` : ""}.${stillNamedNote(stillNamed)}${again ? notRunningNote(await servicesNotRunning(engine, stack.project, ranBefore), stillNamed) : ""}`;

    // 3. Stop all, start layer by layer, wait for health. Interrupted before that: nothing stops.
    if (opts.signal?.aborted) {
      await retag(engine, changed);
      throw interruptedError("Interrupted before anything was stopped: the images were left as they were.");
    }
    // From here the stack is stopped: a kill leaves the record of what ran (see UNFINISHED_UPDATE_FILE).
    if (!unfinished) recordUnfinished(stack.dir, plan, before);
    opts.progress("Stopping the stack");
    const stopFailure = await compose.stop().then(() => undefined, (e: Error) => e.message);
    if (stopFailure) {
      // Half stopped, with the pulls' tags moved: put the stack back as it ran, never leave it so.
      opts.progress("Stopping the stack failed; starting it again on its previous images");
      doing = `${stopFailure}, so nothing was updated, and starting the stack again on its previous images failed`;
      const after = await startedAgain(await startOnPrevious());
      const what = `${stopFailure}, so nothing was updated; the stack was started again on its previous images${after}`;
      if (opts.signal?.aborted) throw interruptedError(`Interrupted while the stack stopped: ${what}`);
      throw failure("COMPOSE_FAILED", what);
    }
    if (opts.backup) {
      try {
        // The stack as it runs: a service of a profile not enabled in its settings keeps its volume.
        // The update's stop left such a service running: the backup stops it for the copy (a copy
        // of a volume in use is a hot one, not the cold backup --backup promises) and starts it again.
        const running = await composeAsItRuns(engine, compose);
        result.backup = (await createBackup(stack, engine, running.compose, running.model, { hot: false, kind: "pre-update", progress: opts.progress, signal: opts.signal })).file;
      } catch (e) {
        // No backup, no update: the stack goes back up on the images it ran.
        opts.progress("The backup failed; starting the stack again on its previous images");
        doing = `The pre-update backup failed (${(e as Error).message}), so nothing was updated, and starting the stack again on its previous images failed`;
        const after = await startedAgain(await startOnPrevious());
        if (opts.signal?.aborted) throw interruptedError(`Interrupted before the new images started; the stack was started again on its previous images${after}`);
        throw failure("BACKUP_FAILED", `The pre-update backup failed (${(e as Error).message}), so nothing was updated; the stack was started again on its previous images${after}`);
      }
    }
    const order = layers.flat();
    // Whether a new image may have run (and so changed data) before a rollback.
    let newImagesStarted = false;
    const onUp = (layer: string[]) => (newImagesStarted ||= layer.some((name) => changed.some((c) => c.service === name)));
    const problem = await startInOrder(engine, stack, compose, { ...startOrder, onUp }, opts, { kind: "forward", signal: opts.signal });
    result.restarted = order;
    if (!problem) {
      stackStarted = true;
      return result;
    }

    // 4. Roll back: the previous images, then the same ordered start.
    opts.progress(`Update failed (${problem}); rolling back ${changed.map((c) => c.service).join(", ")}`);
    doing = `Update failed (${problem}), and the rollback failed`;
    // A stop that fails still leaves the rollback to start the previous images (up recreates them).
    await compose.stop().catch(() => undefined);
    const { again, stillNamed } = await startOnPrevious();
    const notRunning = again ? await servicesNotRunning(engine, stack.project, ranBefore) : [];
    result.rolledBack = {
      services: changed.filter((c) => c.currentId).map((c) => c.service),
      reason: problem,
      recovered: again === undefined,
      newImagesStarted,
      ...(stillNamed.length ? { stillNamed } : {}),
      ...(notRunning.length ? { notRunning } : {}),
    };
    if (again) opts.progress(`After the rollback the stack is still not healthy: ${again}`);
    return result;
  } catch (e) {
    // Ours (a failed pull, a refused stop, an interrupt) already say what stands; the engine's
    // (an API error mid-way, tags perhaps moved, the stack perhaps down) is told with the way back.
    if (e instanceof StackgenError && !(e instanceof EngineError)) {
      // A refusal after the pulls: their tags go back on the images that ran (where that is not
      // done already), or the next `docker compose up` would start images never checked, their
      // previous ones named by nothing once the rollback tags are removed.
      const putBack = await retag(engine, before).then(() => undefined, (x: Error) => x);
      // Resuming, "nothing was stopped" is this run's part only: the earlier one left it stopped.
      if (!putBack && unfinished && !stackStarted) {
        throw new StackgenError(e.code, `${e.message} The stack is still stopped by the update of ${unfinished.startedAt} that did not finish: run \`stackgen update\` again once this is fixed, which starts it again.`, e.status, e.details, e.exitCode);
      }
      if (!putBack) throw e;
      keepRollbackTags = true;
      throw new StackgenError(e.code, `${e.message} Putting the image tags back failed too (${putBack.message}): ${quitNote()}`, e.status, e.details, e.exitCode);
    }
    keepRollbackTags = true;
    const code = e instanceof StackgenError ? e.code : "INTERNAL_ERROR";
    throw failure(code, `${doing ? `${doing}: ` : ""}${(e as Error).message}; ${quitNote()}`);
  } finally {
    // The stack runs again (new images or old), or an engine error said how it stands: the
    // record goes with the rollback tags, and stays where they stay.
    if (!keepRollbackTags && (!unfinished || stackStarted)) rmSync(join(stack.dir, UNFINISHED_UPDATE_FILE), { force: true });
    // Only tidying: a failure here (the engine gone) must not replace the update's outcome.
    await dropRollbackTags().catch((e: Error) => opts.progress(`Could not remove the rollback tags (${e.message}): \`docker image ls ${rollbackRepo(stack.project)}\` lists them, \`docker image rm\` removes them`));
  }
}

/** Written where a killed update leaves it (see UNFINISHED_UPDATE_FILE); the update goes on
 *  without it on a folder it may not write, as it did before there was one. */
function recordUnfinished(dir: string, plan: StartPlan, before: ServiceImage[]): void {
  const images: UnfinishedUpdate["images"] = {};
  for (const s of before) if (imageBefore(s)) images[s.service] = { id: imageBefore(s)!, ranImage: s.ranImage ?? s.image };
  const record: UnfinishedUpdate = {
    startedAt: new Date().toISOString(),
    start: [...plan.start], mustStayUp: [...plan.mustStayUp], paused: [...plan.paused], brokenBefore: [...plan.brokenBefore], scales: [...plan.scales],
    images,
  };
  try {
    writeFileSync(join(dir, UNFINISHED_UPDATE_FILE), JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  } catch {
    // a read-only folder: the lock is not taken there either (withStackLock)
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
