/** Point-in-time operator figures: the video queue, open holds, accounts and keys. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import { ACTIVE_VIDEO_JOB_STATUSES, statusIn } from "../../db/schema/index.ts";
import { CLIENT_ERROR, UPSTREAM_FAILED } from "../../usage/outcome.ts";

export async function currentStats(tx: Tx) {
  const [r] = await query<Record<string, any>>(tx, sql`
    SELECT
      (SELECT count(*) FROM video_jobs WHERE ${statusIn(["queued"])}) AS queued,
      (SELECT count(*) FROM video_jobs WHERE ${statusIn(["processing"])}) AS processing,
      (SELECT extract(epoch FROM now() - min(created_at)) FROM video_jobs WHERE ${statusIn(ACTIVE_VIDEO_JOB_STATUSES)}) AS oldest_age,
      (SELECT count(*) FROM holds WHERE state = 'open') AS open_holds,
      (SELECT coalesce(sum(amount), 0) FROM holds WHERE state = 'open') AS held,
      (SELECT count(*) FROM accounts) AS accounts,
      (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS active_keys`);
  return {
    object: "stats" as const,
    video_queue: {
      queued: Number(r!.queued),
      processing: Number(r!.processing),
      oldest_job_age_seconds: r!.oldest_age === null ? null : Math.round(Number(r!.oldest_age)),
    },
    holds: { open: Number(r!.open_holds), amount: Number(r!.held) },
    accounts: Number(r!.accounts),
    active_keys: Number(r!.active_keys),
  };
}

/** Per model over the last `windowMs`: requests, failures of the model or its upstream, the last one, and the clients' own errors apart (src/usage/outcome.ts). */
export async function modelHealth(tx: Tx, windowMs: number) {
  const since = new Date(Date.now() - windowMs).toISOString();
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT model, count(*) AS requests, count(*) FILTER (WHERE ${UPSTREAM_FAILED}) AS errors,
           count(*) FILTER (WHERE ${CLIENT_ERROR}) AS client_errors,
           max(created_at) FILTER (WHERE ${UPSTREAM_FAILED}) AS last_error_at,
           (array_agg(coalesce(error_code, 'http_' || status) ORDER BY created_at DESC) FILTER (WHERE ${UPSTREAM_FAILED}))[1] AS last_error_code
    FROM usage_records WHERE created_at >= ${since} GROUP BY model`);
  return new Map(rows.map((r) => [String(r.model), {
    requests: Number(r.requests),
    errors: Number(r.errors),
    client_errors: Number(r.client_errors),
    last_error_at: r.last_error_at ? new Date(r.last_error_at).toISOString() : null,
    last_error_code: r.last_error_code ?? null,
  }]));
}
