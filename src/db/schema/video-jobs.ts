import { sql } from "drizzle-orm";
import { bigint, customType, index, integer, pgTable, real, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import type { ImageMime } from "../../media/image-header.ts";
import { accounts } from "./accounts.ts";

/** bytea as a Uint8Array of its own (postgres.js gives Buffers that may share a pooled ArrayBuffer) */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea", fromDriver: (v) => new Uint8Array(v) });

/**
 * Every state a job can be in: the one list (the ways between them: modules/videos/job-table/transitions.ts).
 * Active jobs are the scheduler's work; the other three are final (expired: completed, result dropped).
 */
export const VIDEO_JOB_STATUSES = ["queued", "processing", "completed", "failed", "expired"] as const;
export type VideoJobStatus = (typeof VIDEO_JOB_STATUSES)[number];
export const ACTIVE_VIDEO_JOB_STATUSES = ["queued", "processing"] as const satisfies readonly VideoJobStatus[];
export const isActiveStatus = (status: VideoJobStatus) => (ACTIVE_VIDEO_JOB_STATUSES as readonly VideoJobStatus[]).includes(status);

const literals = (statuses: readonly VideoJobStatus[]) => sql.raw(statuses.map((s) => `'${s}'`).join(", "));

/**
 * `status IN ('queued', 'processing')` for raw statements, typed against the list. Literals, not
 * parameters: it is the predicate of the partial indexes below, and Postgres uses a partial index
 * under a prepared statement's generic plan only when the query states the predicate as constants.
 */
export const statusIn = (statuses: readonly VideoJobStatus[], alias?: string) => sql`${sql.raw(alias ? `${alias}.status` : "status")} IN (${literals(statuses)})`;
const active = literals(ACTIVE_VIDEO_JOB_STATUSES);

/** Image-to-video jobs: the durable queue the scheduler claims from. */
export const videoJobs = pgTable(
  "video_jobs",
  {
    /** "vid_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    keyId: text("key_id"),
    model: text("model").notNull(),
    status: text("status", { enum: VIDEO_JOB_STATUSES }).notNull().default("queued"),
    prompt: text("prompt").notNull(),
    negativePrompt: text("negative_prompt"),
    seed: bigint("seed", { mode: "number" }).notNull(),
    steps: integer("steps"),
    seconds: integer("seconds").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    /** the source image's type (null: the job has none); its bytes are the blob `videos/<id>/source`, deleted when the job ends */
    imageMime: text("image_mime").$type<ImageMime>(),
    /**
     * Expand/contract (docs/architecture.md): the previous release (222e0b0) keeps a job's source
     * image and MP4 in these two columns; this release reads and writes only the blob store, and
     * migration 0010's triggers copy Postgres-stored bytes between the two both ways, so an old and
     * a new instance serve one database during a rolling upgrade. No code of this release reads
     * them: the release after next drops them and the triggers.
     */
    legacyImage: bytea("image"),
    legacyResult: bytea("result"),
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
    /** the blob store holding this job's objects ("postgres" | "s3"; null: none stored) — a job stays readable after the operator switches stores */
    blobStore: text("blob_store"),
    /** the MP4's size in bytes once stored (blob `videos/<id>/video.mp4`, kept until expires_at) */
    resultSize: bigint("result_size", { mode: "number" }),
    /** the downloadable variants stored beside the MP4 ("thumbnail", "spritesheet") */
    variants: text("variants").array(),
    /** pricing applied to the hold: "perSecond" or "perSecondBySize[<size>]" */
    priceBasis: text("price_basis"),
    /** the job this one remixes (POST /v1/videos/{id}/remix) */
    remixedFrom: text("remixed_from"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp("started_at", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /** the client's per-job webhook (submit field `webhook_url`), signed with the account's secret */
    webhookUrl: text("webhook_url"),
    /** origin the job's links in webhooks and events point at: REELAY_PUBLIC_URL, else the submit request's */
    linksBase: text("links_base"),
    /** the API route the job was submitted with ("/v1/videos/generations", "/v1/videos", "/v1/videos/{id}/remix"): its usage row's route */
    route: text("route"),
    /** the W3C traceparent of the submitting request's span (null: tracing off): the scheduler's steps join its trace, on any instance */
    traceparent: text("traceparent"),
  },
  (t) => [
    uniqueIndex("video_jobs_idempotency_uniq").on(t.accountId, t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
    index("video_jobs_due_idx").on(t.nextRunAt).where(sql`${t.status} IN (${active})`),
    index("video_jobs_account_idx").on(t.accountId, t.createdAt),
    // the per-key concurrent-jobs check at submit counts these; without it each submit scans the table
    index("video_jobs_active_key_idx").on(t.keyId).where(sql`${t.status} IN (${active})`),
    index("video_jobs_expiry_idx").on(t.expiresAt).where(sql`${t.status} = 'completed'`),
    // the retention sweep looks for final jobs whose objects are still stored; without it, a scan of every job every 5 s
    index("video_jobs_stored_objects_idx").on(t.completedAt).where(sql`${t.blobStore} IS NOT NULL AND ${t.status} IN ('expired', 'failed')`),
  ],
);
