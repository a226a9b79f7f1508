/**
 * What an instance knows, in memory, about one account it serves: its lease (if any) and its
 * recent demand. Nothing here touches the database; engine.ts does, and updates these numbers
 * only from statements that completed.
 */

/** A lease as its owner sees it. `free` is what may still be promised to new requests. */
export class LeaseMem {
  /** what the lease reserves in the database (as of the statements that completed) */
  reserved: number;
  /** worst cases of the requests approved from it and still running */
  inflight = 0;
  /** charges of finished requests that the lease covers, queued for the next batch */
  pending = 0;
  /** credit being given back by a statement in flight */
  returning = 0;
  /** local time (performance.now) after which it must not approve: its database expiry minus a margin */
  validUntil: number;
  lastUse: number;
  /** in_flight as last written to the database */
  published = 0;
  /** the database closed it (swept): approve nothing, and its pending charges come from available credit */
  dead = false;
  /** a close or give-back statement is in flight */
  busy = false;
  /** a close is in flight: approve nothing */
  closing = false;
  /** another instance asked for the idle credit back */
  asked = false;
  /**
   * Statements of ours that move the amount (refills, give-backs) started on it so far. A
   * heartbeat's reading of the amount is trusted only if none was in flight when its batch was sent
   * and none started since: a give-back that ran in the database after the batch but whose answer
   * was read first would otherwise be undone in memory — credit the database no longer reserves,
   * approved once more (a spend-down across two instances under CPU starvation served 61 requests
   * on credit for 60).
   */
  moves = 0;
  /** the account's budgets changed since it was opened: approve nothing, give it back */
  stale = false;

  constructor(readonly id: string, readonly accountId: string, reserved: number, validUntil: number, now: number) {
    this.reserved = reserved;
    this.validUntil = validUntil;
    this.lastUse = now;
  }

  get free(): number {
    return this.reserved - this.inflight - this.pending - this.returning;
  }
}

/** The budget windows a slot's requests count in (none: the account's balance only). */
export interface SlotScope {
  /** the slot's key: the account id, with the window ids when there are any */
  key: string;
  ids: readonly string[];
  /** accounts.budgets_version the windows were read at (null: not checked) */
  version: number | null;
  /** unix ms (the engine's clock) when the first window ends: no approval from the slot's lease after it */
  endsAt: number;
}

/**
 * One kind of request of an account on this instance: the account's, or, when budgets apply, the
 * account's with one set of budget windows (a key's requests for some model). Each slot has its own
 * lease, reserving in the account and in its windows.
 */
export class AccountSlot {
  lease: LeaseMem | null = null;
  /** decayed sum of worst cases approved: about the last `windowMs` of demand */
  private recent = 0;
  private at = 0;
  /** no new lease credit for this account before then (it ran short, or others asked for credit back) */
  coolUntil = 0;
  /** the lease open or refill in flight (concurrent requests share it) */
  acquiring: Promise<void> | null = null;
  /** worst cases of this account's requests running on exact holds */
  exactInflight = 0;

  scope: SlotScope;

  constructor(readonly accountId: string, scope?: SlotScope) {
    this.scope = scope ?? { key: accountId, ids: [], version: null, endsAt: Infinity };
  }

  /** A slot that takes over from `other` (the next period of the same budgets) starts with its demand. */
  inheritDemand(other: AccountSlot): void {
    this.recent = other.recent;
    this.at = other.at;
  }

  /** Record a request's worst case; returns the demand seen before it (0 for a cold account). */
  noteDemand(amount: number, now: number, windowMs: number): number {
    const before = this.decayed(now, windowMs);
    this.recent = before + amount;
    this.at = now;
    return before;
  }

  /** How much a lease should reserve: a window's worth of recent demand, at least 8 requests like this one. */
  want(amount: number, now: number, windowMs: number): number {
    return Math.max(8 * amount, Math.ceil(this.decayed(now, windowMs)));
  }

  idleFor(now: number): number {
    return now - this.at;
  }

  private decayed(now: number, windowMs: number): number {
    return this.recent === 0 ? 0 : this.recent * Math.exp(-(now - this.at) / windowMs);
  }
}
