import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/**
 * A reservation of credits. Three kinds:
 *  - `request`: one synchronous request's worst case (the exact path); open -> settled | released | expired, once.
 *  - `job`: one video job's price, no expiry; settled or released by the job's final transition.
 *  - `lease`: credit an instance reserved ahead for an account (see src/billing/engine.ts). Its
 *    `amount` is what it still reserves: charges of the requests it approved take from it, refills
 *    add to it, returns give back; it stays open while its owner renews `expires_at`.
 */
export const holds = pgTable(
  "holds",
  {
    /** "hold_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** owner: a request id ("req_…"), a video job id ("vid_…"), or the lease's own id; one hold per owner */
    ref: text("ref").notNull().unique(),
    kind: text("kind", { enum: ["request", "job", "lease"] }).notNull().default("request"),
    /** micro-dollars reserved (a lease: still reserved; 0 once closed) */
    amount: bigint("amount", { mode: "number" }).notNull(),
    /** expired: released by the sweeper (its owner stopped); a late settlement is then charged from available credit */
    state: text("state", { enum: ["open", "settled", "released", "expired"] }).notNull().default("open"),
    /** micro-dollars charged at settlement (null until settled); a lease: charged so far through it */
    charged: bigint("charged", { mode: "number" }),
    /** requests' holds and leases expire and are swept; video jobs' holds do not (null) */
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /** lease: the instance incarnation that owns it ("<instance id>#<boot>") */
    owner: text("owner"),
    /** lease: worst case of the requests it has in flight, as last published by its owner (the client's `held`) */
    inFlight: bigint("in_flight", { mode: "number" }).notNull().default(0),
    /** lease: another instance asked the owner to give its idle credit back (account nearly empty) */
    returnRequestedAt: timestamp("return_requested_at", { withTimezone: true }),
    /** budget windows it reserves `amount` in too (null: none); its charges count in them (src/billing/windows/) */
    windows: text("windows").array(),
    /** lease: the account's budgets_version when it was opened (a later change makes it stale) */
    budgetsVersion: integer("budgets_version"),
    /** job: the prices it was held at, as JSON (a price plan's; the job's usage row records them at settlement) */
    pricing: text("pricing"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    closedAt: timestamp("closed_at", { withTimezone: true }),
  },
  (t) => [
    check("holds_amount_nonnegative", sql`${t.amount} >= 0`),
    // No index may name a column a lease heartbeat rewrites (expires_at, in_flight, amount, charged):
    // then heartbeats are HOT updates (drizzle/0014_holds_hot_heartbeats.sql; fillfactor 70 there).
    // The sweeper finds expired holds through holds_account_open_idx (open holds only).
    index("holds_account_open_idx").on(t.accountId).where(sql`${t.state} = 'open'`),
    index("holds_lease_owner_idx").on(t.owner).where(sql`${t.kind} = 'lease' AND ${t.state} = 'open'`),
  ],
);

/**
 * Append-only ledger. sum(amount) over an account == accounts.balance and
 * sum(held_change) == accounts.held. Rows are never updated or deleted.
 */
export const ledger = pgTable(
  "ledger",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** lease / lease_return: credit an instance reserved ahead for the account, or gave back */
    kind: text("kind", { enum: ["grant", "hold", "release", "charge", "adjustment", "shortfall", "lease", "lease_return"] }).notNull(),
    /** change to the balance, micro-dollars (grant +, charge -, adjustment ±, others 0) */
    amount: bigint("amount", { mode: "number" }).notNull(),
    /** change to the held amount (hold +, release -, charge - the part taken from the hold) */
    heldChange: bigint("held_change", { mode: "number" }).notNull().default(0),
    /** the hold (or lease) this row belongs to, if any; null for a charge made after its hold was swept */
    holdId: text("hold_id").references(() => holds.id),
    /** request id / job id / operator note reference */
    ref: text("ref"),
    /** why: "chat gpt-x", "grant by admin", "shortfall: usage exceeded hold" … */
    reason: text("reason").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("ledger_account_idx").on(t.accountId, t.id),
    // A request's hold is taken and released at most once (a lease has many lease/lease_return rows) …
    uniqueIndex("ledger_hold_kind_uniq").on(t.holdId, t.kind).where(sql`${t.holdId} IS NOT NULL AND ${t.kind} IN ('hold', 'release')`),
    // … and a request or job is charged (and short) at most once, whichever hold or lease paid for it:
    // replaying a batch of settlements cannot double charge.
    uniqueIndex("ledger_ref_charge_uniq").on(t.ref, t.kind).where(sql`${t.ref} IS NOT NULL AND ${t.kind} IN ('charge', 'shortfall')`),
  ],
);

/**
 * One row: a random id of this database, written by the migration. A local settlement journal
 * records it and is replayed only into the database it belongs to (tests and operators may point
 * instances sharing a data directory at different databases).
 */
export const databaseIdentity = pgTable("database_identity", {
  id: text("id").primaryKey(),
});
