/**
 * Fill usage_records with synthetic rows in one INSERT … SELECT generate_series (1 M rows take
 * ~10 s): spread evenly over `spanMs` up to now, over 4 models and 50 accounts, 2% failures,
 * latencies 20–2,000 ms. Used by bench/console.ts.
 */
import { sql } from "drizzle-orm";
import { query, type Db } from "../../src/db/index.ts";

export const BENCH_MODELS = ["chat-a", "chat-b", "use-lite", "preview-motion"];

export async function fillUsage(db: Db, rows: number, spanMs: number, now = Date.now()) {
  await query(db, sql`INSERT INTO accounts (id, name, balance) SELECT 'acct_bench' || g, 'bench ' || g, 0 FROM generate_series(0, 49) g ON CONFLICT DO NOTHING`);
  const models = sql.raw(`ARRAY[${BENCH_MODELS.map((m) => `'${m}'`).join(",")}]`);
  const step = spanMs / rows;
  await query(db, sql`
    INSERT INTO usage_records (account_id, ref, kind, model, prompt_tokens, completion_tokens, seconds, cost, status, latency_ms, plugin, created_at)
    SELECT 'acct_bench' || (g % 50), 'req_bench' || g,
           CASE WHEN g % 4 = 2 THEN 'embeddings' WHEN g % 4 = 3 THEN 'video' ELSE 'chat' END,
           (${models})[1 + g % 4],
           50 + g % 100, CASE WHEN g % 4 < 2 THEN 20 + g % 300 END, CASE WHEN g % 4 = 3 THEN 5 END,
           1000 + g % 5000, CASE WHEN g % 50 = 0 THEN 502 ELSE 200 END, 20 + ((g::bigint * 7919) % 1980)::int, 'bench',
           to_timestamp((${now} - (g::float8 * ${step})) / 1000)
    FROM generate_series(1, ${rows}) g`);
  await query(db, sql`ANALYZE usage_records`);
}
