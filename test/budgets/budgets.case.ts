/**
 * Budgets through the HTTP API, on every database reelay supports (budgets-postgres.test.ts,
 * budgets-pglite.test.ts), with a test clock moved across midnights: the admin API (PUT replaces,
 * GET shows the current window, key creation with budgets, validation), the exact 402
 * `budget_exceeded` (its window, what is left, resets_at, Retry-After), the tightest of the key's
 * and the account's windows deciding, rollovers (a charge counts in the window of its approval),
 * DST days of 23 and 25 hours, weeks from Monday, months, lifetime caps, model-scoped budgets,
 * `GET /v1/account`, and a rotated key keeping its budgets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { sql } from "drizzle-orm";
import { query } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { expectInvariants, expectWindowInvariants } from "../billing/support.ts";
import { budgetModels, CHAT_COST, routes, startBudgetServer, testClock, type BudgetServer } from "./support.ts";

export function describeBudgets(name: string, pglite: boolean) {
  describe(`budgets over HTTP on ${name}`, () => {
    let fake: FakeOpenAI;
    let server: BudgetServer;
    let dir: string;
    const clock = testClock("2026-03-07T12:00:00Z");
    beforeAll(async () => {
      fake = await startFakeOpenAI({ tokens: 8 });
      const m = budgetModels(fake.url);
      dir = m.dir;
      server = await startBudgetServer({ ...m.env, REELAY_LEASE_WARM_REQUESTS: "2" }, { pglite, clock });
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await fake?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const db = () => server.deps.database.db;
    const ok = async (res: Response) => {
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };

    test("a key's daily budget refuses exactly: 5 requests fit, the 6th gets 402 budget_exceeded naming the window, what is left, resets_at and Retry-After", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ budgets: [{ period: "day", limit: 5 * CHAT_COST + 100 }] });
      for (let i = 0; i < 5; i++) await ok(await routes.chat(server.url, c.key));
      const res = await routes.chat(server.url, c.key);
      expect(res.status).toBe(402);
      expect(res.headers.get("retry-after")).toBe(String(12 * 3600));
      const body = (await res.json()) as any;
      expect(body.error).toMatchObject({ type: "insufficient_quota", code: "budget_exceeded", param: null, resets_at: "2026-03-08T00:00:00.000Z" });
      expect(body.error.budget).toMatchObject({ scope: "key", key_id: c.keyId, period: "day", timezone: "UTC", limit: 5 * CHAT_COST + 100, remaining: 100 });
      expect(body.error.message).toBe(`Budget exceeded: key ${c.keyId}'s daily budget (UTC) of $0.000865 (865 micro-dollars) has $0.000100 (100 micro-dollars) left; this request needs $0.000153 (153 micro-dollars). It resets at 2026-03-08T00:00:00.000Z.`);
      const view = (await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any;
      expect(view.data).toEqual([expect.objectContaining({ period: "day", limit: 865, window: expect.objectContaining({ spent: 5 * CHAT_COST, reserved: 0, remaining: 100, resets_at: "2026-03-08T00:00:00.000Z", starts_at: "2026-03-07T00:00:00.000Z" }) })]);
      // the client sees it too
      const acct = await routes.account(server.url, c.key);
      expect(acct.budgets).toEqual([expect.objectContaining({ scope: "key", key_id: c.keyId, window: expect.objectContaining({ spent: 5 * CHAT_COST, remaining: 100 }) })]);
      expect(acct.balance).toBe(100_000_000 - 5 * CHAT_COST);
      // midnight: a new window, the request goes through
      clock.set("2026-03-08T00:00:00Z");
      await ok(await routes.chat(server.url, c.key));
      await server.deps.billing.sync();
      await expectInvariants(db(), [c.accountId]);
      await expectWindowInvariants(db(), [c.accountId]);
    }, 60_000);

    test("the key's and the account's windows and the balance: the tightest decides, whichever it is", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ credits: 100 * CHAT_COST, budgets: [{ period: "day", limit: 10 * CHAT_COST }] });
      expect((await server.admin(`/admin/accounts/${c.accountId}/budgets`, { method: "PUT", body: { budgets: [{ period: "month", limit: 3 * CHAT_COST + 7 }] } })).status).toBe(200);
      for (let i = 0; i < 3; i++) await ok(await routes.chat(server.url, c.key));
      const refused = (await (await routes.chat(server.url, c.key)).json()) as any;
      expect(refused.error).toMatchObject({ code: "budget_exceeded", resets_at: "2026-04-01T00:00:00.000Z", budget: { scope: "account", period: "month", remaining: 7 } });
      expect(refused.error.message).toContain("the account's monthly budget (UTC)");
      // without the account's budget the key's is next; the balance below both decides with insufficient_quota
      expect((await server.admin(`/admin/accounts/${c.accountId}/budgets`, { method: "PUT", body: { budgets: [] } })).status).toBe(200);
      await server.admin(`/admin/accounts/${c.accountId}/adjustments`, { body: { amount: -(97 * CHAT_COST - 20), reason: "leave 20" } });
      const poor = await routes.chat(server.url, c.key);
      expect(poor.status).toBe(402);
      expect(((await poor.json()) as any).error).toMatchObject({ code: "insufficient_quota" });
      await server.deps.billing.sync();
      await expectInvariants(db(), [c.accountId]);
      await expectWindowInvariants(db(), [c.accountId]);
    }, 60_000);

    test("a charge counts in the window its request was approved in: a stream approved at 23:59:59.9 and settled after midnight counts for the old day", async () => {
      clock.set("2026-03-07T23:59:59.900Z");
      const c = await server.client({ budgets: [{ period: "day", limit: 1_000_000 }] });
      fake.behave({ tokens: 8, delayBetweenChunksMs: 150 });
      const res = await routes.stream(server.url, c.key);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      clock.set("2026-03-08T00:00:00.100Z");
      while (!(await reader.read()).done);
      fake.behave({});
      await server.deps.billing.sync();
      const windows = await query<{ starts_at: string; spent: number }>(db(), sql`
        SELECT to_char(starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS starts_at, spent::float8 AS spent FROM budget_windows WHERE account_id = ${c.accountId} ORDER BY starts_at`);
      expect(windows.map((w) => ({ ...w, spent: Number(w.spent) }))).toEqual([{ starts_at: "2026-03-07", spent: CHAT_COST }]);
      // the new day's window starts empty
      const now = (await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any;
      expect(now.data[0].window).toMatchObject({ starts_at: "2026-03-08T00:00:00.000Z", spent: 0, remaining: 1_000_000 });
      await expectWindowInvariants(db(), [c.accountId]);
    }, 60_000);

    test("calendar windows in timezones with DST: a 23-hour and a 25-hour day in New York, a week from Monday in Kolkata, a month in Paris across its DST change", async () => {
      const c = await server.client();
      const put = async (budgets: unknown[]) => ((await (await server.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets } })).json()) as any).data;
      const spec = [
        { period: "day", limit: 1_000, timezone: "America/New_York" },
        { period: "week", limit: 1_000, timezone: "Asia/Kolkata" },
        { period: "month", limit: 1_000, timezone: "Europe/Paris" },
      ];
      clock.set("2026-03-08T12:00:00Z"); // 08:00 EDT, the day clocks went forward
      const spring = await put(spec);
      const byPeriod = (list: any[]) => Object.fromEntries(list.map((b) => [b.period, [b.window.starts_at, b.window.resets_at]]));
      expect(byPeriod(spring)).toEqual({
        day: ["2026-03-08T05:00:00.000Z", "2026-03-09T04:00:00.000Z"], // 23 hours
        week: ["2026-03-01T18:30:00.000Z", "2026-03-08T18:30:00.000Z"], // Monday 2 March, 00:00 IST
        month: ["2026-02-28T23:00:00.000Z", "2026-03-31T22:00:00.000Z"], // CET to CEST
      });
      clock.set("2026-11-01T12:00:00Z"); // the day clocks went back
      const fall = ((await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any).data;
      const day = fall.find((b: any) => b.period === "day");
      expect([day.window.starts_at, day.window.resets_at]).toEqual(["2026-11-01T04:00:00.000Z", "2026-11-02T05:00:00.000Z"]); // 25 hours
      // a refusal just before a New York midnight in winter resets at 05:00Z
      clock.set("2026-11-02T04:59:00Z");
      await put([{ period: "day", limit: 10, timezone: "America/New_York" }]);
      const res = await routes.chat(server.url, c.key);
      expect(res.status).toBe(402);
      expect(res.headers.get("retry-after")).toBe("60");
      expect(((await res.json()) as any).error.resets_at).toBe("2026-11-02T05:00:00.000Z");
      clock.set("2026-11-02T05:00:00Z");
      expect((await routes.chat(server.url, c.key)).status).toBe(402); // a new window, but 10 micro-dollars still do not cover one request
    }, 60_000);

    test("lifetime: a prepaid cap that never resets (no Retry-After, resets_at null), a year later still refused", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ budgets: [{ period: "lifetime", limit: 2 * CHAT_COST }] });
      await ok(await routes.chat(server.url, c.key));
      await ok(await routes.chat(server.url, c.key));
      const res = await routes.chat(server.url, c.key);
      expect(res.status).toBe(402);
      expect(res.headers.get("retry-after")).toBeNull();
      const body = (await res.json()) as any;
      expect(body.error).toMatchObject({ code: "budget_exceeded", resets_at: null, budget: { period: "lifetime", remaining: 0 } });
      expect(body.error.message).toContain("lifetime budget of");
      expect(body.error.message).toContain("It does not reset.");
      clock.set("2027-03-07T12:00:00Z");
      expect((await routes.chat(server.url, c.key)).status).toBe(402);
      clock.set("2026-03-07T12:00:00Z");
    }, 60_000);

    test("a model-scoped budget counts only its models: chat-b is capped, chat is not; embeddings and video count in the key's all-model budget", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ budgets: [{ period: "day", limit: CHAT_COST, models: ["chat-b"] }, { period: "month", limit: 10_000_000 }] });
      await ok(await routes.chat(server.url, c.key, "chat-b"));
      const refused = await routes.chat(server.url, c.key, "chat-b");
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as any).error.budget).toMatchObject({ models: ["chat-b"], remaining: 0 });
      for (let i = 0; i < 3; i++) await ok(await routes.chat(server.url, c.key, "chat"));
      await ok(await routes.embed(server.url, c.key));
      expect((await routes.video(server.url, c.key)).status).toBe(202);
      await server.deps.billing.sync();
      const view = ((await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any).data;
      const scoped = view.find((b: any) => b.models !== null);
      const all = view.find((b: any) => b.models === null);
      expect(scoped.window.spent).toBe(CHAT_COST);
      // the month: 4 chats, one embedding, and the video job's hold reserved (charged when the job completes)
      expect(all.window.spent + all.window.reserved).toBeGreaterThanOrEqual(4 * CHAT_COST + 30_000);
      await expectWindowInvariants(db(), [c.accountId]);
    }, 60_000);

    test("the admin API: PUT replaces the set (a kept budget keeps what it counted), [] removes all, bad budgets are 400 and change nothing, a rotated key keeps its budgets", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ budgets: [{ period: "day", limit: 3 * CHAT_COST }] });
      await ok(await routes.chat(server.url, c.key));
      const put = (budgets: unknown) => server.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets } });
      // the same day budget with a higher limit keeps its spending
      const raised = ((await (await put([{ period: "day", limit: 4 * CHAT_COST }, { period: "week", limit: 9_999 }])).json()) as any).data;
      expect(raised.find((b: any) => b.period === "day").window).toMatchObject({ spent: CHAT_COST, remaining: 3 * CHAT_COST });
      for (const [bad, param] of [
        [[{ period: "year", limit: 1 }], "budgets/0/period"],
        [[{ period: "day", limit: -1 }], "budgets/0/limit"],
        [[{ period: "day", limit: 1, timezone: "Mars/Olympus" }], "budgets[0].timezone"],
        [[{ period: "day", limit: 1 }, { period: "day", limit: 2 }], "budgets[1]"],
        [[{ period: "day", limit: 1, thresholds: [0] }], "budgets/0/thresholds/0"],
      ] as const) {
        const res = await put(bad);
        expect({ bad, status: res.status }).toEqual({ bad, status: 400 });
        const e = ((await res.json()) as any).error;
        expect(e.type).toBe("invalid_request_error");
        expect(String(e.param)).toContain(param.replace(/\/.*/, ""));
      }
      expect(((await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any).data.length).toBe(2);
      // a key created with a bad budget is not created
      const before = ((await (await server.admin(`/admin/accounts/${c.accountId}/keys`)).json()) as any).data.length;
      expect((await server.admin(`/admin/accounts/${c.accountId}/keys`, { body: { name: "bad", budgets: [{ period: "day", limit: 1, timezone: "Nowhere/Land" }] } })).status).toBe(400);
      expect(((await (await server.admin(`/admin/accounts/${c.accountId}/keys`)).json()) as any).data.length).toBe(before);
      // rotation: the new key keeps the budgets and what they counted
      const rotated = (await (await server.admin(`/admin/keys/${c.keyId}/rotate`, { body: {} })).json()) as any;
      const moved = ((await (await server.admin(`/admin/keys/${rotated.id}/budgets`)).json()) as any).data;
      expect(moved.find((b: any) => b.period === "day").window.spent).toBe(CHAT_COST);
      // [] removes them: no limit any more
      expect(((await (await server.admin(`/admin/keys/${rotated.id}/budgets`, { method: "PUT", body: { budgets: [] } })).json()) as any).data).toEqual([]);
      for (let i = 0; i < 5; i++) await ok(await routes.chat(server.url, rotated.key));
      expect((await server.admin(`/admin/keys/key_nope/budgets`)).status).toBe(404);
      expect((await server.admin(`/admin/accounts/acct_nope/budgets`, { method: "PUT", body: { budgets: [] } })).status).toBe(404);
      await server.deps.billing.sync();
      await expectWindowInvariants(db(), [c.accountId]);
    }, 60_000);

    test("thresholds: each is reached once per window, whatever comes after; the next day's window reaches them again", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client({ budgets: [{ period: "day", limit: 4 * CHAT_COST, thresholds: [50, 100] }] });
      const alerts = async () => (await query<{ window_id: string; threshold: number }>(db(), sql`SELECT window_id, threshold FROM budget_alerts WHERE account_id = ${c.accountId} ORDER BY reached_at, threshold`)).map((a) => `${a.window_id.split("@")[1]}:${a.threshold}`);
      await ok(await routes.chat(server.url, c.key));
      await server.deps.billing.sync();
      expect(await alerts()).toEqual([]);
      await ok(await routes.chat(server.url, c.key)); // 50 %
      await ok(await routes.chat(server.url, c.key));
      await server.deps.billing.sync();
      expect(await alerts()).toEqual(["1772841600:50"]);
      await ok(await routes.chat(server.url, c.key)); // 100 %
      expect((await routes.chat(server.url, c.key)).status).toBe(402);
      await server.deps.billing.sync();
      expect(await alerts()).toEqual(["1772841600:50", "1772841600:100"]);
      clock.set("2026-03-08T09:00:00Z");
      for (let i = 0; i < 2; i++) await ok(await routes.chat(server.url, c.key));
      await server.deps.billing.sync();
      expect(await alerts()).toEqual(["1772841600:50", "1772841600:100", "1772928000:50"]);
      const view = ((await (await server.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any).data[0].window;
      expect(view.alerts.map((a: any) => a.threshold)).toEqual([50]);
    }, 60_000);

    test("/docs documents the routes and the 402 body", async () => {
      const doc = (await (await fetch(`${server.url}/docs/json`)).json()) as any;
      for (const path of ["/admin/keys/{id}/budgets", "/admin/accounts/{id}/budgets", "/admin/accounts/{id}/plan", "/admin/plans/{id}", "/admin/plans"]) expect({ path, documented: path in doc.paths }).toEqual({ path, documented: true });
      expect(Object.keys(doc.paths["/admin/keys/{id}/budgets"]).sort()).toEqual(["get", "put"]);
      const chat402 = JSON.stringify(doc.paths["/v1/chat/completions"].post.responses["402"]);
      expect(chat402).toContain("budget_exceeded");
      expect(chat402).toContain("resets_at");
      expect(JSON.stringify(doc.paths["/v1/account"].get.responses["200"])).toContain("budgets");
      expect(JSON.stringify(doc.webhooks ?? {})).toContain("budget.threshold_reached");
    });

    test("a budget set or lowered takes effect for the next request (the instance's leases stop approving)", async () => {
      clock.set("2026-03-07T12:00:00Z");
      const c = await server.client();
      // warm: the account is served from a lease
      for (let i = 0; i < 6; i++) await ok(await routes.chat(server.url, c.key));
      expect((await server.admin(`/admin/accounts/${c.accountId}/budgets`, { method: "PUT", body: { budgets: [{ period: "day", limit: CHAT_COST }] } })).status).toBe(200);
      await ok(await routes.chat(server.url, c.key));
      const res = await routes.chat(server.url, c.key);
      expect(res.status).toBe(402);
      expect(((await res.json()) as any).error.code).toBe("budget_exceeded");
      await server.deps.billing.sync();
      await expectWindowInvariants(db(), [c.accountId]);
      await expectInvariants(db(), [c.accountId]);
    }, 60_000);
  });
}
