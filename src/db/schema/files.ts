import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Files API uploads (POST /v1/files) and the output and error files of batches. The bytes are in
 * the blob store as parts of up to FILE_PART_BYTES each (`files/<id>/<n>`), so neither an upload
 * nor a download ever holds a whole file in memory, whichever store holds them. Readable only by
 * keys of their account; deleted (row and parts) after REELAY_FILES_TTL_SECONDS.
 *
 * The row is written before the first part is put ("uploading", invisible to every API) and
 * counts the parts before each is put, so a kill -9 mid-write leaves a row naming every part
 * that may exist: the sweeper deletes uploading rows not touched for 10 minutes, with their parts
 * (docs/batches.md, "What a kill -9 leaves").
 */
export const files = pgTable(
  "files",
  {
    /** "file-" + 24 random characters */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    filename: text("filename").notNull(),
    /** "batch", "user_data" (uploads) or "batch_output" (a batch's output and error files) */
    purpose: text("purpose").notNull(),
    bytes: bigint("bytes", { mode: "number" }).notNull(),
    /** parts in the blob store (0 for an empty file) */
    parts: integer("parts").notNull(),
    /** the blob store the parts are in ("postgres", "s3") */
    blobStore: text("blob_store").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /**
     * "uploading" (parts being put; `parts` counts those that may exist), "processed" (complete:
     * the only rows the API shows) or "deleting" (its parts are being deleted). Defaulted so the
     * previous release's INSERTs (complete files) stay right (migration 0019).
     */
    status: text("status").notNull().default("processed"),
    /** touched before each part's put and at least every minute while bytes arrive: an uploading row not touched for 10 minutes is dead */
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    /** the batch whose finalization wrote this file (its output or error file); null for uploads */
    batchId: text("batch_id"),
  },
  (t) => [
    index("files_account_created_idx").on(t.accountId, t.createdAt),
    index("files_expires_idx").on(t.expiresAt),
    index("files_unfinished_idx").on(t.updatedAt).where(sql`${t.status} <> 'processed'`),
    index("files_batch_idx").on(t.batchId).where(sql`${t.batchId} IS NOT NULL`),
  ],
);
