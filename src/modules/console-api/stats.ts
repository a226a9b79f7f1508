/** Point-in-time operator figures: the video queue, open holds, accounts and keys. */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../../db/index.ts";
import { floorTo, MINUTES, readRollupState, refreshRollups } from "./rollups.ts";
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

interface Health {
  requests: number;
  errors: number;
  client_errors: number;
  last_error_at: string | null;
  last_error_code: string | null;
}

/**
 * Per model over the last `windowMs`: requests, failures of the model or its upstream, the last one,
 * and the clients' own errors apart (src/usage/outcome.ts). The window's whole minutes come from
 * usage_rollups_minute, its first part-minute and the last two or three minutes from the raw rows.
 */
export async function modelHealth(db: Db, windowMs: number, opts: { onRefreshError?: (e: unknown) => void } = {}): Promise<Map<string, Health>> {
  const now = Date.now();
  await refreshRollups(db, new Date(now), MINUTES, { whenDue: true }).catch((e) => opts.onRefreshError?.(e));
  const since = now - windowMs;
  const first = floorTo(since + MINUTES.stepMs - 1, MINUTES.stepMs); // the first whole minute
  const rows = await db.transaction(async (tx) => {
    const state = await readRollupState(tx, { level: MINUTES });
    const until = Math.max(first, Math.min(now, state?.rolledUntil.getTime() ?? first));
    const [lo, hi] = [new Date(first).toISOString(), new Date(until).toISOString()];
    const rolled = until > since
      ? await query<Record<string, any>>(tx, sql`
          SELECT model, sum(requests) AS requests, sum(errors) AS errors, sum(client_errors) AS client_errors, max(last_error_at) AS last_error_at,
                 (array_agg(last_error_code ORDER BY last_error_at DESC) FILTER (WHERE last_error_at IS NOT NULL))[1] AS last_error_code
          FROM usage_rollups_minute WHERE bucket_start >= ${lo} AND bucket_start < ${hi} GROUP BY model`)
      : [];
    const late = state && until > since ? sql`OR (id > ${state.rolledMaxId} AND created_at >= ${lo} AND created_at < ${hi})` : sql``;
    const raw = await query<Record<string, any>>(tx, sql`
      SELECT model, count(*) AS requests, count(*) FILTER (WHERE ${UPSTREAM_FAILED}) AS errors,
             count(*) FILTER (WHERE ${CLIENT_ERROR}) AS client_errors,
             max(created_at) FILTER (WHERE ${UPSTREAM_FAILED}) AS last_error_at,
             (array_agg(coalesce(error_code, 'http_' || status) ORDER BY created_at DESC) FILTER (WHERE ${UPSTREAM_FAILED}))[1] AS last_error_code
      FROM usage_records WHERE (created_at >= ${new Date(since).toISOString()} AND created_at < ${lo}) OR created_at >= ${hi} ${late} GROUP BY model`);
    return [...rolled, ...raw];
  }, { isolationLevel: "repeatable read", accessMode: "read only" });
  const out = new Map<string, Health>();
  for (const r of rows) {
    const h = out.get(String(r.model)) ?? { requests: 0, errors: 0, client_errors: 0, last_error_at: null, last_error_code: null };
    h.requests += Number(r.requests);
    h.errors += Number(r.errors);
    h.client_errors += Number(r.client_errors);
    const at = r.last_error_at ? new Date(r.last_error_at).toISOString() : null;
    if (at && (!h.last_error_at || at > h.last_error_at)) (h.last_error_at = at), (h.last_error_code = r.last_error_code ?? null);
    out.set(String(r.model), h);
  }
  return out;
}
