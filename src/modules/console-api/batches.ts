/** Batches across accounts, for operators: the batch object the owner sees, plus its account and model. */
import type { AppDeps } from "../../deps.ts";
import { firstLineModels, listBatches } from "../batches/batch-table.ts";
import type { BatchStatus } from "../batches/model.ts";
import { batchObject } from "../batches/service.ts";

/** Newest first (cursor: `after` = the previous page's last id). */
export async function listBatchesForOperators(deps: AppDeps, f: { accountId?: string; status?: BatchStatus; after?: string; limit: number }) {
  const db = deps.database.db;
  const page = await listBatches(db, { accountId: f.accountId ?? null, status: f.status, after: f.after, limit: f.limit + 1 });
  const rows = page.slice(0, f.limit);
  const models = await firstLineModels(db, rows.map((b) => b.id));
  const data = await Promise.all(rows.map(async (b) => ({ ...(await batchObject(deps, b)), account_id: b.accountId, model: models.get(b.id) ?? null })));
  return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.length > f.limit };
}
