/**
 * Batch settlement: every finished request's settlement is appended to the local journal, queued,
 * and written by one `settleBatch` statement (settle-batch.ts) every `flushMs`, at once when
 * MAX_BATCH are queued, or when a reader waits for its own instance's settlements (`sync`). The
 * same statement renews this instance's leases and publishes what each has in flight (the beats
 * the lease book hands in), so a busy instance makes one statement per flush, not one per request.
 *
 *  - Database unreachable: the batch goes back to the front of the queue and is retried with
 *    backoff (50 ms doubling to 2 s) until it lands; it stays in the journal meanwhile.
 *  - A batch that fails for another reason is split until the failing settlement is alone; that one
 *    is logged and retried every 30 s without holding the others back.
 *  - At start, journals of dead processes on the same database are replayed (`replay`): a replayed
 *    settlement that already landed does nothing (the usage row is its exactly-once key).
 */
import type { BillingConfig } from "../config.ts";
import type { Db } from "../db/index.ts";
import type { Logger } from "../logger.ts";
import { isConnectionError, isUniqueViolation } from "./db-errors.ts";
import type { DbHealth } from "./db-health.ts";
import type { Journal, OrphanJournal } from "./journal.ts";
import type { LeaseMem } from "./lease-memory.ts";
import { returnLease, leasesOf } from "./lease-statements.ts";
import { settleBatch, settlementEntry, type BatchResult, type Settlement, type SettlementEntry } from "./settle-batch.ts";

/** settlements per statement: ~5 ms of Postgres work, beyond which one batch delays the next too long */
export const MAX_BATCH = 500;
/** retry backoff while the database is unreachable: 50 ms doubling to 2 s */
export const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2_000;
/** a settlement that fails on its own (not a connection problem) is retried this often, and logged each time */
const STUCK_RETRY_MS = 30_000;

export interface Queued {
  s: Settlement;
  /** its batch entry, made once for the journal and the batch (null: `actual` is invalid, the batch will say so) */
  entry: SettlementEntry | null;
  seq: number;
  seg: number;
  /** the lease whose `pending` holds `cover` until the batch lands */
  lease: LeaseMem | null;
  /** when it was queued (performance.now()): its age at commit is what a kill -9 could have lost */
  at: number;
}

/** A lease renewed by a batch, with the in-flight amount the batch publishes for it. */
export interface Beat {
  lease: LeaseMem;
  inFlight: number;
  /** lease.moves when the batch was sent; null when a refill or give-back of ours was in flight then */
  moves: number | null;
}

/** What the queue needs from the lease book. */
export interface LeaseBookkeeping {
  /** the live leases to renew with the next batch */
  beats(): Beat[];
  /** some lease has an in-flight amount not yet published (a reader must wait for the next batch) */
  unpublished(): boolean;
  /** a batch committed: take its covered charges off the leases, and read what the database said of each beat */
  landed(batch: Queued[], beats: Beat[], res: BatchResult, t0: number): void;
}

export interface QueueStats {
  batches: number;
  settlements: number;
  largestBatch: number;
  shortfalls: number;
  replayed: number;
  flushErrors: number;
}

export class SettlementQueue {
  private queue: Queued[] = [];
  private stuck: Queued[] = [];
  private flushing: Promise<void> | null = null;
  private inflightMinSeq = Infinity;
  private rerun = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stuckTimer: ReturnType<typeof setInterval> | null = null;
  private seq = 0;
  /** number of the last flush started, and of the last one that completed (flushes can fail) */
  private startedGen = 0;
  private doneGen = 0;
  /** performance.now() of the last flush start (the heartbeat flushes when none started for a beat) */
  lastFlushStart = 0;
  private waiters: Array<{ seq: number; gen: number; resolve(): void }> = [];
  /** consecutive flushes that failed (the heartbeat leaves retries to the backoff meanwhile) */
  failures = 0;
  private batchLimit = MAX_BATCH;
  journal: Journal | null = null;
  private stopped = false;

  constructor(private readonly o: { db: Db; logger: Logger; config: BillingConfig; health: DbHealth; stats: QueueStats; leases: LeaseBookkeeping; onAlerts?: () => void }) {}

  get length(): number {
    return this.queue.length;
  }

  get stuckCount(): number {
    return this.stuck.length;
  }

  /** a batch statement is in flight, or settlements wait for one */
  get busy(): boolean {
    return this.queue.length > 0 || this.flushing !== null;
  }

  startRetries(): void {
    this.stuckTimer = setInterval(() => this.retryStuck(), STUCK_RETRY_MS);
    this.stuckTimer.unref?.();
  }

  /** Journal and queue one settlement (synchronous: it is in the journal when this returns). */
  push(settlement: Settlement, lease: LeaseMem | null): void {
    const entry = settlementEntry(settlement);
    const seg = this.journal ? this.journal.append(entry ?? settlement) : 0;
    this.queue.push({ s: settlement, entry, seq: ++this.seq, seg, lease, at: performance.now() });
    this.schedule(false);
  }

  /**
   * Resolves when every settlement queued before the call is in the database and the in-flight
   * amounts of this instance's leases are published. Gives up as soon as the database is found
   * unreachable (the read will answer 503 itself), or after `timeoutMs`.
   */
  async sync(timeoutMs = 10_000): Promise<void> {
    if (this.queue.length === 0 && !this.flushing && !this.o.leases.unpublished()) return;
    let resolveWaiter!: () => void;
    const done = new Promise<void>((resolve) => this.waiters.push({ seq: this.seq, gen: this.startedGen + 1, resolve: (resolveWaiter = resolve) }));
    this.schedule(true);
    const t0 = performance.now();
    const giveUp = setInterval(() => {
      if (this.o.health.failures > 0 || performance.now() - t0 > timeoutMs) resolveWaiter();
    }, 50);
    await done;
    clearInterval(giveUp);
    this.waiters = this.waiters.filter((w) => w.resolve !== resolveWaiter);
  }

  /** Land everything queued, for up to `graceMs`; then no timer runs any more. */
  async drain(graceMs: number): Promise<void> {
    this.stopped = true;
    if (this.stuckTimer) clearInterval(this.stuckTimer);
    const deadline = performance.now() + graceMs;
    while ((this.queue.length > 0 || this.flushing) && performance.now() < deadline) {
      if (!this.flushing) this.schedule(true);
      await (this.flushing ?? Bun.sleep(BACKOFF_MIN_MS));
    }
    if (this.timer) clearTimeout(this.timer);
  }

  /** Start a batch now (`now`), or make sure one is due within the flush interval. */
  schedule(now: boolean): void {
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
          this.o.logger.error({ err: e }, "billing: the settlement flusher failed; retrying");
          this.flushed(BACKOFF_MAX_MS);
        },
      );
      return;
    }
    if (!this.timer && this.queue.length > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule(true);
      }, this.o.config.flushMs);
    }
  }

  /** Write one batch (and renew this instance's leases). Returns the delay before the next attempt: -1 none needed, 0 at once. */
  private async flush(): Promise<number> {
    const gen = ++this.startedGen;
    this.lastFlushStart = performance.now();
    const batch = this.queue.splice(0, this.batchLimit);
    this.inflightMinSeq = batch[0]?.seq ?? Infinity;
    const beats = this.o.leases.beats();
    const t0 = performance.now();
    let res: BatchResult | null = null;
    try {
      this.journal?.rotate();
      if (batch.length > 0 || beats.length > 0) res = await settleBatch(this.o.db, batch.map((q) => q.entry ?? q.s), beats.map((b) => ({ id: b.lease.id, inFlight: b.inFlight })), this.o.config.leaseTtlMs);
    } catch (e) {
      return this.failed(batch, e);
    }
    // committed: from here on nothing may put the batch back in the queue (its lease bookkeeping
    // would be applied twice); a bug in the bookkeeping is reported, the charges stand
    this.doneGen = gen;
    this.failures = 0;
    this.batchLimit = MAX_BATCH;
    if (res) {
      this.o.health.ok(t0);
      try {
        this.landed(batch, beats, res, t0);
      } catch (e) {
        this.o.logger.error({ err: e }, "billing: bookkeeping after a batch landed failed");
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

  private landed(batch: Queued[], beats: Beat[], res: BatchResult, t0: number) {
    const stats = this.o.stats;
    stats.batches++;
    stats.settlements += batch.length;
    stats.largestBatch = Math.max(stats.largestBatch, batch.length);
    // the crash window as it is (bench/billing-crash-window.ts and the kill -9 test read these at
    // debug level): how long the batch's oldest settlement waited in memory, and its statement's time
    const now = performance.now();
    this.o.logger.debug({ settlements: batch.length, leases: beats.length, oldestMs: batch.length > 0 ? Math.round(now - batch[0]!.at) : null, statementMs: Math.round(now - t0) }, "billing: batch landed");
    for (const q of batch) this.journal?.landed(q.seg);
    for (const r of res.applied) {
      if (r.shortfall > 0) {
        stats.shortfalls++;
        this.o.logger.warn({ ref: r.ref, charged: r.charged, shortfall: r.shortfall }, "billing: usage above what the account (or a budget) had left; the rest is recorded as a shortfall");
      }
    }
    this.o.leases.landed(batch, beats, res, t0);
    if (res.alerts > 0) this.o.onAlerts?.();
  }

  /** Requeue a failed batch; returns the delay before the next attempt. */
  private failed(batch: Queued[], e: unknown): number {
    this.o.stats.flushErrors++;
    if (this.o.health.failed(e)) {
      this.queue.unshift(...batch);
      this.failures++;
      if (this.failures === 1) this.o.logger.warn({ err: e, queued: this.queue.length }, "billing: database unreachable; settlements are kept and retried until they land");
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
      this.o.logger.error({ err: e, settlement: batch[0]!.s }, `billing: a settlement fails on its own; kept and retried every ${STUCK_RETRY_MS / 1000} s`);
      this.stuck.push(batch[0]!);
    } else this.o.logger.error({ err: e }, "billing: lease heartbeat failed");
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

  /** Land the settlements a dead process left in its journal, then close its leases. */
  async replay(o: OrphanJournal): Promise<void> {
    try {
      for (let i = 0; i < o.settlements.length; i += MAX_BATCH) {
        const chunk = o.settlements.slice(i, i + MAX_BATCH);
        for (let attempt = 0; ; attempt++) {
          try {
            const res = await settleBatch(this.o.db, chunk);
            this.o.stats.replayed += res.applied.length;
            if (res.alerts > 0) this.o.onAlerts?.();
            break;
          } catch (e) {
            if (attempt >= 5 || !(isConnectionError(e) || isUniqueViolation(e))) throw e;
            await Bun.sleep(BACKOFF_MIN_MS * 2 ** attempt);
          }
        }
      }
      for (const id of await leasesOf(this.o.db, o.meta.owner)) await returnLease(this.o.db, { id, amount: 0, close: true, reason: "owner restarted: lease released after its journal was replayed" });
      this.o.logger.info({ owner: o.meta.owner, settlements: o.settlements.length, applied: this.o.stats.replayed }, "billing: replayed the settlement journal of a stopped process");
      o.done();
    } catch (e) {
      this.o.logger.error({ err: e, owner: o.meta.owner }, "billing: replaying a settlement journal failed; it is kept for the next start");
      o.abandon();
    }
  }
}
