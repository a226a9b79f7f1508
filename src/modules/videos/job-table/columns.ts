/**
 * job-table/: the one owner of the video_jobs table. Every statement on it is a function in this
 * folder (one per statement, named for what it does); every status change goes through the
 * transition table (transitions.ts); the statuses themselves are the schema's one list
 * (db/schema/video-jobs.ts). Outside, only the metrics gauges (ops/db-gauges.ts) and the operator
 * overview (console-api/stats.ts) count jobs by status, with that list.
 *
 * This file: the one row type, derived from the drizzle schema, and how a raw statement's row
 * becomes it. Statements here are raw SQL (run as prepared statements, db/index.ts `query`), so
 * they name the columns they read with `columns(…)` and turn the snake_case result into the typed
 * row with `readRow(…)`, using each column's own driver mapping (timestamps → Date, bigint → number).
 */
import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { videoJobs } from "../../../db/schema/index.ts";

export type VideoJobRow = typeof videoJobs.$inferSelect;
export type JobColumn = keyof VideoJobRow;

const TABLE = getTableColumns(videoJobs);

/** What polling, the events stream and webhooks show of a job (no image, no result bytes). */
export const VIEW_COLUMNS = ["id", "model", "status", "prompt", "seconds", "width", "height", "seed", "progress", "errorCode", "errorMessage", "createdAt", "completedAt", "expiresAt", "remixedFrom"] as const satisfies readonly JobColumn[];
export type JobView = Pick<VideoJobRow, (typeof VIEW_COLUMNS)[number]>;

/** `a, b, c` (or `v.a, v.b, v.c`) for a SELECT or RETURNING list. */
export function columns(keys: readonly JobColumn[], alias?: string): SQL {
  return sql.raw(keys.map((k) => (alias ? `${alias}.${TABLE[k].name}` : TABLE[k].name)).join(", "));
}

/** The typed fields `keys` of a raw row (NULL stays null). */
export function readRow<K extends JobColumn>(raw: Record<string, unknown>, keys: readonly K[]): Pick<VideoJobRow, K> {
  const out: Partial<VideoJobRow> = {};
  for (const k of keys) {
    const column = TABLE[k];
    const value = raw[column.name];
    (out as Record<string, unknown>)[k] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as Pick<VideoJobRow, K>;
}
