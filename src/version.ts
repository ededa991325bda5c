// Version and commit: replaced at compile time by build.ts (`define`), read from package.json otherwise.
import pkg from "../package.json" with { type: "json" };

declare const STACKGEN_VERSION: string | undefined;
declare const STACKGEN_COMMIT: string | undefined;

export const VERSION: string = typeof STACKGEN_VERSION === "string" ? STACKGEN_VERSION : pkg.version;
export const COMMIT: string = typeof STACKGEN_COMMIT === "string" ? STACKGEN_COMMIT : "dev";
