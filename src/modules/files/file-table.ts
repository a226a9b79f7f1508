/** The files table: one exported function per statement. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";

export interface FileRow {
  id: string;
  accountId: string;
  filename: string;
  purpose: string;
  bytes: number;
  parts: number;
  blobStore: string;
  createdAt: Date;
  expiresAt: Date;
}

const COLUMNS = sql`id, account_id, filename, purpose, bytes, parts, blob_store, created_at, expires_at`;

function readRow(r: Record<string, unknown>): FileRow {
  return {
    id: String(r.id), accountId: String(r.account_id), filename: String(r.filename), purpose: String(r.purpose), bytes: Number(r.bytes),
    parts: Number(r.parts), blobStore: String(r.blob_store), createdAt: new Date(r.created_at as string), expiresAt: new Date(r.expires_at as string),
  };
}

/** A complete file in one statement (one with no parts: nothing in the blob store to lose). */
export async function insertFile(tx: Tx, f: Omit<FileRow, "createdAt"> & { batchId?: string | null }): Promise<FileRow> {
  const [row] = await query(tx, sql`
    INSERT INTO files (id, account_id, filename, purpose, bytes, parts, blob_store, expires_at, batch_id)
    VALUES (${f.id}, ${f.accountId}, ${f.filename}, ${f.purpose}, ${f.bytes}, ${f.parts}, ${f.blobStore}, ${f.expiresAt.toISOString()}, ${f.batchId ?? null})
    RETURNING ${COLUMNS}`);
  return readRow(row!);
}

/**
 * The row of a file whose first part is about to be put: "uploading", invisible to every API,
 * counting that part. `batchId`: the batch whose finalization writes it.
 */
export async function insertUploading(tx: Tx, f: { id: string; accountId: string; filename: string; purpose: string; blobStore: string; batchId: string | null; expiresAt: Date; parts: number }): Promise<void> {
  await query(tx, sql`
    INSERT INTO files (id, account_id, filename, purpose, bytes, parts, blob_store, expires_at, status, batch_id)
    VALUES (${f.id}, ${f.accountId}, ${f.filename}, ${f.purpose}, 0, ${f.parts}, ${f.blobStore}, ${f.expiresAt.toISOString()}, 'uploading', ${f.batchId})`);
}

/** An uploading file's part count (before that part's put) and its liveness; false: the row is gone or taken for deletion (stop writing). */
export async function touchUploading(tx: Tx, id: string, parts: number): Promise<boolean> {
  const rows = await query(tx, sql`UPDATE files SET parts = ${parts}, updated_at = now() WHERE id = ${id} AND status = 'uploading' RETURNING id`);
  return rows.length > 0;
}

/** The last part is put: the file is complete and shown (null: the row is gone or taken for deletion). */
export async function finishUploading(tx: Tx, id: string, f: { filename: string; purpose: string; bytes: number; parts: number; expiresAt: Date }): Promise<FileRow | null> {
  const [row] = await query(tx, sql`
    UPDATE files SET status = 'processed', filename = ${f.filename}, purpose = ${f.purpose}, bytes = ${f.bytes}, parts = ${f.parts}, expires_at = ${f.expiresAt.toISOString()}, updated_at = now()
    WHERE id = ${id} AND status = 'uploading'
    RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/**
 * Uploading rows (and rows taken for deletion) not touched for `idleMs`: a live writer touches its
 * row at least every minute, so these are a dead instance's. Marked "deleting" (a writer that
 * wakes up finds its row gone from "uploading" and stops); the caller deletes the parts, then the
 * rows (deleteFileRows). A kill between the two leaves "deleting" rows, taken again next time.
 */
export async function takeStaleUploads(tx: Tx, idleMs: number, limit: number): Promise<FileRow[]> {
  const rows = await query(tx, sql`
    UPDATE files SET status = 'deleting'
    WHERE id IN (SELECT id FROM files WHERE status <> 'processed' AND updated_at < now() - make_interval(secs => ${idleMs / 1000}) ORDER BY updated_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING ${COLUMNS}`);
  return rows.map(readRow);
}

/**
 * The files batch `batchId`'s finalizations wrote that the batch does not name (an earlier
 * finalization's, killed before its final transition, complete or not), marked "deleting": the
 * caller deletes the parts, then the rows (deleteFileRows). Only while `leaseOwner` holds the
 * batch's lease: a finalization that stalled past its lease must not take the files of the one
 * that took the batch over.
 */
export async function takeUnnamedBatchFiles(tx: Tx, batchId: string, leaseOwner: string): Promise<FileRow[]> {
  const rows = await query(tx, sql`
    UPDATE files SET status = 'deleting'
    WHERE batch_id = ${batchId}
      AND EXISTS (SELECT 1 FROM batches b WHERE b.id = ${batchId} AND b.lease_owner = ${leaseOwner} AND b.lease_expires_at > now())
      AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = ${batchId} AND (b.output_file_id = files.id OR b.error_file_id = files.id))
    RETURNING ${COLUMNS}`);
  return rows.map(readRow);
}

export async function deleteFileRows(tx: Tx, ids: string[]): Promise<void> {
  if (ids.length > 0) await query(tx, sql`DELETE FROM files WHERE id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)})`);
}

/** The account's file (null: none, another account's, not complete, or expired). */
export async function findFile(tx: Tx, id: string, accountId: string): Promise<FileRow | null> {
  const [row] = await query(tx, sql`SELECT ${COLUMNS} FROM files WHERE id = ${id} AND account_id = ${accountId} AND status = 'processed' AND expires_at > now()`);
  return row ? readRow(row) : null;
}

/** Newest first (or oldest with `order: asc`), after the file `after` in that order. */
export async function listFiles(tx: Tx, f: { accountId: string; purpose?: string; after?: string; limit: number; order: "asc" | "desc" }): Promise<FileRow[]> {
  const cmp = f.order === "asc" ? sql`>` : sql`<`;
  const dir = f.order === "asc" ? sql`ASC` : sql`DESC`;
  const rows = await query(tx, sql`
    SELECT ${COLUMNS} FROM files
    WHERE account_id = ${f.accountId} AND status = 'processed' AND expires_at > now()
      ${f.purpose ? sql`AND purpose = ${f.purpose}` : sql``}
      ${f.after ? sql`AND (created_at, id) ${cmp} (SELECT created_at, id FROM files WHERE id = ${f.after} AND account_id = ${f.accountId})` : sql``}
    ORDER BY created_at ${dir}, id ${dir}
    LIMIT ${f.limit}`);
  return rows.map(readRow);
}

/** The account's complete file, taken for deletion ("deleting": invisible from now on; the caller deletes its parts, then its row). */
export async function takeFileToDelete(tx: Tx, id: string, accountId: string): Promise<FileRow | null> {
  const [row] = await query(tx, sql`UPDATE files SET status = 'deleting' WHERE id = ${id} AND account_id = ${accountId} AND status = 'processed' RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/** Expired complete files, taken for deletion ("deleting"; the caller deletes their parts, then their rows); unfinished rows are takeStaleUploads'. */
export async function takeExpiredFiles(tx: Tx, limit: number): Promise<FileRow[]> {
  const rows = await query(tx, sql`
    UPDATE files SET status = 'deleting'
    WHERE id IN (SELECT id FROM files WHERE expires_at <= now() AND status = 'processed' ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING ${COLUMNS}`);
  return rows.map(readRow);
}
