// Where secret values come from. Production uses the CSPRNG; tests inject a fixed source so
// golden bundles compare byte for byte.
export type SecretFormat = "alnum" | "hex";
export type SecretSource = (name: string, format: SecretFormat, length: number) => string;

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX = "0123456789abcdef";

/** Uniform characters from crypto.getRandomValues (rejection sampling, no modulo bias). */
export const cryptoSecrets: SecretSource = (_name, format, length) => {
  const alphabet = format === "hex" ? HEX : ALNUM;
  const limit = 256 - (256 % alphabet.length);
  const chars: number[] = [];
  while (chars.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (let i = 0; i < bytes.length && chars.length < length; i++) {
      if (bytes[i] < limit) chars.push(alphabet.charCodeAt(bytes[i] % alphabet.length));
    }
  }
  return String.fromCharCode(...chars);
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
