// The resolver: judges a selection. Expands packs, adds dependencies, finds conflicts, moves
// clashing host ports, checks platform and GPU, sums memory. Pure; `/v1/validate` returns its
// result as is and generation refuses to continue when it has conflicts.
import type { Catalog } from "../catalog/index.ts";
import type { CatalogService, Port } from "../schema/catalog.ts";
import type { AddedDependency, Conflict, ValidateResponse, Warning } from "../schema/api.ts";
import type { Selection } from "./check-input.ts";
import { catalogMemo } from "./memo.ts";

export const HIGH_MEMORY_MB = 4096;
/** Host ports that cannot move: the proxy's HTTP(S) entry points and DNS. */
export const FIXED_PORTS: ReadonlySet<number> = new Set([53, 80, 443]);

export interface ResolvedPort extends Port {
  /** Host port after conflict resolution. */
  host: number;
  /** Port declared by the catalog before resolution. */
  declaredHost: number;
}

export interface ResolvedStack extends ValidateResponse {
  selection: Selection;
  /** Resolved services in order (dependencies first), the core gateway excluded. */
  services: CatalogService[];
  /** Host ports per service id (core included) after conflict resolution. */
  ports: Map<string, ResolvedPort[]>;
  core: CatalogService;
}

/** Recent verdicts per catalog (LRU): resolve is pure, and the same selections come back often. */
const recentVerdicts = catalogMemo<ResolvedStack>(256);

/** `resolveUncached` with memory. The result is shared between callers: treat it as read-only. */
export function resolve(selection: Selection, catalog: Catalog): ResolvedStack {
  return recentVerdicts(catalog, JSON.stringify(selection), () => resolveUncached(selection, catalog));
}

export function resolveUncached(selection: Selection, catalog: Catalog): ResolvedStack {
  const warnings: Warning[] = [];
  const conflicts: Conflict[] = [];
  const added: AddedDependency[] = [];
  const get = (id: string) => catalog.servicesById.get(id)!;

  // Requested services in request order: explicit/preset services, then pack services, then the proxy.
  const requested: string[] = [];
  const request = (id: string) => { if (!requested.includes(id)) requested.push(id); };
  selection.services.forEach(request);
  for (const packId of selection.skillPacks) catalog.packsById.get(packId)!.services.forEach(request);
  // A proxy alone is no selection (it would route to nothing): the stack stays empty, as
  // generate, which refuses it, counts it (CONTRACT: no services, packs or preset).
  if (selection.proxy && requested.length > 0) request(selection.proxy);

  const onPlatform = (s: CatalogService) => s.platforms.includes(selection.platform);
  const conflictsWith = (a: CatalogService, b: CatalogService) => a.conflicts.includes(b.id) || b.conflicts.includes(a.id);

  // Depth-first, dependencies before dependents; a dependency that cannot be added is reported.
  const order: string[] = [];
  const visiting = new Set<string>();
  const missing = new Set<string>();
  const visit = (id: string) => {
    if (order.includes(id) || visiting.has(id)) return;
    visiting.add(id);
    const s = get(id);
    for (const dep of s.dependencies) {
      if (order.includes(dep) || requested.includes(dep)) { visit(dep); continue; }
      const d = get(dep);
      const blocker = [...requested, ...order].map(get).find((x) => conflictsWith(x, d));
      if (blocker || !onPlatform(d)) {
        const key = `${id}>${dep}`;
        if (!missing.has(key)) {
          missing.add(key);
          conflicts.push({
            code: "DEPENDENCY_MISSING",
            message: blocker
              ? `${s.name} requires ${d.name}, which conflicts with ${blocker.name}.`
              : `${s.name} requires ${d.name}, which is not available for ${selection.platform}.`,
            services: [id, dep],
          });
        }
        continue;
      }
      if (!added.some((a) => a.service === dep)) {
        added.push({ service: dep, requiredBy: id, reason: s.dependencyReasons?.[dep] ?? `${s.name} requires ${d.name}` });
      }
      visit(dep);
    }
    visiting.delete(id);
    order.push(id);
  };
  requested.forEach(visit);
  const services = order.map(get);

  // Service conflicts, each pair once, in resolved order.
  for (let i = 0; i < services.length; i++) {
    for (let j = i + 1; j < services.length; j++) {
      const [a, b] = [services[i], services[j]];
      if (conflictsWith(a, b)) {
        conflicts.push({ code: "SERVICE_CONFLICT", message: `${a.name} and ${b.name} cannot run in the same stack.`, services: [a.id, b.id] });
      }
    }
  }

  for (const s of services) {
    if (!onPlatform(s)) {
      conflicts.push({
        code: "PLATFORM_INCOMPATIBLE",
        message: `${s.name} publishes no image for ${selection.platform} (available: ${s.platforms.join(", ")}).`,
        services: [s.id],
      });
    }
  }

  const ports = assignPorts([catalog.core, ...services], warnings, conflicts, selection.keptPorts);

  for (const s of services) {
    if (s.maturity === "experimental") {
      warnings.push({ code: "EXPERIMENTAL_SERVICE", message: `${s.name} is experimental; expect breaking changes.`, service: s.id });
    }
  }
  // An empty stack has one warning, EMPTY_STACK (SPEC): GPU support for nothing needs no toolkit.
  if (selection.gpu && services.length > 0) {
    // SPEC §7: the warning comes with gpu on; its message says whether anything here uses a GPU.
    const users = services.filter((s) => s.gpu).map((s) => s.name);
    const message = users.length
      ? `GPU support is on for ${users.join(", ")}: the host needs an NVIDIA GPU and the NVIDIA Container Toolkit (without them, set gpu to false, --no-gpu on the command line).`
      : "GPU support is on, but no service of this selection uses a GPU: nothing is given one, and the host needs no NVIDIA toolkit for it (set gpu to false, --no-gpu on the command line, to drop this warning).";
    warnings.push({ code: "GPU_REQUIRED", message, service: null });
  } else {
    for (const s of services) {
      if (s.gpuRequired) warnings.push({ code: "GPU_REQUIRED", message: `${s.name} needs an NVIDIA GPU; set gpu to true (--gpu on the command line) and install the NVIDIA Container Toolkit.`, service: s.id });
    }
  }

  const estimatedMemoryMB = services.reduce((sum, s) => sum + s.estimatedMemoryMB, 0);
  if (estimatedMemoryMB > HIGH_MEMORY_MB) {
    warnings.push({ code: "HIGH_MEMORY", message: `The stack needs about ${estimatedMemoryMB} MB of memory (more than 4 GB).`, service: null });
  }
  if (services.length === 0) warnings.push({ code: "EMPTY_STACK", message: "No services selected.", service: null });

  return {
    valid: conflicts.length === 0,
    resolvedServices: order,
    addedDependencies: added,
    warnings,
    conflicts,
    estimatedMemoryMB,
    selection,
    services,
    ports,
    core: catalog.core,
  };
}

/** The `keptPorts` key of a service's port. */
export const keptPortKey = (service: string, protocol: string | undefined, container: number) => `${service}/${protocol ?? "tcp"}/${container}`;

/**
 * Give every published port a host port no other service uses. Fixed ports are placed first;
 * a clash between two fixed ports is PORT_CONFLICT. Then the movable ports an existing bundle
 * already publishes keep their host ports (while free), so a service added later moves, not one
 * that runs. A movable port that clashes moves to the next port that is neither taken nor
 * declared by any service of the stack (deterministic).
 */
function assignPorts(services: CatalogService[], warnings: Warning[], conflicts: Conflict[], kept: Record<string, number> = {}): Map<string, ResolvedPort[]> {
  const key = (p: Port, host: number) => `${p.protocol ?? "tcp"}/${host}`;
  const taken = new Map<string, string>();
  const declared = new Set(services.flatMap((s) => s.ports.map((p) => key(p, p.host))));
  const result = new Map<string, ResolvedPort[]>(services.map((s) => [s.id, []]));
  const byId = new Map(services.map((s) => [s.id, s]));

  const placed = new Set<Port>();
  const keptElsewhere: { service: CatalogService; port: ResolvedPort }[] = [];
  const keepExisting = () => {
    for (const s of services) {
      for (const p of s.ports) {
        const host = kept[keptPortKey(s.id, p.protocol, p.container)];
        if (host === undefined || FIXED_PORTS.has(p.host) || FIXED_PORTS.has(host) || taken.has(key(p, host))) continue;
        const port = { ...p, host, declaredHost: p.host };
        taken.set(key(p, host), s.id);
        placed.add(p);
        result.get(s.id)!.push(port);
        if (host !== p.host) keptElsewhere.push({ service: s, port });
      }
    }
  };
  /** A kept port off its usual number whose number another service holds: said as for a move. */
  const explainKept = () => {
    for (const { service: s, port: p } of keptElsewhere) {
      const holder = taken.get(key(p, p.declaredHost));
      if (holder === undefined || holder === s.id) continue;
      warnings.push({ code: "PORT_CONFLICT_RESOLVED", message: `Host port ${p.declaredHost} of ${s.name} is used by ${byId.get(holder)!.name}; ${s.name} is published on ${p.host} instead.`, service: s.id });
    }
  };
  const place = (fixedPass: boolean) => {
    for (const s of services) {
      for (const p of s.ports) {
        if (placed.has(p) || FIXED_PORTS.has(p.host) !== fixedPass) continue;
        let host = p.host;
        const holder = taken.get(key(p, host));
        if (holder !== undefined) {
          if (fixedPass) {
            conflicts.push({
              code: "PORT_CONFLICT",
              message: `${byId.get(holder)!.name} and ${s.name} both need host port ${host}, which cannot be moved.`,
              services: [holder, s.id],
            });
            continue;
          }
          while (taken.has(key(p, host)) || declared.has(key(p, host)) || FIXED_PORTS.has(host)) host++;
          if (host > 65535) {
            conflicts.push({ code: "PORT_CONFLICT", message: `No free host port left for ${s.name}.`, services: [holder, s.id] });
            continue;
          }
          warnings.push({
            code: "PORT_CONFLICT_RESOLVED",
            message: `Host port ${p.host} of ${s.name} is used by ${byId.get(holder)!.name}; ${s.name} is published on ${host} instead.`,
            service: s.id,
          });
        }
        taken.set(key(p, host), s.id);
        result.get(s.id)!.push({ ...p, host, declaredHost: p.host });
      }
    }
  };
  place(true);
  keepExisting();
  place(false);
  explainKept();
  // Keep each service's ports in catalog order.
  for (const s of services) {
    const placed = result.get(s.id)!;
    placed.sort((a, b) => s.ports.findIndex((p) => p.container === a.container && p.host === a.declaredHost) - s.ports.findIndex((p) => p.container === b.container && p.host === b.declaredHost));
  }
  return result;
}

/** The response body of `/v1/validate`. */
export function toValidateResponse(r: ResolvedStack): ValidateResponse {
  return {
    valid: r.valid,
    resolvedServices: r.resolvedServices,
    addedDependencies: r.addedDependencies,
    warnings: r.warnings,
    conflicts: r.conflicts,
    estimatedMemoryMB: r.estimatedMemoryMB,
  };
}
