// A small per-catalog LRU for pure work (resolving, rendering) that the same inputs repeat.
import type { Catalog } from "../catalog/index.ts";

export function catalogMemo<T>(size: number) {
  const caches = new WeakMap<Catalog, Map<string, T>>();
  /** The value for `key`, made with `make` on a miss; the least recently used entry goes first. */
  return (catalog: Catalog, key: string, make: () => T): T => {
    let cache = caches.get(catalog);
    if (!cache) caches.set(catalog, (cache = new Map()));
    let value = cache.get(key);
    if (value !== undefined) cache.delete(key);
    else value = make();
    cache.set(key, value);
    if (cache.size > size) cache.delete(cache.keys().next().value!);
    return value;
  };
}
