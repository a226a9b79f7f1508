/**
 * `budget.threshold_reached` webhooks: exactly one event per window and threshold, with two
 * instances serving the key at once and one of them restarted halfway (kill -9, then a restart that
 * replays its journal). A key's daily budget with thresholds 25, 50, 80 and 100 % and an account's
 * monthly budget with the default 80 and 100 %: the requests cross them from both instances; the
 * receiver (a real HTTP server, signatures checked with the standardwebhooks library) gets each
 * crossing once per window, signed, with the window and its figures.
 * The admin API shows the thresholds reached in the window.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { budgetModels, CHAT_COST, routes } from "./support.ts";

let fake: FakeOpenAI;
let receiver: Receiver;
let url: string;
let dir: string;
const data = mkdtempSync(join(tmpdir(), "reelay-budget-alerts-"));
const running: ChildServer[] = [];
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  receiver = startReceiver();
  const m = budgetModels(fake.url);
  dir = m.dir;
  url = await createTestDatabase();
  env = { ...m.env, DATABASE_URL: url, REELAY_SECRET_KEY: "budget-alerts-secret-key-0123456789abcd", REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_WEBHOOK_POLL_MS: "200", REELAY_HOLD_SWEEP_MS: "300" };
}, 60_000);
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await receiver?.stop();
  await fake?.stop();
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
  rmSync(data, { recursive: true, force: true });
}, 60_000);

async function server(name: string, extra: Record<string, string> = {}) {
  const s = await spawnServer({ ...env, REELAY_DATA_DIR: join(data, name), ...extra });
  running.push(s);
  return s;
}

test("two instances, one restarted by kill -9 halfway: each window's thresholds arrive once each, signed, with the window's figures", async () => {
  const a = await server("a", { REELAY_LEASE_TTL_MS: "2000" });
  const b = await server("b");
  const c = await newClientOn(a, 100_000_000);
  const N = 200;
  const LIMIT = N * CHAT_COST;
  expect((await a.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets: [{ period: "day", limit: LIMIT, thresholds: [25, 50, 80, 100] }] } })).status).toBe(200);
  expect((await a.admin(`/admin/accounts/${c.accountId}/budgets`, { method: "PUT", body: { budgets: [{ period: "month", limit: 2 * LIMIT }] } })).status).toBe(200);
  const hook = await fetch(`${b.url}/v1/webhooks`, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ url: receiver.url + "/budget", events: ["budget.threshold_reached"] }) });
  expect(hook.status).toBe(201);
  const secret = ((await hook.json()) as { secret: string }).secret;

  // the first half from both instances; then a is killed and restarted on its data directory; then the rest
  const half = async (servers: ChildServer[], n: number) =>
    Promise.all(Array.from({ length: 8 }, async (_, i) => {
      for (let k = 0; k < n / 8; k++) {
        const res = await routes.chat(servers[(i + k) % servers.length]!.url, c.key);
        await res.arrayBuffer();
        if (res.status === 402) return;
      }
    }));
  await half([a, b], N * 0.6);
  await a.kill9();
  const a2 = await server("a");
  await half([a2, b], N);

  // the key's window is full: 4 thresholds; the account's month is half spent: none of 80/100 yet
  const events = await receiver.waitFor((r) => r.filter((x) => x.path === "/budget").length >= 4, 20_000);
  await Bun.sleep(1_500); // a duplicate would arrive within a few polls
  const got = receiver.on("/budget");
  const wh = new Webhook(secret);
  const bodies = got.map((r) => wh.verify(r.body, r.headers) as any);
  expect(bodies.map((e) => e.data.threshold).sort((x: number, y: number) => x - y)).toEqual([25, 50, 80, 100]);
  for (const e of bodies) {
    expect(e).toMatchObject({ type: "budget.threshold_reached", data: { object: "budget.threshold", scope: "key", key_id: c.keyId, period: "day", limit: LIMIT } });
    expect(e.data.spent * 100).toBeGreaterThanOrEqual(LIMIT * e.data.threshold);
  }
  expect(new Set(bodies.map((e) => e.data.window_id)).size).toBe(1);
  expect(new Set(got.map((r) => r.headers["webhook-id"])).size).toBe(4);
  void events;

  const view = ((await (await b.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any).data[0].window;
  expect(view.alerts.map((x: any) => x.threshold)).toEqual([25, 50, 80, 100]);
}, 180_000);
