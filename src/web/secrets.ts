// Masking of generated secrets in the file preview, and the preview's file tree. Pure functions.

/** Variables whose values are hidden until the user reveals them. */
export const isSecretName = (name: string): boolean => /PASSWORD|SECRET|KEY|TOKEN/i.test(name);

export const isEnvFile = (path: string): boolean => /(^|\/)\.env(\.[A-Za-z0-9_-]+)?$/.test(path);

export const MASK = "••••••••";

const ENV_LINE = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/;

/** The generator's comment above each secret it made (`# <what it is> (generated secret)`). */
const GENERATED_SECRET = /\(generated secret\)\s*$/;

/** Each secret line of a `.env` text: those the generator marks as generated (whatever their
 *  name: salts, IVs, app ids) and any variable named like a secret. */
function secretLines(envText: string): { index: number; match: RegExpExecArray }[] {
  const out: { index: number; match: RegExpExecArray }[] = [];
  let marked = false;
  envText.split("\n").forEach((line, index) => {
    if (line.trimStart().startsWith("#")) {
      marked = GENERATED_SECRET.test(line);
      return;
    }
    const match = ENV_LINE.exec(line);
    const secret = marked;
    marked = false;
    if (match && (secret || isSecretName(match[2]))) out.push({ index, match });
  });
  return out;
}

/** Non-empty values of the secrets in a `.env` text. */
export function secretValues(envText: string): string[] {
  return secretLines(envText).map(({ match }) => unquote(match[4].trim())).filter((value) => value !== "");
}

function unquote(value: string): string {
  const q = value[0];
  return (q === '"' || q === "'") && value.endsWith(q) && value.length >= 2 ? value.slice(1, -1) : value;
}

/** Shorter values are not looked for in other files: a weak one set by hand ("redis") is also a
 *  host name there, and hiding every "redis" would garble the file and point at the value. */
const SHARED_MIN = 12;

/**
 * The file as the preview shows it before "Reveal": in a `.env`, the value of every secret line,
 * however short; in every file, the longer secret values wherever they are repeated (install
 * scripts, config files, a connection URL).
 */
export function maskSecrets(path: string, text: string, secrets: readonly string[]): string {
  let out = text;
  if (isEnvFile(path)) {
    const lines = out.split("\n");
    for (const { index, match } of secretLines(out)) if (match[4].trim() !== "") lines[index] = `${match[1]}${match[2]}${match[3]}${MASK}`;
    out = lines.join("\n");
  }
  // Longest first, so a secret that contains another is hidden whole.
  const sorted = [...new Set(secrets)].filter((s) => s.length >= SHARED_MIN).sort((a, b) => b.length - a.length);
  for (const secret of sorted) out = out.split(secret).join(MASK);
  return out;
}

export interface TreeNode {
  name: string;
  /** Full path for files; undefined for folders. */
  path?: string;
  children: TreeNode[];
}

/** The main files (compose, README, .env) lead, then folders, then other files, each by name. */
export function buildFileTree(paths: readonly string[]): TreeNode {
  const root: TreeNode = { name: "", children: [] };
  for (const path of paths) {
    const parts = path.split("/");
    let node = root;
    parts.forEach((part, i) => {
      const isFile = i === parts.length - 1;
      let next = node.children.find((c) => c.name === part && (c.path !== undefined) === isFile);
      if (!next) {
        next = isFile ? { name: part, path, children: [] } : { name: part, children: [] };
        node.children.push(next);
      }
      node = next;
    });
  }
  sortTree(root);
  return root;
}

const LEADING = ["docker-compose.yml", "README.md", ".env"];
function rank(node: TreeNode): number {
  if (node.path === undefined) return LEADING.length;
  const i = LEADING.indexOf(node.name);
  return i === -1 ? LEADING.length + 1 : i;
}

function sortTree(node: TreeNode): void {
  node.children.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
  for (const child of node.children) sortTree(child);
}

/** The file to show first in a bundle. */
export function firstFile(paths: readonly string[]): string | undefined {
  return LEADING.find((p) => paths.includes(p)) ?? [...paths].sort()[0];
}
