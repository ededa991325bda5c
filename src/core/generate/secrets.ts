// Where secret values come from. Production uses the CSPRNG; tests inject a fixed source so
// golden bundles compare byte for byte.
export type SecretFormat = "alnum" | "hex";
export type SecretSource = (name: string, format: SecretFormat, length: number) => string;

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX = "0123456789abcdef";

/** CSPRNG bytes fetched in blocks: one getRandomValues call per block, not per secret. Every byte
 *  is used once, then the block is refilled. */
const pool = new Uint8Array(4096);
let poolAt = pool.length;
function randomByte(): number {
  if (poolAt === pool.length) {
    crypto.getRandomValues(pool);
    poolAt = 0;
  }
  return pool[poolAt++];
}

const codesOf = (alphabet: string) => Uint8Array.from(alphabet, (c) => c.charCodeAt(0));
const ALNUM_CODES = codesOf(ALNUM);
const HEX_CODES = codesOf(HEX);
/** The characters of one secret, decoded into a string at once: appending them one by one made
 *  a short-lived string per character, most of a generation's garbage. */
let chars = new Uint8Array(64);
const ascii = new TextDecoder("latin1");

/** Uniform characters from crypto.getRandomValues (rejection sampling, no modulo bias). */
export const cryptoSecrets: SecretSource = (_name, format, length) => {
  const alphabet = format === "hex" ? HEX_CODES : ALNUM_CODES;
  const limit = 256 - (256 % alphabet.length);
  if (chars.length < length) chars = new Uint8Array(length);
  let filled = 0;
  while (filled < length) {
    const byte = randomByte();
    if (byte < limit) chars[filled++] = alphabet[byte % alphabet.length];
  }
  return ascii.decode(chars.subarray(0, length));
};

/** Deterministic values derived from the variable name (tests and golden bundles only). */
export function fixedSecrets(seed = "stackgen"): SecretSource {
  return (name, format, length) => {
    const alphabet = format === "hex" ? HEX : ALNUM;
    let out = "";
    let counter = 0;
    while (out.length < length) {
      const digest = new Bun.CryptoHasher("sha256").update(`${seed}:${name}:${counter++}`).digest();
      for (const b of digest) if (out.length < length) out += alphabet[b % alphabet.length];
    }
    return out;
  };
}
