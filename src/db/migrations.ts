/**
 * Migrations are the SQL files drizzle-kit generates in drizzle/ (from src/db/schema), embedded as
 * text so the binary carries them. Add each new file to MIGRATIONS in order.
 */
// @ts-ignore: text import
import m0000 from "../../drizzle/0000_init.sql" with { type: "text" };
// @ts-ignore: text import
import m0001 from "../../drizzle/0001_video_jobs_active_key_idx.sql" with { type: "text" };
// @ts-ignore: text import
import m0002 from "../../drizzle/0002_console_usage_rollups.sql" with { type: "text" };
// @ts-ignore: text import
import m0003 from "../../drizzle/0003_webhooks.sql" with { type: "text" };
// @ts-ignore: text import
import m0004 from "../../drizzle/0004_billing_engine_leases.sql" with { type: "text" };
// @ts-ignore: text import
import m0005 from "../../drizzle/0005_responses_and_usage_route.sql" with { type: "text" };
// @ts-ignore: text import
import m0006 from "../../drizzle/0006_blob_store_and_video_api.sql" with { type: "text" };
// @ts-ignore: text import
import m0007 from "../../drizzle/0007_video_bytes_in_blob_store.sql" with { type: "text" };
// @ts-ignore: text import
import m0008 from "../../drizzle/0008_usage_cache_tokens.sql" with { type: "text" };
// @ts-ignore: text import
import m0009 from "../../drizzle/0009_video_jobs_route.sql" with { type: "text" };
// @ts-ignore: text import
import m0010 from "../../drizzle/0010_video_bytes_for_previous_release.sql" with { type: "text" };
// @ts-ignore: text import
import m0011 from "../../drizzle/0011_budgets_and_plans.sql" with { type: "text" };
// @ts-ignore: text import
import m0012 from "../../drizzle/0012_trace_context.sql" with { type: "text" };
// @ts-ignore: text import
import m0013 from "../../drizzle/0013_operators_and_audit_log.sql" with { type: "text" };
// @ts-ignore: text import
import m0014 from "../../drizzle/0014_holds_hot_heartbeats.sql" with { type: "text" };
// @ts-ignore: text import
import m0015 from "../../drizzle/0015_files_and_batches.sql" with { type: "text" };
// @ts-ignore: text import
import m0016 from "../../drizzle/0016_video_bytes_trigger_depth.sql" with { type: "text" };
// @ts-ignore: text import
import m0017 from "../../drizzle/0017_batch_trace_context.sql" with { type: "text" };
// @ts-ignore: text import
import m0018 from "../../drizzle/0018_usage_minute_rollups.sql" with { type: "text" };
// @ts-ignore: text import
import m0019 from "../../drizzle/0019_file_upload_state.sql" with { type: "text" };

export const MIGRATIONS: Array<{ name: string; sql: string }> = [
  { name: "0000_init", sql: m0000 as unknown as string },
  { name: "0001_video_jobs_active_key_idx", sql: m0001 as unknown as string },
  { name: "0002_console_usage_rollups", sql: m0002 as unknown as string },
  { name: "0003_webhooks", sql: m0003 as unknown as string },
  { name: "0004_billing_engine_leases", sql: m0004 as unknown as string },
  { name: "0005_responses_and_usage_route", sql: m0005 as unknown as string },
  { name: "0006_blob_store_and_video_api", sql: m0006 as unknown as string },
  { name: "0007_video_bytes_in_blob_store", sql: m0007 as unknown as string },
  { name: "0008_usage_cache_tokens", sql: m0008 as unknown as string },
  { name: "0009_video_jobs_route", sql: m0009 as unknown as string },
  { name: "0010_video_bytes_for_previous_release", sql: m0010 as unknown as string },
  { name: "0011_budgets_and_plans", sql: m0011 as unknown as string },
  { name: "0012_trace_context", sql: m0012 as unknown as string },
  { name: "0013_operators_and_audit_log", sql: m0013 as unknown as string },
  { name: "0014_holds_hot_heartbeats", sql: m0014 as unknown as string },
  { name: "0015_files_and_batches", sql: m0015 as unknown as string },
  { name: "0016_video_bytes_trigger_depth", sql: m0016 as unknown as string },
  { name: "0017_batch_trace_context", sql: m0017 as unknown as string },
  { name: "0018_usage_minute_rollups", sql: m0018 as unknown as string },
  { name: "0019_file_upload_state", sql: m0019 as unknown as string },
];

export function splitStatements(sqlText: string): string[] {
  return sqlText
    .split("--> statement-breakpoint")
    .map((s) => s.trim())
    .filter(Boolean);
}
