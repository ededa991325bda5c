// Parses and checks the catalog files against the schemas. Pure: takes the file map, returns
// indexed data or throws a CatalogError listing every problem found.
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { TSchema } from "@sinclair/typebox";
import { parse as parseYaml } from "yaml";
import {
  CatalogService, CategoryNames, Preset, SkillFrontMatter, SkillPack,
  CATEGORY_IDS, type CategoryId,
} from "../schema/catalog.ts";

export interface Skill extends SkillFrontMatter {
  /** Full SKILL.md text, front matter included. */
  markdown: string;
}

export interface Catalog {
  services: CatalogService[];
  servicesById: Map<string, CatalogService>;
  core: CatalogService;
  presets: Preset[];
  presetsById: Map<string, Preset>;
  packs: SkillPack[];
  packsById: Map<string, SkillPack>;
  skills: Map<string, Skill>;
  categoryNames: Map<CategoryId, string>;
}

export class CatalogError extends Error {
  constructor(readonly problems: string[]) {
    super(`Catalog is invalid:\n- ${problems.join("\n- ")}`);
  }
}

const checkers = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>();
function checkSchema<T>(schema: TSchema, value: unknown, where: string, problems: string[]): value is T {
  let c = checkers.get(schema);
  if (!c) checkers.set(schema, (c = TypeCompiler.Compile(schema)));
  if (c.Check(value)) return true;
  for (const e of c.Errors(value)) problems.push(`${where}: ${e.path || "/"} ${e.message}`);
  return false;
}

/** Catalog files may share a block with `<<: *anchor` (Dify's api, worker and beat run one
 *  image with one environment); the files are ours, read at build time. */
const CATALOG_YAML = { merge: true } as const;

function parseFile(path: string, text: string, problems: string[]): unknown {
  try {
    return parseYaml(text, CATALOG_YAML);
  } catch (e) {
    problems.push(`${path}: ${(e as Error).message}`);
    return undefined;
  }
}

const FRONT_MATTER = /^---\n([\s\S]*?)\n---\n/;

/** A SKILL.md whose front matter was parsed ahead of time. */
export interface PreparsedSkill {
  meta: unknown;
  markdown: string;
}

/** Catalog files with YAML already parsed (done at build time, so start-up parses nothing). */
export type PreparsedFiles = Record<string, unknown>;

/** Parse every YAML file and SKILL.md front matter; the result is plain JSON data. */
export function preparse(files: Record<string, string>): PreparsedFiles {
  const out: PreparsedFiles = {};
  for (const [path, text] of Object.entries(files)) {
    if (path.endsWith(".yaml")) out[path] = parseYaml(text, CATALOG_YAML);
    else if (path.endsWith("/SKILL.md")) {
      const fm = FRONT_MATTER.exec(text);
      out[path] = { meta: fm ? parseYaml(fm[1]) : undefined, markdown: text } satisfies PreparsedSkill;
    } else out[path] = text;
  }
  return out;
}

/**
 * Build the catalog from its files (text, or preparsed). With `check` (the default) every file is
 * checked against its schema and every reference resolved; the build runs that check, so the
 * binary skips it at start-up.
 */
export function loadCatalog(files: Record<string, string> | PreparsedFiles, options: { check?: boolean } = {}): Catalog {
  const checking = options.check !== false;
  const check = checking ? checkSchema : <T>(_s: TSchema, _v: unknown, _w: string, _p: string[]): _v is T => true;
  const problems: string[] = [];
  const services: CatalogService[] = [];
  const presets: Preset[] = [];
  const packs: SkillPack[] = [];
  const skills = new Map<string, Skill>();
  let core: CatalogService | undefined;
  let categoryNames = new Map<CategoryId, string>();

  const valueOf = (path: string, raw: unknown) => (typeof raw === "string" ? parseFile(path, raw, problems) : raw);
  for (const path of Object.keys(files).sort()) {
    const raw = files[path];
    const m = /^(services|presets|packs)\/([a-z0-9-]+)\.yaml$/.exec(path);
    if (m) {
      const value = valueOf(path, raw);
      const [, kind, id] = m;
      const schema = kind === "services" ? CatalogService : kind === "presets" ? Preset : SkillPack;
      if (!check(schema, value, path, problems)) continue;
      if ((value as { id: string }).id !== id) problems.push(`${path}: id must equal the file name`);
      (kind === "services" ? services : kind === "presets" ? presets : packs).push(value as never);
      continue;
    }
    const s = /^skills\/([a-z0-9-]+)\/SKILL\.md$/.exec(path);
    if (s) {
      const { meta, markdown } = typeof raw === "string" ? (preparse({ [path]: raw })[path] as PreparsedSkill) : (raw as PreparsedSkill);
      if (meta === undefined) problems.push(`${path}: missing YAML front matter`);
      else if (check<SkillFrontMatter>(SkillFrontMatter, meta, path, problems)) {
        if (meta.name !== s[1]) problems.push(`${path}: name must equal the folder name`);
        skills.set(s[1], { ...meta, markdown });
      }
      continue;
    }
    if (path === "core.yaml") {
      const value = valueOf(path, raw);
      if (check<CatalogService>(CatalogService, value, path, problems)) core = value;
      continue;
    }
    if (path === "categories.yaml") {
      const value = valueOf(path, raw);
      if (check<{ id: CategoryId; name: string }[]>(CategoryNames, value, path, problems)) {
        categoryNames = new Map(value.map((c) => [c.id, c.name]));
      }
      continue;
    }
    if (path.endsWith(".md")) continue; // authoring notes
    problems.push(`${path}: unexpected file in the catalog`);
  }

  const servicesById = new Map(services.map((s) => [s.id, s]));
  const presetsById = new Map(presets.map((p) => [p.id, p]));
  const packsById = new Map(packs.map((p) => [p.id, p]));
  if (!core) problems.push("core.yaml: missing or invalid");
  for (const c of CATEGORY_IDS) if (!categoryNames.has(c)) problems.push(`categories.yaml: no name for ${c}`);
  if (checking) problems.push(...crossCheck(services, servicesById, presets, packsById, packs, skills));
  if (problems.length) throw new CatalogError(problems);

  // Stable order for listings: by category order, then id. Ids are [a-z0-9-], so comparing code
  // units gives the same order as localeCompare without loading ICU's collation data at start-up
  // (about 0.5 ms and 1 MiB of resident memory in the server binary).
  const catIndex = new Map(CATEGORY_IDS.map((c, i) => [c, i]));
  services.sort((a, b) => catIndex.get(a.category)! - catIndex.get(b.category)! || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // The catalog is shared by every request: freeze it so no caller can change it for the others.
  for (const item of [...services, core!, ...presets, ...packs]) deepFreeze(item);
  return { services, servicesById, core: core!, presets, presetsById, packs, packsById, skills, categoryNames };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** References between files: every id resolves, variables are declared and namespaced. */
function crossCheck(
  services: CatalogService[], byId: Map<string, CatalogService>, presets: Preset[],
  packsById: Map<string, SkillPack>, packs: SkillPack[], skills: Map<string, Skill>,
): string[] {
  const p: string[] = [];
  const volumeOwner = new Map<string, string>();
  const varOwner = new Map<string, string>();
  for (const s of services) {
    const where = `services/${s.id}.yaml`;
    for (const d of s.dependencies) if (!byId.has(d)) p.push(`${where}: unknown dependency ${d}`);
    for (const d of s.dependencies) if (s.conflicts.includes(d)) p.push(`${where}: ${d} is both dependency and conflict`);
    for (const c of s.conflicts) if (!byId.has(c)) p.push(`${where}: unknown conflict ${c}`);
    for (const k of s.skills) if (!skills.has(k)) p.push(`${where}: skill ${k} has no skills/${k}/SKILL.md`);
    if (s.ports.filter((x) => x.web).length > 1) p.push(`${where}: more than one web port`);
    p.push(...sidecarOrderProblems(s).map((problem) => `${where}: ${problem}`));
    const prefix = s.id.toUpperCase().replace(/-/g, "_") + "_";
    for (const v of s.variables ?? []) {
      if (!v.name.startsWith(prefix)) p.push(`${where}: variable ${v.name} must start with ${prefix}`);
      const owner = varOwner.get(v.name);
      if (owner) p.push(`${where}: variable ${v.name} already declared by ${owner}`);
      varOwner.set(v.name, s.id);
      if (v.publicUrlOf !== undefined && !byId.has(v.publicUrlOf)) p.push(`${where}: variable ${v.name} names unknown service ${v.publicUrlOf}`);
      if ((v.publicUrlOf !== undefined || v.publicUrlPart !== undefined) && !v.publicUrl) p.push(`${where}: variable ${v.name} has publicUrlOf/publicUrlPart without publicUrl`);
      if (v.beforeStart && (v.secret || v.default !== undefined)) p.push(`${where}: variable ${v.name} is beforeStart but has a value (secret or default)`);
      if (v.pattern !== undefined) {
        let shape: RegExp | undefined;
        try {
          shape = new RegExp(v.pattern);
        } catch {
          p.push(`${where}: variable ${v.name} has a pattern that is not a regular expression`);
        }
        if (shape && !/^\^.*\$$/.test(v.pattern)) p.push(`${where}: variable ${v.name}'s pattern must cover the whole value (^...$)`);
        if (shape && v.default !== undefined && !shape.test(v.default)) p.push(`${where}: variable ${v.name}'s default does not match its pattern`);
      }
      if (v.jwt) {
        const signer = s.variables?.find((x) => x.name === v.jwt!.secret);
        if (!v.secret) p.push(`${where}: variable ${v.name} is a jwt but not secret`);
        if (v.format !== undefined || v.length !== undefined) p.push(`${where}: variable ${v.name} is a jwt: format and length do not apply`);
        if (!signer?.secret || signer.jwt) p.push(`${where}: variable ${v.name} must be signed with a drawn secret variable of ${s.id}, not ${v.jwt.secret}`);
      }
    }
    for (const v of s.volumes) {
      if (v.source.startsWith("/")) continue;
      const owner = volumeOwner.get(v.source);
      // One service may mount its volume at two paths (an app that moved its files).
      if (owner && owner !== s.id) p.push(`${where}: volume ${v.source} already used by ${owner}`);
      volumeOwner.set(v.source, s.id);
    }
  }
  // Every ${NAME} used by a service is declared by it or by one of its transitive dependencies.
  const declared = (id: string, seen = new Set<string>()): Set<string> => {
    const out = new Set<string>();
    if (seen.has(id)) return out;
    seen.add(id);
    const s = byId.get(id);
    if (!s) return out;
    for (const v of s.variables ?? []) out.add(v.name);
    for (const d of s.dependencies) for (const n of declared(d, seen)) out.add(n);
    return out;
  };
  for (const s of services) {
    const names = declared(s.id);
    for (const ref of referencedVars(s)) if (!names.has(ref)) p.push(`services/${s.id}.yaml: \${${ref}} is not declared by it or its dependencies`);
  }
  for (const pr of presets) {
    for (const id of pr.services) if (!byId.has(id)) p.push(`presets/${pr.id}.yaml: unknown service ${id}`);
    for (const id of pr.skillPacks) if (!packsById.has(id)) p.push(`presets/${pr.id}.yaml: unknown pack ${id}`);
  }
  for (const pk of packs) {
    for (const id of pk.services) if (!byId.has(id)) p.push(`packs/${pk.id}.yaml: unknown service ${id}`);
    for (const k of pk.skills) if (!skills.has(k)) p.push(`packs/${pk.id}.yaml: skill ${k} has no SKILL.md`);
  }
  for (const [id, sk] of skills) for (const sv of sk.services) if (!byId.has(sv)) p.push(`skills/${id}/SKILL.md: unknown service ${sv}`);
  return p;
}

/** A sidecar's `after` names siblings, never itself, and the waits form no cycle (compose would
 *  refuse the file); a job has no health check. */
function sidecarOrderProblems(s: CatalogService): string[] {
  const sidecars = new Map((s.sidecars ?? []).map((sc) => [sc.name, sc]));
  const problems: string[] = [];
  for (const sc of sidecars.values()) {
    for (const name of sc.after ?? []) if (name === sc.name || !sidecars.has(name)) problems.push(`sidecar ${sc.name} waits for ${name}, not another sidecar of ${s.id}`);
    // Compose waits for a job's exit; a health check would never be read.
    if (sc.runsOnce && sc.healthCheck) problems.push(`sidecar ${sc.name} runs once and cannot have a health check`);
  }
  const waitsFor = (name: string, target: string, seen = new Set<string>()): boolean =>
    (sidecars.get(name)?.after ?? []).some((n) => n === target || (!seen.has(n) && (seen.add(n), waitsFor(n, target, seen))));
  for (const name of sidecars.keys()) if (waitsFor(name, name)) problems.push(`sidecar ${name} waits for itself through its after list`);
  return problems;
}

const VAR_REF = /\$\{([A-Z][A-Z0-9_]*)(?:[:?-][^}]*)?\}/g;

/** Names of `.env` variables a service refers to anywhere in its definition. */
export function referencedVars(s: CatalogService): Set<string> {
  const out = new Set<string>();
  const scan = (text: string) => { for (const m of text.matchAll(VAR_REF)) out.add(m[1]); };
  for (const v of Object.values(s.env)) scan(v);
  for (const v of Object.values(s.coreEnv ?? {})) scan(v);
  for (const v of Object.values(s.proxiedEnv ?? {})) scan(v);
  for (const a of [...(s.command ?? []), ...(s.entrypoint ?? [])]) scan(a);
  for (const sc of s.sidecars ?? []) {
    for (const v of Object.values(sc.env ?? {})) scan(v);
    for (const a of sc.command ?? []) scan(a);
  }
  return out;
}
