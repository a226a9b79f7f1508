/** Video jobs across accounts and keys with their accounts, for operators. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import { findJobAccount, listJobsForOperators, type JobFilter } from "../videos/job-table/operator-reads.ts";
import { jobNotFound } from "../videos/poll.ts";

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

/** Newest first, without prompts' images or results (cursor: `after` = the previous page's last id). */
export async function listJobs(tx: Tx, f: JobFilter) {
  const rows = await listJobsForOperators(tx, f);
  const data = rows.slice(0, f.limit).map((r) => ({
    id: r.id,
    object: "video.generation" as const,
    account_id: r.accountId,
    key_id: r.keyId,
    model: r.model,
    status: r.status,
    prompt: r.prompt,
    seconds: r.seconds,
    size: `${r.width}x${r.height}`,
    progress: r.progress,
    error: r.errorCode ? { code: r.errorCode, message: r.errorMessage ?? "" } : null,
    has_result: r.hasResult,
    created_at: unix(r.createdAt)!,
    started_at: unix(r.startedAt),
    completed_at: unix(r.completedAt),
    expires_at: unix(r.expiresAt),
  }));
  return { object: "list" as const, data, has_more: rows.length > f.limit, last_id: data.at(-1)?.id ?? null };
}

/** The account a job belongs to (operators address jobs by id alone). */
export async function jobAccount(tx: Tx, id: string): Promise<string> {
  const account = await findJobAccount(tx, id);
  if (!account) throw jobNotFound(id);
  return account;
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
