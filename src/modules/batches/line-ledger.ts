/**
 * The credit side of one batch line, plugged into the live pipeline's charge (billing/charge.ts's
 * ChargeLedger): the worst case is an exact hold in Postgres (no lease: the settlement is written
 * by this module, in the transaction of the line's output, not by the engine's batches), and the
 * settlement the pipeline closes the charge with is kept here until that transaction.
 *
 * Holds are group-committed (group-commit.ts): the holds asked for while the previous group was
 * being written are taken by ONE statement (billing's holdMany), so the account's row lock is held
 * for one statement and its commit, never across round trips, and a live request of the same
 * account does not wait behind a batch. A hold the group could not take (short of credit, budgets
 * changed) is asked for alone with `hold()`, which takes it or says exactly why not.
 */
import { hold, holdMany, StaleBudgets, type ChargeLedger, type CreditEngine, type GroupHold, type Settlement } from "../../billing/index.ts";
import type { Db } from "../../db/index.ts";
import { randomId } from "../../ids.ts";
import { GroupCommit } from "./group-commit.ts";

type ApprovalRequest = Parameters<CreditEngine["approve"]>[0];

/** The holds of an instance's batch lines, a group to a statement. */
export class LineHolds {
  private readonly group: GroupCommit<{ hold: GroupHold; id: string | null }>;

  constructor(private readonly db: Db) {
    this.group = new GroupCommit(async (items) => {
      const ids = await holdMany(db, items.map((it) => it.hold));
      items.forEach((it, i) => (it.id = ids[i] ?? null));
    });
  }

  /** The hold's id; throws 402 / budget_exceeded / StaleBudgets as `hold()` does. */
  async take(h: GroupHold): Promise<string> {
    const item = { hold: h, id: null as string | null };
    await this.group.add(item);
    return item.id ?? (await hold(this.db, h)).id;
  }
}

export class LineLedger implements ChargeLedger<{ holdId: string }> {
  /** the settlements the pipeline closed (a /v1/completions line with several prompts has one per prompt) */
  readonly settlements: Settlement[] = [];

  constructor(private readonly deps: { holds: LineHolds; billing: CreditEngine; holdTtlMs: number }) {}

  async approve(req: ApprovalRequest): Promise<{ holdId: string }> {
    for (let attempt = 0; ; attempt++) {
      const budget = await this.deps.billing.windows.holdWindows(req.accountId, req.keyId ?? null, req.model ?? null);
      try {
        // the hold's own ref is per attempt (holds.ref is unique); the charge's ref (the usage row) is the line's
        const ref = `${req.ref}#${randomId("try", 8).slice(4)}`;
        return { holdId: await this.deps.holds.take({ accountId: req.accountId, amount: req.amount, ref, reason: req.reason, expiresAt: new Date(Date.now() + this.deps.holdTtlMs), budget }) };
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
