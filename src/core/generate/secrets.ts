// Where secret values come from. Production uses the CSPRNG; tests inject a fixed source so
// golden bundles compare byte for byte.
import { JWT_HEADER_JSON, jwtClaims, type JwtRecipe } from "./jwt-claims.ts";

export type SecretFormat = "alnum" | "hex" | "password";
export type SecretSource = (name: string, format: SecretFormat, length: number) => string;

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX = "0123456789abcdef";
/** `password`: `length` alphanumeric characters (the secret every variable has), then one
 *  upper-case letter, one lower-case letter, one digit and one symbol, for apps that refuse a
 *  password without each (Coolify's root user). The symbols need no quoting in .env, YAML, JSON
 *  or URLs. */
const PASSWORD_CLASSES = ["ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789", "-_."];

const codesOf = (alphabet: string) => Uint8Array.from(alphabet, (c) => c.charCodeAt(0));

/** Uniform characters of one alphabet, drawn ahead in blocks and decoded into one string per
 *  block: a secret is then a slice of it. Decoding per secret (or appending per character) cost
 *  more than the rest of a cached generation. Every character is used once. */
function characterStream(alphabet: string) {
  const codes = codesOf(alphabet);
  // Rejection sampling: bytes at or above `limit` would make the first characters likelier.
  const limit = 256 - (256 % codes.length);
  const chars = new Uint8Array(2048);
  // CSPRNG bytes, one getRandomValues call per 4 KiB rather than per secret.
  const bytes = new Uint8Array(4096);
  const latin1 = new TextDecoder("latin1");
  let block = "";
  let at = 0;
  const refill = () => {
    let filled = 0;
    while (filled < chars.length) {
      crypto.getRandomValues(bytes);
      for (let i = 0; i < bytes.length && filled < chars.length; i++) {
        if (bytes[i] < limit) chars[filled++] = codes[bytes[i] % codes.length];
      }
    }
    block = latin1.decode(chars);
    at = 0;
  };
  const next = (length: number) => {
    if (at + length > block.length) refill();
    at += length;
    return block.slice(at - length, at);
  };
  return (length: number): string => {
    if (length <= chars.length) return next(length);
    // Longer than a block: joined from several.
    let out = "";
    while (out.length < length) out += next(Math.min(chars.length, length - out.length));
    return out;
  };
}

const alnumChars = characterStream(ALNUM);
const hexChars = characterStream(HEX);
const classChars = PASSWORD_CLASSES.map(characterStream);

/** Uniform characters from crypto.getRandomValues (rejection sampling, no modulo bias). */
export const cryptoSecrets: SecretSource = (_name, format, length) => {
  if (format === "hex") return hexChars(length);
  if (format === "password") return alnumChars(length) + classChars.map((chars) => chars(1)).join("");
  return alnumChars(length);
};

/** Deterministic values derived from the variable name (tests and golden bundles only). */
export function fixedSecrets(seed = "stackgen"): SecretSource {
  const derive = (key: string, alphabet: string, length: number) => {
    let out = "";
    let counter = 0;
    while (out.length < length) {
      const digest = new Bun.CryptoHasher("sha256").update(`${seed}:${key}:${counter++}`).digest();
      for (const b of digest) if (out.length < length) out += alphabet[b % alphabet.length];
    }
    return out;
  };
  return (name, format, length) => {
    if (format === "hex") return derive(name, HEX, length);
    if (format === "password") return derive(name, ALNUM, length) + PASSWORD_CLASSES.map((a, i) => derive(`${name}:${i}`, a, 1)).join("");
    return derive(name, ALNUM, length);
  };
}

/** A secret made from another one (the `jwt` variables): `derive` takes the value of `from`. */
export interface DerivedSecret {
  name: string;
  from: string;
  derive(fromValue: string): string;
}

const base64url = (text: string) => Buffer.from(text).toString("base64url");
const JWT_HEADER = base64url(JWT_HEADER_JSON);

/** An HS256 JWT with these claims. No `exp`: such a key lasts as long as its secret, and a new
 *  secret (with keys signed again) revokes it. */
export function signJwt(secret: string, claims: Record<string, string>): string {
  const signed = `${JWT_HEADER}.${base64url(JSON.stringify(claims))}`;
  return `${signed}.${new Bun.CryptoHasher("sha256", secret).update(signed).digest("base64url")}`;
}

/** The derived secrets among `variables` (a variable without a `jwt` is drawn, not derived). */
export function derivedSecrets(variables: readonly { name: string; jwt?: JwtRecipe }[]): DerivedSecret[] {
  return variables.flatMap(({ name, jwt }) => jwt
    ? [{ name, from: jwt.secret, derive: (value: string) => signJwt(value, jwtClaims(jwt)) }]
    : []);
}
