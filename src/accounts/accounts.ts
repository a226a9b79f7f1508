/** Accounts: one exported function per query (each takes the db or a transaction first), and what the admin API and CLI show of one. */
import { eq, ilike, or } from "drizzle-orm";
import type { Tx } from "../db/index.ts";
import { accounts } from "../db/schema/index.ts";
import { ApiError } from "../errors.ts";
import { randomId } from "../ids.ts";
import * as billing from "../billing/index.ts";
import type { KeyLimits } from "./api-keys.ts";

export async function createAccount(tx: Tx, name: string) {
  const id = randomId("acct");
  const [row] = await tx.insert(accounts).values({ id, name }).returning();
  return row!;
}

export async function getAccount(tx: Tx, id: string) {
  const [row] = await tx.select().from(accounts).where(eq(accounts.id, id));
  if (!row) throw new ApiError(404, "not_found_error", `No account '${id}'.`, { code: "account_not_found" });
  return row;
}

/** Oldest first; `search` matches an exact id or part of the name (case-insensitive). */
export async function listAccounts(tx: Tx, limit = 100, offset = 0, search?: string) {
  const where = search ? or(eq(accounts.id, search), ilike(accounts.name, `%${search.replace(/[\\%_]/g, (c) => "\\" + c)}%`)) : undefined;
  return tx.select().from(accounts).where(where).orderBy(accounts.createdAt).limit(limit).offset(offset);
}

/** Create an account, optionally funded, in one transaction. */
export async function createFundedAccount(db: Tx, name: string, credits = 0) {
  return db.transaction(async (tx) => {
    const acct = await createAccount(tx, name);
    if (credits > 0) await billing.grant(tx, acct.id, credits, "initial credits");
    return getAccount(tx, acct.id);
  });
}

export async function setAccountLimits(tx: Tx, id: string, limits: KeyLimits) {
  if (Object.keys(limits).length === 0) return getAccount(tx, id); // PATCH {}: nothing to change (an empty SET is an SQL error)
  const [row] = await tx.update(accounts).set(limits).where(eq(accounts.id, id)).returning();
  if (!row) throw new ApiError(404, "not_found_error", `No account '${id}'.`, { code: "account_not_found" });
  return row;
}

/**
 * An account as the API shows it. With `leased` (credit instances reserved ahead, see
 * billing/engine.ts): `held` and `available` are the client's view (requests in flight only) and
 * the idle leased credit is shown on its own; without it, the row's own numbers.
 */
export function publicAccount(row: typeof accounts.$inferSelect, leased?: { idle: number; leases: number }) {
  const held = row.held - (leased?.idle ?? 0);
  return {
    id: row.id,
    object: "account" as const,
    name: row.name,
    balance: row.balance,
    held,
    available: row.balance - held,
    ...(leased ? { leased } : {}),
    limits: { requests_per_minute: row.rpmLimit, tokens_per_minute: row.tpmLimit, concurrent_video_jobs: row.videoConcurrencyLimit },
    plan: row.planId,
    created_at: new Date(row.createdAt).toISOString(),
  };
}
