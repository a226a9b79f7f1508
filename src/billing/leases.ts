/**
 * Credit leases, the in-memory side: which slots (accounts, or accounts with one set of budget
 * windows) this instance serves, their leases, approvals from a lease's free part, refills before a
 * lease runs dry, give-backs when it is idle, asked for or stale, and the 100 ms heartbeat that
 * renews them (through the settlement queue's next batch) and reads what the database says back.
 * The statements are in lease-statements.ts; the numbers kept here change only when one completed.
 *
 *  - A lease reserves in the account and in every window of its slot. A window that ends (the
 *    engine's clock passes midnight in its timezone) ends its slot's approvals: the next request
 *    counts in the next window, another slot, whose lease is opened afresh (demand carried over),
 *    while the old lease gives its free credit back and closes once its requests are settled.
 *  - A change of the account's budgets (another instance's PUT) makes its leases stale at their
 *    next heartbeat: they approve nothing more and are given back.
 */
import type { BillingConfig } from "../config.ts";
import type { Db } from "../db/index.ts";
import type { Logger } from "../logger.ts";
import { randomId } from "../ids.ts";
import type { DbHealth } from "./db-health.ts";
import { AccountSlot, LeaseMem, type SlotScope } from "./lease-memory.ts";
import { openLeaseIn, refillLease, returnLease } from "./lease-statements.ts";
import type { BatchResult } from "./settle-batch.ts";
import type { Beat, LeaseBookkeeping, Queued } from "./settlement-queue.ts";

/** heartbeat: renew leases, publish in-flight amounts, read return requests, give back idle credit */
export const BEAT_MS = 100;
/** a lease nobody used for this long is given back (about 4 heartbeats after the demand window) */
const IDLE_MS_MIN = 2_000;
/** after an account ran short (or others asked for credit back): exact holds only, for this long */
export const COOL_MS = 2_000;
/** an account slot with no lease and nothing in flight is forgotten after this */
const FORGET_MS = 60_000;

export type LeaseApproval = { kind: "lease"; slot: AccountSlot; lease: LeaseMem; amount: number };

export interface LeaseStats {
  leaseApprovals: number;
  leasesOpened: number;
  refills: number;
  returns: number;
}

/** What the lease book needs from the settlement queue: a batch now (the heartbeat's), and whether batches fail. */
export interface Flusher {
  schedule(now: boolean): void;
  readonly lastFlushStart: number;
  readonly failures: number;
}

export class LeaseBook implements LeaseBookkeeping {
  /** by slot key (SlotScope.key) */
  readonly slots = new Map<string, AccountSlot>();
  private readonly byAccount = new Map<string, Set<AccountSlot>>();
  /** the current slot of each family (the same budgets, any period) */
  private readonly families = new Map<string, AccountSlot>();
  private beatTimer: ReturnType<typeof setInterval> | null = null;
  private stopped = false;
  flusher: Flusher | null = null;

  constructor(private readonly o: { db: Db; logger: Logger; config: BillingConfig; health: DbHealth; stats: LeaseStats; owner: string; clock: () => number; onStale(accountId: string): void }) {}

  /** The slot of an account's requests counting in `scope`'s windows (none: the account's own slot). */
  slotFor(accountId: string, scope?: SlotScope & { family?: string }): AccountSlot {
    const key = scope?.key ?? accountId;
    let s = this.slots.get(key);
    if (!s) {
      s = new AccountSlot(accountId, scope);
      this.slots.set(key, s);
      let set = this.byAccount.get(accountId);
      if (!set) this.byAccount.set(accountId, (set = new Set()));
      set.add(s);
      if (scope?.family) {
        const before = this.families.get(scope.family);
        if (before) s.inheritDemand(before);
        this.families.set(scope.family, s);
      }
    } else if (scope && scope.version !== s.scope.version) s.scope = { ...s.scope, version: scope.version };
    return s;
  }

  /** Every slot of an account on this instance. */
  slotsOf(accountId: string): AccountSlot[] {
    return [...(this.byAccount.get(accountId) ?? [])];
  }

  /** Approve `amount` from the slot's lease in memory, or null when it cannot. */
  fromLease(slot: AccountSlot, amount: number, now: number, wall = this.o.clock()): LeaseApproval | null {
    const l = slot.lease;
    if (!l || l.dead || l.closing || l.asked || l.stale || now > l.validUntil || wall >= slot.scope.endsAt) return null;
    // without the database (a statement failed, or none succeeded for a while): only within the offline bound
    if (!this.o.health.mayApproveOffline(now, this.o.config.offlineMs)) return null;
    if (l.free < amount) return null;
    l.inflight += amount;
    l.lastUse = now;
    this.o.stats.leaseApprovals++;
    // refill in the background before it runs dry, so requests rarely wait for one
    if (l.free < slot.want(amount, now, this.o.config.leaseDemandMs) / 2 && !slot.acquiring && now >= slot.coolUntil && this.o.health.failures === 0) void this.acquire(slot, amount);
    return { kind: "lease", slot, lease: l, amount };
  }

  /** Open the slot's lease or refill it (one statement; concurrent requests share it). Never throws. */
  acquire(slot: AccountSlot, amount: number): Promise<void> {
    if (slot.acquiring) return slot.acquiring;
    const run = async () => {
      const t0 = performance.now();
      if (this.o.clock() >= slot.scope.endsAt) return; // its windows are over: no new credit for them
      const want = slot.want(amount, t0, this.o.config.leaseDemandMs);
      const share = this.o.config.leaseSharePermille;
      const l = slot.lease;
      if (!l || l.dead) {
        const id = randomId("lease");
        const got = await openLeaseIn(this.o.db, { id, accountId: slot.accountId, owner: this.o.owner, need: amount, want, sharePermille: share, ttlMs: this.o.config.leaseTtlMs, windows: slot.scope.ids, budgetsVersion: slot.scope.version });
        this.o.health.ok();
        if (got.stale) this.o.onStale(slot.accountId);
        if (got.added <= 0) return void (slot.coolUntil = t0 + COOL_MS);
        // requests still in flight on a swept lease keep their reference to it and settle from available credit
        slot.lease = new LeaseMem(id, slot.accountId, got.added, t0 + this.validFor(), t0);
        this.o.stats.leasesOpened++;
        this.ensureBeat();
        return;
      }
      if (l.busy || l.stale) return;
      l.moves++;
      const g = await refillLease(this.o.db, { id: l.id, accountId: slot.accountId, need: Math.max(1, amount - l.free), want: Math.max(1, want - l.free), sharePermille: share, ttlMs: this.o.config.leaseTtlMs });
      this.o.health.ok();
      if (!g.alive) l.dead = true;
      else if (g.stale) {
        l.stale = true;
        this.o.onStale(slot.accountId);
      } else if (g.asked) l.asked = true;
      else if (g.added > 0) {
        l.reserved += g.added;
        l.validUntil = t0 + this.validFor();
        this.o.stats.refills++;
      } else slot.coolUntil = t0 + COOL_MS;
    };
    const p = run()
      .catch((e) => {
        if (!this.o.health.failed(e)) this.o.logger.warn({ err: e, accountId: slot.accountId }, "billing: lease open/refill failed; exact holds meanwhile");
        slot.coolUntil = performance.now() + COOL_MS;
      })
      .finally(() => {
        slot.acquiring = null;
      });
    slot.acquiring = p;
    return p;
  }

  /** Give `amount` of a lease back (or close it). Returns what was given back. Never throws. */
  async giveBack(slot: AccountSlot, l: LeaseMem, amount: number, close: boolean, reason: string): Promise<number> {
    if (l.busy || (!close && amount <= 0)) return 0;
    l.busy = true;
    l.moves++;
    l.closing = close;
    if (!close) l.returning += amount;
    try {
      const r = await returnLease(this.o.db, { id: l.id, amount, close, reason });
      this.o.health.ok();
      this.o.stats.returns++;
      if (r === null || close) {
        l.dead = true;
        if (slot.lease === l) slot.lease = null;
        return r ?? 0;
      }
      l.reserved -= r;
      return r;
    } catch (e) {
      if (!this.o.health.failed(e)) this.o.logger.warn({ err: e, lease: l.id }, "billing: giving lease credit back failed");
      return 0;
    } finally {
      if (!close) l.returning -= amount;
      l.busy = false;
      l.closing = false;
    }
  }

  /**
   * Before a refusal: let every statement of ours on the account's leases land (until `deadline`),
   * then give their idle credit back. Returns true when something moved meanwhile (a refusal
   * measured before it is not final).
   */
  async giveBackIdle(accountId: string, deadline: number, reason: string): Promise<boolean> {
    let moved = false;
    for (const slot of this.slotsOf(accountId)) {
      slot.coolUntil = performance.now() + COOL_MS;
      const l = slot.lease;
      // a refill or give-back of ours in flight moves credit between the lease and the account
      while (l && !l.dead && (l.busy || slot.acquiring) && performance.now() < deadline) {
        moved = true;
        await (slot.acquiring ?? Bun.sleep(1));
      }
      if (l && !l.dead && l.free > 0 && (await this.giveBack(slot, l, l.free, false, reason)) > 0) moved = true;
    }
    return moved;
  }

  /** Live leases of this instance: how many, what they reserve and have in flight. */
  totals() {
    let leases = 0, leased = 0, inflight = 0;
    for (const s of this.slots.values())
      if (s.lease && !s.lease.dead) {
        leases++;
        leased += s.lease.reserved;
        inflight += s.lease.inflight;
      }
    return { leases, leased, inflight };
  }

  /** Stop the heartbeat and close every lease with nothing in flight (at shutdown). */
  async closeAll(): Promise<void> {
    this.stopped = true;
    if (this.beatTimer) clearInterval(this.beatTimer);
    for (const slot of this.slots.values()) {
      const l = slot.lease;
      if (!l || l.dead || l.inflight > 0 || l.pending > 0) continue;
      await returnLease(this.o.db, { id: l.id, amount: 0, close: true, reason: "instance stopping" }).catch((e) => this.o.logger.warn({ err: e, lease: l.id }, "billing: could not close a lease at shutdown; it expires"));
    }
  }

  validFor(): number {
    // a quarter of the TTL of margin: the database's clock and ours may differ a little, and the
    // sweeper must never close a lease its owner still approves from
    return (this.o.config.leaseTtlMs * 3) / 4;
  }

  // ------------------------------------------------------------------ heartbeat

  private ensureBeat() {
    if (this.beatTimer || this.stopped) return;
    this.beatTimer = setInterval(() => this.beat(), BEAT_MS);
    this.beatTimer.unref?.();
  }

  beat(): void {
    const now = performance.now();
    const wall = this.o.clock();
    let live = 0;
    for (const slot of this.slots.values()) {
      this.upkeep(slot, now, wall);
      if (slot.lease && !slot.lease.dead) live++;
    }
    const f = this.flusher;
    // while the database is unreachable, the flusher's backoff decides when to try again
    if (f && live > 0 && now - f.lastFlushStart >= BEAT_MS && f.failures === 0) f.schedule(true);
    if (live === 0 && this.beatTimer) {
      clearInterval(this.beatTimer);
      this.beatTimer = null;
    }
  }

  private upkeep(slot: AccountSlot, now: number, wall: number) {
    const l = slot.lease;
    if (!l) {
      if (slot.exactInflight === 0 && !slot.acquiring && slot.idleFor(now) > FORGET_MS) this.forget(slot);
      return;
    }
    if (l.dead) {
      if (l.inflight === 0 && l.pending === 0) slot.lease = null;
      return;
    }
    // giving back during an outage would hold the credit in `returning` while the statement hangs
    if (l.busy || slot.acquiring || this.o.health.failures > 0) return;
    if (l.stale || wall >= slot.scope.endsAt) {
      // the account's budgets changed, or the slot's windows are over: close it once its requests are settled
      if (l.inflight === 0 && l.pending === 0) void this.giveBack(slot, l, 0, true, l.stale ? "budgets changed" : "budget window over");
      else if (l.free > 0) void this.giveBack(slot, l, l.free, false, l.stale ? "budgets changed" : "budget window over");
      return;
    }
    if (l.asked) {
      l.asked = false;
      slot.coolUntil = now + COOL_MS;
      void this.giveBack(slot, l, l.free, false, "another instance needs the account's credit");
      return;
    }
    const idleMs = Math.max(IDLE_MS_MIN, 2 * this.o.config.leaseDemandMs);
    if (now - l.lastUse > idleMs) {
      if (l.inflight === 0 && l.pending === 0) void this.giveBack(slot, l, 0, true, "lease idle");
      else if (l.free > 0) void this.giveBack(slot, l, l.free, false, "lease idle");
      return;
    }
    const want = slot.want(0, now, this.o.config.leaseDemandMs);
    if (l.free > 2 * want && l.free > 0) void this.giveBack(slot, l, l.free - want, false, "demand fell");
  }

  private forget(slot: AccountSlot) {
    this.slots.delete(slot.scope.key);
    const set = this.byAccount.get(slot.accountId);
    set?.delete(slot);
    if (set?.size === 0) this.byAccount.delete(slot.accountId);
    for (const [f, s] of this.families) if (s === slot) this.families.delete(f);
  }

  // ------------------------------------------------------------------ what the batches say

  beats(): Beat[] {
    const out: Beat[] = [];
    for (const slot of this.slots.values()) {
      const l = slot.lease;
      if (l && !l.dead) out.push({ lease: l, inFlight: l.inflight, moves: l.busy || slot.acquiring ? null : l.moves });
    }
    return out;
  }

  unpublished(): boolean {
    for (const s of this.slots.values()) if (s.lease && !s.lease.dead && s.lease.published !== s.lease.inflight) return true;
    return false;
  }

  landed(batch: Queued[], beats: Beat[], res: BatchResult, t0: number): void {
    for (const q of batch) {
      if (q.lease) {
        q.lease.pending -= q.s.cover;
        q.lease.reserved -= q.s.cover;
      }
    }
    const open = new Map(res.leases.map((l) => [l.id, l]));
    for (const { lease, inFlight, moves } of beats) {
      const state = open.get(lease.id);
      if (!state) {
        if (!lease.dead) this.o.logger.warn({ lease: lease.id }, "billing: a lease of this instance was swept (not renewed in time); its charges come from available credit");
        lease.dead = true;
        continue;
      }
      lease.validUntil = t0 + this.validFor();
      lease.published = inFlight;
      if (state.returnRequested) lease.asked = true;
      if (state.stale && !lease.stale) {
        lease.stale = true;
        this.o.onStale(lease.accountId);
      }
      // nothing else moves the amount: the database's figure is the truth only if no refill or
      // give-back of ours was in flight when the batch was sent, none started since (its answer may
      // have been read before this one although it ran after: lease-memory.ts `moves`), none is now
      const acquiring = [...(this.byAccount.get(lease.accountId) ?? [])].some((s) => s.lease === lease && s.acquiring);
      if (moves === lease.moves && !lease.busy && !acquiring && state.amount !== lease.reserved) {
        this.o.logger.warn({ lease: lease.id, database: state.amount, memory: lease.reserved }, "billing: lease amount differed from the database; using the database's");
        lease.reserved = state.amount;
      }
    }
  }
}
