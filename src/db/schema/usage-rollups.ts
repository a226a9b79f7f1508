import { bigint, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Five-minute roll-ups of usage_records per model and kind, for the console's time-series charts.
 * Summing 1 M raw usage rows takes 0.3–0.7 s on a 2-core machine; the 2,016 five-minute buckets of
 * a week take a few ms. Maintained by src/modules/console-api/rollups.ts, never on the request path.
 */
export const usageRollups = pgTable(
  "usage_rollups",
  {
    /** start of the 5-minute bucket (aligned to the Unix epoch) */
    bucketStart: timestamp("bucket_start", { withTimezone: true }).notNull(),
    model: text("model").notNull(),
    kind: text("kind").notNull(),
    requests: bigint("requests", { mode: "number" }).notNull(),
    promptTokens: bigint("prompt_tokens", { mode: "number" }).notNull(),
    completionTokens: bigint("completion_tokens", { mode: "number" }).notNull(),
    seconds: bigint("seconds", { mode: "number" }).notNull(),
    /** micro-dollars charged */
    credits: bigint("credits", { mode: "number" }).notNull(),
    /** requests with status >= 500 or an error code */
    errors: bigint("errors", { mode: "number" }).notNull(),
    /** latency histogram: element i counts requests with latency in (2^((i-1)/4), 2^(i/4)] ms */
    latencyHist: integer("latency_hist").array().notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucketStart, t.model, t.kind] })],
);

/** One row (id = 1): how far usage_records has been rolled up. */
export const usageRollupState = pgTable("usage_rollup_state", {
  id: integer("id").primaryKey(),
  /** every usage row created before this time is in usage_rollups */
  rolledUntil: timestamp("rolled_until", { withTimezone: true }).notNull(),
  /** the largest usage_records.id rolled up: later ids with an older created_at are late rows */
  rolledMaxId: bigint("rolled_max_id", { mode: "number" }).notNull(),
});
