/**
 * The one writer of usage_records. Callers run it in the transaction that settles or releases the
 * request's hold, so a usage row exists exactly when its money moved.
 */
import type { Tx } from "../db/index.ts";
import { usageRecords } from "../db/schema/index.ts";

export type UsageRow = typeof usageRecords.$inferInsert;

export async function recordUsage(tx: Tx, row: UsageRow): Promise<void> {
  await tx.insert(usageRecords).values(row);
}
