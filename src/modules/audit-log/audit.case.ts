/**
 * The audit log, run against Postgres and PGlite (index.test.ts, pglite.test.ts): each admin change
 * is one entry in its own transaction, with who, what, before/after (never a secret), request id and
 * client address; the listing's order, filters and cursor; the table refuses to be rewritten; the
 * retention prune removes only what is older; one JSON log line per entry.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { createLogger } from "../../logger.ts";
import { pruneAudit } from "../../audit/audit-log.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../../test/support/harness.ts";

export function auditCases(opts: { pglite: boolean }) {
  let s: TestServer;
  const lines: string[] = [];
  let billing: { id: string; token: string };

  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(s.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, requestId: res.headers.get("x-request-id"), body: (await res.json()) as any };
  };
  const log = async (qs = "") => (await call(ADMIN_TOKEN, "GET", `/admin/audit-log${qs}`)).body;

  beforeAll(async () => {
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split("\n").filter(Boolean)), done()) });
    s = await startTestServer({}, { pglite: opts.pglite, logger: createLogger({ logLevel: "info", logPretty: false }, sink) });
    billing = (await call(ADMIN_TOKEN, "POST", "/admin/operators", { name: "Bea Billing", role: "billing" })).body;
  }, 120_000);
  afterAll(() => s?.close());

  describe(`audit log (${opts.pglite ? "PGlite" : "Postgres"})`, () => {
    let accountId: string;
    let keyId: string;
    let newKeyId: string;
    const secrets: string[] = [];

    test("each change is one entry: actor, action, target, before/after, request id, client address", async () => {
      const created = await call(billing.token, "POST", "/admin/accounts", { name: "acme", amount: 1_000_000 });
      expect(created.status).toBe(201);
      accountId = created.body.id;
      const grant = await call(billing.token, "POST", `/admin/accounts/${accountId}/credits`, { amount: 500_000, reason: "invoice 7" });
      expect(grant.status).toBe(200);
      const key = await call(billing.token, "POST", `/admin/accounts/${accountId}/keys`, { name: "ci" });
      keyId = key.body.id;
      secrets.push(key.body.key, billing.token);
      const rotated = await call(billing.token, "POST", `/admin/keys/${keyId}/rotate`);
      newKeyId = rotated.body.id;
      secrets.push(rotated.body.key);
      expect((await call(billing.token, "POST", `/admin/keys/${newKeyId}/revoke`)).status).toBe(200);
      expect((await call(billing.token, "PATCH", `/admin/accounts/${accountId}/limits`, { requests_per_minute: 60 })).status).toBe(200);

      const page = await log();
      const actions = page.data.map((e: any) => e.action);
      expect(actions.slice(0, 7)).toEqual(["account.limits", "key.revoke", "key.rotate", "key.create", "credits.grant", "account.create", "operator.create"]);
      const [limits, revoke, rotate, , grantEntry, accountEntry, operatorEntry] = page.data;
      expect(grantEntry).toMatchObject({
        object: "audit_log.entry",
        actor: { type: "operator", id: billing.id, name: "Bea Billing" },
        target: { type: "account", id: accountId },
        before: { balance: 1_000_000 },
        after: { balance: 1_500_000, amount: 500_000, reason: "invoice 7" },
        request_id: grant.requestId,
        client_ip: expect.stringMatching(/127\.0\.0\.1/),
      });
      expect(accountEntry.after).toMatchObject({ id: accountId, name: "acme", balance: 1_000_000 });
      expect(operatorEntry.actor).toEqual({ type: "bootstrap", id: null, name: "bootstrap token" });
      expect(operatorEntry.after).toMatchObject({ id: billing.id, role: "billing" });
      expect(limits.before).toEqual({ requests_per_minute: null, tokens_per_minute: null, concurrent_video_jobs: null });
      expect(limits.after).toEqual({ requests_per_minute: 60, tokens_per_minute: null, concurrent_video_jobs: null });
      expect(revoke.before.revoked_at).toBeNull();
      expect(revoke.after.revoked_at).not.toBeNull();
      expect(rotate).toMatchObject({ target: { type: "key", id: keyId }, after: { id: newKeyId, replaces: keyId } });
      expect(Date.parse(page.data[0].at)).toBeGreaterThanOrEqual(Date.parse(page.data[6].at));
      // never a secret: not the keys, not the operator's token
      const all = JSON.stringify(page);
      for (const secret of secrets) expect(all).not.toContain(secret);
    });

    test("a refused change writes no entry (same transaction)", async () => {
      const before = (await log()).data.length;
      const res = await call(billing.token, "POST", `/admin/accounts/${accountId}/adjustments`, { amount: -999_000_000, reason: "too much" });
      expect(res.status).toBe(400);
      const viewer = (await call(ADMIN_TOKEN, "POST", "/admin/operators", { name: "Vic Viewer", role: "viewer" })).body;
      expect((await call(viewer.token, "POST", `/admin/accounts/${accountId}/credits`, { amount: 1 })).status).toBe(403);
      const after = await log();
      expect(after.data.length).toBe(before + 1); // the viewer's creation only
      expect(after.data[0].action).toBe("operator.create");
      const ok = await call(billing.token, "POST", `/admin/accounts/${accountId}/adjustments`, { amount: -100_000, reason: "refund" });
      expect(ok.status).toBe(200);
      expect((await log()).data[0]).toMatchObject({ action: "credits.adjust", before: { balance: 1_500_000 }, after: { balance: 1_400_000, amount: -100_000, reason: "refund" }, request_id: ok.requestId });
    });

    test("filters and cursor paging", async () => {
      const mine = await log(`?actor=${billing.id}`);
      expect(mine.data.length).toBe(7);
      expect(mine.data.every((e: any) => e.actor.id === billing.id)).toBe(true);
      expect((await log("?actor=bootstrap")).data.map((e: any) => e.action)).toEqual(["operator.create", "operator.create"]);
      expect((await log("?action=key.*")).data.map((e: any) => e.action)).toEqual(["key.revoke", "key.rotate", "key.create"]);
      expect((await log("?action=credits.grant")).data.length).toBe(1);
      expect((await log(`?target=${keyId}`)).data.map((e: any) => e.action)).toEqual(["key.rotate", "key.create"]);
      expect((await log(`?target_type=account&target=${accountId}`)).data.length).toBe(4);
      expect((await log(`?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).data).toEqual([]);
      expect((await log(`?to=${Math.floor(Date.now() / 1000) - 3600}`)).data).toEqual([]);
      expect((await call(ADMIN_TOKEN, "GET", "/admin/audit-log?from=yesterday")).status).toBe(400);
      const seen: string[] = [];
      let cursor = "";
      for (;;) {
        const page = await log(`?limit=3${cursor}`);
        seen.push(...page.data.map((e: any) => e.id));
        if (!page.has_more) break;
        cursor = `&before=${page.next_before}`;
      }
      const whole = (await log("?limit=500")).data.map((e: any) => e.id);
      expect(seen).toEqual(whole);
      expect(new Set(seen).size).toBe(seen.length);
    });

    test("one JSON log line per entry", async () => {
      await Bun.sleep(50);
      const entries = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "audit");
      const ids = entries.map((l) => l.audit.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.sort()).toEqual((await log("?limit=500")).data.map((e: any) => e.id).sort());
      expect(entries.find((l) => l.audit.action === "credits.grant").audit.actor.name).toBe("Bea Billing");
    });

    test("no route changes an entry; the table refuses UPDATE, DELETE and TRUNCATE", async () => {
      for (const method of ["PUT", "PATCH", "DELETE", "POST"]) expect([404, 405]).toContain((await call(ADMIN_TOKEN, method, "/admin/audit-log", method === "DELETE" ? undefined : {})).status);
      const db = s.deps.database.db;
      // the database's message (drizzle on PGlite wraps it: "Failed query …", the cause says why)
      const refusal = (p: Promise<unknown>) => p.then(() => "done", (e) => `${e.message} ${e.cause?.message ?? ""}`);
      const count = async () => (await log("?limit=500")).data.length;
      const before = await count();
      expect(await refusal(query(db, sql`UPDATE audit_log SET actor_name = 'someone else'`))).toContain("append-only");
      expect(await refusal(query(db, sql`DELETE FROM audit_log`))).toContain("append-only");
      expect(await refusal(query(db, sql`TRUNCATE audit_log`))).toContain("append-only");
      // a prune's retention does not open recent entries either
      const pruneAll = db.transaction(async (tx) => {
        await query(tx, sql`SELECT set_config('reelay.audit_retention', '1 hour', true)`);
        await query(tx, sql`DELETE FROM audit_log`);
      });
      expect(await refusal(pruneAll)).toContain("append-only");
      expect(await count()).toBe(before);
    });

    test("retention: the prune deletes only entries older than the retention", async () => {
      const db = s.deps.database.db;
      await query(db, sql`INSERT INTO audit_log (at, actor_type, actor_name, action, target_type) VALUES (now() - interval '401 days', 'bootstrap', 'bootstrap token', 'account.create', 'account'), (now() - interval '399 days', 'bootstrap', 'bootstrap token', 'account.create', 'account')`);
      const total = (await log("?limit=500")).data.length;
      expect(await pruneAudit(db, 400)).toBe(1);
      expect((await log("?limit=500")).data.length).toBe(total - 1);
      expect(await pruneAudit(db, 400)).toBe(0);
    });
  });
}
