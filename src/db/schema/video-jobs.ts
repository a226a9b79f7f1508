import { sql } from "drizzle-orm";
import { bigint, customType, index, integer, pgTable, real, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea" });

/** Image-to-video jobs: the durable queue the scheduler claims from. */
export const videoJobs = pgTable(
  "video_jobs",
  {
    /** "vid_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    keyId: text("key_id"),
    model: text("model").notNull(),
    /** queued | processing | completed | failed | expired (see video module's transition table) */
    status: text("status", { enum: ["queued", "processing", "completed", "failed", "expired"] }).notNull().default("queued"),
    prompt: text("prompt").notNull(),
    negativePrompt: text("negative_prompt"),
    seed: bigint("seed", { mode: "number" }).notNull(),
    steps: integer("steps"),
    seconds: integer("seconds").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    /** source image, validated at submit; dropped when the job ends */
    image: bytea("image"),
    imageMime: text("image_mime"),
    holdId: text("hold_id"),
    /** client's Idempotency-Key and a hash of the request body it came with */
    idempotencyKey: text("idempotency_key"),
    requestHash: text("request_hash"),
    /** the plugin's handle, saved right after submit so a restart polls instead of resubmitting */
    pluginHandle: text("plugin_handle"),
    /** submit attempts so far (retries and lost handles) */
    attempts: integer("attempts").notNull().default(0),
    /** consecutive retryable errors while polling */
    errorStreak: integer("error_streak").notNull().default(0),
    /** when the scheduler should look at this job next */
    nextRunAt: timestamp("next_run_at", { withTimezone: true }).notNull().defaultNow(),
    /** instance holding the lease and until when; an expired lease may be reclaimed */
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
    progress: real("progress"),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    /** the MP4, kept until expires_at */
    result: bytea("result"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp("started_at", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /** the client's per-job webhook (submit field `webhook_url`), signed with the account's secret */
    webhookUrl: text("webhook_url"),
    /** origin the job's links in webhooks and events point at: REELAY_PUBLIC_URL, else the submit request's */
    linksBase: text("links_base"),
  },
  (t) => [
    uniqueIndex("video_jobs_idempotency_uniq").on(t.accountId, t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
    index("video_jobs_due_idx").on(t.nextRunAt).where(sql`${t.status} IN ('queued', 'processing')`),
    index("video_jobs_account_idx").on(t.accountId, t.createdAt),
    // the per-key concurrent-jobs check at submit counts these; without it each submit scans the table
    index("video_jobs_active_key_idx").on(t.keyId).where(sql`${t.status} IN ('queued', 'processing')`),
    index("video_jobs_expiry_idx").on(t.expiresAt).where(sql`${t.status} = 'completed'`),
  ],
);
