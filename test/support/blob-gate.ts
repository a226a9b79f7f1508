/**
 * Route a running server's blob stores through test hooks: `beforeGet` / `beforePut` run (and may
 * wait) before each read or write of a part reaches the real store. The server's code reads
 * deps.blobs at each call, so the hooks apply from the next blob operation on.
 */
import type { BlobStore, BlobStores } from "../../src/blob-store/index.ts";
import type { TestServer } from "./harness.ts";

export interface BlobGate {
  beforeGet?(key: string): Promise<void>;
  beforePut?(key: string): Promise<void>;
}

export function gateBlobStores(s: TestServer, gate: BlobGate): void {
  const blobs = s.deps.blobs;
  const wrap = (store: BlobStore): BlobStore => ({
    ...store,
    name: store.name,
    async get(key, span) {
      await gate.beforeGet?.(key);
      return store.get(key, span);
    },
    async put(key, data, opts) {
      await gate.beforePut?.(key);
      return store.put(key, data, opts);
    },
    head: (key) => store.head(key),
    delete: (keys) => store.delete(keys),
  });
  const current = wrap(blobs.current);
  const byName = (name: string) => {
    const store = blobs.byName(name);
    return store === null ? null : name === blobs.current.name ? current : wrap(store);
  };
  s.deps.blobs = { ...blobs, current, byName } satisfies BlobStores;
}
