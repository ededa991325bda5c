// The variables a bundle refuses to start without. Compose: `${NAME:?…}` stops when NAME is unset
// or empty, `${NAME?…}` only when it is unset; it reads the parsed file, so comments do not count,
// and every string compose interpolates is read, keys included; `$$` is a literal `$`. A bare-metal
// bundle's native install scripts stop on each empty secret they use (nativeSecretGuard). One
// reading serves generate and doctor (which name the empty secrets of a bundle made without
// them) and deploy (which refuses to send a stack the platform would accept and then fail to
// start).
import { envValues } from "./parse-env.ts";

export interface RequiredReference {
  name: string;
  /** True when some reference stops on an empty value too (`:?`), not only on an unset one. */
  refusesEmpty: boolean;
}

const REQUIRED_REFERENCE = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:?)\?/g;

/** Every variable the parsed compose document(s) stop without, once each, in order of first use. */
export function requiredReferences(...documents: unknown[]): RequiredReference[] {
  const found = new Map<string, RequiredReference>();
  const visit = (node: unknown): void => {
    if (typeof node === "string") {
      for (const [whole, name, colon] of node.matchAll(REQUIRED_REFERENCE)) {
        if (whole === "$$") continue;
        const known = found.get(name!);
        if (known) known.refusesEmpty ||= colon === ":";
        else found.set(name!, { name: name!, refusesEmpty: colon === ":" });
      }
    } else if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === "object") for (const [key, value] of Object.entries(node)) visit(key), visit(value);
  };
  documents.forEach(visit);
  return [...found.values()];
}

/** The required variables `envText` leaves unset, or empty where that stops compose too: what
 *  `docker compose up` would refuse with this .env (a value of spaces is not empty to compose,
 *  which starts with it). */
export function requiredByCompose(documents: readonly unknown[], envText: string): string[] {
  const values = envValues(envText);
  return requiredReferences(...documents)
    .filter(({ name, refusesEmpty }) => {
      const value = values.get(name);
      return value === undefined || (refusesEmpty && value === "");
    })
    .map((r) => r.name);
}

/** The line a native install script (native/<id>.sh) has for each secret it uses: it stops before
 *  installing anything while the secret is empty (a role or password file made from an empty value
 *  would stay so when the script runs again). `name` is a variable name ([A-Z0-9_]). */
export const nativeSecretGuard = (name: string) => `[ -n "\${${name}:-}" ] || { echo "${name} is empty in .env: fill it in, then run this again" >&2; exit 1; }`;

const NATIVE_SECRET_GUARD = /^\[ -n "\$\{([A-Za-z_][A-Za-z0-9_]*):-\}" \] \|\|/gm;

/** The secrets the native install scripts stop on while `envText` leaves them empty (the guard's
 *  `-n`: a value of spaces passes it), once each, in order of first use. */
export function requiredByNativeScripts(scripts: readonly string[], envText: string): string[] {
  const values = envValues(envText);
  const names = new Set(scripts.flatMap((script) => [...script.matchAll(NATIVE_SECRET_GUARD)].map((m) => m[1]!)));
  return [...names].filter((name) => !values.get(name));
}
