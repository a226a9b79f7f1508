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

export async function insertFile(tx: Tx, f: Omit<FileRow, "createdAt">): Promise<FileRow> {
  const [row] = await query(tx, sql`
    INSERT INTO files (id, account_id, filename, purpose, bytes, parts, blob_store, expires_at)
    VALUES (${f.id}, ${f.accountId}, ${f.filename}, ${f.purpose}, ${f.bytes}, ${f.parts}, ${f.blobStore}, ${f.expiresAt.toISOString()})
    RETURNING ${COLUMNS}`);
  return readRow(row!);
}

/** The account's file (null: none, another account's, or expired). */
export async function findFile(tx: Tx, id: string, accountId: string): Promise<FileRow | null> {
  const [row] = await query(tx, sql`SELECT ${COLUMNS} FROM files WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()`);
  return row ? readRow(row) : null;
}

/** Newest first (or oldest with `order: asc`), after the file `after` in that order. */
export async function listFiles(tx: Tx, f: { accountId: string; purpose?: string; after?: string; limit: number; order: "asc" | "desc" }): Promise<FileRow[]> {
  const cmp = f.order === "asc" ? sql`>` : sql`<`;
  const dir = f.order === "asc" ? sql`ASC` : sql`DESC`;
  const rows = await query(tx, sql`
    SELECT ${COLUMNS} FROM files
    WHERE account_id = ${f.accountId} AND expires_at > now()
      ${f.purpose ? sql`AND purpose = ${f.purpose}` : sql``}
      ${f.after ? sql`AND (created_at, id) ${cmp} (SELECT created_at, id FROM files WHERE id = ${f.after} AND account_id = ${f.accountId})` : sql``}
    ORDER BY created_at ${dir}, id ${dir}
    LIMIT ${f.limit}`);
  return rows.map(readRow);
}

export async function deleteFileRow(tx: Tx, id: string, accountId: string): Promise<FileRow | null> {
  const [row] = await query(tx, sql`DELETE FROM files WHERE id = ${id} AND account_id = ${accountId} RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/** Expired files, removed from the table (their parts are the caller's to delete). */
export async function takeExpiredFiles(tx: Tx, limit: number): Promise<FileRow[]> {
  const rows = await query(tx, sql`
    DELETE FROM files WHERE id IN (SELECT id FROM files WHERE expires_at <= now() ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING ${COLUMNS}`);
  return rows.map(readRow);
}
