/**
 * The batches, batch_lines and batch_slices tables: one exported function per statement.
 *
 * Claims follow the video jobs' (videos/job-table/claim-due-jobs.ts): ONE statement, the inner
 * SELECT … FOR UPDATE SKIP LOCKED picks rows no other transaction is claiming, the outer UPDATE
 * stamps our lease; a lease that ran out (a dead or stalled instance) makes the row claimable again.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import type { BatchStatus } from "./model.ts";

export interface BatchRow {
  id: string;
  accountId: string;
  keyId: string | null;
  principal: Record<string, unknown>;
  endpoint: string;
  inputFileId: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
  status: BatchStatus;
  errors: Array<{ code: string; message: string; param: string | null; line: number | null }> | null;
  outputFileId: string | null;
  errorFileId: string | null;
  total: number;
  completed: number;
  failed: number;
  createdAt: Date;
  inProgressAt: Date | null;
  expiresAt: Date;
  finalizingAt: Date | null;
  completedAt: Date | null;
  failedAt: Date | null;
  expiredAt: Date | null;
  cancellingAt: Date | null;
  cancelledAt: Date | null;
  /** the creating request's W3C traceparent (null: tracing off) */
  traceparent: string | null;
}

const COLUMNS = sql`id, account_id, key_id, principal, endpoint, input_file_id, completion_window, metadata, status, errors, output_file_id, error_file_id,
  total, completed, failed, created_at, in_progress_at, expires_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at, traceparent`;

const json = (v: unknown) => (typeof v === "string" ? JSON.parse(v) : v);
const time = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));

function readRow(r: Record<string, unknown>): BatchRow {
  return {
    id: String(r.id), accountId: String(r.account_id), keyId: (r.key_id as string | null) ?? null, principal: json(r.principal), endpoint: String(r.endpoint),
    inputFileId: String(r.input_file_id), completionWindow: String(r.completion_window), metadata: json(r.metadata) ?? null, status: r.status as BatchStatus,
    errors: json(r.errors) ?? null, outputFileId: (r.output_file_id as string | null) ?? null, errorFileId: (r.error_file_id as string | null) ?? null,
    total: Number(r.total), completed: Number(r.completed), failed: Number(r.failed), createdAt: new Date(r.created_at as string),
    inProgressAt: time(r.in_progress_at), expiresAt: new Date(r.expires_at as string), finalizingAt: time(r.finalizing_at), completedAt: time(r.completed_at),
    failedAt: time(r.failed_at), expiredAt: time(r.expired_at), cancellingAt: time(r.cancelling_at), cancelledAt: time(r.cancelled_at),
    traceparent: (r.traceparent as string | null) ?? null,
  };
}

export async function insertBatch(tx: Tx, b: { id: string; accountId: string; keyId: string | null; principal: object; endpoint: string; inputFileId: string; completionWindow: string; metadata: object | null; windowMs: number; traceparent?: string | null }): Promise<BatchRow> {
  const [row] = await query(tx, sql`
    INSERT INTO batches (id, account_id, key_id, principal, endpoint, input_file_id, completion_window, metadata, status, expires_at, traceparent)
    VALUES (${b.id}, ${b.accountId}, ${b.keyId}, ${JSON.stringify(b.principal)}::jsonb, ${b.endpoint}, ${b.inputFileId}, ${b.completionWindow},
      ${b.metadata ? JSON.stringify(b.metadata) : null}::jsonb, 'validating', now() + ${b.windowMs} * interval '1 millisecond', ${b.traceparent ?? null})
    RETURNING ${COLUMNS}`);
  return readRow(row!);
}

export async function findBatch(tx: Tx, id: string, accountId: string | null): Promise<BatchRow | null> {
  const [row] = await query(tx, sql`SELECT ${COLUMNS} FROM batches WHERE id = ${id} ${accountId ? sql`AND account_id = ${accountId}` : sql``}`);
  return row ? readRow(row) : null;
}

/** Newest first, after the batch `after` (accountId null: every account's, for operators). */
export async function listBatches(tx: Tx, f: { accountId: string | null; status?: BatchStatus; after?: string; limit: number }): Promise<BatchRow[]> {
  const rows = await query(tx, sql`
    SELECT ${COLUMNS} FROM batches
    WHERE TRUE ${f.accountId ? sql`AND account_id = ${f.accountId}` : sql``}
      ${f.status ? sql`AND status = ${f.status}` : sql``}
      ${f.after ? sql`AND (created_at, id) < (SELECT created_at, id FROM batches WHERE id = ${f.after})` : sql``}
    ORDER BY created_at DESC, id DESC
    LIMIT ${f.limit}`);
  return rows.map(readRow);
}

/**
 * The model each batch's first line names, for the batches whose lines are still kept (validated
 * and not yet final: a final batch's lines are deleted once its files are written). One primary-key
 * read per batch, not a scan: OpenAI's batches use one model, and reelay does not enforce it, so a
 * batch whose lines name several shows its first line's.
 */
export async function firstLineModels(tx: Tx, batchIds: string[]): Promise<Map<string, string>> {
  if (batchIds.length === 0) return new Map();
  const rows = await query<{ batch_id: string; model: string | null }>(tx, sql`
    SELECT batch_id, body->>'model' AS model FROM batch_lines WHERE line = 0 AND batch_id IN (${sql.join(batchIds.map((id) => sql`${id}`), sql`, `)})`);
  return new Map(rows.filter((r) => r.model !== null).map((r) => [r.batch_id, r.model!]));
}

/** Lines that ran so far, for a batch still running (a final one has its counts in its row). */
export async function lineCounts(tx: Tx, batchId: string): Promise<{ completed: number; failed: number }> {
  const [r] = await query<{ completed: number; failed: number }>(tx, sql`
    SELECT count(*) FILTER (WHERE ok)::int AS completed, count(*) FILTER (WHERE NOT ok)::int AS failed FROM batch_lines WHERE batch_id = ${batchId}`);
  return { completed: Number(r?.completed ?? 0), failed: Number(r?.failed ?? 0) };
}

/** validating / in_progress → cancelling; the batch as it is now (null: not the account's). */
export async function requestCancel(tx: Tx, id: string, accountId: string): Promise<BatchRow | null> {
  await query(tx, sql`UPDATE batches SET status = 'cancelling', cancelling_at = now() WHERE id = ${id} AND account_id = ${accountId} AND status IN ('validating', 'in_progress')`);
  return findBatch(tx, id, accountId);
}

/** A batch to validate (status validating), leased to `owner`. */
export async function claimBatchToValidate(tx: Tx, owner: string, leaseMs: number): Promise<BatchRow | null> {
  const [row] = await query(tx, sql`
    UPDATE batches SET lease_owner = ${owner}, lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE id = (
      SELECT id FROM batches WHERE status = 'validating' AND (lease_expires_at IS NULL OR lease_expires_at < now())
      ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/**
 * A batch ready for its files, leased to `owner`: every slice done, or cancelling with no slice
 * leased (live) any more, or already finalizing (an instance died writing its files; an expired batch
 * also waits until no slice is leased, so no line is in flight when its files are written).
 */
/** no slice of batch `b` is leased (live) by an instance: no line of it is in flight */
const noSliceLeased = sql`NOT EXISTS (SELECT 1 FROM batch_slices s WHERE s.batch_id = b.id AND NOT s.done AND s.lease_expires_at > now())`;

export async function claimBatchToFinalize(tx: Tx, owner: string, leaseMs: number): Promise<BatchRow | null> {
  const [row] = await query(tx, sql`
    UPDATE batches SET lease_owner = ${owner}, lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
      status = CASE WHEN status = 'in_progress' THEN 'finalizing' ELSE status END,
      finalizing_at = CASE WHEN status = 'in_progress' THEN now() ELSE finalizing_at END
    WHERE id = (
      SELECT b.id FROM batches b
      WHERE (b.lease_expires_at IS NULL OR b.lease_expires_at < now()) AND (
        -- an expired batch waits, like a cancelled one, for the lines its slices have in flight (their holds settle or are released first)
        (b.status = 'finalizing' AND (b.expired_at IS NULL OR ${noSliceLeased}))
        OR (b.status = 'in_progress' AND NOT EXISTS (SELECT 1 FROM batch_slices s WHERE s.batch_id = b.id AND NOT s.done))
        OR (b.status = 'cancelling' AND ${noSliceLeased}))
      ORDER BY b.created_at LIMIT 1 FOR UPDATE OF b SKIP LOCKED)
    RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/**
 * Validating and in-progress batches past their window at `now` (the engine's clock: tests move
 * it): finalizing, marked expired (their files say what was done).
 */
export async function expireOverdue(tx: Tx, now: Date): Promise<number> {
  const rows = await query(tx, sql`
    UPDATE batches SET status = 'finalizing', finalizing_at = now(), expired_at = now(), lease_owner = NULL, lease_expires_at = NULL
    WHERE status IN ('validating', 'in_progress') AND expires_at <= ${now.toISOString()} RETURNING id`);
  return rows.length;
}

/** Validation failed: the batch is final with its errors. */
export async function failBatch(tx: Tx, id: string, owner: string, errors: object[]): Promise<boolean> {
  const rows = await query(tx, sql`
    UPDATE batches SET status = 'failed', failed_at = now(), errors = ${JSON.stringify(errors)}::jsonb, lease_owner = NULL, lease_expires_at = NULL
    WHERE id = ${id} AND lease_owner = ${owner} AND status = 'validating' RETURNING id`);
  return rows.length > 0;
}

/** Validated: the lines are in, slices made; the batch runs. */
export async function startBatch(tx: Tx, id: string, owner: string, total: number): Promise<boolean> {
  const rows = await query(tx, sql`
    UPDATE batches SET status = 'in_progress', in_progress_at = now(), total = ${total}, lease_owner = NULL, lease_expires_at = NULL
    WHERE id = ${id} AND lease_owner = ${owner} AND status = 'validating' RETURNING id`);
  return rows.length > 0;
}

/** The final transition after the files are written: completed, expired or cancelled. */
export async function finishBatch(tx: Tx, id: string, owner: string, f: { status: "completed" | "expired" | "cancelled"; outputFileId: string | null; errorFileId: string | null; completed: number; failed: number }): Promise<BatchRow | null> {
  const stamp = f.status === "completed" ? sql`completed_at = now()` : f.status === "cancelled" ? sql`cancelled_at = now()` : sql`expired_at = coalesce(expired_at, now())`;
  const [row] = await query(tx, sql`
    UPDATE batches SET status = ${f.status}, ${stamp}, output_file_id = ${f.outputFileId}, error_file_id = ${f.errorFileId},
      completed = ${f.completed}, failed = ${f.failed}, lease_owner = NULL, lease_expires_at = NULL
    WHERE id = ${id} AND lease_owner = ${owner} AND status IN ('finalizing', 'cancelling') RETURNING ${COLUMNS}`);
  return row ? readRow(row) : null;
}

/**
 * Extend our lease on a batch while it is in one of `statuses` (validating; finalizing or
 * cancelling); false: it is not ours any more (another instance claimed it after our lease ran out,
 * it expired) or it left those statuses (cancelled while validating): the step stops.
 */
export async function renewBatchLease(tx: Tx, id: string, owner: string, leaseMs: number, statuses: readonly BatchStatus[]): Promise<boolean> {
  const rows = await query(tx, sql`
    UPDATE batches SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE id = ${id} AND lease_owner = ${owner} AND status IN (${sql.join(statuses.map((st) => sql`${st}`), sql`, `)}) RETURNING id`);
  return rows.length > 0;
}

/**
 * The batch's row while `owner` validates it, read FOR SHARE: a validation's writes (below) happen
 * only while its lease is still ours, and a claim by another instance (an UPDATE of that row) waits
 * for the write in flight, so no write of a validation that lost its lease lands after the claim.
 */
const validatedBy = (id: string, owner: string) => sql`mine AS (SELECT id FROM batches WHERE id = ${id} AND lease_owner = ${owner} AND status = 'validating' FOR SHARE)`;

/** A validation (starting over) clears what an earlier try stored; false: the batch is not ours to validate any more. */
export async function clearValidation(tx: Tx, id: string, owner: string): Promise<boolean> {
  const [r] = await query<{ ours: boolean }>(tx, sql`
    WITH ${validatedBy(id, owner)},
      lines AS (DELETE FROM batch_lines WHERE batch_id IN (SELECT id FROM mine) RETURNING 1),
      slices AS (DELETE FROM batch_slices WHERE batch_id IN (SELECT id FROM mine) RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM mine) AS ours`);
  return r?.ours === true;
}

/** Lines and slices of a batch (its files written). */
export async function deleteLines(tx: Tx, batchId: string): Promise<void> {
  await query(tx, sql`DELETE FROM batch_lines WHERE batch_id = ${batchId}`);
  await query(tx, sql`DELETE FROM batch_slices WHERE batch_id = ${batchId}`);
}

/** Store validated lines; false (nothing stored): the batch is not ours to validate any more. */
export async function insertLines(tx: Tx, batchId: string, owner: string, lines: Array<{ line: number; customId: string; body: string }>): Promise<boolean> {
  const [r] = await query<{ ours: boolean }>(tx, sql`
    WITH ${validatedBy(batchId, owner)}, ins AS (
      INSERT INTO batch_lines (batch_id, line, custom_id, body)
      SELECT mine.id, x.line, x.custom_id, x.body::jsonb FROM mine, jsonb_to_recordset(${JSON.stringify(lines.map((l) => ({ line: l.line, custom_id: l.customId, body: l.body })))}::jsonb)
        AS x(line int, custom_id text, body text)
      RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM mine) AS ours`);
  return r?.ours === true;
}

/** The batch's slices; false (none made): the batch is not ours to validate any more. */
export async function insertSlices(tx: Tx, batchId: string, owner: string, total: number, size: number): Promise<boolean> {
  const [r] = await query<{ ours: boolean }>(tx, sql`
    WITH ${validatedBy(batchId, owner)}, ins AS (
      INSERT INTO batch_slices (batch_id, slice, first_line, last_line)
      SELECT mine.id, n, n * ${size}, least((n + 1) * ${size}, ${total}) - 1 FROM mine, generate_series(0, ceil(${total}::numeric / ${size})::int - 1) AS n
      RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM mine) AS ours`);
  return r?.ours === true;
}

export interface ClaimedSlice {
  batchId: string;
  slice: number;
  firstLine: number;
  lastLine: number;
}

/** Slices of in-progress batches no live instance holds, leased to `owner` (oldest batch first). */
export async function claimSlices(tx: Tx, owner: string, leaseMs: number, limit: number): Promise<ClaimedSlice[]> {
  if (limit <= 0) return [];
  const rows = await query<{ batch_id: string; slice: number; first_line: number; last_line: number }>(tx, sql`
    UPDATE batch_slices SET lease_owner = ${owner}, lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE (batch_id, slice) IN (
      SELECT s.batch_id, s.slice FROM batch_slices s JOIN batches b ON b.id = s.batch_id
      WHERE b.status = 'in_progress' AND NOT s.done AND (s.lease_expires_at IS NULL OR s.lease_expires_at < now())
      ORDER BY b.created_at, s.slice LIMIT ${limit}
      FOR UPDATE OF s SKIP LOCKED)
    RETURNING batch_id, slice, first_line, last_line`);
  return rows.map((r) => ({ batchId: r.batch_id, slice: Number(r.slice), firstLine: Number(r.first_line), lastLine: Number(r.last_line) }));
}

/** Extend our leases on these slices; the keys ("batch/slice") still ours. */
export async function renewSliceLeases(tx: Tx, owner: string, slices: ClaimedSlice[], leaseMs: number): Promise<Set<string>> {
  if (slices.length === 0) return new Set();
  const rows = await query<{ batch_id: string; slice: number }>(tx, sql`
    UPDATE batch_slices SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE lease_owner = ${owner} AND NOT done AND (batch_id, slice) IN (${sql.join(slices.map((s) => sql`(${s.batchId}, ${s.slice})`), sql`, `)})
    RETURNING batch_id, slice`);
  return new Set(rows.map((r) => `${r.batch_id}/${r.slice}`));
}

/** The slice is done (all its lines ran) or given back (the batch stopped running). */
export async function closeSlice(tx: Tx, owner: string, s: ClaimedSlice, done: boolean): Promise<void> {
  await query(tx, sql`
    UPDATE batch_slices SET done = ${done} OR done, lease_owner = NULL, lease_expires_at = NULL
    WHERE batch_id = ${s.batchId} AND slice = ${s.slice} AND lease_owner = ${owner}`);
}

export interface PendingLine {
  line: number;
  customId: string;
  body: Record<string, unknown>;
}

/** Lines of the slice that have not run (a slice taken over after a crash: only those). */
export async function pendingLines(tx: Tx, s: ClaimedSlice): Promise<PendingLine[]> {
  const rows = await query<{ line: number; custom_id: string; body: unknown }>(tx, sql`
    SELECT line, custom_id, body FROM batch_lines WHERE batch_id = ${s.batchId} AND line BETWEEN ${s.firstLine} AND ${s.lastLine} AND result IS NULL ORDER BY line`);
  return rows.map((r) => ({ line: Number(r.line), customId: r.custom_id, body: json(r.body) }));
}

/**
 * Write lines' results once, and only while their batch is in progress, in ONE statement: the
 * batches' rows are read FOR SHARE, so a cancel (an UPDATE of that row) waits for lines being
 * written and every line written after it sees the cancel. A line that charges something is written
 * only while the batch's key is not revoked (its row read FOR SHARE too, so a revocation waits
 * likewise): no line is charged after a revocation took effect. Returns the lines written, as
 * "batch/line" (one missing: already written, or its batch stopped, or its key was revoked).
 */
export async function writeLineResults(tx: Tx, lines: ReadonlyArray<{ batchId: string; line: number; result: string; ok: boolean; charges: boolean }>): Promise<Set<string>> {
  if (lines.length === 0) return new Set();
  const rows = await query<{ batch_id: string; line: number }>(tx, sql`
    WITH x AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(lines.map((l) => ({ b: l.batchId, n: l.line, r: l.result, ok: l.ok, c: l.charges })))}::jsonb) AS x(b text, n int, r text, ok boolean, c boolean)
    ), running AS (
      -- = ANY (ARRAY(...)): index scans (IN over x, estimated at 100 rows, read whole tables; billing/settle-batch.ts's hl)
      SELECT id, key_id FROM batches WHERE id = ANY (ARRAY(SELECT b FROM x)) AND status = 'in_progress' ORDER BY id FOR SHARE
    ), keys AS (
      -- every key locked (not only revoked ones): a revocation in flight is waited for, or waits for us
      SELECT id, revoked_at FROM api_keys WHERE id = ANY (ARRAY(SELECT key_id FROM running)) ORDER BY id FOR SHARE
    )
    UPDATE batch_lines l SET result = x.r, ok = x.ok FROM x JOIN running ON running.id = x.b
    WHERE l.batch_id = x.b AND l.line = x.n AND l.result IS NULL AND (NOT x.c OR running.key_id IS NULL OR running.key_id NOT IN (SELECT id FROM keys WHERE revoked_at IS NOT NULL))
    RETURNING l.batch_id, l.line`);
  return new Set(rows.map((r) => `${r.batch_id}/${Number(r.line)}`));
}

/** The status of a batch now, whether it expired, and whether the key that created it was revoked since (lines check both between them). */
export async function batchState(tx: Tx, id: string): Promise<{ status: BatchStatus; expired: boolean; keyRevoked: boolean } | null> {
  const [r] = await query<{ status: BatchStatus; expired: boolean; revoked: boolean }>(tx, sql`
    SELECT b.status, b.expired_at IS NOT NULL AS expired, k.revoked_at IS NOT NULL AS revoked FROM batches b LEFT JOIN api_keys k ON k.id = b.key_id WHERE b.id = ${id}`);
  return r ? { status: r.status, expired: r.expired === true, keyRevoked: r.revoked === true } : null;
}

/** A page of the batch's lines in input order, from line `from` on. */
export async function linesPage(tx: Tx, batchId: string, from: number, limit: number): Promise<Array<{ line: number; customId: string; result: string | null; ok: boolean | null }>> {
  const rows = await query<{ line: number; custom_id: string; result: string | null; ok: boolean | null }>(tx, sql`
    SELECT line, custom_id, result, ok FROM batch_lines WHERE batch_id = ${batchId} AND line >= ${from} ORDER BY line LIMIT ${limit}`);
  return rows.map((r) => ({ line: Number(r.line), customId: r.custom_id, result: r.result, ok: r.ok }));
}
