/**
 * Budget windows (src/billing/windows.ts, window-statements.ts), on every database reelay supports
 * (windows-parts-postgres.test.ts, windows-parts-pglite.test.ts): the calendar periods Postgres
 * computes in a budget's timezone at the engine's clock (DST days of 23 and 25 hours, half-hour
 * DST in Lord Howe, weeks from Monday, months, lifetime), deterministic window ids, which budgets a
 * request counts in (its key's and the account's, by model), and the per-account cache that
 * follows the clock across midnight and is made stale by a change of the budgets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createKey } from "../../../src/accounts/api-keys.ts";
import { setBudgets } from "../../../src/billing/budgets.ts";
import { currentWindows } from "../../../src/billing/window-statements.ts";
import { BudgetWindows, scopeOf } from "../../../src/billing/windows.ts";
import { fundedAccount, type BillingDb } from "../support.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function describeWindowParts(name: string, open: () => Promise<BillingDb>) {
  describe(`budget windows on ${name}`, () => {
    let bdb: BillingDb;
    beforeAll(async () => {
      bdb = await open();
    }, 60_000);
    afterAll(async () => {
      await bdb?.dispose();
    });

    test("periods in the budget's timezone, at the instant given: DST days, half-hour DST, Monday weeks, months, lifetime", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 0);
      const cases: Array<[string, string, string, string, string]> = [
        // period, timezone, at, start, end
        ["day", "America/New_York", "2026-03-08T12:00:00Z", "2026-03-08T05:00:00.000Z", "2026-03-09T04:00:00.000Z"],
        ["day", "America/New_York", "2026-11-01T12:00:00Z", "2026-11-01T04:00:00.000Z", "2026-11-02T05:00:00.000Z"],
        ["day", "America/New_York", "2026-03-08T04:59:59Z", "2026-03-07T05:00:00.000Z", "2026-03-08T05:00:00.000Z"],
        ["day", "Australia/Lord_Howe", "2026-04-05T12:00:00Z", "2026-04-04T13:00:00.000Z", "2026-04-05T13:30:00.000Z"], // 24.5 hours
        ["day", "Asia/Kolkata", "2026-06-01T18:29:59Z", "2026-05-31T18:30:00.000Z", "2026-06-01T18:30:00.000Z"],
        ["week", "UTC", "2026-03-08T23:59:59Z", "2026-03-02T00:00:00.000Z", "2026-03-09T00:00:00.000Z"], // Sunday: still the week from Monday 2 March
        ["week", "UTC", "2026-03-09T00:00:00Z", "2026-03-09T00:00:00.000Z", "2026-03-16T00:00:00.000Z"],
        ["month", "Europe/Paris", "2026-03-31T21:59:59Z", "2026-02-28T23:00:00.000Z", "2026-03-31T22:00:00.000Z"],
        ["month", "Europe/Paris", "2026-03-31T22:00:00Z", "2026-03-31T22:00:00.000Z", "2026-04-30T22:00:00.000Z"],
        ["month", "UTC", "2028-02-29T12:00:00Z", "2028-02-01T00:00:00.000Z", "2028-03-01T00:00:00.000Z"],
      ];
      for (const [period, timezone, at, start, end] of cases) {
        await setBudgets(db, { accountId: acct, keyId: null }, [{ period: period as "day", limit: 1, timezone }], Date.parse(at));
        const set = await currentWindows(db, acct, Date.parse(at));
        expect({ period, timezone, at, window: [iso(set.windows[0]!.startsAt), iso(set.windows[0]!.endsAt)] }).toEqual({ period, timezone, at, window: [start, end] });
        expect(set.windows[0]!.id).toBe(`${set.windows[0]!.budgetId}@${Date.parse(start) / 1000}`);
      }
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "lifetime", limit: 1 }], Date.parse("2026-03-01T00:00:00Z"));
      const life = await currentWindows(db, acct, Date.parse("2040-01-01T00:00:00Z"));
      expect(life.windows.map((w) => [w.period, w.endsAt, w.id.endsWith("@life")])).toEqual([["lifetime", null, true]]);
    });

    test("which windows a request counts in: its key's and the account's, model-scoped ones only for their models", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 0);
      const k1 = (await createKey(db, acct, { name: "k1" })).record.id;
      const k2 = (await createKey(db, acct, { name: "k2" })).record.id;
      const at = Date.parse("2026-05-05T10:00:00Z");
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "month", limit: 100 }], at);
      await setBudgets(db, { accountId: acct, keyId: k1 }, [{ period: "day", limit: 10 }, { period: "lifetime", limit: 50, models: ["gpt-x"] }], at);
      const set = await currentWindows(db, acct, at);
      const periods = (keyId: string | null, model: string | null) => scopeOf(acct, set, keyId, model).windows.map((w) => w.period).sort();
      expect(periods(k1, "gpt-x")).toEqual(["day", "lifetime", "month"]);
      expect(periods(k1, "other")).toEqual(["day", "month"]);
      expect(periods(k2, "gpt-x")).toEqual(["month"]);
      expect(periods(null, null)).toEqual(["month"]);
      const s = scopeOf(acct, set, k1, "gpt-x");
      expect(s.key).toBe(`${acct}|${s.ids.join(",")}`);
      expect(s.endsAt).toBe(Date.parse("2026-05-06T00:00:00Z"));
      expect(scopeOf(acct, { version: 3, windows: [] }, k1, null)).toMatchObject({ key: acct, ids: [], endsAt: Infinity, version: 3 });
    });

    test("the cache follows the clock across midnight and forgets a changed set when told", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 0);
      let now = Date.parse("2026-05-05T23:59:59.500Z");
      const windows = new BudgetWindows(db, () => now);
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "day", limit: 100 }], now);
      const before = await windows.scope(acct, null, null);
      expect(iso(before.endsAt)).toBe("2026-05-06T00:00:00.000Z");
      expect(await windows.scope(acct, null, null)).toBe(before); // cached
      now += 600;
      const after = await windows.scope(acct, null, null);
      expect(after.ids).not.toEqual(before.ids);
      expect(iso(after.endsAt)).toBe("2026-05-07T00:00:00.000Z");
      await setBudgets(db, { accountId: acct, keyId: null }, [], now);
      expect((await windows.scope(acct, null, null)).ids).toEqual(after.ids); // still cached: the engine finds out from its statements
      windows.invalidate(acct);
      const none = await windows.scope(acct, null, null);
      expect({ ids: none.ids, newer: none.version > after.version }).toEqual({ ids: [], newer: true });
    });
  });
}
