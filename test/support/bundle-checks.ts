// Structural checks every generated bundle must pass (issue: generation, "Done when").
import Ajv from "ajv";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { FileMap } from "../../src/core/generate/context.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";

const composeSchema = JSON.parse(readFileSync(join(import.meta.dir, "..", "reference", "compose-spec.schema.json"), "utf8"));
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false, validateSchema: false });
const validateCompose = ajv.compile(composeSchema);

export interface ComposeDoc {
  name: string;
  services: Record<string, {
    image: string;
    ports?: string[];
    volumes?: string[];
    depends_on?: Record<string, { condition: string }>;
    environment?: Record<string, string>;
    healthcheck?: { test: string[] };
    [k: string]: unknown;
  }>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, unknown>;
}

/** Returns a list of problems (empty when the bundle is sound). */
export function bundleProblems(files: FileMap): string[] {
  const problems: string[] = [];
  const composeText = files["docker-compose.yml"];
  if (!composeText) return ["no docker-compose.yml"];
  const compose = parse(composeText) as ComposeDoc;
  if (!validateCompose(compose)) problems.push(`compose schema: ${ajv.errorsText(validateCompose.errors)}`);
  if ("version" in compose) problems.push("compose has a version key");

  const hostPorts = new Map<string, string>();
  for (const [name, svc] of Object.entries(compose.services)) {
    for (const p of svc.ports ?? []) {
      const parts = String(p).split(":");
      const proto = String(p).endsWith("/udp") ? "udp" : "tcp";
      const host = `${proto}/${parts[parts.length - 2]}`;
      if (hostPorts.has(host)) problems.push(`host port ${host} published by ${hostPorts.get(host)} and ${name}`);
      hostPorts.set(host, name);
      if (parts.length === 2 && /^(5432|6379|27017|3306|9200)$/.test(parts[0])) problems.push(`${name} publishes a database port on all interfaces: ${p}`);
    }
    for (const dep of Object.keys(svc.depends_on ?? {})) if (!compose.services[dep]) problems.push(`${name} depends on missing ${dep}`);
    for (const v of svc.volumes ?? []) {
      const source = v.split(":")[0];
      if (source.startsWith("./")) {
        const rel = source.slice(2);
        if (!files[rel] && !Object.keys(files).some((f) => f.startsWith(rel + "/"))) problems.push(`${name} mounts ${source}, which the bundle lacks`);
      } else if (!source.startsWith("/") && !compose.volumes?.[source]) problems.push(`${name} uses undeclared volume ${source}`);
    }
  }

  const env = parseEnvValues(files[".env"] ?? "");
  const example = parseEnvValues(files[".env.example"] ?? "");
  for (const m of composeText.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) {
    if (!env.has(m[1])) problems.push(`\${${m[1]}} is not defined in .env`);
    if (!example.has(m[1])) problems.push(`\${${m[1]}} is not listed in .env.example`);
  }
  if (composeText.includes("$$$")) problems.push("a $ was escaped more than once");
  for (const m of composeText.replace(/\$\$/g, "").matchAll(/\$(?!\{)/g)) problems.push(`bare $ at ${m.index} in compose`);
  return [...new Set(problems)];
}

export const composeOf = (files: FileMap) => parse(files["docker-compose.yml"]) as ComposeDoc;
