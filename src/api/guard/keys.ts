// API key checks (SPEC §5). Keys are compared as SHA-256 digests with timingSafeEqual, and every
// configured key is compared on every request, so timing reveals neither a key nor which one matched.
// Bun's hasher and the global crypto.timingSafeEqual: loading node:crypto for these two would
// cost the server a few milliseconds of its start-up.
import type { ApiKeyEntry, BucketLimits } from "./config.ts";

export type KeyCheck =
  | { kind: "none" }
  | { kind: "invalid" }
  /** `id` names the key in counters and logs without revealing it (its position in API_KEYS). */
  | { kind: "valid"; id: string; limits?: BucketLimits };

const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text, "utf8").digest();

export interface KeyRing {
  check(presented: string | null): KeyCheck;
}

export function createKeyRing(entries: ApiKeyEntry[]): KeyRing {
  const digests = entries.map((e) => digest(e.key));
  return {
    check(presented) {
      if (presented === null) return { kind: "none" };
      const candidate = digest(presented);
      let match = -1;
      for (let i = 0; i < digests.length; i++) {
        // No early exit: the loop costs the same wherever (or whether) the key matches.
        if (crypto.timingSafeEqual(candidate, digests[i]) && match === -1) match = i;
      }
      return match === -1 ? { kind: "invalid" } : { kind: "valid", id: `key${match}`, limits: entries[match].limits };
    },
  };
}
