import { bigint, index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Files API uploads (POST /v1/files) and the output and error files of batches. The bytes are in
 * the blob store as parts of up to FILE_PART_BYTES each (`files/<id>/<n>`), so neither an upload
 * nor a download ever holds a whole file in memory, whichever store holds them. Readable only by
 * keys of their account; deleted (row and parts) after REELAY_FILES_TTL_SECONDS.
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
  },
  (t) => [index("files_account_created_idx").on(t.accountId, t.createdAt), index("files_expires_idx").on(t.expiresAt)],
);
