/**
 * Which budget windows a request counts in, as this instance knows them: per account, the current
 * window of every active budget of the account and its keys (window-statements.ts `currentWindows`,
 * one statement), cached until the first of them ends by the engine's clock or the account's
 * budgets change. A change made on another instance is noticed by the next statement that reserves
 * credit for the account (an exact hold or a lease open fails with StaleBudgets and the set is read
 * again) and by the heartbeat of its leases (a stale lease approves nothing more), so no approval
 * outlives a budget change by more than a heartbeat (~100 ms).
 *
 * A budget applies to a request when it is the account's or the request's key's, and its models
 * (if any) include the model asked for. The windows a request is approved in are the ones its charge
 * counts in, whenever it settles: a request approved at 23:59:59.9 counts for the old day.
 */
import type { Db } from "../db/index.ts";
import type { HoldWindows } from "./exact-holds.ts";
import { currentWindows, type AccountWindows, type WindowInfo } from "./window-statements.ts";

/** The windows one request counts in. */
export interface BudgetScope {
  accountId: string;
  windows: WindowInfo[];
  ids: string[];
  /** accounts.budgets_version the windows were read at */
  version: number;
  /** the lease slot of requests with exactly these windows (the account id alone when none) */
  key: string;
  /** the same budgets whatever the period: a slot's successor after a rollover inherits its demand */
  family: string;
  /** unix ms the first of the windows ends (Infinity: none does) */
  endsAt: number;
}

interface Entry {
  set: AccountWindows;
  /** the windows contain every instant from validFrom (the latest start) to validUntil (the first end) */
  validFrom: number;
  validUntil: number;
  scopes: Map<string, BudgetScope>;
}

/** cached accounts beyond which the cache starts over (each entry is a few hundred bytes) */
const MAX_ENTRIES = 50_000;

export class BudgetWindows {
  private readonly cache = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();

  constructor(private readonly db: Db, readonly now: () => number = Date.now) {}

  /** The windows a request of `keyId` for `model` counts in if approved now. */
  async scope(accountId: string, keyId: string | null, model: string | null): Promise<BudgetScope> {
    const at = this.now();
    let e = this.cache.get(accountId);
    // a load another request started may be for another instant (its clock read before a midnight): use it only if it covers ours
    for (let i = 0; !e || at >= e.validUntil || at < e.validFrom; i++) e = await this.load(accountId, at, i > 0);
    const k = `${keyId ?? ""}\u0000${model ?? ""}`;
    let s = e.scopes.get(k);
    if (!s) e.scopes.set(k, (s = scopeOf(accountId, e.set, keyId, model)));
    return s;
  }

  /** What an exact hold of the request reserves in (for a caller that takes the hold itself: a video job's submit). */
  async holdWindows(accountId: string, keyId: string | null, model: string | null): Promise<HoldWindows> {
    const s = await this.scope(accountId, keyId, model);
    return { windows: s.windows, version: s.version, now: this.now() };
  }

  /** Forget what this instance knows about an account's budgets (they changed). */
  invalidate(accountId: string): void {
    this.cache.delete(accountId);
  }

  private load(accountId: string, at: number, own: boolean): Promise<Entry> {
    const pending = this.loading.get(accountId);
    if (pending && !own) return pending;
    const p = currentWindows(this.db, accountId, at)
      .then((set) => {
        const ends = set.windows.map((w) => w.endsAt ?? Infinity);
        const starts = set.windows.filter((w) => w.endsAt !== null).map((w) => w.startsAt);
        const entry: Entry = { set, validFrom: Math.max(-Infinity, ...starts), validUntil: Math.min(Infinity, ...ends), scopes: new Map() };
        if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
        this.cache.set(accountId, entry);
        return entry;
      })
      .finally(() => {
        if (this.loading.get(accountId) === p) this.loading.delete(accountId);
      });
    this.loading.set(accountId, p);
    return p;
  }
}

/** The budgets of `set` that apply to a request of `keyId` for `model`. */
export function scopeOf(accountId: string, set: AccountWindows, keyId: string | null, model: string | null): BudgetScope {
  const windows = set.windows.filter((w) => (w.keyId === null || w.keyId === keyId) && (w.models === null || (model !== null && w.models.includes(model))));
  const ids = windows.map((w) => w.id);
  return {
    accountId, windows, ids, version: set.version,
    key: ids.length ? `${accountId}|${ids.join(",")}` : accountId,
    family: ids.length ? `${accountId}|${windows.map((w) => w.budgetId).join(",")}` : accountId,
    endsAt: Math.min(Infinity, ...windows.map((w) => w.endsAt ?? Infinity)),
  };
}
