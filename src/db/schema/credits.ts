import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, pgTable, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";

/**
 * A reservation of credits for one request or job. open -> settled | released, exactly once
 * (the state change is a conditional UPDATE; ledger unique indexes back it up).
 */
export const holds = pgTable(
  "holds",
  {
    /** "hold_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** owner: a request id ("req_…") or a video job id ("vid_…"); one hold per owner */
    ref: text("ref").notNull().unique(),
    /** micro-dollars reserved */
    amount: bigint("amount", { mode: "number" }).notNull(),
    state: text("state", { enum: ["open", "settled", "released"] }).notNull().default("open"),
    /** micro-dollars charged at settlement (null until settled) */
    charged: bigint("charged", { mode: "number" }),
    /** synchronous requests' holds expire and are swept; video jobs' holds do not (null) */
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    closedAt: timestamp("closed_at", { withTimezone: true }),
  },
  (t) => [
    check("holds_amount_nonnegative", sql`${t.amount} >= 0`),
    index("holds_open_expiry_idx").on(t.expiresAt).where(sql`${t.state} = 'open' AND ${t.expiresAt} IS NOT NULL`),
    index("holds_account_open_idx").on(t.accountId).where(sql`${t.state} = 'open'`),
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
    kind: text("kind", { enum: ["grant", "hold", "release", "charge", "adjustment", "shortfall"] }).notNull(),
    /** change to the balance, micro-dollars (grant +, charge -, adjustment ±, others 0) */
    amount: bigint("amount", { mode: "number" }).notNull(),
    /** change to the held amount (hold +, release -, charge - the part taken from the hold) */
    heldChange: bigint("held_change", { mode: "number" }).notNull().default(0),
    /** the hold this row belongs to, if any */
    holdId: text("hold_id").references(() => holds.id),
    /** request id / job id / operator note reference */
    ref: text("ref"),
    /** why: "chat gpt-x", "grant by admin", "shortfall: usage exceeded hold" … */
    reason: text("reason").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("ledger_account_idx").on(t.accountId, t.id),
    // A hold is charged, released and short at most once each: settle/release are idempotent by construction.
    uniqueIndex("ledger_hold_kind_uniq").on(t.holdId, t.kind).where(sql`${t.holdId} IS NOT NULL`),
  ],
);
