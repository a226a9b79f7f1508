/**
 * Keeps usage_rollups (5-minute buckets per model and kind) up to date from usage_records.
 *
 * A refresh rolls up the rows created in [rolled_until, target), target = now − 2 min rounded down
 * to 5 min, plus "late" rows: ids above rolled_max_id whose created_at is older than rolled_until
 * (a writer that stamps rows with the request's time and commits later). The 2-minute lag leaves
 * in-flight transactions time to commit; a usage row whose transaction stays open longer than that
 * across a refresh can be missed by the charts (never by billing: ledger and usage_records are the
 * truth). Refreshes run at most one at a time across instances (try-advisory-lock; a busy lock means
 * another instance is doing it) in a REPEATABLE READ transaction, so the rows rolled up and the new
 * watermark come from one snapshot. Timeseries queries read rollups below rolled_until and raw rows
 * above it, so results are current even if no refresh ran for a while.
 */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../../db/index.ts";
import { LATENCY_BINS, latencyBinSql } from "./latency-histogram.ts";
import { UPSTREAM_FAILED } from "../../usage/outcome.ts";

export const ROLLUP_MS = 5 * 60_000;
const SETTLE_LAG_MS = 2 * 60_000;
const REFRESH_LOCK = 7_312_021; // advisory-lock key (migrations use 7_312_001)

export interface RollupState {
  rolledUntil: Date;
  rolledMaxId: number;
}

export const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;

export async function readRollupState(tx: Tx, opts: { forUpdate?: boolean } = {}): Promise<RollupState | null> {
  const rows = await query<{ rolled_until: string | Date; rolled_max_id: string | number }>(
    tx,
    sql`SELECT rolled_until, rolled_max_id FROM usage_rollup_state WHERE id = 1 ${opts.forUpdate ? sql`FOR UPDATE` : sql``}`,
  );
  const r = rows[0];
  return r ? { rolledUntil: new Date(r.rolled_until), rolledMaxId: Number(r.rolled_max_id) } : null;
}

/** Roll up what is due; returns the number of source rows, or null if another instance is refreshing. */
export async function refreshRollups(db: Db, now = new Date()): Promise<number | null> {
  return db.transaction(
    async (tx) => {
      const [lock] = await query<{ ok: boolean }>(tx, sql`SELECT pg_try_advisory_xact_lock(${REFRESH_LOCK}) AS ok`);
      if (!lock?.ok) return null;
      const target = new Date(floorTo(now.getTime() - SETTLE_LAG_MS, ROLLUP_MS));
      let state = await readRollupState(tx, { forUpdate: true });
      if (!state) {
        const [first] = await query<{ t: string | Date | null }>(tx, sql`SELECT min(created_at) AS t FROM usage_records`);
        const start = first?.t ? floorTo(new Date(first.t).getTime(), ROLLUP_MS) : target.getTime();
        state = { rolledUntil: new Date(Math.min(start, target.getTime())), rolledMaxId: 0 };
      }
      const until = state.rolledUntil.toISOString();
      const upTo = new Date(Math.max(target.getTime(), state.rolledUntil.getTime())).toISOString();
      const hist = sql.raw(`ARRAY(SELECT coalesce((h.bins ->> i::text)::int, 0) FROM generate_series(0, ${LATENCY_BINS - 1}) i)`);
      const [done] = await query<{ n: string | number; max_id: string | number | null }>(
        tx,
        sql`
        WITH src AS (
          SELECT id, model, kind, prompt_tokens, completion_tokens, seconds, cost, ${UPSTREAM_FAILED} AS failed,
                 ${latencyBinSql()} AS lb,
                 to_timestamp(floor(extract(epoch FROM created_at) / ${ROLLUP_MS / 1000}) * ${ROLLUP_MS / 1000}) AS b
          FROM usage_records
          WHERE (created_at >= ${until} AND created_at < ${upTo}) OR (id > ${state.rolledMaxId} AND created_at < ${until})
        ),
        per_bin AS (
          SELECT b, model, kind, lb, count(*) AS n,
                 coalesce(sum(prompt_tokens), 0) AS pt, coalesce(sum(completion_tokens), 0) AS ct, coalesce(sum(seconds), 0) AS s,
                 coalesce(sum(cost), 0) AS c, count(*) FILTER (WHERE failed) AS e
          FROM src GROUP BY b, model, kind, lb
        ),
        h AS (
          SELECT b, model, kind, sum(n) AS n, sum(pt) AS pt, sum(ct) AS ct, sum(s) AS s, sum(c) AS c, sum(e) AS e,
                 coalesce(jsonb_object_agg(lb, n) FILTER (WHERE lb IS NOT NULL), '{}'::jsonb) AS bins
          FROM per_bin GROUP BY b, model, kind
        ),
        ins AS (
          INSERT INTO usage_rollups AS r (bucket_start, model, kind, requests, prompt_tokens, completion_tokens, seconds, credits, errors, latency_hist)
          SELECT h.b, h.model, h.kind, h.n, h.pt, h.ct, h.s, h.c, h.e, ${hist} FROM h
          ON CONFLICT (bucket_start, model, kind) DO UPDATE SET
            requests = r.requests + excluded.requests,
            prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
            completion_tokens = r.completion_tokens + excluded.completion_tokens,
            seconds = r.seconds + excluded.seconds,
            credits = r.credits + excluded.credits,
            errors = r.errors + excluded.errors,
            latency_hist = ARRAY(SELECT a + b FROM unnest(r.latency_hist, excluded.latency_hist) AS x(a, b))
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM src) AS n, (SELECT max(id) FROM src) AS max_id, (SELECT count(*) FROM ins) AS written`,
      );
      const maxId = Math.max(state.rolledMaxId, Number(done?.max_id ?? 0));
      await query(tx, sql`
        INSERT INTO usage_rollup_state (id, rolled_until, rolled_max_id) VALUES (1, ${upTo}, ${maxId})
        ON CONFLICT (id) DO UPDATE SET rolled_until = excluded.rolled_until, rolled_max_id = excluded.rolled_max_id`);
      return Number(done?.n ?? 0);
    },
    { isolationLevel: "repeatable read" },
  );
}
