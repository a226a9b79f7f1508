/**
 * The credit side of one batch line, plugged into the live pipeline's charge (billing/charge.ts's
 * ChargeLedger): the worst case is an exact hold in Postgres (no lease: the settlement is written
 * by this module, in the transaction of the line's output, not by the engine's batches), and the
 * settlement the pipeline closes the charge with is kept here until that transaction.
 *
 * The hold is its own short transaction: the account's row lock is held for its one statement and
 * the commit, so a live request of the same account never waits behind a batch for more than that.
 * The commit does not wait for the WAL flush (synchronous_commit off): only a Postgres crash can
 * lose such a hold, and with it its ledger row and its `held` (no money moved); its line runs again,
 * or, if its upstream call was under way, settleBatch charges it from available credit as it does a
 * swept hold's. The settlement commits synchronously, which flushes the hold's WAL first.
 */
import { sql } from "drizzle-orm";
import { hold, StaleBudgets, type ChargeLedger, type CreditEngine, type Settlement } from "../../billing/index.ts";
import { query, type Db } from "../../db/index.ts";
import { randomId } from "../../ids.ts";

type ApprovalRequest = Parameters<CreditEngine["approve"]>[0];

export class LineLedger implements ChargeLedger<{ holdId: string }> {
  /** the settlements the pipeline closed (a /v1/completions line with several prompts has one per prompt) */
  readonly settlements: Settlement[] = [];

  constructor(private readonly deps: { db: Db; billing: CreditEngine; holdTtlMs: number }) {}

  async approve(req: ApprovalRequest): Promise<{ holdId: string }> {
    for (let attempt = 0; ; attempt++) {
      const budget = await this.deps.billing.windows.holdWindows(req.accountId, req.keyId ?? null, req.model ?? null);
      try {
        // the hold's own ref is per attempt (holds.ref is unique); the charge's ref (the usage row) is the line's
        const h = await this.deps.db.transaction(async (tx) => {
          await query(tx, sql`SET LOCAL synchronous_commit = off`);
          return hold(tx, { accountId: req.accountId, amount: req.amount, ref: `${req.ref}#${randomId("try", 8).slice(4)}`, reason: req.reason, expiresAt: new Date(Date.now() + this.deps.holdTtlMs), budget });
        });
        return { holdId: h.id };
      } catch (e) {
        if (!(e instanceof StaleBudgets) || attempt >= 4) throw e;
        this.deps.billing.windows.invalidate(req.accountId);
      }
    }
  }

  settle(approval: { holdId: string }, s: Omit<Settlement, "holdId" | "cover">): void {
    this.settlements.push({ ...s, holdId: approval.holdId, cover: 0 });
  }
}
