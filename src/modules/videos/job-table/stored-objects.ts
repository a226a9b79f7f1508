/**
 * Which jobs still have objects in a blob store that nobody may read any more: expired jobs (past
 * retention, or deleted by their owner) and failed ones (their source image). The sweep deletes the
 * objects first and forgets them after (clearStoredObjects), so a crash in between only makes the
 * next sweep delete them again; a store that is down leaves them for the next sweep.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import { statusIn } from "../../../db/schema/index.ts";

export interface StoredObjects {
  id: string;
  blobStore: string;
}

/** Up to `limit` final jobs whose objects are due for deletion, oldest first. */
export async function jobsWithObjectsToDelete(tx: Tx, limit: number): Promise<StoredObjects[]> {
  const rows = await query<{ id: string; blob_store: string }>(tx, sql`
    SELECT id, blob_store FROM video_jobs
    WHERE blob_store IS NOT NULL AND ${statusIn(["expired", "failed"])}
    ORDER BY completed_at LIMIT ${limit}`);
  return rows.map((r) => ({ id: r.id, blobStore: r.blob_store }));
}

/** The objects of these jobs are deleted: forget them (only for final jobs). */
export async function clearStoredObjects(tx: Tx, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await query(tx, sql`
    UPDATE video_jobs SET blob_store = NULL, result_size = NULL, variants = NULL
    WHERE id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) AND ${statusIn(["expired", "failed"])}`);
}
