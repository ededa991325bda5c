// The mode each bundle file gets on disk and in the ZIP. Its own module so the web UI can build
// the ZIP without loading the generator.

/** Files written with the executable bit (scripts). */
export const isExecutable = (path: string) => path.endsWith(".sh");
/** Files written readable by the owner only. */
export const isPrivate = (path: string) => path === ".env";
/** Unix permission bits of a bundle file: 0600 for `.env`, 0755 for scripts, 0644 otherwise. */
export const fileMode = (path: string) => (isPrivate(path) ? 0o600 : isExecutable(path) ? 0o755 : 0o644);
