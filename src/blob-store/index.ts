/**
 * The blob store: where large bytes live — video results, thumbnails, spritesheets and uploaded
 * images today, batch files later — so that no caller knows whether they are in Postgres or in
 * S3-compatible object storage. One interface, two implementations (postgres-store.ts, s3-store.ts)
 * that pass one shared test suite (common.case.test.ts); REELAY_BLOB_STORE picks the one new
 * objects go to. Each stored thing records which store holds it (`video_jobs.blob_store`), so
 * switching stores keeps what is already stored readable: the Postgres store is always available.
 *
 * A store's own failures (unreachable, refused, a 5xx) are a BlobStoreError: callers
 * turn them into a 503 for a client or a retried step for a job, never a lost result.
 */
import type { BlobStoreConfig } from "../config.ts";
import type { Tx } from "../db/index.ts";
import { BlobStoreError, type BlobStore } from "./blob-store.ts";
import { postgresBlobStore } from "./postgres-store.ts";
import { s3BlobStore } from "./s3-store.ts";

export * from "./blob-store.ts";

/** The configured store (new objects) and every store objects may already be in. */
export interface BlobStores {
  /** where new objects go (REELAY_BLOB_STORE) */
  current: BlobStore;
  /** the store an object was put in, by the name recorded with it; null when it is not configured now */
  byName(name: string): BlobStore | null;
  /** /content answers a 302 to a presigned URL valid this long (0: reelay streams the bytes) */
  presignSeconds: number;
}

export function createBlobStores(config: BlobStoreConfig, db: Tx): BlobStores {
  const postgres = postgresBlobStore(db);
  const s3 = config.kind === "s3" && config.s3 ? s3BlobStore(config.s3) : null;
  const current = s3 ?? postgres;
  return {
    current,
    byName: (name) => (name === "postgres" ? postgres : name === "s3" ? s3 : null),
    presignSeconds: s3 ? config.presignSeconds : 0,
  };
}

/** The whole object in memory (small objects: images, thumbnails; a job's MP4 for the base64 poll answer). */
export async function readAll(store: BlobStore, key: string): Promise<Uint8Array | null> {
  const stream = await store.get(key);
  if (!stream) return null;
  try {
    return new Uint8Array(await new Response(stream).arrayBuffer());
  } catch (e) {
    throw e instanceof BlobStoreError ? e : new BlobStoreError(store.name, `reading ${key} failed: ${(e as Error)?.message ?? e}`, { cause: e });
  }
}
