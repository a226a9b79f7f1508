/**
 * Job states and the only ways between them. Every state change is one conditional UPDATE
 * (`… WHERE status IN (<states allowed to reach the target>)`), so two instances, a cancel and a
 * scheduler, or a retry after a crash can never move a job twice: the loser's UPDATE matches no row.
 * Money moves in the same transaction as the final status (settle on completed, release on failed).
 */
import { sql, type SQL } from "drizzle-orm";
import type { AppDeps } from "../../../deps.ts";
import { query, type Tx } from "../../../db/index.ts";
import { closeJobCharge, type JobOutcome } from "../../../billing/index.ts";
import { enqueueJobEvent, eventTypeFor } from "../../webhooks/outbox.ts";

export const JOB_STATUSES = ["queued", "processing", "completed", "failed", "expired"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const ACTIVE_STATUSES = ["queued", "processing"] as const satisfies readonly JobStatus[];

/** from → allowed targets. queued → failed covers cancels and submits the provider refused. */
export const ALLOWED_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  queued: ["processing", "failed"],
  processing: ["completed", "failed"],
  completed: ["expired"],
  failed: [],
  expired: [],
};

export function allowedFrom(to: JobStatus): JobStatus[] {
  return JOB_STATUSES.filter((from) => ALLOWED_TRANSITIONS[from].includes(to));
}

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return ALLOWED_TRANSITIONS[from].includes(to);
}

export interface TransitionedJob {
  id: string;
  from: JobStatus;
  to: JobStatus;
  accountId: string;
  keyId: string | null;
  model: string;
  holdId: string | null;
  seconds: number;
  pluginHandle: string | null;
  createdAt: Date;
}

const statusList = (xs: readonly JobStatus[]) => sql.join(xs.map((s) => sql`${s}`), sql`, `);

/**
 * Move job `id` to `to` if its current status allows it (or already is `to`, when `stay`), applying
 * `set` too. `guard` adds conditions (e.g. the lease owner). Returns null when nothing matched.
 */
export async function transition(tx: Tx, id: string, to: JobStatus, opts: { set?: SQL; guard?: SQL; stay?: boolean } = {}): Promise<TransitionedJob | null> {
  const from = opts.stay ? [...allowedFrom(to), to] : allowedFrom(to);
  if (from.length === 0) throw new Error(`no state may move to ${to}`);
  const rows = await query<{ prev: JobStatus; account_id: string; key_id: string | null; model: string; hold_id: string | null; seconds: number; plugin_handle: string | null; created_at: string | Date }>(tx, sql`
    UPDATE video_jobs v SET status = ${to}${opts.set ? sql`, ${opts.set}` : sql``}
    FROM (SELECT id, status AS prev FROM video_jobs WHERE id = ${id} FOR UPDATE) o
    WHERE v.id = o.id AND v.status IN (${statusList(from)})${opts.guard ? sql` AND ${opts.guard}` : sql``}
    RETURNING o.prev, v.account_id, v.key_id, v.model, v.hold_id, v.seconds, v.plugin_handle, v.created_at`);
  const r = rows[0];
  if (!r) return null;
  return { id, from: r.prev, to, accountId: r.account_id, keyId: r.key_id, model: r.model, holdId: r.hold_id, seconds: Number(r.seconds), pluginHandle: r.plugin_handle, createdAt: new Date(r.created_at) };
}

export function reportTransition(deps: Pick<AppDeps, "telemetry">, job: TransitionedJob | null) {
  if (job && job.from !== job.to) deps.telemetry.videoTransition({ jobId: job.id, model: job.model, from: job.from, to: job.to, accountId: job.accountId });
}

const clearLease = sql`lease_owner = NULL, lease_expires_at = NULL`;

/**
 * completed + result stored + hold settled for exactly the held amount (price/s × seconds, fixed at
 * submit) + usage row, in one transaction. False when the job had already ended (cancel, another
 * instance): then nothing is charged.
 */
export async function completeJob(deps: Pick<AppDeps, "database" | "telemetry" | "config">, id: string, mp4: Uint8Array, extra: { plugin: string }): Promise<boolean> {
  let done: TransitionedJob | null = null;
  let charged = 0;
  await deps.database.db.transaction(async (tx) => {
    done = await transition(tx, id, "completed", {
      set: sql`result = ${Buffer.from(mp4.buffer, mp4.byteOffset, mp4.byteLength)}, image = NULL, progress = 1, completed_at = now(),
        expires_at = now() + ${deps.config.videoRetentionMs} * interval '1 millisecond', error_code = NULL, error_message = NULL, ${clearLease}`,
    });
    if (!done) return;
    // the outbox row first: billing's account lock is then held no longer than the money part needs (webhooks/outbox.ts)
    await enqueueJobEvent(tx, id, eventTypeFor("completed"), { publicUrl: deps.config.publicUrl, retryWindowMs: deps.config.webhooks.retryWindowMs });
    charged = await closeJobCharge(tx, jobOutcome(done, extra.plugin, null));
  });
  const job = done as TransitionedJob | null;
  if (!job) return false;
  reportTransition(deps, job);
  deps.telemetry.charged({ model: job.model, kind: "video", micros: charged, seconds: job.seconds });
  return true;
}

/** failed + error + hold released + usage row with cost 0, in one transaction. Failed jobs are never charged. */
export async function failJob(deps: Pick<AppDeps, "database" | "telemetry" | "config">, id: string, error: { code: string; message: string }, extra: { plugin: string | null; guard?: SQL; tx?: Tx }): Promise<TransitionedJob | null> {
  const run = async (tx: Tx) => {
    const job = await transition(tx, id, "failed", {
      set: sql`error_code = ${error.code}, error_message = ${error.message.slice(0, 1000)}, image = NULL, completed_at = now(), ${clearLease}`,
      guard: extra.guard,
    });
    if (!job) return null;
    await enqueueJobEvent(tx, id, eventTypeFor("failed", error.code), { publicUrl: deps.config.publicUrl, retryWindowMs: deps.config.webhooks.retryWindowMs });
    await closeJobCharge(tx, jobOutcome(job, extra.plugin, { code: error.code, status: error.code === "cancelled" ? 499 : 500 }));
    return job;
  };
  const job = extra.tx ? await run(extra.tx) : await deps.database.db.transaction(run);
  reportTransition(deps, job);
  return job;
}

function jobOutcome(job: TransitionedJob, plugin: string | null, failure: JobOutcome["failure"]): JobOutcome {
  return {
    holdId: job.holdId, jobId: job.id, accountId: job.accountId, keyId: job.keyId, model: job.model, seconds: job.seconds, plugin,
    latencyMs: Date.now() - job.createdAt.getTime(), failure,
  };
}
