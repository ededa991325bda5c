// Masking of generated secrets in the file preview, and the preview's file tree. Pure functions.

/** Variables whose values are hidden until the user reveals them. */
export const isSecretName = (name: string): boolean => /PASSWORD|SECRET|KEY|TOKEN/i.test(name);

export const isEnvFile = (path: string): boolean => /(^|\/)\.env(\.[A-Za-z0-9_-]+)?$/.test(path);

export const MASK = "••••••••";

const ENV_LINE = /^(\s*(?:export\s+)?)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*)$/;

/** The generator's comment above each secret it made (`# <what it is> (generated secret)`). */
const GENERATED_SECRET = /\(generated secret\)\s*$/;

/** Non-empty values of the secrets in a `.env` text: those the generator marks as generated
 *  (whatever their name: salts, IVs, app ids) and any variable named like a secret. */
export function secretValues(envText: string): string[] {
  const values: string[] = [];
  let marked = false;
  for (const line of envText.split("\n")) {
    if (line.trimStart().startsWith("#")) {
      marked = GENERATED_SECRET.test(line);
      continue;
    }
    const m = ENV_LINE.exec(line);
    const secret = marked;
    marked = false;
    if (!m) continue;
    const value = unquote(m[4].trim());
    if ((secret || isSecretName(m[2])) && value !== "") values.push(value);
  }
  return values;
}

function unquote(value: string): string {
  const q = value[0];
  return (q === '"' || q === "'") && value.endsWith(q) && value.length >= 2 ? value.slice(1, -1) : value;
}

/**
 * Hides every known secret value in `text`. Works for `.env` itself and for any other file that
 * happens to repeat a value (install scripts, config files).
 */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  // Longest first, so a secret that contains another is hidden whole.
  const sorted = [...new Set(secrets)].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  let out = text;
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
