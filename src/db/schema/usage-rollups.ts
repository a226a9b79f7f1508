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

/** How far usage_records has been rolled up: row 1 into usage_rollups, row 2 into usage_rollups_minute. */
export const usageRollupState = pgTable("usage_rollup_state", {
  id: integer("id").primaryKey(),
  /** every usage row created before this time is in the roll-ups (row 2: or older than what they keep) */
  rolledUntil: timestamp("rolled_until", { withTimezone: true }).notNull(),
  /** the largest usage_records.id rolled up: later ids with an older created_at are late rows */
  rolledMaxId: bigint("rolled_max_id", { mode: "number" }).notNull(),
});

/**
 * One-minute roll-ups of usage_records per model and kind, for what 5-minute buckets cannot answer:
 * time series in 1-minute buckets and the models' health over the last 15 minutes. Without them
 * those read every raw row of their range on each call (the soak saw the console's polling grow
 * from 2.5 to 30 ms in 30 minutes). Kept for MINUTE_ROLLUP_KEEP_MS (src/modules/console-api/rollups.ts),
 * older minutes are deleted; what is older is read from the raw rows. A separate table (not a
 * width column in usage_rollups) so the previous release, which reads usage_rollups, is unaffected.
 */
export const usageRollupsMinute = pgTable(
  "usage_rollups_minute",
  {
    bucketStart: timestamp("bucket_start", { withTimezone: true }).notNull(),
    model: text("model").notNull(),
    kind: text("kind").notNull(),
    requests: bigint("requests", { mode: "number" }).notNull(),
    promptTokens: bigint("prompt_tokens", { mode: "number" }).notNull(),
    completionTokens: bigint("completion_tokens", { mode: "number" }).notNull(),
    seconds: bigint("seconds", { mode: "number" }).notNull(),
    credits: bigint("credits", { mode: "number" }).notNull(),
    /** failures of the model or its upstream (src/usage/outcome.ts UPSTREAM_FAILED) */
    errors: bigint("errors", { mode: "number" }).notNull(),
    /** the clients' own errors (CLIENT_ERROR), shown apart by the models' health */
    clientErrors: bigint("client_errors", { mode: "number" }).notNull(),
    /** the latest failure in the minute, and its code */
    lastErrorAt: timestamp("last_error_at", { withTimezone: true }),
    lastErrorCode: text("last_error_code"),
    latencyHist: integer("latency_hist").array().notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucketStart, t.model, t.kind] })],
);
