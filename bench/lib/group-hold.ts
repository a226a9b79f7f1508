/**
 * Bench-only prototype of the alternative to leases that docs/billing-engine.md compares: group
 * commit of holds. Concurrent approvals are collected while one statement is in flight and written
 * by the next one (json_to_recordset + per-account running sums, so a batch never overspends). Every
 * request still awaits a commit before its upstream call; settlements use the engine's batches.
 */
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { randomId } from "../../src/ids.ts";
import { AccountSlot } from "../../src/billing/lease-memory.ts";
import { query, type Db } from "../../src/db/index.ts";

interface Pending {
  i: number;
  a: string;
  x: number;
  id: string;
  r: string;
  done(ok: boolean): void;
}

export class GroupHolds {
  private pending: Pending[] = [];
  private running: Promise<void> | null = null;
  private readonly slot = new AccountSlot("bench");
  statements = 0;

  constructor(private readonly db: Db) {}

  /** an Approval the engine can settle (kind hold) */
  async approve(accountId: string, ref: string, amount: number): Promise<billing.Approval> {
    const id = randomId("hold");
    const ok = await new Promise<boolean>((done) => {
      this.pending.push({ i: this.pending.length, a: accountId, x: amount, id, r: ref, done });
      if (!this.running) this.running = this.flush();
    });
    if (!ok) throw new Error("insufficient credits");
    return { kind: "hold", slot: this.slot, holdId: id, amount };
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, 500);
      batch.forEach((p, i) => (p.i = i));
      this.statements++;
      const rows = await query<{ id: string }>(this.db, sql`
        WITH b AS (
          SELECT * FROM json_to_recordset(${JSON.stringify(batch.map(({ i, a, x, id, r }) => ({ i, a, x, id, r })))}::json) AS b(i int, a text, x bigint, id text, r text)
        ), acc AS (
          SELECT id, balance, held FROM accounts WHERE id IN (SELECT a FROM b) ORDER BY id FOR UPDATE
        ), ok AS (
          -- a prefix per account: the running sum stays within what was available
          SELECT b.* FROM b JOIN acc ON acc.id = b.a
          WHERE (SELECT sum(x) FROM b b2 WHERE b2.a = b.a AND b2.i <= b.i) <= acc.balance - acc.held
        ), au AS (
          UPDATE accounts SET held = acc.held + t.s FROM acc JOIN (SELECT a, sum(x) AS s FROM ok GROUP BY a) t ON t.a = acc.id WHERE accounts.id = acc.id
        ), h AS (
          INSERT INTO holds (id, account_id, ref, kind, amount, expires_at) SELECT id, a, r, 'request', x, now() + interval '15 minutes' FROM ok RETURNING id
        ), l AS (
          INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason) SELECT a, 'hold', 0, x, id, r, 'group hold' FROM ok
        )
        SELECT id FROM h`);
      const held = new Set(rows.map((r) => r.id));
      for (const p of batch) p.done(held.has(p.id));
    }
    this.running = null;
  }
}
