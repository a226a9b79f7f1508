/**
 * The one writer of usage_records. A usage row is written in the same statement or transaction
 * that settles or releases the request's hold, so it exists exactly when its money moved.
 */
import { sql, type SQL } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import type { usageRecords } from "../db/schema/index.ts";

export type UsageRow = typeof usageRecords.$inferInsert;
/** a usage row whose cost is decided by the statement that moves the money */
export type UsageFacts = Omit<UsageRow, "cost" | "id" | "createdAt">;

/** `INSERT INTO usage_records …` with `cost` given as SQL (e.g. the charged amount of a settle CTE). */
export function usageInsert(u: UsageFacts, cost: SQL): SQL {
  return sql`INSERT INTO usage_records (account_id, key_id, ref, kind, model, prompt_tokens, completion_tokens, delivered_tokens, reported_tokens, token_source, seconds, cost, status, disconnected, latency_ms, plugin, error_code)
    VALUES (${u.accountId}, ${u.keyId ?? null}, ${u.ref}, ${u.kind}, ${u.model}, ${u.promptTokens ?? null}, ${u.completionTokens ?? null}, ${u.deliveredTokens ?? null}, ${u.reportedTokens ?? null},
      ${u.tokenSource ?? null}, ${u.seconds ?? null}, ${cost}, ${u.status}, ${u.disconnected ?? false}, ${u.latencyMs ?? null}, ${u.plugin ?? null}, ${u.errorCode ?? null})`;
}

export async function recordUsage(tx: Tx, row: UsageRow): Promise<void> {
  await query(tx, usageInsert(row, sql`${row.cost}`));
}
