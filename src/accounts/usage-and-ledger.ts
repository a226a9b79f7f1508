/** An account's usage records and ledger, newest first, in pages (client routes, admin API, CLI). */
import { and, desc, eq, lt, notInArray } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import type { Tx } from "../db/index.ts";
import { ledger, usageRecords } from "../db/schema/index.ts";

export interface Page {
  limit: number;
  /** return rows with id < before (cursor from the previous page's last id) */
  before?: number;
}

/** The account's rows of `table` on this page: id below the cursor, when there is one. */
const onPage = (table: { accountId: AnyPgColumn; id: AnyPgColumn }, accountId: string, page: Page) =>
  page.before ? and(eq(table.accountId, accountId), lt(table.id, page.before)) : eq(table.accountId, accountId);

export async function listUsage(tx: Tx, accountId: string, page: Page) {
  const rows = await tx
    .select()
    .from(usageRecords)
    .where(onPage(usageRecords, accountId, page))
    .orderBy(desc(usageRecords.id))
    .limit(page.limit + 1);
  return paged(rows, page.limit, (r) => ({
    id: r.id,
    object: "usage_record" as const,
    ref: r.ref,
    kind: r.kind,
    route: r.route,
    model: r.model,
    prompt_tokens: r.promptTokens,
    cached_tokens: r.cachedTokens,
    cache_write_tokens: r.cacheWriteTokens,
    completion_tokens: r.completionTokens,
    delivered_tokens: r.deliveredTokens,
    reported_tokens: r.reportedTokens,
    token_source: r.tokenSource,
    seconds: r.seconds,
    price_basis: r.priceBasis,
    plan: r.plan,
    pricing: r.pricing ? (JSON.parse(r.pricing) as Record<string, unknown>) : null,
    cost: r.cost,
    status: r.status,
    disconnected: r.disconnected,
    latency_ms: r.latencyMs,
    anomaly: r.anomaly,
    created_at: r.createdAt.toISOString(),
  }));
}

/** Rows that only reserve credit or give it back: amount 0, they move `held` (a busy account writes many). */
export const RESERVATION_KINDS = ["hold", "release", "lease", "lease_return"] as const;

export async function listLedger(tx: Tx, accountId: string, page: Page, opts: { reservations?: boolean } = {}) {
  const rows = await tx
    .select()
    .from(ledger)
    .where(opts.reservations === false ? and(onPage(ledger, accountId, page), notInArray(ledger.kind, [...RESERVATION_KINDS])) : onPage(ledger, accountId, page))
    .orderBy(desc(ledger.id))
    .limit(page.limit + 1);
  return paged(rows, page.limit, (r) => ({
    id: r.id,
    object: "ledger_entry" as const,
    kind: r.kind,
    amount: r.amount,
    held_change: r.heldChange,
    hold_id: r.holdId,
    ref: r.ref,
    reason: r.reason,
    created_at: r.createdAt.toISOString(),
  }));
}

function paged<R extends { id: number }, V>(rows: R[], limit: number, view: (r: R) => V) {
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  return { object: "list" as const, data: page.map(view), has_more: more, next_before: more ? page[page.length - 1]!.id : null };
}
