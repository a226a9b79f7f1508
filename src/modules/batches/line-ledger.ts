/**
 * The credit side of one batch line, plugged into the live pipeline's charge (billing/charge.ts's
 * ChargeLedger): the worst case is an exact hold in Postgres (no lease: the settlement is written
 * by this module, in the transaction of the line's output, not by the engine's batches), and the
 * settlement the pipeline closes the charge with is kept here until that transaction.
 *
 * Holds are group-committed (group-commit.ts), with the lines' results: the holds asked for while
 * the scheduler's previous group was being written are taken by ONE statement (billing's
 * holdMany), in the transaction that writes the finished lines' results and settlements
 * (scheduler.ts), so the account's row is locked once per group and one commit is paid, never
 * across round trips per line, and a live request of the same account does not wait behind a
 * batch. A hold the group could not take (short of credit, budgets changed) is asked for alone
 * with `hold()`, which takes it or says exactly why not.
 */
import { hold, holdMany, StaleBudgets, type ChargeLedger, type CreditEngine, type GroupHold, type Settlement } from "../../billing/index.ts";
import type { Db, Tx } from "../../db/index.ts";
import { randomId } from "../../ids.ts";

type ApprovalRequest = Parameters<CreditEngine["approve"]>[0];

/** A hold of a line, as the group that takes it sees it: `id` is set by the group (null: not taken). */
export interface HoldItem {
  readonly kind: "hold";
  hold: GroupHold;
  id: string | null;
}

/** Takes the group's holds in one statement (holdMany), in `tx`; sets each item's `id`. */
export async function takeHolds(tx: Tx, items: readonly HoldItem[]): Promise<void> {
  if (items.length === 0) return;
  const ids = await holdMany(tx, items.map((it) => it.hold));
  items.forEach((it, i) => (it.id = ids[i] ?? null));
}

/**
 * One group of the scheduler's writer: the finished lines' results and settlements
 * (`writeResults`, which returns the accounts whose row its settlements locked) and the holds asked
 * for meanwhile, in one transaction, so the batch account's row is locked once and one commit is
 * paid per group.
 *
 * The holds come after the settlements (what those give back can be held again), and only the
 * holds of accounts whose row the settlements locked: billing locks holds, then accounts, then
 * budget windows, each in id order, and every statement locks an account before its windows, so
 * those accounts' windows are safe to lock here. Another account's row, taken after these windows
 * and accounts, could deadlock with a live settlement that locks both accounts
 * (group-writer.test.ts): those holds are taken by a statement of their own once the group is
 * committed. If that statement fails, its holds are left untaken (`warn`) and each is then asked
 * for alone (LineHolds.take); the results stay committed.
 */
export async function writeGroup<R extends { readonly kind: "result" }>(db: Db, group: ReadonlyArray<R | HoldItem>, writeResults: (tx: Tx, results: R[]) => Promise<Set<string>>, warn: (err: unknown, holds: number) => void): Promise<void> {
  const results = group.filter((g): g is R => g.kind === "result");
  const wanted = group.filter((g): g is HoldItem => g.kind === "hold");
  if (results.length === 0) return takeHolds(db, wanted);
  const later = await db.transaction(async (tx) => {
    const locked = await writeResults(tx, results);
    await takeHolds(tx, wanted.filter((h) => locked.has(h.hold.accountId)));
    return wanted.filter((h) => !locked.has(h.hold.accountId));
  });
  if (later.length > 0) await takeHolds(db, later).catch((err) => warn(err, later.length));
}

/** The holds of an instance's batch lines, written by the scheduler's group commit (one statement per group). */
export class LineHolds {
  constructor(private readonly db: Db, private readonly group: { add(item: HoldItem): Promise<void> }) {}

  /** The hold's id; throws 402 / budget_exceeded / StaleBudgets as `hold()` does. */
  async take(h: GroupHold): Promise<string> {
    const item: HoldItem = { kind: "hold", hold: h, id: null };
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
