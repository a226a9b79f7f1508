import { boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Batches (POST /v1/batches): one row per batch, its lines and its slices. Status moves
 * validating → in_progress → finalizing → completed (or failed / expired / cancelling → cancelled);
 * modules/batches/batch-table/transitions.ts is the only writer of `status`.
 */
export const batches = pgTable(
  "batches",
  {
    /** "batch_" + 24 random characters */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull(),
    /** the key that created it: its lines run with its rights (a snapshot in `principal`) */
    keyId: text("key_id"),
    /** the key's rights when the batch was created (scopes, models, limits, plan) */
    principal: jsonb("principal").notNull(),
    endpoint: text("endpoint").notNull(),
    inputFileId: text("input_file_id").notNull(),
    completionWindow: text("completion_window").notNull(),
    metadata: jsonb("metadata"),
    status: text("status").notNull(),
    /** invalid input: [{code, message, param, line}] */
    errors: jsonb("errors"),
    outputFileId: text("output_file_id"),
    errorFileId: text("error_file_id"),
    /** request_counts: lines in the file; done / failed are stored when the batch is final (counted from its lines before) */
    total: integer("total").notNull().default(0),
    completed: integer("completed").notNull().default(0),
    failed: integer("failed").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    inProgressAt: timestamp("in_progress_at", { withTimezone: true }),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    finalizingAt: timestamp("finalizing_at", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    failedAt: timestamp("failed_at", { withTimezone: true }),
    expiredAt: timestamp("expired_at", { withTimezone: true }),
    cancellingAt: timestamp("cancelling_at", { withTimezone: true }),
    cancelledAt: timestamp("cancelled_at", { withTimezone: true }),
    /** the W3C traceparent of the request that created it (null: tracing off): each line's span joins its trace, on any instance */
    traceparent: text("traceparent"),
    /** the instance validating or finalizing it, until then */
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
  },
  (t) => [index("batches_account_created_idx").on(t.accountId, t.createdAt), index("batches_status_idx").on(t.status)],
);

/**
 * One input line of a batch, kept from validation until the batch's files are written. `result`
 * is the output (or error) file's line; it is written once (WHERE result IS NULL), in the same
 * transaction as the line's charge, so a line restarted after a crash is neither written nor
 * charged twice.
 */
export const batchLines = pgTable(
  "batch_lines",
  {
    batchId: text("batch_id").notNull(),
    /** 0-based position in the input file */
    line: integer("line").notNull(),
    customId: text("custom_id").notNull(),
    /** the request body of the line */
    body: jsonb("body").notNull(),
    /** the output or error file's line (JSON text); null until the line ran */
    result: text("result"),
    /** true: the line went to the output file; false: to the error file */
    ok: boolean("ok"),
  },
  (t) => [primaryKey({ columns: [t.batchId, t.line] })],
);

/** A run of lines one instance claims at a time (a lease; a dead instance's slices come back). */
export const batchSlices = pgTable(
  "batch_slices",
  {
    batchId: text("batch_id").notNull(),
    slice: integer("slice").notNull(),
    firstLine: integer("first_line").notNull(),
    lastLine: integer("last_line").notNull(),
    done: boolean("done").notNull().default(false),
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.batchId, t.slice] })],
);
