import { bigint, bigserial, boolean, index, integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/** One row per billed request or video job: what was used and what it cost. */
export const usageRecords = pgTable(
  "usage_records",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** the key that made the request (null for operations with no key) */
    keyId: text("key_id"),
    /** request id ("req_…") or video job id ("vid_…") */
    ref: text("ref").notNull(),
    kind: text("kind", { enum: ["chat", "embeddings", "video"] }).notNull(),
    /** the API route the client called ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/completions", "/v1/embeddings", "/v1/videos/generations", "/v1/videos", "/v1/videos/{id}/remix"); null on rows written before it was recorded */
    route: text("route"),
    model: text("model").notNull(),
    /** every prompt token billed, the cached and cache-write ones included */
    promptTokens: integer("prompt_tokens"),
    /** chat: of prompt_tokens, read from the upstream's prompt cache (billed at the model's cachedInputPerMillion) */
    cachedTokens: integer("cached_tokens"),
    /** chat: of prompt_tokens, written to the upstream's prompt cache (billed at the model's cacheWritePerMillion) */
    cacheWriteTokens: integer("cache_write_tokens"),
    completionTokens: integer("completion_tokens"),
    /** chat: completion tokens actually written to the client */
    deliveredTokens: integer("delivered_tokens"),
    /** chat: completion tokens the upstream reported (null when it reported none) */
    reportedTokens: integer("reported_tokens"),
    /** "upstream" when billed on the upstream's usage, "local" when counted by reelay's tokenizer */
    tokenSource: text("token_source"),
    /** video: seconds of output */
    seconds: integer("seconds"),
    /** video: which price applied, e.g. "perSecondBySize[1280x720]=100000" or "perSecond=30000" (micro-dollars per second) */
    priceBasis: text("price_basis"),
    /** micro-dollars charged */
    cost: bigint("cost", { mode: "number" }).notNull(),
    /** HTTP status returned (or 200 for completed jobs, 500 for failed ones) */
    status: integer("status").notNull(),
    /** the client went away before the end of a stream */
    disconnected: boolean("disconnected").notNull().default(false),
    latencyMs: integer("latency_ms"),
    /** upstream/plugin that served it, for failing-upstream views */
    plugin: text("plugin"),
    errorCode: text("error_code"),
    /** what was not credible in the upstream's usage and how it was billed instead (e.g. "completion_tokens 1000000000 > 16 allowed") */
    anomaly: text("anomaly"),
    /** the price plan the request was priced on (null: list prices) */
    plan: text("plan"),
    /** the prices applied (JSON: the model's rates after the plan, and the plan's adjustment in basis points) */
    pricing: text("pricing"),
    /** budget windows the charge counted in (those its approval reserved in) */
    budgetWindows: text("budget_windows").array(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("usage_account_idx").on(t.accountId, t.id),
    index("usage_created_idx").on(t.createdAt),
    // one account's time series (console client view, /admin/usage/timeseries?account=) without scanning its whole history
    index("usage_account_created_idx").on(t.accountId, t.createdAt),
    // one row per request or job: the settlement's exactly-once key (a replayed settlement finds it and does nothing)
    uniqueIndex("usage_ref_uniq").on(t.ref),
  ],
);
