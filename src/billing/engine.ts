/**
 * The credit engine: approves requests without a database statement in the common case, and
 * writes their charges in batches. Design, alternatives and measurements: docs/billing-engine.md.
 *
 *  - A busy account gets a *lease* on this instance: a hold row (kind 'lease') reserving about a
 *    second of its worst-case spend here. Requests are approved from the lease's free part in
 *    memory; a finished request gives back its worst case and queues its actual charge.
 *  - Settlements (leased or not) are appended to the local journal, queued, and written by one
 *    `settleBatch` statement every `flushMs` (or at once when the batch is full or a reader waits).
 *  - Leases are refilled in the background before they run dry, capped to a share of the
 *    account's available credit, given back when idle, and renewed by a 100 ms heartbeat that also
 *    publishes what each lease has in flight (the client's `held`) and reads return requests.
 *  - A cold account, or one too poor for a lease, gets an exact hold per request (one statement),
 *    so a 402 stays exact to the micro-dollar; before answering 402 the engine gives back its own
 *    idle lease credit and asks other instances for theirs (bounded wait).
 *  - Database down: settlements stay queued (and journaled) and are retried with backoff until
 *    they land; approvals from a lease continue for at most `offlineMs` (and never past the
 *    lease's expiry), then requests get 503.
 */
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { BillingConfig } from "../config.ts";
import { query, type Db } from "../db/index.ts";
import { ApiError, databaseUnavailable, insufficientQuota } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isConnectionError, isUniqueViolation } from "./db-errors.ts";
import { hold } from "./exact-holds.ts";
import { adjust, clientBalance, getBalance } from "./credits.ts";
import { randomId } from "../ids.ts";
import { claimOrphanJournals, Journal, processAlive, type OrphanJournal } from "./journal.ts";
import { AccountSlot, LeaseMem } from "./lease-memory.ts";
import { leasesOf, openLease, refillLease, requestLeaseReturns, returnLease } from "./lease-statements.ts";
import { settleBatch, type BatchResult, type Settlement } from "./settle-batch.ts";

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
}

export interface ApprovalRequest {
  accountId: string;
  /** the request id: the settlement's exactly-once key */
  ref: string;
  /** worst case, micro-dollars */
  amount: number;
  /** ledger reason of an exact hold */
  reason: string;
}

export type Approval =
  | { kind: "lease"; slot: AccountSlot; lease: LeaseMem; amount: number }
  | { kind: "hold"; slot: AccountSlot; holdId: string; amount: number };

interface Queued {
  s: Settlement;
  seq: number;
  seg: number;
  /** the lease whose `pending` holds `cover` until the batch lands */
  lease: LeaseMem | null;
  /** when it was queued (performance.now()): its age at commit is what a kill -9 could have lost */
  at: number;
}

/** settlements per statement: ~5 ms of Postgres work, beyond which one batch delays the next too long */
const MAX_BATCH = 500;
/** heartbeat: renew leases, publish in-flight amounts, read return requests, give back idle credit */
const BEAT_MS = 100;
/** a lease nobody used for this long is given back (about 4 heartbeats after the demand window) */
const IDLE_MS_MIN = 2_000;
/** after an account ran short (or others asked for credit back): exact holds only, for this long */
const COOL_MS = 2_000;
/** how often a request waiting for other instances' credit retries its exact hold */
const RECLAIM_POLL_MS = 20;
/** retry backoff while the database is unreachable: 50 ms doubling to 2 s */
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2_000;
/**
 * After a statement failed to reach the database, requests that would need one are answered 503 at
 * once for this long instead of waiting on the driver's reconnects (one outage request measured
 * 17 s otherwise); the flusher's retries (50 ms doubling to 2 s) detect the recovery meanwhile.
 */
const FAIL_FAST_MS = 1_000;
/** heartbeats succeed every 100 ms while an instance holds leases; 10 missed ones mean trouble even without an error */
const HEALTHY_GAP_MS = 1_000;
/** a settlement that fails on its own (not a connection problem) is retried this often, and logged each time */
const STUCK_RETRY_MS = 30_000;
/** an account slot with no lease and nothing in flight is forgotten after this */
const FORGET_MS = 60_000;

export class CreditEngine {
  readonly owner: string;
  private readonly db: Db;
  private readonly log: Logger;
  private readonly cfg: BillingConfig;
  private readonly slots = new Map<string, AccountSlot>();
  private queue: Queued[] = [];
  private stuck: Queued[] = [];
  private flushing: Promise<void> | null = null;
  private inflightMinSeq = Infinity;
  private rerun = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private beatTimer: ReturnType<typeof setInterval> | null = null;
  private stuckTimer: ReturnType<typeof setInterval> | null = null;
  private seq = 0;
  /** number of the last flush started, and of the last one that completed (flushes can fail) */
  private startedGen = 0;
  private doneGen = 0;
  private lastFlushStart = 0;
  private waiters: Array<{ seq: number; gen: number; resolve(): void }> = [];
  private failures = 0;
  private batchLimit = MAX_BATCH;
  private lastDbOk = performance.now();
  private lastDbError: unknown = null;
  /** consecutive statements of the engine that could not reach the database, and when the last one failed */
  private dbFailures = 0;
  private dbFailedAt = 0;
  private journal: Journal | null = null;
  private stopped = false;
  /** counters for the operator (metrics, docs' measurements) */
  readonly stats = { batches: 0, settlements: 0, largestBatch: 0, leaseApprovals: 0, exactApprovals: 0, leasesOpened: 0, refills: 0, returns: 0, reclaims: 0, shortfalls: 0, replayed: 0, flushErrors: 0 };

  constructor(private readonly opts: EngineOptions) {
    this.db = opts.db;
    this.log = opts.logger;
    this.cfg = opts.config;
    this.owner = `${opts.instanceId}#${randomId("boot", 8).slice(5)}`;
  }

  /** Replay journals of dead processes on this database, release their leases, open our journal. */
  async start(): Promise<void> {
    if (!this.cfg.journal || !this.opts.dataDir) return;
    const root = join(this.opts.dataDir, "billing-journal");
    const database = await databaseIdentity(this.db);
    for (const orphan of claimOrphanJournals(root, database, processAlive)) await this.replay(orphan);
    const onError = (err: unknown, what: string) => this.log.error({ err, what }, "billing: the settlement journal failed; settlements are kept in memory until they land");
    try {
      this.journal = new Journal(join(root, this.owner.replace(/[^\w.-]/g, "_")), { owner: this.owner, pid: process.pid, processStart: performance.timeOrigin, database }, onError);
    } catch (e) {
      onError(e, "open");
    }
    this.stuckTimer = setInterval(() => this.retryStuck(), STUCK_RETRY_MS);
    this.stuckTimer.unref?.();
  }

  /**
   * Approve a request's worst case: from this instance's lease in memory when it can, else with an
   * exact hold. Throws 402 insufficient_quota (exact) or 503 when the database is unreachable.
   */
  async approve(req: ApprovalRequest): Promise<Approval> {
    const now = performance.now();
    const slot = this.slotFor(req.accountId);
    const before = slot.noteDemand(req.amount, now, this.cfg.leaseDemandMs);
    if (this.cfg.leases && req.amount > 0) {
      const got = this.fromLease(slot, req.amount, now);
      if (got) return got;
    }
    if (this.dbFailures > 0 && now - this.dbFailedAt < FAIL_FAST_MS) throw unavailable(this.lastDbError);
    if (this.cfg.leases && req.amount > 0) {
      // `leaseWarmRequests` recent requests (default 3: this one and two within about the demand
      // window, or a steady ~1 per window) make an account warm enough for a lease. A lease costs an
      // open and a give-back statement (plus heartbeats), so it pays only when it serves several
      // requests: with the second request as the threshold, 1,000 accounts at ~0.5 req/s each took
      // 1.4–2.4 commits per request on leases against 0.8–0.9 on exact holds (bench/billing.ts).
      const warmAt = (((this.cfg.leaseWarmRequests ?? 3) - 1) * req.amount) / 2;
      if (before >= warmAt && before > 0 && now >= slot.coolUntil) {
        await this.acquire(slot, req.amount);
        const again = this.fromLease(slot, req.amount, performance.now());
        if (again) return again;
      }
    }
    return this.exact(slot, req, true);
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
    const settlement: Settlement = { ...s, holdId, cover };
    const seg = this.journal ? this.journal.append(settlement) : 0;
    this.queue.push({ s: settlement, seq: ++this.seq, seg, lease, at: performance.now() });
    this.schedule(false);
  }

  /**
   * Resolves when every settlement queued before the call is in the database and the in-flight
   * amounts of this instance's leases are published (what a reader of balances and usage must
   * wait for to see its own requests). Gives up as soon as the database is found unreachable (the
   * read will answer 503 itself), or after `timeoutMs`.
   */
  async sync(timeoutMs = 10_000): Promise<void> {
    const unpublished = [...this.slots.values()].some((s) => s.lease && !s.lease.dead && s.lease.published !== s.lease.inflight);
    if (this.queue.length === 0 && !this.flushing && !unpublished) return;
    let resolveWaiter!: () => void;
    const done = new Promise<void>((resolve) => this.waiters.push({ seq: this.seq, gen: this.startedGen + 1, resolve: (resolveWaiter = resolve) }));
    this.schedule(true);
    const t0 = performance.now();
    const giveUp = setInterval(() => {
      if (this.dbFailures > 0 || performance.now() - t0 > timeoutMs) resolveWaiter();
    }, 50);
    await done;
    clearInterval(giveUp);
    this.waiters = this.waiters.filter((w) => w.resolve !== resolveWaiter);
  }

  /** Land everything queued (for up to `graceMs`), close this instance's leases, close the journal. */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopped = true;
    if (this.beatTimer) clearInterval(this.beatTimer);
    if (this.stuckTimer) clearInterval(this.stuckTimer);
    const deadline = performance.now() + graceMs;
    while ((this.queue.length > 0 || this.flushing) && performance.now() < deadline) {
      if (!this.flushing) this.schedule(true);
      await (this.flushing ?? Bun.sleep(BACKOFF_MIN_MS));
    }
    if (this.timer) clearTimeout(this.timer);
    for (const slot of this.slots.values()) {
      const l = slot.lease;
      if (!l || l.dead || l.inflight > 0 || l.pending > 0) continue;
      await returnLease(this.db, { id: l.id, amount: 0, close: true, reason: "instance stopping" }).catch((e) => this.log.warn({ err: e, lease: l.id }, "billing: could not close a lease at shutdown; it expires"));
    }
    const clean = this.journal?.close() ?? true;
    if (!clean) this.log.error({ queued: this.queue.length + this.stuck.length }, "billing: settlements not yet in the database are kept in the journal and replayed at the next start");
  }

  /**
   * An operator's adjustment. Credit leased ahead counts as held in the database, so an adjustment
   * that leased credit stands in the way of asks for it back (ours at once, other instances' at
   * their next heartbeat) and retries for up to `reclaimWaitMs`.
   */
  async adjust(accountId: string, amount: number, reason: string, ref: string | null): Promise<number> {
    const attempt = () => this.db.transaction((tx) => adjust(tx, accountId, amount, reason, ref));
    const refused = (e: unknown) => e instanceof ApiError && e.code === "invalid_amount" && Number.isSafeInteger(amount) && amount < 0;
    try {
      return await attempt();
    } catch (e) {
      if (!refused(e)) throw e;
    }
    const deadline = performance.now() + this.cfg.reclaimWaitMs + BEAT_MS;
    const slot = this.slots.get(accountId);
    if (slot?.lease && !slot.lease.dead) {
      slot.coolUntil = performance.now() + COOL_MS;
      await this.giveBack(slot, slot.lease, slot.lease.free, false, "operator adjustment");
    }
    const others = await requestLeaseReturns(this.db, accountId, this.owner);
    for (;;) {
      try {
        return await attempt();
      } catch (e) {
        if (!refused(e) || others === 0 || performance.now() >= deadline) throw e;
      }
      await Bun.sleep(RECLAIM_POLL_MS);
    }
  }

  /** Operator view of this instance's engine. */
  snapshot() {
    let leases = 0, leased = 0, inflight = 0;
    for (const s of this.slots.values())
      if (s.lease && !s.lease.dead) {
        leases++;
        leased += s.lease.reserved;
        inflight += s.lease.inflight;
      }
    return { owner: this.owner, leases, leased, inflight, queued: this.queue.length, stuck: this.stuck.length, databaseDownMs: this.dbFailures > 0 ? Math.round(performance.now() - this.lastDbOk) : 0, ...this.stats };
  }

  // ------------------------------------------------------------------ approvals

  private slotFor(accountId: string): AccountSlot {
    let s = this.slots.get(accountId);
    if (!s) this.slots.set(accountId, (s = new AccountSlot(accountId)));
    return s;
  }

  private fromLease(slot: AccountSlot, amount: number, now: number): Approval | null {
    const l = slot.lease;
    if (!l || l.dead || l.closing || l.asked || now > l.validUntil) return null;
    // without the database (a statement failed, or none succeeded for a while): only within the offline bound
    const sinceOk = now - this.lastDbOk;
    if ((this.dbFailures > 0 || sinceOk > HEALTHY_GAP_MS) && sinceOk > this.cfg.offlineMs) return null;
    if (l.free < amount) return null;
    l.inflight += amount;
    l.lastUse = now;
    this.stats.leaseApprovals++;
    // refill in the background before it runs dry, so requests rarely wait for one
    if (l.free < slot.want(amount, now, this.cfg.leaseDemandMs) / 2 && !slot.acquiring && now >= slot.coolUntil && this.dbFailures === 0) void this.acquire(slot, amount);
    return { kind: "lease", slot, lease: l, amount };
  }

  /** Open the account's lease or refill it (one statement; concurrent requests share it). Never throws. */
  private acquire(slot: AccountSlot, amount: number): Promise<void> {
    if (slot.acquiring) return slot.acquiring;
    const run = async () => {
      const t0 = performance.now();
      const want = slot.want(amount, t0, this.cfg.leaseDemandMs);
      const share = this.cfg.leaseSharePermille;
      const l = slot.lease;
      if (!l || l.dead) {
        const id = randomId("lease");
        const added = await openLease(this.db, { id, accountId: slot.accountId, owner: this.owner, need: amount, want, sharePermille: share, ttlMs: this.cfg.leaseTtlMs });
        this.dbOk();
        if (added <= 0) return void (slot.coolUntil = t0 + COOL_MS);
        // requests still in flight on a swept lease keep their reference to it and settle from available credit
        slot.lease = new LeaseMem(id, slot.accountId, added, t0 + this.validFor(), t0);
        this.stats.leasesOpened++;
        this.ensureBeat();
        return;
      }
      if (l.busy) return;
      const g = await refillLease(this.db, { id: l.id, accountId: slot.accountId, need: Math.max(1, amount - l.free), want: Math.max(1, want - l.free), sharePermille: share, ttlMs: this.cfg.leaseTtlMs });
      this.dbOk();
      if (!g.alive) l.dead = true;
      else if (g.asked) l.asked = true;
      else if (g.added > 0) {
        l.reserved += g.added;
        l.validUntil = t0 + this.validFor();
        this.stats.refills++;
      } else slot.coolUntil = t0 + COOL_MS;
    };
    const p = run()
      .catch((e) => {
        if (!this.dbFailed(e)) this.log.warn({ err: e, accountId: slot.accountId }, "billing: lease open/refill failed; exact holds meanwhile");
        slot.coolUntil = performance.now() + COOL_MS;
      })
      .finally(() => {
        slot.acquiring = null;
      });
    slot.acquiring = p;
    return p;
  }

  private async exact(slot: AccountSlot, req: ApprovalRequest, reclaim: boolean): Promise<Approval> {
    try {
      const h = await hold(this.db, { accountId: req.accountId, amount: req.amount, ref: req.ref, reason: req.reason, expiresAt: new Date(Date.now() + this.opts.holdTtlMs) });
      this.dbOk();
      slot.exactInflight += req.amount;
      this.stats.exactApprovals++;
      return { kind: "hold", slot, holdId: h.id, amount: req.amount };
    } catch (e) {
      if (reclaim && e instanceof ApiError && e.status === 402) return this.reclaim(slot, req, e);
      this.dbFailed(e);
      throw unavailable(e);
    }
  }

  /**
   * The account looks short. Before refusing: give back our own idle lease credit (after any
   * statement of ours on the lease in flight has landed), land our queued settlements (their exact
   * holds' unused parts), and ask other instances for their idle credit, retrying the exact hold
   * until they have answered or `reclaimWaitMs` passed.
   */
  private async reclaim(slot: AccountSlot, req: ApprovalRequest, refusal: ApiError): Promise<Approval> {
    const deadline = performance.now() + this.cfg.reclaimWaitMs;
    slot.coolUntil = performance.now() + COOL_MS;
    this.stats.reclaims++;
    // a refill or give-back of our lease in flight moves credit between the lease and the account:
    // the refusal was measured before it landed, so it is not final
    let retry = false;
    const l = slot.lease;
    while (l && !l.dead && (l.busy || slot.acquiring) && performance.now() < deadline) {
      retry = true;
      await (slot.acquiring ?? Bun.sleep(1));
    }
    if (l && !l.dead && l.free > 0 && (await this.giveBack(slot, l, l.free, false, "account nearly empty: idle leased credit returned")) > 0) retry = true;
    if (this.queue.length > 0 || this.flushing !== null) retry = true;
    await this.sync();
    let othersIdle = 0;
    try {
      othersIdle = this.cfg.leases ? await requestLeaseReturns(this.db, req.accountId, this.owner) : 0;
      // what other instances hold idle cannot make up the difference: refuse now, saying what the account has
      if (othersIdle > 0 && (await getBalance(this.db, req.accountId)).available + othersIdle < req.amount) return await this.refuse(slot, req);
    } catch (e) {
      throw unavailable(e);
    }
    if (!retry && othersIdle === 0) throw refusal;
    for (;;) {
      try {
        return await this.exact(slot, req, false);
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 402)) throw e;
        if (othersIdle === 0) throw e;
        if (performance.now() >= deadline) return await this.refuse(slot, req);
      }
      await Bun.sleep(RECLAIM_POLL_MS);
    }
  }

  /**
   * The final 402. Its figure is what `/v1/account` calls available, read now in one statement:
   * the balance less what is held, with the idle part of leases counted as available (other
   * instances' as they last published it, ours as we know it). Read fresh, not added to a figure
   * from before the wait: credit another instance gave back meanwhile would count twice. When the
   * others' published idle credit would cover the request (they were asked for it and have not
   * given it back within the wait: a busy instance, or in-flight amounts not yet published), the
   * answer says what could be reserved now and what is still out on other instances.
   */
  private async refuse(slot: AccountSlot, req: ApprovalRequest): Promise<never> {
    const b = await clientBalance(this.db, req.accountId).catch((e) => {
      throw unavailable(e);
    });
    const l = slot.lease && !slot.lease.dead ? slot.lease : null;
    const ownPublishedIdle = l ? Math.max(0, l.reserved - Math.min(l.published, l.reserved)) : 0;
    const ownFree = l ? Math.max(0, l.free) : 0;
    const othersIdle = Math.max(0, b.leasedIdle - ownPublishedIdle);
    const available = Math.max(0, b.available - ownPublishedIdle + ownFree);
    if (available < req.amount) throw insufficientQuota(req.amount, available);
    throw insufficientQuota(req.amount, Math.max(0, available - othersIdle), othersIdle);
  }

  /** Give `amount` of a lease back (or close it). Returns what was given back. Never throws. */
  private async giveBack(slot: AccountSlot, l: LeaseMem, amount: number, close: boolean, reason: string): Promise<number> {
    if (l.busy || (!close && amount <= 0)) return 0;
    l.busy = true;
    l.closing = close;
    if (!close) l.returning += amount;
    try {
      const r = await returnLease(this.db, { id: l.id, amount, close, reason });
      this.dbOk();
      this.stats.returns++;
      if (r === null || close) {
        l.dead = true;
        if (slot.lease === l) slot.lease = null;
        return r ?? 0;
      }
      l.reserved -= r;
      return r;
    } catch (e) {
      if (!this.dbFailed(e)) this.log.warn({ err: e, lease: l.id }, "billing: giving lease credit back failed");
      return 0;
    } finally {
      if (!close) l.returning -= amount;
      l.busy = false;
      l.closing = false;
    }
  }

  private dbOk(at = performance.now()) {
    this.lastDbOk = at;
    this.dbFailures = 0;
  }

  /** Note a failed statement; returns true when the database was unreachable. */
  private dbFailed(e: unknown): boolean {
    if (!isConnectionError(e)) return false;
    this.dbFailures++;
    this.dbFailedAt = performance.now();
    this.lastDbError = e;
    return true;
  }

  private validFor(): number {
    // a quarter of the TTL of margin: the database's clock and ours may differ a little, and the
    // sweeper must never close a lease its owner still approves from
    return (this.cfg.leaseTtlMs * 3) / 4;
  }

  // ------------------------------------------------------------------ heartbeat

  private ensureBeat() {
    if (this.beatTimer || this.stopped) return;
    this.beatTimer = setInterval(() => this.beat(), BEAT_MS);
    this.beatTimer.unref?.();
  }

  private beat() {
    const now = performance.now();
    let live = 0;
    for (const slot of this.slots.values()) {
      this.upkeep(slot, now);
      if (slot.lease && !slot.lease.dead) live++;
    }
    // while the database is unreachable, the flusher's backoff decides when to try again
    if (live > 0 && now - this.lastFlushStart >= BEAT_MS && this.failures === 0) this.schedule(true);
    if (live === 0 && this.beatTimer) {
      clearInterval(this.beatTimer);
      this.beatTimer = null;
    }
  }

  private upkeep(slot: AccountSlot, now: number) {
    const l = slot.lease;
    if (!l) {
      if (slot.exactInflight === 0 && !slot.acquiring && slot.idleFor(now) > FORGET_MS) this.slots.delete(slot.accountId);
      return;
    }
    if (l.dead) {
      if (l.inflight === 0 && l.pending === 0) slot.lease = null;
      return;
    }
    // giving back during an outage would hold the credit in `returning` while the statement hangs
    if (l.busy || slot.acquiring || this.dbFailures > 0) return;
    if (l.asked) {
      l.asked = false;
      slot.coolUntil = now + COOL_MS;
      void this.giveBack(slot, l, l.free, false, "another instance needs the account's credit");
      return;
    }
    const idleMs = Math.max(IDLE_MS_MIN, 2 * this.cfg.leaseDemandMs);
    if (now - l.lastUse > idleMs) {
      if (l.inflight === 0 && l.pending === 0) void this.giveBack(slot, l, 0, true, "lease idle");
      else if (l.free > 0) void this.giveBack(slot, l, l.free, false, "lease idle");
      return;
    }
    const want = slot.want(0, now, this.cfg.leaseDemandMs);
    if (l.free > 2 * want && l.free > 0) void this.giveBack(slot, l, l.free - want, false, "demand fell");
  }

  // ------------------------------------------------------------------ batches

  private schedule(now: boolean) {
    if (this.flushing) {
      this.rerun = true;
      return;
    }
    if (now || this.queue.length >= this.batchLimit || this.waiters.length > 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      // `flush()` has nothing to await when there is nothing to write (no settlement, no lease to
      // renew: a reader's second sync behind a batch of exact holds) and then returns already done.
      // Its end runs in `.then`, a later microtask, so `flushing` is always set before it is
      // cleared. (Clearing it inside `flush` left `flushing` pointing at the finished promise for
      // ever: every later settlement only set `rerun` and waited in memory until shutdown.)
      this.flushing = this.flush().then(
        (delay) => this.flushed(delay),
        (e) => {
          this.log.error({ err: e }, "billing: the settlement flusher failed; retrying");
          this.flushed(BACKOFF_MAX_MS);
        },
      );
      return;
    }
    if (!this.timer && this.queue.length > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule(true);
      }, this.cfg.flushMs);
    }
  }

  /** Write one batch (and renew this instance's leases). Returns the delay before the next attempt: -1 none needed, 0 at once. */
  private async flush(): Promise<number> {
    const gen = ++this.startedGen;
    this.lastFlushStart = performance.now();
    const batch = this.queue.splice(0, this.batchLimit);
    this.inflightMinSeq = batch[0]?.seq ?? Infinity;
    const beats: Array<{ lease: LeaseMem; inFlight: number }> = [];
    for (const slot of this.slots.values()) if (slot.lease && !slot.lease.dead) beats.push({ lease: slot.lease, inFlight: slot.lease.inflight });
    const t0 = performance.now();
    let res: BatchResult | null = null;
    try {
      this.journal?.rotate();
      if (batch.length > 0 || beats.length > 0) res = await settleBatch(this.db, batch.map((q) => q.s), beats.map((b) => ({ id: b.lease.id, inFlight: b.inFlight })), this.cfg.leaseTtlMs);
    } catch (e) {
      return this.failed(batch, e);
    }
    // committed: from here on nothing may put the batch back in the queue (its lease bookkeeping
    // would be applied twice); a bug in the bookkeeping is reported, the charges stand
    this.doneGen = gen;
    this.failures = 0;
    this.batchLimit = MAX_BATCH;
    if (res) {
      this.dbOk(t0);
      try {
        this.landed(batch, beats, res, t0);
      } catch (e) {
        this.log.error({ err: e }, "billing: bookkeeping after a batch landed failed");
      }
    }
    return -1;
  }

  private flushed(delay: number) {
    this.flushing = null;
    this.inflightMinSeq = Infinity;
    this.checkWaiters();
    if (this.stopped && delay >= 0) return;
    if (delay > 0) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule(true);
      }, delay);
    } else if (this.rerun || this.queue.length >= this.batchLimit || this.waiters.length > 0 || delay === 0) {
      this.rerun = false;
      this.schedule(true);
    } else this.schedule(false);
  }

  private landed(batch: Queued[], beats: Array<{ lease: LeaseMem; inFlight: number }>, res: BatchResult, t0: number) {
    this.stats.batches++;
    this.stats.settlements += batch.length;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
    // the crash window as it is (bench/billing-crash-window.ts and the kill -9 test read these at
    // debug level): how long the batch's oldest settlement waited in memory, and its statement's time
    const now = performance.now();
    this.log.debug({ settlements: batch.length, leases: beats.length, oldestMs: batch.length > 0 ? Math.round(now - batch[0]!.at) : null, statementMs: Math.round(now - t0) }, "billing: batch landed");
    for (const q of batch) {
      this.journal?.landed(q.seg);
      if (q.lease) {
        q.lease.pending -= q.s.cover;
        q.lease.reserved -= q.s.cover;
      }
    }
    for (const r of res.applied) {
      if (r.shortfall > 0) {
        this.stats.shortfalls++;
        this.log.warn({ ref: r.ref, charged: r.charged, shortfall: r.shortfall }, "billing: usage above what the account had left; the rest is recorded as a shortfall");
      }
    }
    const open = new Map(res.leases.map((l) => [l.id, l]));
    for (const { lease, inFlight } of beats) {
      const state = open.get(lease.id);
      if (!state) {
        if (!lease.dead) this.log.warn({ lease: lease.id }, "billing: a lease of this instance was swept (not renewed in time); its charges come from available credit");
        lease.dead = true;
        continue;
      }
      lease.validUntil = t0 + this.validFor();
      lease.published = inFlight;
      if (state.returnRequested) lease.asked = true;
      // nothing else moves the amount while no refill or give-back of ours is in flight
      const slot = this.slots.get(lease.accountId);
      if (!lease.busy && !slot?.acquiring && state.amount !== lease.reserved) {
        this.log.warn({ lease: lease.id, database: state.amount, memory: lease.reserved }, "billing: lease amount differed from the database; using the database's");
        lease.reserved = state.amount;
      }
    }
  }

  /** Requeue a failed batch; returns the delay before the next attempt. */
  private failed(batch: Queued[], e: unknown): number {
    this.stats.flushErrors++;
    if (this.dbFailed(e)) {
      this.queue.unshift(...batch);
      this.failures++;
      if (this.failures === 1) this.log.warn({ err: e, queued: this.queue.length }, "billing: database unreachable; settlements are kept and retried until they land");
      return Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** (this.failures - 1));
    }
    if (isUniqueViolation(e)) {
      // another replay of these settlements committed first; the retry finds them done
      this.queue.unshift(...batch);
      return 0;
    }
    if (batch.length > 1) {
      // isolate the settlement that fails, so it cannot hold the others back
      this.queue.unshift(...batch);
      this.batchLimit = Math.max(1, Math.floor(batch.length / 2));
      return 0;
    }
    if (batch.length === 1) {
      this.log.error({ err: e, settlement: batch[0]!.s }, `billing: a settlement fails on its own; kept and retried every ${STUCK_RETRY_MS / 1000} s`);
      this.stuck.push(batch[0]!);
    } else this.log.error({ err: e }, "billing: lease heartbeat failed");
    this.batchLimit = MAX_BATCH;
    return BACKOFF_MAX_MS;
  }

  private retryStuck() {
    if (this.stuck.length === 0) return;
    this.queue.unshift(...this.stuck);
    this.stuck = [];
    this.schedule(true);
  }

  private checkWaiters() {
    if (this.waiters.length === 0) return;
    const minUnlanded = Math.min(this.queue[0]?.seq ?? Infinity, this.inflightMinSeq);
    this.waiters = this.waiters.filter((w) => {
      const done = this.doneGen >= w.gen && minUnlanded > w.seq;
      if (done) w.resolve();
      return !done;
    });
  }

  // ------------------------------------------------------------------ restart

  private async replay(o: OrphanJournal): Promise<void> {
    try {
      for (let i = 0; i < o.settlements.length; i += MAX_BATCH) {
        const chunk = o.settlements.slice(i, i + MAX_BATCH);
        for (let attempt = 0; ; attempt++) {
          try {
            const res = await settleBatch(this.db, chunk);
            this.stats.replayed += res.applied.length;
            break;
          } catch (e) {
            if (attempt >= 5 || !(isConnectionError(e) || isUniqueViolation(e))) throw e;
            await Bun.sleep(BACKOFF_MIN_MS * 2 ** attempt);
          }
        }
      }
      for (const id of await leasesOf(this.db, o.meta.owner)) await returnLease(this.db, { id, amount: 0, close: true, reason: "owner restarted: lease released after its journal was replayed" });
      this.log.info({ owner: o.meta.owner, settlements: o.settlements.length, applied: this.stats.replayed }, "billing: replayed the settlement journal of a stopped process");
      o.done();
    } catch (e) {
      this.log.error({ err: e, owner: o.meta.owner }, "billing: replaying a settlement journal failed; it is kept for the next start");
      o.abandon();
    }
  }
}

/** The database's random id (written by migration 0002), so a journal is replayed only into its own database. */
export async function databaseIdentity(db: Db): Promise<string> {
  const rows = await query<{ id: string }>(db, sql`SELECT id FROM database_identity LIMIT 1`);
  return rows[0]?.id ?? "unknown";
}

/** A database connection problem becomes 503 service_unavailable; anything else is rethrown as is. */
export function unavailable(e: unknown): unknown {
  return isConnectionError(e) ? databaseUnavailable(e) : e;
}
