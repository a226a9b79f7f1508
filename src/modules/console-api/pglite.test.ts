/** The time series (rollup refresh included) on the embedded default database, PGlite. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({}, { pglite: true });
}, 60_000);
afterAll(() => s?.close());

test("hourly series over rolled-up and raw rows on PGlite", async () => {
  const { accountId } = await s.newClient();
  const hour = 3_600_000;
  const base = Math.floor(Date.now() / hour) * hour - 5 * hour;
  for (const [at, latency] of [[base + 1_000, 100], [base + 2 * hour, 1000], [Date.now() - 1000, 10]] as const) {
    await query(s.deps.database.db, sql`INSERT INTO usage_records (account_id, ref, kind, model, prompt_tokens, completion_tokens, cost, status, latency_ms, created_at)
      VALUES (${accountId}, ${"req_" + at}, 'chat', 'm', 1, 2, 30, 200, ${latency}, ${new Date(at).toISOString()})`);
  }
  const res = await s.admin(`/admin/usage/timeseries?bucket=1h&from=${new Date(base).toISOString()}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as any;
  expect(body.total.requests.slice(0, 3)).toEqual([1, 0, 1]);
  expect(body.total.requests.reduce((a: number, b: number) => a + b, 0)).toBe(3);
  expect(body.total.credits.reduce((a: number, b: number) => a + b, 0)).toBe(90);
  expect(body.total.latency_p50_ms[2]).toBe(1024);
  const [state] = await query<{ rolled_until: string }>(s.deps.database.db, sql`SELECT rolled_until FROM usage_rollup_state`);
  expect(new Date(state!.rolled_until).getTime()).toBeGreaterThan(base + 2 * hour);
}, 60_000);
