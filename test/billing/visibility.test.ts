/**
 * What clients and operators see of billing: GET /v1/account and /v1/usage with a client key,
 * the admin credits API with the admin token, and the CLI against the same database.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as billing from "../../src/billing/index.ts";
import { usageRecords } from "../../src/db/schema/index.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { settle } from "./support.ts";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
}, 60_000);
afterAll(async () => {
  await srv?.close();
});

const asClient = (key: string, path: string) => fetch(srv.url + path, { headers: { authorization: `Bearer ${key}` } });

describe("client view", () => {
  test("GET /v1/account shows balance, held and available, and follows holds and settles", async () => {
    const c = await srv.newClient({ credits: 2_000_000 });
    let res = await asClient(c.key, "/v1/account");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: "account", id: c.accountId, balance: 2_000_000, held: 0, available: 2_000_000, currency: "micro-USD" });

    const db = srv.deps.database.db;
    const h = await billing.hold(db, { accountId: c.accountId, amount: 150_000, ref: "vid_visible", reason: "video", expiresAt: null });
    res = await asClient(c.key, "/v1/account");
    expect(await res.json()).toMatchObject({ balance: 2_000_000, held: 150_000, available: 1_850_000 });
    await settle(db, h, 120_000, "video done");
    res = await asClient(c.key, "/v1/account");
    expect(await res.json()).toMatchObject({ balance: 1_880_000, held: 0, available: 1_880_000 });

    res = await fetch(srv.url + "/v1/account");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("authentication_error");
  }, 60_000);

  test("GET /v1/usage: newest first, limit=2 pages with the before cursor, only the caller's records", async () => {
    const c = await srv.newClient({ credits: 1_000_000 });
    const other = await srv.newClient({ credits: 1_000_000 });
    const db = srv.deps.database.db;
    const mine = await db
      .insert(usageRecords)
      .values([1, 2, 3, 4, 5].map((i) => ({ accountId: c.accountId, ref: `req_u${i}`, kind: "chat" as const, model: "m", promptTokens: i, completionTokens: 10 * i, cost: 100 * i, status: 200 })))
      .returning({ id: usageRecords.id });
    await db.insert(usageRecords).values({ accountId: other.accountId, ref: "req_other", kind: "video", model: "v", seconds: 5, cost: 150_000, status: 200 });

    const pages: { data: { id: number; ref: string; cost: number; prompt_tokens: number }[]; has_more: boolean; next_before: number | null }[] = [];
    let path = "/v1/usage?limit=2";
    for (;;) {
      const res = await asClient(c.key, path);
      expect(res.status).toBe(200);
      const page = (await res.json()) as (typeof pages)[number];
      pages.push(page);
      if (!page.has_more) break;
      path = `/v1/usage?limit=2&before=${page.next_before}`;
    }
    expect(pages.map((p) => p.data.map((r) => r.ref))).toEqual([["req_u5", "req_u4"], ["req_u3", "req_u2"], ["req_u1"]]);
    expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
    expect(pages[0]!.next_before).toBe(mine[3]!.id);
    expect(pages[2]!.next_before).toBeNull();
    expect(pages[0]!.data[0]).toMatchObject({ object: "usage_record", kind: "chat", model: "m", prompt_tokens: 5, completion_tokens: 50, cost: 500, status: 200 });

    const bad = await asClient(c.key, "/v1/usage?limit=0");
    expect(bad.status).toBe(400);
  }, 60_000);
});

describe("operator view (admin HTTP)", () => {
  test("grant, adjust and ledger need the admin token; the ledger shows every change", async () => {
    const c = await srv.newClient({ credits: 1_000_000 });
    const path = `/admin/accounts/${c.accountId}`;

    expect((await fetch(srv.url + path + "/credits", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ amount: 5 }) })).status).toBe(401);
    const withKey = await fetch(srv.url + path + "/credits", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ amount: 5 }) });
    expect(withKey.status).toBe(403);
    expect((await srv.admin(path + "/ledger", { method: "GET" })).status).toBe(200);
    expect((await fetch(srv.url + path + "/ledger", { headers: { authorization: "Bearer wrong-token" } })).status).toBe(401);

    let res = await srv.admin(path + "/credits", { body: { amount: 500_000, reason: "invoice 42", ref: "inv_42" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: c.accountId, balance: 1_500_000, held: 0, available: 1_500_000 });

    res = await srv.admin(path + "/adjustments", { body: { amount: -200_000, reason: "refund correction" } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ balance: 1_300_000, available: 1_300_000 });

    // an adjustment below what is held is refused and changes nothing
    await billing.hold(srv.deps.database.db, { accountId: c.accountId, amount: 1_000_000, ref: "req_adm_hold", reason: "chat", expiresAt: new Date(Date.now() + 60_000) });
    res = await srv.admin(path + "/adjustments", { body: { amount: -400_000, reason: "too much" } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_amount");
    res = await srv.admin(path + "/credits", { body: { amount: 0 } });
    expect(res.status).toBe(400);

    res = await srv.admin(path + "/ledger?limit=3", { method: "GET" });
    const page = (await res.json()) as { data: { kind: string; amount: number; held_change: number; reason: string; ref: string | null }[]; has_more: boolean; next_before: number };
    expect(page.data.map((r) => [r.kind, r.amount, r.held_change])).toEqual([["hold", 0, 1_000_000], ["adjustment", -200_000, 0], ["grant", 500_000, 0]]);
    expect(page.data[2]).toMatchObject({ reason: "invoice 42", ref: "inv_42" });
    expect(page.has_more).toBe(true);
    const rest = (await (await srv.admin(`${path}/ledger?limit=3&before=${page.next_before}`, { method: "GET" })).json()) as typeof page;
    expect(rest.data.map((r) => [r.kind, r.amount])).toEqual([["grant", 1_000_000]]);

    expect((await srv.admin("/admin/accounts/acct_nope/ledger", { method: "GET" })).status).toBe(404);
    expect((await srv.admin("/admin/accounts/acct_nope/credits", { body: { amount: 5 } })).status).toBe(404);
  }, 60_000);
});

describe("operator view (CLI)", () => {
  async function cli(...args: string[]) {
    const p = Bun.spawn(["bun", "src/main.ts", ...args], {
      cwd: import.meta.dir + "/../..",
      env: { ...process.env, DATABASE_URL: srv.databaseUrl!, REELAY_LOG_LEVEL: "error", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { out, err, code };
  }

  test("credits grant, credits adjust, balance and ledger print JSON against the same database", async () => {
    const c = await srv.newClient({ credits: 1_000_000 });
    await billing.hold(srv.deps.database.db, { accountId: c.accountId, amount: 300_000, ref: "vid_cli", reason: "video", expiresAt: null });

    let r = await cli("credits", "grant", "--account", c.accountId, "--amount", "250000", "--reason", "cli top-up");
    // stderr: the grant's audit log line, nothing else (stdout is the answer)
    expect({ code: r.code, err: r.err.split("\n").filter(Boolean).map((l) => JSON.parse(l).audit?.action ?? l) }).toEqual({ code: 0, err: ["credits.grant"] });
    expect(JSON.parse(r.out)).toEqual({ balance: 1_250_000, held: 300_000, available: 950_000 });

    r = await cli("credits", "adjust", "--account", c.accountId, "--amount=-50000", "--reason", "correction");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ balance: 1_200_000, held: 300_000, available: 900_000 });

    r = await cli("balance", "--account", c.accountId);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ balance: 1_200_000, held: 300_000, available: 900_000 });

    r = await cli("ledger", "--account", c.accountId, "--limit", "2");
    expect(r.code).toBe(0);
    const page = JSON.parse(r.out) as { data: { kind: string; amount: number; reason: string }[]; has_more: boolean };
    expect(page.data.map((x) => [x.kind, x.amount, x.reason])).toEqual([["adjustment", -50_000, "correction"], ["grant", 250_000, "cli top-up"]]);
    expect(page.has_more).toBe(true);

    // the server sees what the CLI did
    expect(await (await asClient(c.key, "/v1/account")).json()).toMatchObject({ balance: 1_200_000, held: 300_000, available: 900_000 });

    r = await cli("credits", "adjust", "--account", c.accountId, "--amount=-1000000", "--reason", "below held");
    expect(r.code).not.toBe(0);
    expect(JSON.parse((await cli("balance", "--account", c.accountId)).out)).toEqual({ balance: 1_200_000, held: 300_000, available: 900_000 });
  }, 60_000);
});
