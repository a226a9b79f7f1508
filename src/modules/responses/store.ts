/**
 * Stored responses (table `responses`), one function per statement. Every read is scoped to the
 * account: another account's response is "not found", as for video jobs.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import type { InputItem } from "./input-items.ts";
import type { OutputItem, ResponseBody } from "./output.ts";

const textArray = (xs: readonly string[]) => sql`ARRAY[${sql.join(xs.map((x) => sql`${x}`), sql`, `)}]::text[]`;

/** Deepest conversation followed through previous_response_id (a chain this long is far past any model's context anyway). */
export const MAX_CHAIN = 1_000;

export interface StoredRow {
  id: string;
  input: InputItem[];
  response: ResponseBody;
}

export async function insertResponse(db: Tx, r: { id: string; accountId: string; keyId: string | null; model: string; previousResponseId: string | null; input: InputItem[]; response: ResponseBody; retentionMs: number }): Promise<void> {
  await query(db, sql`
    INSERT INTO responses (id, account_id, key_id, model, previous_response_id, input, response, expires_at)
    VALUES (${r.id}, ${r.accountId}, ${r.keyId}, ${r.model}, ${r.previousResponseId}, ${JSON.stringify(r.input)}::jsonb, ${JSON.stringify(r.response)}::jsonb,
      now() + ${r.retentionMs} * interval '1 millisecond')`);
}

export async function getResponse(db: Tx, accountId: string, id: string): Promise<StoredRow | null> {
  const rows = await query<StoredRow>(db, sql`
    SELECT id, input, response FROM responses WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()`);
  return rows[0] ?? null;
}

export async function deleteResponse(db: Tx, accountId: string, id: string): Promise<boolean> {
  const rows = await query(db, sql`DELETE FROM responses WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now() RETURNING id`);
  return rows.length > 0;
}

/** Several responses by id (item_reference resolution), in one statement. */
export async function getResponses(db: Tx, accountId: string, ids: string[]): Promise<StoredRow[]> {
  if (ids.length === 0) return [];
  return query<StoredRow>(db, sql`
    SELECT id, input, response FROM responses WHERE id = ANY(${textArray(ids)}) AND account_id = ${accountId} AND expires_at > now()`);
}

export interface ChainLink {
  id: string;
  previous_response_id: string | null;
  input: InputItem[];
  output: OutputItem[];
  depth: number;
}

/** The conversation ending in `id`, newest first: each response with the one it continued, back to the first. */
export async function responseChain(db: Tx, accountId: string, id: string): Promise<ChainLink[]> {
  return query<ChainLink>(db, sql`
    WITH RECURSIVE chain AS (
      SELECT id, previous_response_id, input, response -> 'output' AS output, 0 AS depth
      FROM responses WHERE id = ${id} AND account_id = ${accountId} AND expires_at > now()
      UNION ALL
      SELECT r.id, r.previous_response_id, r.input, r.response -> 'output', c.depth + 1
      FROM responses r JOIN chain c ON r.id = c.previous_response_id
      WHERE r.account_id = ${accountId} AND r.expires_at > now() AND c.depth < ${MAX_CHAIN}
    )
    SELECT id, previous_response_id, input, output, depth FROM chain ORDER BY depth`);
}

/** A conversation lives as long as its newest response: continuing it moves the whole chain's expiry. */
export async function renewChain(db: Tx, accountId: string, ids: string[], retentionMs: number): Promise<void> {
  if (ids.length === 0) return;
  await query(db, sql`
    UPDATE responses SET expires_at = GREATEST(expires_at, now() + ${retentionMs} * interval '1 millisecond')
    WHERE id = ANY(${textArray(ids)}) AND account_id = ${accountId}`);
}

/** Retention: batches of 500 rows (a row is a conversation turn, a few kB to a few hundred kB of JSON). */
export async function sweepExpiredResponses(db: Tx, limit = 500): Promise<number> {
  const rows = await query(db, sql`
    DELETE FROM responses WHERE id IN (
      SELECT id FROM responses WHERE expires_at < now() ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ) RETURNING id`);
  return rows.length;
}
