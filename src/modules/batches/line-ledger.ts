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

/**
 * The place a line takes in its instance's batch share of the upstreams' concurrency: taken once
 * the line's hold is (the end of `approve`, right before the pipeline calls the upstream), given
 * back when the line's pipeline is done (before its result is committed). A line waiting for its
 * hold or for its result's group commit holds no place: those waits are pipelined with other
 * lines' upstream calls instead of adding to them.
 */
export interface UpstreamGate {
  /** resolves when the line has its place (at once if it has one), or when the line is stopped (its upstream call then fails at once, and the pipeline releases the hold) */
  enter(): Promise<void>;
}

export class LineLedger implements ChargeLedger<{ holdId: string }> {
  /** the settlements the pipeline closed (a /v1/completions line with several prompts has one per prompt) */
  readonly settlements: Settlement[] = [];

  constructor(private readonly deps: { holds: LineHolds; billing: CreditEngine; holdTtlMs: number; gate?: UpstreamGate }) {}

  async approve(req: ApprovalRequest): Promise<{ holdId: string }> {
    for (let attempt = 0; ; attempt++) {
      const budget = await this.deps.billing.windows.holdWindows(req.accountId, req.keyId ?? null, req.model ?? null);
      try {
        // the hold's own ref is per attempt (holds.ref is unique); the charge's ref (the usage row) is the line's
        const ref = `${req.ref}#${randomId("try", 8).slice(4)}`;
        const holdId = await this.deps.holds.take({ accountId: req.accountId, amount: req.amount, ref, reason: req.reason, expiresAt: new Date(Date.now() + this.deps.holdTtlMs), budget });
        // the hold is committed: the line now takes its place in the upstream share (never throws:
        // from here on the pipeline owns the hold, and settles or releases it)
        await this.deps.gate?.enter();
        return { holdId };
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
