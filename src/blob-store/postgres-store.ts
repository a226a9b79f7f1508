/**
 * Blobs in the `blobs` table (db/schema/blobs.ts): the default, needing nothing but the database.
 * Reads are streamed in CHUNK_BYTES slices, one `substring` statement each (the column is stored
 * out of line and uncompressed, so a slice reads only its TOAST chunks): a 50 MB result sent to 20
 * clients holds 20 slices in memory, not 20 copies. Writes take the whole object in one statement
 * (a bytea cannot be appended to in place); objects this store is meant for are a few MB.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { BlobStoreError, type BlobInfo, type BlobStore, type ByteSpan } from "./blob-store.ts";

/** 1 MiB: few round trips for a whole MP4, little memory per reader */
const CHUNK_BYTES = 1024 * 1024;

export function postgresBlobStore(db: Tx): BlobStore {
  const fail = (what: string, cause: unknown) => new BlobStoreError("postgres", `${what}: ${(cause as Error)?.message ?? cause}`, { cause });
  const head = async (key: string): Promise<BlobInfo | null> => {
    const [row] = await query<{ size: string | number; content_type: string }>(db, sql`SELECT size, content_type FROM blobs WHERE key = ${key}`).catch((e) => {
      throw fail(`head ${key}`, e);
    });
    return row ? { size: Number(row.size), contentType: row.content_type } : null;
  };
  return {
    name: "postgres",
    async put(key, data, opts) {
      const bytes = data instanceof Uint8Array ? data : new Uint8Array(await new Response(data).arrayBuffer());
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      await query(db, sql`
        INSERT INTO blobs (key, content_type, size, data) VALUES (${key}, ${opts.contentType}, ${bytes.byteLength}, ${buf})
        ON CONFLICT (key) DO UPDATE SET content_type = excluded.content_type, size = excluded.size, data = excluded.data, created_at = now()`).catch((e) => {
        throw fail(`put ${key}`, e);
      });
    },
    head,
    async get(key, span?: ByteSpan) {
      const info = await head(key);
      if (!info) return null;
      const start = span?.start ?? 0;
      const end = Math.min(span?.end ?? info.size - 1, info.size - 1);
      let at = start;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (at > end) return controller.close();
          const length = Math.min(CHUNK_BYTES, end - at + 1);
          let part: Uint8Array | null | undefined;
          try {
            [{ part } = { part: null }] = await query<{ part: Uint8Array | null }>(db, sql`SELECT substring(data FROM ${at + 1} FOR ${length}) AS part FROM blobs WHERE key = ${key}`);
          } catch (e) {
            return controller.error(fail(`read ${key}`, e));
          }
          if (!part || part.byteLength === 0) return controller.error(new BlobStoreError("postgres", `${key} was deleted while it was being read`));
          at += part.byteLength;
          controller.enqueue(new Uint8Array(part.buffer, part.byteOffset, part.byteLength)); // the parsed bytes as they are: no second copy
        },
      }, { highWaterMark: 0 });
    },
    async delete(keys) {
      if (keys.length === 0) return;
      await query(db, sql`DELETE FROM blobs WHERE key IN (${sql.join(keys.map((k) => sql`${k}`), sql`, `)})`).catch((e) => {
        throw fail("delete", e);
      });
    },
  };
}
