// API keys an app checks against its own JWT secret (Supabase's anon and service_role keys),
// signed in the browser. An import that keeps an export's JWT secret must sign the keys it makes
// anew with that secret, as `stackgen generate` does when it regenerates over a .env; the core
// signs with Bun's hasher, which a browser lacks, and WebCrypto is asynchronous, so every key the
// merge may need is signed before it runs (tests hold the tokens equal to the core's).
import type { DerivedSecret } from "../core/generate/secrets.ts";
import { envValues } from "../core/parse-env.ts";
import { JWT_HEADER_JSON, jwtClaims, type JwtRecipe } from "../core/generate/jwt-claims.ts";

interface SignedVariable {
  name: string;
  jwt?: JwtRecipe;
}

const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const utf8 = (text: string) => new TextEncoder().encode(text);

/** An HS256 JWT with these claims, as core/generate/secrets.ts signJwt makes it. */
export async function signJwtInBrowser(secret: string, claims: Record<string, string>): Promise<string> {
  const signed = `${base64url(utf8(JWT_HEADER_JSON))}.${base64url(utf8(JSON.stringify(claims)))}`;
  const key = await crypto.subtle.importKey("raw", utf8(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `${signed}.${base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8(signed))))}`;
}

/** The derived secrets among `variables`, each signed beforehand with every value its secret has
 *  in `envTexts` (the export's .env and the generated one: the merge keeps one of them). */
export async function signedKeys(variables: readonly SignedVariable[], envTexts: readonly string[]): Promise<DerivedSecret[]> {
  const derived: DerivedSecret[] = [];
  const done = new Set<string>();
  for (const { name, jwt } of variables) {
    if (!jwt || done.has(name)) continue;
    done.add(name);
    const claims = jwtClaims(jwt);
    const tokens = new Map<string, string>();
    for (const text of envTexts) {
      const secret = envValues(text).get(jwt.secret);
      if (secret && !tokens.has(secret)) tokens.set(secret, await signJwtInBrowser(secret, claims));
    }
    derived.push({
      name,
      from: jwt.secret,
      derive: (value) => {
        const token = tokens.get(value);
        if (token === undefined) throw new Error(`${name} could not be signed with the ${jwt.secret} it would keep.`);
        return token;
      },
    });
  }
  return derived;
}
