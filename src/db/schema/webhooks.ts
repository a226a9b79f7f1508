import { sql } from "drizzle-orm";
import { boolean, index, integer, pgTable, text, timestamp, unique } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/** Webhook endpoints an account registered (POST /v1/webhooks). */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    /** "we_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** http(s) URL, checked by the SSRF guard at registration and again at every delivery */
    url: text("url").notNull(),
    /** event types this endpoint receives (video.generation.completed, …) */
    events: text("events").array().notNull(),
    description: text("description"),
    /**
     * The `whsec_…` signing secret, AES-256-GCM encrypted with a key derived from REELAY_SECRET_KEY
     * (webhooks/secret-box.ts). Not a hash: signing a delivery needs the secret itself.
     */
    secretCiphertext: text("secret_ciphertext").notNull(),
    /** false after the receiver answered 410 Gone (or the owner disabled it); nothing is sent then */
    enabled: boolean("enabled").notNull().default(true),
    disabledReason: text("disabled_reason"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("webhook_endpoints_account_idx").on(t.accountId)],
);

/** The signing secret for a job's own `webhook_url` (one per account; POST /v1/webhooks/secret). */
export const webhookAccountSecrets = pgTable("webhook_account_secrets", {
  accountId: text("account_id").primaryKey().references(() => accounts.id),
  /** encrypted like webhook_endpoints.secret_ciphertext */
  secretCiphertext: text("secret_ciphertext").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * The outbox: one row per (event, target), inserted in the same transaction as the job's final
 * transition, then sent by whichever instance claims it first. The row id is the `webhook-id`
 * header, the same on every attempt and replay, so receivers can deduplicate.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    /** "msg_" + random: the Standard Webhooks `webhook-id` */
    id: text("id").primaryKey(),
    /**
     * No foreign key on purpose: the row is inserted inside the job's final transaction, before
     * billing locks the account row FOR UPDATE; an FK check's key-share lock on that row, taken first
     * by two such transactions, deadlocks them (it did with 40 concurrent completions of one account).
     */
    accountId: text("account_id").notNull(),
    /** the registered endpoint; null for the job's own `webhook_url` (signed with the account secret) */
    endpointId: text("endpoint_id").references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    jobId: text("job_id").notNull(),
    /** video.generation.completed | failed | cancelled | processing */
    eventType: text("event_type").notNull(),
    /** where it goes (the endpoint's URL or the job's webhook_url at enqueue time) */
    url: text("url").notNull(),
    /** the exact body of every attempt; the signature covers it with the attempt's timestamp */
    payload: text("payload").notNull(),
    /** pending | delivered | failed */
    status: text("status", { enum: ["pending", "delivered", "failed"] }).notNull().default("pending"),
    /** attempts started (counted at claim, so a crash mid-attempt counts) */
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    /** no attempt is scheduled after this (created_at + the retry window; a replay moves it) */
    giveUpAt: timestamp("give_up_at", { withTimezone: true }).notNull(),
    /** instance sending it right now and until when (an expired lease may be claimed again); on a delivered row, the instance that delivered it */
    leaseOwner: text("lease_owner"),
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true }),
    /** HTTP status of the last attempt (null: no answer: refused, timeout, blocked address) */
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true }),
    deliveredAt: timestamp("delivered_at", { withTimezone: true }),
    /** the job's traceparent (video_jobs.traceparent) at enqueue time: each attempt's span joins the job's trace */
    traceparent: text("traceparent"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("webhook_deliveries_due_idx").on(t.nextAttemptAt).where(sql`${t.status} = 'pending'`),
    index("webhook_deliveries_endpoint_idx").on(t.endpointId, t.createdAt),
    index("webhook_deliveries_account_idx").on(t.accountId, t.createdAt),
    // one event per job and target, whatever happens: a second final transition cannot exist, and
    // this makes that visible in the schema too
    unique("webhook_deliveries_event_uniq").on(t.jobId, t.eventType, t.endpointId).nullsNotDistinct(),
  ],
);
