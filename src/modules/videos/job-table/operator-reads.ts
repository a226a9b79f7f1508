/** Reads of video_jobs across accounts, for operators (console API): one function per statement. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import { columns, readRow, type VideoJobRow } from "./columns.ts";

export interface JobFilter {
  accountId?: string;
  keyId?: string;
  model?: string;
  status?: string;
  limit: number;
  after?: string;
}

const OPERATOR_COLUMNS = [
  "id", "accountId", "keyId", "model", "status", "prompt", "seconds", "width", "height", "progress", "errorCode", "errorMessage",
  "createdAt", "startedAt", "completedAt", "expiresAt",
] as const;
export type OperatorJob = Pick<VideoJobRow, (typeof OPERATOR_COLUMNS)[number]> & { hasResult: boolean };

/** Newest first, without source images or results, `limit + 1` of them (cursor: `after` = the previous page's last id). */
export async function listJobsForOperators(tx: Tx, f: JobFilter): Promise<OperatorJob[]> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(OPERATOR_COLUMNS)}, (status = 'completed' AND result_size IS NOT NULL) AS has_result
    FROM video_jobs
    WHERE true
      ${f.accountId ? sql`AND account_id = ${f.accountId}` : sql``}
      ${f.keyId ? sql`AND key_id = ${f.keyId}` : sql``}
      ${f.model ? sql`AND model = ${f.model}` : sql``}
      ${f.status ? sql`AND status = ${f.status}` : sql``}
      ${f.after ? sql`AND (created_at, id) < (SELECT created_at, id FROM video_jobs WHERE id = ${f.after})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${f.limit + 1}`);
  return rows.map((r) => ({ ...readRow(r, OPERATOR_COLUMNS), hasResult: r.has_result === true || r.has_result === "t" }));
}

/** The account a job belongs to (operators address jobs by id alone); null: no such job. */
export async function findJobAccount(tx: Tx, id: string): Promise<string | null> {
  const [row] = await query<{ account_id: string }>(tx, sql`SELECT account_id FROM video_jobs WHERE id = ${id}`);
  return row?.account_id ?? null;
}
