/**
 * The credit engine: approves requests without a database statement in the common case, and
 * writes their charges in batches. Design, alternatives and measurements: docs/billing-engine.md.
 * This file puts the parts together; each part has one responsibility and its own tests:
 *
 *  - leases.ts: a busy account (or account and budget windows) gets a *lease* on this instance, a
 *    hold row reserving about a second of its worst-case spend here; requests are approved from its
 *    free part in memory, refilled in the background, given back when idle, renewed by a heartbeat.
 *  - exact-approvals.ts: a cold slot, or one too poor for a lease, gets an exact hold per request
 *    (one statement), so a 402 stays exact to the micro-dollar; before answering 402 the engine
 *    gives back its own idle lease credit and asks other instances for theirs (bounded wait).
 *  - settlement-queue.ts: settlements (leased or not) are appended to the local journal, queued,
 *    and written by one `settleBatch` statement every `flushMs` (or at once when the batch is full
 *    or a reader waits); a database outage keeps them queued and retried with backoff.
 *  - windows.ts: the budget windows a request counts in (a key's and its account's, day / week /
 *    month in a timezone, or lifetime, optionally per model): reserved at approval like the
 *    balance, in the lease or the exact hold, and charged in the windows of the approval.
 *  - plans.ts: the prices an account pays (its price plan), applied by the callers before they
 *    ask for an approval.
 */
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { BillingConfig } from "../config.ts";
import { query, type Db, type Tx } from "../db/index.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { randomId } from "../ids.ts";
import { StaleBudgets } from "./budget-refusal.ts";
import { adjust } from "./credits.ts";
import { DbHealth, unavailable } from "./db-health.ts";
import { ExactApprovals, type HoldApproval } from "./exact-approvals.ts";
import { claimOrphanJournals, Journal, processAlive } from "./journal.ts";
import { AccountSlot, type LeaseMem } from "./lease-memory.ts";
import { requestLeaseReturns } from "./lease-statements.ts";
import { BEAT_MS, COOL_MS, LeaseBook, type LeaseApproval } from "./leases.ts";
import { PlanBook } from "./plans.ts";
import { SettlementQueue } from "./settlement-queue.ts";
import type { Settlement } from "./settle-batch.ts";
import { BudgetWindows, type BudgetScope } from "./windows.ts";

export { unavailable } from "./db-health.ts";

export interface EngineOptions {
  db: Db;
  logger: Logger;
  config: BillingConfig;
  /** expiry of exact holds of requests, ms */
  holdTtlMs: number;
  /** instance name; the lease owner is "<instanceId>#<random>" (one per incarnation) */
  instanceId: string;
  /** where the journal lives (null: no journal) */
  dataDir: string | null;
  /** the clock budget periods are read from (unix ms; tests move it across midnight) */
  clock?: () => number;
  /** the price plans of the models file (more come from the database) */
  plans?: PlanBook;
}

export interface ApprovalRequest {
  accountId: string;
  /** the key making the request: its budgets apply (null or absent: only the account's) */
  keyId?: string | null;
  /** the model asked for: budgets limited to some models apply when it is one of them */
  model?: string | null;
  /** the request id: the settlement's exactly-once key */
  ref: string;
  /** worst case, micro-dollars */
  amount: number;
  /** ledger reason of an exact hold */
  reason: string;
}

export type Approval = LeaseApproval | HoldApproval;

/** attempts at an approval while the account's budgets keep changing under it */
const STALE_RETRIES = 5;

export class CreditEngine {
  readonly owner: string;
  /** which budget windows a request counts in (and the clock periods are read from) */
  readonly windows: BudgetWindows;
  /** the price plans accounts pay */
  readonly plans: PlanBook;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly cfg: BillingConfig;
  private readonly health = new DbHealth();
  private readonly leases: LeaseBook;
  private readonly queue: SettlementQueue;
  private readonly exacts: ExactApprovals;
  private readonly alertListeners: Array<() => void> = [];
  /** counters for the operator (metrics, docs' measurements) */
  readonly stats = { batches: 0, settlements: 0, largestBatch: 0, leaseApprovals: 0, exactApprovals: 0, leasesOpened: 0, refills: 0, returns: 0, reclaims: 0, shortfalls: 0, replayed: 0, flushErrors: 0 };

  constructor(private readonly opts: EngineOptions) {
    this.db = opts.db;
    this.log = opts.logger;
    this.cfg = opts.config;
    this.owner = `${opts.instanceId}#${randomId("boot", 8).slice(5)}`;
    const clock = opts.clock ?? Date.now;
    this.windows = new BudgetWindows(opts.db, clock);
    this.plans = opts.plans ?? new PlanBook(opts.db);
    const common = { db: opts.db, logger: opts.logger, config: opts.config, health: this.health, stats: this.stats };
    this.leases = new LeaseBook({ ...common, owner: this.owner, clock, onStale: (accountId) => this.windows.invalidate(accountId) });
    this.queue = new SettlementQueue({ ...common, leases: this.leases, onAlerts: () => this.alertListeners.forEach((f) => f()) });
    this.leases.flusher = this.queue;
    this.exacts = new ExactApprovals({ ...common, holdTtlMs: opts.holdTtlMs, owner: this.owner, leases: this.leases, queue: this.queue, clock });
  }

  /** Call `f` when a batch of settlements crossed budget thresholds (their alerts wait in budget_alerts to be sent). */
  onAlerts(f: () => void): void {
    this.alertListeners.push(f);
  }

  /** The engine's clock (unix ms): the instant budget periods are read at. */
  now(): number {
    return this.windows.now();
  }

  /** Replay journals of dead processes on this database, release their leases, open our journal. */
  async start(): Promise<void> {
    if (!this.cfg.journal || !this.opts.dataDir) return;
    const root = join(this.opts.dataDir, "billing-journal");
    const database = await databaseIdentity(this.db);
    for (const orphan of claimOrphanJournals(root, database, processAlive)) await this.queue.replay(orphan);
    const onError = (err: unknown, what: string) => this.log.error({ err, what }, "billing: the settlement journal failed; settlements are kept in memory until they land");
    try {
      this.queue.journal = new Journal(join(root, this.owner.replace(/[^\w.-]/g, "_")), { owner: this.owner, pid: process.pid, processStart: performance.timeOrigin, database }, onError);
    } catch (e) {
      onError(e, "open");
    }
    this.queue.startRetries();
  }

  /**
   * Approve a request's worst case in the account and in every budget window it counts in: from
   * this instance's lease in memory when it can, else with an exact hold. Throws 402
   * insufficient_quota or budget_exceeded (exact), or 503 when the database is unreachable.
   */
  async approve(req: ApprovalRequest): Promise<Approval> {
    const now = performance.now();
    for (let attempt = 0; ; attempt++) {
      let scope: BudgetScope;
      try {
        scope = await this.windows.scope(req.accountId, req.keyId ?? null, req.model ?? null);
      } catch (e) {
        this.health.failed(e);
        throw unavailable(e);
      }
      const slot = this.leases.slotFor(req.accountId, scope);
      try {
        return await this.approveIn(slot, scope, req, now, attempt === 0);
      } catch (e) {
        if (!(e instanceof StaleBudgets)) throw e;
        this.windows.invalidate(req.accountId);
        if (attempt + 1 >= STALE_RETRIES) throw new ApiError(503, "service_unavailable", "The account's budgets are being changed; retry in a moment. Nothing was charged.", { code: "service_unavailable", headers: { "retry-after": "1" } });
      }
    }
  }

  private async approveIn(slot: AccountSlot, scope: BudgetScope, req: ApprovalRequest, now: number, first: boolean): Promise<Approval> {
    const before = first ? slot.noteDemand(req.amount, now, this.cfg.leaseDemandMs) : 0;
    if (this.cfg.leases && req.amount > 0) {
      const got = this.leases.fromLease(slot, req.amount, now);
      if (got) return got;
    }
    if (this.health.failingFast(now)) throw unavailable(this.health.lastError);
    if (this.cfg.leases && req.amount > 0) {
      // `leaseWarmRequests` recent requests (default 3: this one and two within about the demand
      // window, or a steady ~1 per window) make an account warm enough for a lease. A lease costs an
      // open and a give-back statement (plus heartbeats), so it pays only when it serves several
      // requests: with the second request as the threshold, 1,000 accounts at ~0.5 req/s each took
      // 1.4–2.4 commits per request on leases against 0.8–0.9 on exact holds (bench/billing.ts).
      const warmAt = (((this.cfg.leaseWarmRequests ?? 3) - 1) * req.amount) / 2;
      if (before >= warmAt && before > 0 && now >= slot.coolUntil) {
        await this.leases.acquire(slot, req.amount);
        const again = this.leases.fromLease(slot, req.amount, performance.now());
        if (again) return again;
      }
    }
    return this.exacts.approve(slot, req, scope);
  }

  /**
   * A caller that took its own exact hold in its transaction (a video job's submit) was refused:
   * offer back the credit reserved ahead for the account on every instance first. True when the
   * caller should try its hold once more.
   */
  offerBack(accountId: string): Promise<boolean> {
    return this.exacts.offerBack(accountId);
  }

  /**
   * The request is over: give its worst case back and queue what it costs. Synchronous: the
   * settlement is in the journal when this returns, so the caller may complete the response.
   */
  settle(approval: Approval, s: Omit<Settlement, "holdId" | "cover">): void {
    let lease: LeaseMem | null = null;
    let cover = 0;
    let holdId: string;
    if (approval.kind === "lease") {
      const l = approval.lease;
      l.inflight -= approval.amount;
      holdId = l.id;
      if (!l.dead) {
        cover = Math.max(0, Math.min(s.actual, l.free));
        l.pending += cover;
        lease = l;
      }
    } else {
      holdId = approval.holdId;
      approval.slot.exactInflight -= approval.amount;
    }
    this.queue.push({ ...s, holdId, cover }, lease);
  }

  /**
   * Resolves when every settlement queued before the call is in the database and the in-flight
   * amounts of this instance's leases are published (what a reader of balances and usage must
   * wait for to see its own requests). Gives up as soon as the database is found unreachable (the
   * read will answer 503 itself), or after `timeoutMs`.
   */
  sync(timeoutMs = 10_000): Promise<void> {
    return this.queue.sync(timeoutMs);
  }

  /** Land everything queued (for up to `graceMs`), close this instance's leases, close the journal. */
  async stop(graceMs = 5_000): Promise<void> {
    await this.queue.drain(graceMs);
    await this.leases.closeAll();
    const clean = this.queue.journal?.close() ?? true;
    if (!clean) this.log.error({ queued: this.queue.length + this.queue.stuckCount }, "billing: settlements not yet in the database are kept in the journal and replayed at the next start");
  }

  /**
   * An operator's adjustment. Credit leased ahead counts as held in the database, so an adjustment
   * that leased credit stands in the way of asks for it back (ours at once, other instances' at
   * their next heartbeat) and retries for up to `reclaimWaitMs`.
   */
  async adjust(accountId: string, amount: number, reason: string, ref: string | null, alsoInTx?: (tx: Tx, balance: number) => Promise<void>): Promise<number> {
    // alsoInTx: what must commit with the adjustment or not at all (its audit-log row)
    const attempt = () =>
      this.db.transaction(async (tx) => {
        const balance = await adjust(tx, accountId, amount, reason, ref);
        await alsoInTx?.(tx, balance);
        return balance;
      });
    const refused = (e: unknown) => e instanceof ApiError && e.code === "invalid_amount" && Number.isSafeInteger(amount) && amount < 0;
    try {
      return await attempt();
    } catch (e) {
      if (!refused(e)) throw e;
    }
    const deadline = performance.now() + this.cfg.reclaimWaitMs + BEAT_MS;
    for (const slot of this.leases.slotsOf(accountId)) {
      if (!slot.lease || slot.lease.dead) continue;
      slot.coolUntil = performance.now() + COOL_MS;
      await this.leases.giveBack(slot, slot.lease, slot.lease.free, false, "operator adjustment");
    }
    const others = await requestLeaseReturns(this.db, accountId, this.owner);
    for (;;) {
      try {
        return await attempt();
      } catch (e) {
        if (!refused(e) || others === 0 || performance.now() >= deadline) throw e;
      }
      await Bun.sleep(20);
    }
  }

  /** Operator view of this instance's engine. */
  snapshot() {
    return { owner: this.owner, ...this.leases.totals(), queued: this.queue.length, stuck: this.queue.stuckCount, databaseDownMs: this.health.downMs(), ...this.stats };
  }

  // What the engine's own timers and requests call, reachable for the interleaving properties
  // (test/billing/leases.case.ts drives refills, heartbeats and give-backs directly).

  /** The slot of an account's requests that count in no budget window. */
  slotFor(accountId: string): AccountSlot {
    return this.leases.slotFor(accountId);
  }

  acquire(slot: AccountSlot, amount: number): Promise<void> {
    return this.leases.acquire(slot, amount);
  }

  beat(): void {
    this.leases.beat();
  }
}

/** The database's random id (written by migration 0002), so a journal is replayed only into its own database. */
export async function databaseIdentity(db: Db): Promise<string> {
  const rows = await query<{ id: string }>(db, sql`SELECT id FROM database_identity LIMIT 1`);
  return rows[0]?.id ?? "unknown";
}
