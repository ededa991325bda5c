// What goes into the API keys the catalog signs (`jwt` variables, Supabase's anon and
// service_role keys). The core signs them with Bun's hasher and the browser with WebCrypto; both
// take header and claims from here so the two tokens stay equal. No Bun or Buffer: the UI loads it.
import type { Variable } from "../../schema/catalog.ts";

export type JwtRecipe = NonNullable<Variable["jwt"]>;

/** The JWT header, as JSON: HS256, no key id. */
export const JWT_HEADER_JSON = JSON.stringify({ alg: "HS256", typ: "JWT" });

/** The claims of a key made by `jwt`: its role, and its issuer as `iss` when it names one. */
export const jwtClaims = (jwt: JwtRecipe): Record<string, string> => ({ role: jwt.role, ...(jwt.issuer ? { iss: jwt.issuer } : {}) });
