/** Retention: completed results past expires_at are dropped (status expired, result NULL). */
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../../deps.ts";
import { query } from "../../../db/index.ts";

/** Batches of 200: each row frees up to a few MB of bytea, so a batch stays a short transaction. */
export async function sweepExpiredResults(deps: Pick<AppDeps, "database" | "telemetry">, limit = 200): Promise<number> {
  const rows = await query<{ id: string; model: string; account_id: string }>(deps.database.db, sql`
    UPDATE video_jobs SET status = 'expired', result = NULL
    WHERE id IN (
      SELECT id FROM video_jobs WHERE status = 'completed' AND expires_at < now()
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    )
    RETURNING id, model, account_id`);
  for (const r of rows) deps.telemetry.videoTransition({ jobId: r.id, model: r.model, from: "completed", to: "expired", accountId: r.account_id });
  return rows.length;
}
