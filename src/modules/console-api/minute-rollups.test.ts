/**
 * The 1-minute roll-ups (usage_rollups_minute) behind 1-minute time series and the models' health:
 * the answer is the same from raw rows, before a refresh, after it and with late rows; what is older
 * than the table keeps is read from the raw rows; the health counts (errors, the clients' own
 * errors, the last failure and its code) merge across the rolled-up minutes and the raw tail.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { MINUTE_ROLLUP_KEEP_MS, MINUTES, refreshRollups } from "./rollups.ts";
import { usageTimeseries } from "./timeseries.ts";

let s: TestServer;
let acct: string;
const MIN = 60_000;
const db = () => s.deps.database.db;

beforeAll(async () => {
  s = await startTestServer();
  ({ accountId: acct } = await s.newClient());
}, 60_000);
afterAll(() => s?.close());

async function usageAt(rows: Array<{ at: number; model: string; status?: number; code?: string; latency?: number }>) {
  for (const r of rows) {
    await query(db(), sql`INSERT INTO usage_records (account_id, ref, kind, model, prompt_tokens, completion_tokens, cost, status, error_code, latency_ms, created_at)
      VALUES (${acct}, ${"req_" + Math.random().toString(36).slice(2)}, 'chat', ${r.model}, 10, 5, 7, ${r.status ?? 200}, ${r.code ?? null}, ${r.latency ?? 40}, ${new Date(r.at).toISOString()})`);
  }
}
const series = async (params: string) => {
  const res = await s.admin(`/admin/usage/timeseries?${params}`);
  expect(res.status).toBe(200);
  return (await res.json()) as any;
};
const minuteRows = async () => Number((await query<{ n: string }>(db(), sql`SELECT coalesce(sum(requests), 0) AS n FROM usage_rollups_minute`))[0]!.n);

test("1-minute buckets: the same answer from raw rows, before and after the refresh, with a late row; older than the table keeps comes from raw rows", async () => {
  const base = Math.floor(Date.now() / MIN) * MIN - 3 * 3_600_000; // 3 h ago, on a minute
  const old = base - MINUTE_ROLLUP_KEEP_MS; // older than the minute table keeps
  await usageAt([
    { at: old + 10_000, model: "m1" },
    { at: base + 5_000, model: "m1", latency: 100 },
    { at: base + 65_000, model: "m2", status: 502, latency: 900 },
    { at: base + 70_000, model: "m1" },
  ]);
  const range = (from: number, to: number) => `bucket=1m&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
  const raw = (from: number, to: number) => usageTimeseries(db(), { from: new Date(from), to: new Date(to), bucket: "1m" }, { rollups: false });

  const first = await series(range(base, base + 3 * MIN)); // refreshes the minute table first
  expect(first.total.requests).toEqual([1, 2, 0]);
  expect(first.models.m2.errors).toEqual([0, 1, 0]);
  expect(first.total.latency_p99_ms).toEqual([108, 1024, null]);
  expect(first).toEqual(JSON.parse(JSON.stringify(await raw(base, base + 3 * MIN))));
  expect(await minuteRows()).toBe(3); // the three recent rows, not the old one

  // a late row: an older created_at, written after the refresh; counted at once, rolled up next time
  await usageAt([{ at: base + 2 * MIN + 1_000, model: "m1" }]);
  expect((await series(range(base, base + 3 * MIN))).total.requests).toEqual([1, 2, 1]);
  await refreshRollups(db(), new Date(), MINUTES);
  expect(await minuteRows()).toBe(4);
  expect((await series(range(base, base + 3 * MIN))).total.requests).toEqual([1, 2, 1]);

  // a range reaching back past what the table keeps: the older part from raw rows
  const wide = await series(range(old, old + 2 * MIN));
  expect(wide.total.requests).toEqual([1, 0]);
  expect(wide).toEqual(JSON.parse(JSON.stringify(await raw(old, old + 2 * MIN))));
});

test("the models' health over 15 minutes: rolled-up minutes and the raw tail merge (requests, errors, the clients' errors, the last failure)", async () => {
  const now = Date.now();
  const health = async () => {
    const res = await s.admin("/admin/models");
    expect(res.status).toBe(200);
    return Object.fromEntries(((await res.json()) as any).data.map((m: any) => [m.id, m.health]));
  };
  await usageAt([
    { at: now - 16 * MIN, model: "use-lite", status: 502, code: "upstream_unavailable" }, // outside the window
    { at: now - 10 * MIN, model: "use-lite", status: 502, code: "upstream_timeout" },
    { at: now - 9 * MIN, model: "use-lite", status: 400 },
    { at: now - 8 * MIN, model: "use-lite" },
    { at: now - 7 * MIN, model: "stories260k", status: 429 },
  ]);
  const expected = {
    "use-lite": { requests: 3, errors: 1, client_errors: 1, last_error_code: "upstream_timeout", status: "degraded" },
    stories260k: { requests: 1, errors: 1, client_errors: 0, last_error_code: "http_429", status: "failing" },
  };
  // late rows for the minute table (the first test refreshed it past them): read raw until rolled up
  const unrolled = await health();
  expect(unrolled).toMatchObject(expected);
  await refreshRollups(db(), new Date(), MINUTES);
  const before = await health();
  expect(before).toEqual(unrolled);
  expect(before["use-lite"].last_error_at).toBe(new Date(now - 10 * MIN).toISOString());
  const rolled = await query<{ n: string }>(db(), sql`SELECT sum(requests) AS n FROM usage_rollups_minute WHERE model = 'use-lite' AND bucket_start >= ${new Date(now - 11 * MIN).toISOString()}`);
  expect(Number(rolled[0]!.n)).toBe(3);
  // the raw tail: a failure a moment ago is the last one
  await usageAt([{ at: Date.now() - 1_000, model: "use-lite", status: 503, code: "overloaded" }]);
  const after = await health();
  expect(after["use-lite"]).toMatchObject({ requests: 4, errors: 2, client_errors: 1, last_error_code: "overloaded" });
  expect(after.stories260k).toEqual(before.stories260k);
});
