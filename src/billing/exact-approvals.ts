/**
 * Exact approvals: a hold per request (exact-holds.ts, one statement) for slots too quiet or too
 * poor for a lease, and the exact 402. A refusal is final only when the account, or a budget window
 * the request counts in, cannot cover its worst case after the credit reserved ahead anywhere has
 * been offered back: this instance's idle lease credit (once its statements in flight landed), its
 * queued settlements (their holds' unused parts), and other instances' idle lease credit (asked
 * for, waited for up to `reclaimWaitMs`). The figure a 402 states is read in one snapshot at the
 * refusal, as `/v1/account` would show it.
 */
import type { BillingConfig } from "../config.ts";
import type { Db } from "../db/index.ts";
import { ApiError, insufficientQuota } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { budgetExceeded } from "./budget-refusal.ts";
import { clientBalance, getBalance } from "./credits.ts";
import { unavailable, type DbHealth } from "./db-health.ts";
import { hold } from "./exact-holds.ts";
import type { AccountSlot } from "./lease-memory.ts";
import { requestLeaseReturns } from "./lease-statements.ts";
import type { LeaseBook } from "./leases.ts";
import type { SettlementQueue } from "./settlement-queue.ts";
import { windowFigures } from "./window-statements.ts";
import type { BudgetScope } from "./windows.ts";

/** how often a request waiting for other instances' credit retries its exact hold */
const RECLAIM_POLL_MS = 20;

export interface ExactRequest {
  accountId: string;
  ref: string;
  amount: number;
  reason: string;
}

export type HoldApproval = { kind: "hold"; slot: AccountSlot; holdId: string; amount: number };

export class ExactApprovals {
  constructor(private readonly o: {
    db: Db; logger: Logger; config: BillingConfig; health: DbHealth; stats: { exactApprovals: number; reclaims: number };
    holdTtlMs: number; owner: string; leases: LeaseBook; queue: SettlementQueue; clock: () => number;
  }) {}

  /** An exact hold for the request in the account and the scope's windows; with `reclaim`, a shortage is checked as above before the 402. */
  async approve(slot: AccountSlot, req: ExactRequest, scope: BudgetScope | null, reclaim = true): Promise<HoldApproval> {
    try {
      const budget = scope ? { windows: scope.windows, version: scope.version, now: this.o.clock() } : null;
      const h = await hold(this.o.db, { accountId: req.accountId, amount: req.amount, ref: req.ref, reason: req.reason, expiresAt: new Date(Date.now() + this.o.holdTtlMs), budget });
      this.o.health.ok();
      slot.exactInflight += req.amount;
      this.o.stats.exactApprovals++;
      return { kind: "hold", slot, holdId: h.id, amount: req.amount };
    } catch (e) {
      if (reclaim && e instanceof ApiError && e.status === 402) return this.reclaim(slot, req, scope, e);
      this.o.health.failed(e);
      throw unavailable(e);
    }
  }

  /**
   * The account or a window looks short. Before refusing: give back our own idle lease credit
   * (after any statement of ours on the leases in flight has landed), land our queued settlements,
   * and ask other instances for their idle credit, retrying the exact hold until they have
   * answered or `reclaimWaitMs` passed.
   */
  private async reclaim(slot: AccountSlot, req: ExactRequest, scope: BudgetScope | null, refusal: ApiError): Promise<HoldApproval> {
    const deadline = performance.now() + this.o.config.reclaimWaitMs;
    this.o.stats.reclaims++;
    let retry = await this.o.leases.giveBackIdle(req.accountId, deadline, "account nearly empty: idle leased credit returned");
    if (this.o.queue.busy) retry = true;
    await this.o.queue.sync();
    let othersIdle = 0;
    try {
      othersIdle = this.o.config.leases ? await requestLeaseReturns(this.o.db, req.accountId, this.o.owner) : 0;
      // what other instances hold idle cannot make up the difference: refuse now, saying what the account has
      if (othersIdle > 0 && (await this.beyondReach(req, scope, othersIdle))) return await this.refuse(req, scope);
    } catch (e) {
      throw unavailable(e);
    }
    if (!retry && othersIdle === 0) throw refusal;
    for (;;) {
      try {
        return await this.approve(slot, req, scope, false);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 402)) throw e;
        if (othersIdle === 0) throw e;
        if (performance.now() >= deadline) return await this.refuse(req, scope);
      }
      await Bun.sleep(RECLAIM_POLL_MS);
    }
  }

  /**
   * For a caller that takes its own exact hold (a video job's submit, in its transaction) and was
   * refused: offer back the credit reserved ahead for the account, as `reclaim` does — ours, our
   * queued settlements', other instances' (waiting up to `reclaimWaitMs` for them). Returns true
   * when something may have come back (retry the hold once).
   */
  async offerBack(accountId: string): Promise<boolean> {
    const deadline = performance.now() + this.o.config.reclaimWaitMs;
    let moved = await this.o.leases.giveBackIdle(accountId, deadline, "account nearly empty: idle leased credit returned");
    if (this.o.queue.busy) moved = true;
    await this.o.queue.sync();
    if (!this.o.config.leases) return moved;
    try {
      if ((await requestLeaseReturns(this.o.db, accountId, this.o.owner)) === 0) return moved;
      while (performance.now() < deadline) {
        await Bun.sleep(RECLAIM_POLL_MS);
        if ((await requestLeaseReturns(this.o.db, accountId, this.o.owner)) === 0) break;
      }
    } catch (e) {
      throw unavailable(e);
    }
    return true;
  }

  /** Even with all of `othersIdle` back, the account or one of the windows could not cover the request. */
  private async beyondReach(req: ExactRequest, scope: BudgetScope | null, othersIdle: number): Promise<boolean> {
    if ((await getBalance(this.o.db, req.accountId)).available + othersIdle < req.amount) return true;
    if (!scope || scope.ids.length === 0) return false;
    for (const w of (await windowFigures(this.o.db, scope.ids)).values()) if (w.limit - w.spent - w.held + othersIdle < req.amount) return true;
    return false;
  }

  /**
   * The final 402. Its figures are what `/v1/account` calls available, read now in one snapshot:
   * the balance (or a window's limit) less what is held, with the idle part of leases counted as
   * available (other instances' as they last published it, ours as we know it). Read fresh, not
   * added to a figure from before the wait: credit another instance gave back meanwhile would count
   * twice. The pot that cannot cover the request and has the least left decides (the balance, or a
   * window: budget_exceeded). When the others' published idle credit would cover it (they were asked
   * for it and have not given it back within the wait: a busy instance, or in-flight amounts not yet
   * published), the answer says what could be reserved now and what is still out on other instances.
   */
  private async refuse(req: ExactRequest, scope: BudgetScope | null): Promise<never> {
    const ids = scope?.ids ?? [];
    const [b, figures] = await this.o.db
      .transaction(async (tx) => [await clientBalance(tx, req.accountId), await windowFigures(tx, ids)] as const, { isolationLevel: "repeatable read", accessMode: "read only" })
      .catch((e) => {
        throw unavailable(e);
      });
    const own = (window: string | null) => {
      let publishedIdle = 0, free = 0;
      for (const s of this.o.leases.slotsOf(req.accountId)) {
        const l = s.lease;
        if (!l || l.dead || (window !== null && !s.scope.ids.includes(window))) continue;
        publishedIdle += Math.max(0, l.reserved - Math.min(l.published, l.reserved));
        free += Math.max(0, l.free);
      }
      return { publishedIdle, free };
    };
    type Pot = { window: (typeof ids)[number] | null; left: number; others: number };
    const mine = own(null);
    const pots: Pot[] = [{ window: null, left: Math.max(0, b.available - mine.publishedIdle + mine.free), others: Math.max(0, b.leasedIdle - mine.publishedIdle) }];
    for (const id of ids) {
      const f = figures.get(id);
      if (!f) continue;
      const o = own(id);
      pots.push({ window: id, left: Math.max(0, f.limit - f.spent - f.held + f.idle - o.publishedIdle + o.free), others: Math.max(0, f.idle - o.publishedIdle) });
    }
    const refuseOn = (p: Pot, left: number, elsewhere: number): never => {
      if (p.window === null) throw insufficientQuota(req.amount, left, elsewhere);
      throw budgetExceeded(scope!.windows.find((w) => w.id === p.window)!, req.amount, left, this.o.clock(), elsewhere);
    };
    const short = pots.filter((p) => p.left < req.amount).sort((x, y) => x.left - y.left)[0];
    if (short) refuseOn(short, short.left, 0);
    const soon = pots.filter((p) => p.left - p.others < req.amount).sort((x, y) => x.left - x.others - (y.left - y.others))[0] ?? pots[0]!;
    return refuseOn(soon, Math.max(0, soon.left - soon.others), soon.others);
  }
}
