/** Video jobs across accounts, for operators: one exported function per statement. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import { jobNotFound } from "../videos/poll.ts";

export interface JobFilter {
  accountId?: string;
  keyId?: string;
  model?: string;
  status?: string;
  limit: number;
  after?: string;
}

const unix = (d: unknown) => (d ? Math.floor(new Date(d as string).getTime() / 1000) : null);

/** Newest first, without prompts' images or results (cursor: `after` = the previous page's last id). */
export async function listJobs(tx: Tx, f: JobFilter) {
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT id, account_id, key_id, model, status, prompt, seconds, width, height, progress, error_code, error_message,
           created_at, started_at, completed_at, expires_at, (result IS NOT NULL) AS has_result
    FROM video_jobs
    WHERE true
      ${f.accountId ? sql`AND account_id = ${f.accountId}` : sql``}
      ${f.keyId ? sql`AND key_id = ${f.keyId}` : sql``}
      ${f.model ? sql`AND model = ${f.model}` : sql``}
      ${f.status ? sql`AND status = ${f.status}` : sql``}
      ${f.after ? sql`AND (created_at, id) < (SELECT created_at, id FROM video_jobs WHERE id = ${f.after})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${f.limit + 1}`);
  const data = rows.slice(0, f.limit).map((r) => ({
    id: String(r.id),
    object: "video.generation" as const,
    account_id: String(r.account_id),
    key_id: r.key_id ?? null,
    model: String(r.model),
    status: String(r.status),
    prompt: String(r.prompt),
    seconds: Number(r.seconds),
    size: `${r.width}x${r.height}`,
    progress: r.progress === null ? null : Number(r.progress),
    error: r.error_code ? { code: String(r.error_code), message: String(r.error_message ?? "") } : null,
    has_result: Boolean(r.has_result),
    created_at: unix(r.created_at)!,
    started_at: unix(r.started_at),
    completed_at: unix(r.completed_at),
    expires_at: unix(r.expires_at),
  }));
  return { object: "list" as const, data, has_more: rows.length > f.limit, last_id: data.at(-1)?.id ?? null };
}

/** The account a job belongs to (operators address jobs by id alone). */
export async function jobAccount(tx: Tx, id: string): Promise<string> {
  const [row] = await query<{ account_id: string }>(tx, sql`SELECT account_id FROM video_jobs WHERE id = ${id}`);
  if (!row) throw jobNotFound(id);
  return row.account_id;
}

/** Keys across accounts, newest first, with their account's name (never the key or its hash). */
export async function listKeysWithAccounts(tx: Tx, f: { accountId?: string; includeRevoked: boolean; limit: number }) {
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT k.id, k.account_id, a.name AS account_name, k.name, k.prefix, k.scopes, k.allowed_models, k.created_at, k.last_used_at, k.revoked_at
    FROM api_keys k JOIN accounts a ON a.id = k.account_id
    WHERE true
      ${f.accountId ? sql`AND k.account_id = ${f.accountId}` : sql``}
      ${f.includeRevoked ? sql`` : sql`AND k.revoked_at IS NULL`}
    ORDER BY k.created_at DESC, k.id DESC LIMIT ${f.limit}`);
  const iso = (d: unknown) => (d ? new Date(d as string).toISOString() : null);
  const arr = (v: unknown) => (v === null || v === undefined ? null : Array.isArray(v) ? v.map(String) : String(v).replace(/[{}"]/g, "").split(",").filter(Boolean));
  return rows.map((r) => ({
    id: String(r.id),
    object: "api_key" as const,
    account_id: String(r.account_id),
    account_name: String(r.account_name),
    name: String(r.name),
    prefix: String(r.prefix),
    scopes: arr(r.scopes),
    allowed_models: arr(r.allowed_models),
    created_at: iso(r.created_at)!,
    last_used_at: iso(r.last_used_at),
    revoked_at: iso(r.revoked_at),
  }));
}
