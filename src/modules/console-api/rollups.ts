/**
 * Keeps the usage roll-ups up to date from usage_records: usage_rollups (5-minute buckets, kept for
 * ever) and usage_rollups_minute (1-minute buckets with the models' health counts, kept for
 * MINUTE_ROLLUP_KEEP_MS), per model and kind.
 *
 * A refresh rolls up the rows created in [rolled_until, target), target = now − 2 min rounded down
 * to the bucket, plus "late" rows: ids above rolled_max_id whose created_at is older than rolled_until
 * (a writer that stamps rows with the request's time and commits later). The 2-minute lag leaves
 * in-flight transactions time to commit; a usage row whose transaction stays open longer than that
 * across a refresh can be missed by the charts (never by billing: ledger and usage_records are the
 * truth). Refreshes of one table run at most one at a time across instances (try-advisory-lock; a
 * busy lock means another instance is doing it) in a REPEATABLE READ transaction, so the rows rolled
 * up and the new watermark come from one snapshot. Readers use the roll-ups below rolled_until and raw
 * rows above it (and, for the minute table, below what it keeps), so results are current even if no
 * refresh ran for a while.
 */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../../db/index.ts";
import { LATENCY_BINS, latencyBinSql } from "./latency-histogram.ts";
import { CLIENT_ERROR, UPSTREAM_FAILED } from "../../usage/outcome.ts";

export const ROLLUP_MS = 5 * 60_000;
const SETTLE_LAG_MS = 2 * 60_000;
/** the minute table covers at least this far back: the default time-series range (24 h) and some */
export const MINUTE_ROLLUP_KEEP_MS = 26 * 3_600_000;
/** deleted only this much later, so an instance whose clock is ahead still finds what it reads */
const MINUTE_PRUNE_SLACK_MS = 3_600_000;

/** One roll-up table: its bucket, its row in usage_rollup_state, its refresh lock. */
export interface RollupLevel {
  table: "usage_rollups" | "usage_rollups_minute";
  stateId: 1 | 2;
  stepMs: number;
  lock: number;
  /** how far back it covers (null: everything since the first usage row) */
  keepMs: number | null;
  /** it also counts the clients' errors and the latest failure (the models' health) */
  health: boolean;
}
// advisory-lock keys (migrations use 7_312_001)
export const FIVE_MINUTES: RollupLevel = { table: "usage_rollups", stateId: 1, stepMs: ROLLUP_MS, lock: 7_312_021, keepMs: null, health: false };
export const MINUTES: RollupLevel = { table: "usage_rollups_minute", stateId: 2, stepMs: 60_000, lock: 7_312_022, keepMs: MINUTE_ROLLUP_KEEP_MS, health: true };

export interface RollupState {
  rolledUntil: Date;
  rolledMaxId: number;
}

export const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;

/** The oldest bucket `level` holds for a read at `now` (older usage is read from the raw rows). */
export const coveredFrom = (level: RollupLevel, now: number) => (level.keepMs === null ? -Infinity : floorTo(now - level.keepMs, level.stepMs));

export async function readRollupState(tx: Tx, opts: { forUpdate?: boolean; level?: RollupLevel } = {}): Promise<RollupState | null> {
  const rows = await query<{ rolled_until: string | Date; rolled_max_id: string | number }>(
    tx,
    sql`SELECT rolled_until, rolled_max_id FROM usage_rollup_state WHERE id = ${(opts.level ?? FIVE_MINUTES).stateId} ${opts.forUpdate ? sql`FOR UPDATE` : sql``}`,
  );
  const r = rows[0];
  return r ? { rolledUntil: new Date(r.rolled_until), rolledMaxId: Number(r.rolled_max_id) } : null;
}

/**
 * Roll up what is due into `level`'s table; returns the number of source rows, or null if another
 * instance is refreshing. `whenDue`: only once a new bucket is due (a reader's refresh: once a minute
 * or five, not on every poll of the console; late rows wait for it, the readers count them meanwhile).
 */
export async function refreshRollups(db: Db, now = new Date(), level: RollupLevel = FIVE_MINUTES, opts: { whenDue?: boolean } = {}): Promise<number | null> {
  if (opts.whenDue) {
    const state = await readRollupState(db, { level });
    if (state && state.rolledUntil.getTime() >= floorTo(now.getTime() - SETTLE_LAG_MS, level.stepMs)) return 0;
  }
  return db.transaction(
    async (tx) => {
      const [lock] = await query<{ ok: boolean }>(tx, sql`SELECT pg_try_advisory_xact_lock(${level.lock}) AS ok`);
      if (!lock?.ok) return null;
      const table = sql.raw(level.table);
      const step = level.stepMs / 1000;
      const target = new Date(floorTo(now.getTime() - SETTLE_LAG_MS, level.stepMs));
      // the minute table starts (and keeps) only its window: older rows are never rolled into it
      const floor = coveredFrom(level, now.getTime());
      let state = await readRollupState(tx, { forUpdate: true, level });
      if (!state) {
        const [first] = await query<{ t: string | Date | null }>(tx, sql`SELECT min(created_at) AS t FROM usage_records`);
        const start = Math.max(floor, first?.t ? floorTo(new Date(first.t).getTime(), level.stepMs) : target.getTime());
        state = { rolledUntil: new Date(Math.min(start, target.getTime())), rolledMaxId: 0 };
      }
      const from = new Date(Math.max(floor, state.rolledUntil.getTime())).toISOString();
      const until = state.rolledUntil.toISOString();
      const upTo = new Date(Math.max(target.getTime(), state.rolledUntil.getTime())).toISOString();
      const lowest = Number.isFinite(floor) ? sql`AND created_at >= ${new Date(floor).toISOString()}` : sql``;
      const hist = sql.raw(`ARRAY(SELECT coalesce((h.bins ->> i::text)::int, 0) FROM generate_series(0, ${LATENCY_BINS - 1}) i)`);
      const health = level.health;
      const [done] = await query<{ n: string | number; max_id: string | number | null }>(
        tx,
        sql`
        WITH src AS (
          SELECT id, model, kind, prompt_tokens, completion_tokens, seconds, cost, ${UPSTREAM_FAILED} AS failed,
                 ${health ? sql`${CLIENT_ERROR} AS client_failed, created_at, coalesce(error_code, 'http_' || status) AS code,` : sql``}
                 ${latencyBinSql()} AS lb,
                 to_timestamp(floor(extract(epoch FROM created_at) / ${step}) * ${step}) AS b
          FROM usage_records
          WHERE (created_at >= ${from} AND created_at < ${upTo}) OR (id > ${state.rolledMaxId} AND created_at < ${until} ${lowest})
        ),
        per_bin AS (
          SELECT b, model, kind, lb, count(*) AS n,
                 coalesce(sum(prompt_tokens), 0) AS pt, coalesce(sum(completion_tokens), 0) AS ct, coalesce(sum(seconds), 0) AS s,
                 ${health ? sql`count(*) FILTER (WHERE client_failed) AS ce, max(created_at) FILTER (WHERE failed) AS lea,
                 (array_agg(code ORDER BY created_at DESC) FILTER (WHERE failed))[1] AS lec,` : sql``}
                 coalesce(sum(cost), 0) AS c, count(*) FILTER (WHERE failed) AS e
          FROM src GROUP BY b, model, kind, lb
        ),
        h AS (
          SELECT b, model, kind, sum(n) AS n, sum(pt) AS pt, sum(ct) AS ct, sum(s) AS s, sum(c) AS c, sum(e) AS e,
                 ${health ? sql`sum(ce) AS ce, max(lea) AS lea, (array_agg(lec ORDER BY lea DESC) FILTER (WHERE lea IS NOT NULL))[1] AS lec,` : sql``}
                 coalesce(jsonb_object_agg(lb, n) FILTER (WHERE lb IS NOT NULL), '{}'::jsonb) AS bins
          FROM per_bin GROUP BY b, model, kind
        ),
        ins AS (
          INSERT INTO ${table} AS r (bucket_start, model, kind, requests, prompt_tokens, completion_tokens, seconds, credits, errors, ${health ? sql`client_errors, last_error_at, last_error_code,` : sql``} latency_hist)
          SELECT h.b, h.model, h.kind, h.n, h.pt, h.ct, h.s, h.c, h.e, ${health ? sql`h.ce, h.lea, h.lec,` : sql``} ${hist} FROM h
          ON CONFLICT (bucket_start, model, kind) DO UPDATE SET
            requests = r.requests + excluded.requests,
            prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
            completion_tokens = r.completion_tokens + excluded.completion_tokens,
            seconds = r.seconds + excluded.seconds,
            credits = r.credits + excluded.credits,
            errors = r.errors + excluded.errors,
            ${health ? sql`client_errors = r.client_errors + excluded.client_errors,
            last_error_at = greatest(r.last_error_at, excluded.last_error_at),
            last_error_code = CASE WHEN excluded.last_error_at IS NOT NULL AND (r.last_error_at IS NULL OR excluded.last_error_at >= r.last_error_at) THEN excluded.last_error_code ELSE r.last_error_code END,` : sql``}
            latency_hist = ARRAY(SELECT a + b FROM unnest(r.latency_hist, excluded.latency_hist) AS x(a, b))
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM src) AS n, (SELECT max(id) FROM src) AS max_id, (SELECT count(*) FROM ins) AS written`,
      );
      const maxId = Math.max(state.rolledMaxId, Number(done?.max_id ?? 0));
      await query(tx, sql`
        INSERT INTO usage_rollup_state (id, rolled_until, rolled_max_id) VALUES (${level.stateId}, ${upTo}, ${maxId})
        ON CONFLICT (id) DO UPDATE SET rolled_until = excluded.rolled_until, rolled_max_id = excluded.rolled_max_id`);
      if (Number.isFinite(floor)) await query(tx, sql`DELETE FROM ${table} WHERE bucket_start < ${new Date(floor - MINUTE_PRUNE_SLACK_MS).toISOString()}`);
      return Number(done?.n ?? 0);
    },
    { isolationLevel: "repeatable read" },
  );
}
