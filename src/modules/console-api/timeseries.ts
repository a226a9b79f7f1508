/**
 * Usage over time in fixed buckets, columnar (one array per measure, ready for a chart): totals and
 * per model. Reads the roll-ups (5-minute ones, or 1-minute ones for 1-minute buckets) for the
 * rolled-up past and usage_records for the rest, in one REPEATABLE READ snapshot; one account's
 * series come from usage_records alone, through usage_account_created_idx.
 */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../../db/index.ts";
import { badRequest } from "../../errors.ts";
import { LATENCY_BINS, latencyBinSql, percentile } from "./latency-histogram.ts";
import { coveredFrom, FIVE_MINUTES, MINUTES, readRollupState, refreshRollups, type RollupLevel } from "./rollups.ts";
import { UPSTREAM_FAILED } from "../../usage/outcome.ts";

export const BUCKETS = { "1m": 60_000, "5m": 300_000, "15m": 900_000, "1h": 3_600_000, "6h": 21_600_000, "1d": 86_400_000 } as const;
export type BucketName = keyof typeof BUCKETS;
export const BUCKET_NAMES = ["1m", "5m", "15m", "1h", "6h", "1d"] as const satisfies readonly BucketName[];
export const MAX_POINTS = 2_000;

export interface SeriesQuery {
  from: Date;
  to: Date;
  bucket: BucketName;
  model?: string;
  accountId?: string;
}

const MEASURES = ["requests", "prompt_tokens", "completion_tokens", "seconds", "credits", "errors"] as const;
type Measure = (typeof MEASURES)[number];

export interface Series {
  requests: number[];
  prompt_tokens: number[];
  completion_tokens: number[];
  tokens: number[];
  seconds: number[];
  credits: number[];
  errors: number[];
  error_rate: Array<number | null>;
  latency_p50_ms: Array<number | null>;
  latency_p99_ms: Array<number | null>;
}

interface Acc {
  sums: Record<Measure, number[]>;
  hists: Int32Array[];
}

const newAcc = (n: number): Acc => ({
  sums: Object.fromEntries(MEASURES.map((m) => [m, new Array<number>(n).fill(0)])) as Record<Measure, number[]>,
  hists: Array.from({ length: n }, () => new Int32Array(LATENCY_BINS)),
});

function finish(acc: Acc): Series {
  const s = acc.sums;
  return {
    ...s,
    tokens: s.prompt_tokens.map((p, i) => p + s.completion_tokens[i]!),
    error_rate: s.requests.map((r, i) => (r ? Math.round((s.errors[i]! / r) * 10_000) / 10_000 : null)),
    latency_p50_ms: acc.hists.map((h) => percentile(h, 0.5)),
    latency_p99_ms: acc.hists.map((h) => percentile(h, 0.99)),
  };
}

/** Align the range to whole buckets and check its size. */
export function alignRange(q: Pick<SeriesQuery, "from" | "to" | "bucket">) {
  const step = BUCKETS[q.bucket];
  const from = Math.floor(q.from.getTime() / step) * step;
  const to = Math.ceil(q.to.getTime() / step) * step;
  const points = (to - from) / step;
  if (points > MAX_POINTS) throw badRequest(`The range holds ${points} buckets of ${q.bucket}; at most ${MAX_POINTS} are allowed. Use a larger 'bucket' or a shorter range.`, "bucket");
  return { from, to, step, points };
}

interface Row {
  b: number | string;
  model: string;
  lb?: number | string | null;
  n: number | string;
  pt: number | string;
  ct: number | string;
  s: number | string;
  c: number | string;
  e: number | string;
  hist?: Array<number | string> | string;
}

/** Usage rows in [lo, hi) (plus `extra` rows), grouped by bucket, model and latency bin. */
function rawPart(range: { from: number; step: number }, lo: number, hi: number, q: SeriesQuery, extra = sql``) {
  const where = sql`created_at >= ${new Date(lo).toISOString()} AND created_at < ${new Date(hi).toISOString()}`;
  return sql`
    SELECT floor((extract(epoch FROM created_at) * 1000 - ${range.from}) / ${range.step})::int AS b, model, ${latencyBinSql()} AS lb,
           count(*) AS n, coalesce(sum(prompt_tokens), 0) AS pt, coalesce(sum(completion_tokens), 0) AS ct, coalesce(sum(seconds), 0) AS s,
           coalesce(sum(cost), 0) AS c, count(*) FILTER (WHERE ${UPSTREAM_FAILED}) AS e
    FROM usage_records
    WHERE ((${where}) ${extra})
      ${q.accountId ? sql`AND account_id = ${q.accountId}` : sql``}
      ${q.model ? sql`AND model = ${q.model}` : sql``}
    GROUP BY 1, 2, 3`;
}

function rollupPart(range: { from: number; step: number }, lo: number, hi: number, q: SeriesQuery, level: RollupLevel) {
  const hist = sql.raw(`ARRAY[${Array.from({ length: LATENCY_BINS }, (_, i) => `sum(latency_hist[${i + 1}])`).join(", ")}]`);
  return sql`
    SELECT floor((extract(epoch FROM bucket_start) * 1000 - ${range.from}) / ${range.step})::int AS b, model,
           sum(requests) AS n, sum(prompt_tokens) AS pt, sum(completion_tokens) AS ct, sum(seconds) AS s, sum(credits) AS c, sum(errors) AS e,
           ${hist} AS hist
    FROM ${sql.raw(level.table)}
    WHERE bucket_start >= ${new Date(lo).toISOString()} AND bucket_start < ${new Date(hi).toISOString()}
      ${q.model ? sql`AND model = ${q.model}` : sql``}
    GROUP BY 1, 2`;
}

const parseHist = (h: Row["hist"]): number[] => (typeof h === "string" ? h.replace(/[{}]/g, "").split(",").map(Number) : (h ?? []).map(Number));

/** The roll-up table whose buckets tile `step`: 5-minute buckets where they do, else 1-minute ones. */
export const levelFor = (stepMs: number): RollupLevel => (stepMs % FIVE_MINUTES.stepMs === 0 ? FIVE_MINUTES : MINUTES);

async function collect(tx: Tx, q: SeriesQuery, range: ReturnType<typeof alignRange>, level: RollupLevel | null, now: number): Promise<Row[]> {
  if (!level) return query<Row>(tx, rawPart(range, range.from, range.to, q));
  const state = await readRollupState(tx, { level });
  // [lo, until) from the roll-ups; the rest from raw rows: before what the table keeps, after its watermark
  const lo = Math.min(range.to, Math.max(range.from, coveredFrom(level, now)));
  const until = Math.min(range.to, Math.max(lo, state?.rolledUntil.getTime() ?? lo));
  const rows: Row[] = [];
  if (until > lo) rows.push(...(await query<Row>(tx, rollupPart(range, lo, until, q, level))));
  // late rows (see rollups.ts) that belong to the rolled-up part but are not in it yet, and what is older than the table
  const late = state && until > lo
    ? sql`OR (id > ${state.rolledMaxId} AND created_at >= ${new Date(lo).toISOString()} AND created_at < ${new Date(until).toISOString()})`
    : sql``;
  const older = lo > range.from ? sql`OR (created_at >= ${new Date(range.from).toISOString()} AND created_at < ${new Date(lo).toISOString()})` : sql``;
  if (until < range.to || state || lo > range.from) rows.push(...(await query<Row>(tx, rawPart(range, until, range.to, q, sql`${late} ${older}`))));
  return rows;
}

export async function usageTimeseries(db: Db, q: SeriesQuery, opts: { onRefreshError?: (e: unknown) => void; rollups?: boolean } = {}) {
  const range = alignRange(q);
  // `rollups: false` reads raw rows only (bench/console.ts compares the two); one account's rows through its index
  const level = opts.rollups !== false && !q.accountId ? levelFor(range.step) : null;
  const now = Date.now();
  if (level) await refreshRollups(db, new Date(now), level, { whenDue: true }).catch((e) => opts.onRefreshError?.(e));
  const rows = await db.transaction((tx) => collect(tx, q, range, level, now), { isolationLevel: "repeatable read", accessMode: "read only" });

  const total = newAcc(range.points);
  const byModel = new Map<string, Acc>();
  for (const r of rows) {
    const i = Number(r.b);
    if (i < 0 || i >= range.points) continue;
    let m = byModel.get(r.model);
    if (!m) byModel.set(r.model, (m = newAcc(range.points)));
    const vals: Record<Measure, number> = { requests: Number(r.n), prompt_tokens: Number(r.pt), completion_tokens: Number(r.ct), seconds: Number(r.s), credits: Number(r.c), errors: Number(r.e) };
    for (const k of MEASURES) {
      total.sums[k][i]! += vals[k];
      m.sums[k][i]! += vals[k];
    }
    if (r.hist !== undefined) {
      const h = parseHist(r.hist);
      for (let b = 0; b < LATENCY_BINS; b++) {
        total.hists[i]![b]! += h[b] ?? 0;
        m.hists[i]![b]! += h[b] ?? 0;
      }
    } else if (r.lb !== null && r.lb !== undefined) {
      total.hists[i]![Number(r.lb)]! += vals.requests;
      m.hists[i]![Number(r.lb)]! += vals.requests;
    }
  }
  const models = [...byModel.keys()].sort();
  return {
    object: "usage.timeseries" as const,
    bucket: q.bucket,
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    timestamps: Array.from({ length: range.points }, (_, i) => (range.from + i * range.step) / 1000),
    total: finish(total),
    models: Object.fromEntries(models.map((m) => [m, finish(byModel.get(m)!)])),
  };
}
