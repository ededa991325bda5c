// The project names each platform accepts: checked by the deployers before any call and by the
// web UI before the Deploy button is pressed. Pure, so the browser bundle can import it.

// Coolify's server-side rule (research §2): 3–255 characters from this set.
const COOLIFY_NAME = /^[\p{L}\p{M}\p{N}\s\-_.@/&()#,:+]+$/u;

export function coolifyNameProblem(name: string): string | null {
  if (name.length < 3 || name.length > 255) return `Coolify project names need 3 to 255 characters; "${name}" has ${name.length}`;
  if (!COOLIFY_NAME.test(name)) return `Coolify does not accept the project name "${name}" (letters, digits, spaces and - _ . @ / & ( ) # , : + only)`;
  return null;
}

export const dokployNameProblem = (name: string): string | null => (name === "" ? "The project name is empty" : null);

/** Why `provider` would refuse this project name, or null. */
export function nameProblemFor(provider: string, name: string): string | null {
  if (provider === "coolify") return coolifyNameProblem(name.trim());
  if (provider === "dokploy") return dokployNameProblem(name.trim());
  return null;
}
