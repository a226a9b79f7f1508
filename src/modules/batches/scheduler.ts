/**
 * The batch scheduler: every instance runs one. Each tick it expires batches past their window,
 * validates one new batch, claims slices of running batches (a lease per slice, FOR UPDATE SKIP
 * LOCKED: instances share a batch without running a line twice; a dead instance's slices come
 * back when their lease runs out) and writes the files of batches whose lines are all done. The
 * slices' leases are renewed on a heartbeat of their own, every lease/3, however long a tick takes;
 * so is the batch's own lease while it is validated or its files are written (holdingLease).
 *
 * At most `slots` = REELAY_BATCH_CONCURRENCY × REELAY_BATCH_SHARE % lines per instance are in
 * their upstream call at once (upstream-places.ts), so live traffic keeps the rest of the
 * upstreams' concurrency; up to `8 × slots` lines are under way, the others waiting for a group
 * commit (of their hold or of their result: one writer takes both in one transaction), so those
 * commits overlap other lines' upstream calls. A line's result and its charge commit in one
 * transaction (writeLineResults + settleBatch, for a group of lines: group-commit.ts), keyed by
 * (batch, custom_id): a line cut off by a kill -9 after its upstream call but before that commit
 * runs again on the instance that takes the slice over — its upstream call is repeated (at most
 * `4 × slots` lines per killed instance: those past their hold and not committed), its charge and
 * output line are written once.
 */
import { every, type BackgroundTask } from "../../background.ts";
import { settleBatch, type Settlement } from "../../billing/index.ts";
import { GroupCommit } from "./group-commit.ts";
import { LoopTurns } from "./loop-turns.ts";
import { LineHolds, writeGroup, type HoldItem } from "./line-ledger.ts";
import { UpstreamPlaces } from "./upstream-places.ts";
import type { Principal } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import type { Tx } from "../../db/index.ts";
import { randomId } from "../../ids.ts";
import type { ReasoningSeal } from "../responses/reasoning-seal.ts";
import { deleteFile, deleteUnnamedBatchFiles, FileWriteTaken, writeFile } from "../files/service.ts";
import type { FileRow } from "../files/file-table.ts";
import {
  batchState, claimBatchToFinalize, findBatch, writeLineResults, claimBatchToValidate, claimSlices, closeSlice, deleteLines, expireOverdue, failBatch, finishBatch, lineCounts, linesPage,
  pendingLines, renewBatchLease, renewSliceLeases, startBatch, type BatchRow, type ClaimedSlice, type PendingLine,
} from "./batch-table.ts";
import type { BatchEndpoint, BatchStatus } from "./model.ts";
import { revokedLine, runLine, unrunLine, type LineOutcome } from "./run-line.ts";
import { validateInput } from "./validate.ts";
import { batchEvent } from "./events.ts";

/** a running slice re-reads its batch's status this often (a cancel takes effect within it, for lines not yet started) */
const STATUS_CHECK_MS = 200;
const PAGE_LINES = 1000;

export interface BatchScheduler extends BackgroundTask {
  /** lines in their upstream call now on this instance */
  readonly running: number;
}

export function createBatchScheduler(deps: AppDeps, seal: ReasoningSeal): BatchScheduler {
  const db = deps.database.db;
  const owner = `${deps.config.instanceId}#${randomId("b", 6).slice(2)}`;
  const leaseMs = deps.config.schedulerLeaseMs;
  const slots = Math.max(1, Math.floor((deps.config.batchConcurrency * deps.config.batchShare) / 100));
  /** the lines' places in the upstreams' concurrency: taken after the hold, given back before the result's commit */
  const places = new UpstreamPlaces(slots);
  /** lines whose upstream call may have been made and whose result is not committed: what a kill -9 repeats (at most 4 × slots) */
  const uncommitted = new UpstreamPlaces(4 * slots);
  /**
   * Lines under way (waiting for their hold, in their upstream call, or waiting for their result's
   * commit). A line spends most of its time in the two group commits, not upstream: with 2 × slots
   * under way the places were idle most of the time (bench, 2,000 chat lines: 11 % of the live
   * rate), with 4 × 20 %, with 8 × 37 %; the groups get larger too (CPU per line 880 → 315 µs).
   */
  const underWay = 8 * slots;
  /** a line's start, and its step after each group commit, each on a turn of the event loop of its own (loop-turns.ts) */
  const turns = new LoopTurns();
  const active = new Map<string, { slice: ClaimedSlice; abort: AbortController; done: Promise<void> }>();
  let running = 0;
  let waiters: Array<() => void> = [];
  const acquire = async () => {
    while (running >= underWay) await new Promise<void>((r) => waiters.push(r));
    running++;
  };
  const releaseSlot = () => {
    running--;
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };

  type ResultItem = { readonly kind: "result"; batchId: string; line: PendingLine; out: LineOutcome; abandon: boolean };

  /**
   * Lines' results and their charges, and the next lines' holds: a group in one transaction of at
   * most three statements (group-commit.ts) — all results in one UPDATE, their settlements in one
   * settleBatch, the holds in one holdMany — so the batch account's row is locked once and one
   * commit is paid per group. A line's result and its charge are written both or neither; a
   * settlement whose line was not written (its batch stopped, another instance wrote it, or its key
   * was revoked: the line then fails with key_revoked when its slice runs again) only gives its
   * hold back. When the group fails as a whole, each item is written again alone (a hold alone in
   * holdMany, a result alone with its settlement). Which holds go in the transaction: writeGroup
   * (line-ledger.ts), for billing's lock order.
   *
   * One group at a time. Two at once (their locks taken in one order, so no deadlock) did not
   * measure better: 6 alternated bench runs each, median chat 570 → 522 lines/s, embeddings 716 →
   * 584 (docs/benchmarks.md#batches). The groups' settlements queue on the account's row lock,
   * held from settleBatch's account step to the commit; a second writer only made the groups
   * smaller (~31 → ~20 lines).
   */
  const writer = new GroupCommit<ResultItem | HoldItem>(
    (group) => writeGroup(db, group, writeResults, (err, holds) => deps.logger.warn({ err, holds }, "batches: a group of holds failed; each is taken alone")),
    undefined,
    (err, items) => deps.logger.warn({ err, items }, "batches: a group of results and holds failed as a whole; each is written alone"),
    (resolve) => turns.add(resolve),
  );

  /** Writes the group's results and settlements; returns the accounts whose row the settlements locked (until the commit). */
  async function writeResults(tx: Tx, group: ResultItem[]): Promise<Set<string>> {
    const kept = group.filter((g) => !g.abandon);
    const wrote = await writeLineResults(tx, kept.map((g) => ({ batchId: g.batchId, line: g.line.line, result: g.out.result, ok: g.out.ok, charges: g.out.settlements.some((x) => x.mode === "settle") })));
    const notWritten = group.filter((g) => !wrote.has(`${g.batchId}/${g.line.line}`) && g.out.settlements.length > 0);
    // why a line was not written, read after the write (which waited for a cancel or revocation in flight): its usage row says so
    const causes = new Map<string, UnwrittenCause>();
    for (const batchId of new Set(notWritten.map((g) => g.batchId))) causes.set(batchId, causeOf(await batchState(tx, batchId)));
    const settlements = group.flatMap((g) => (wrote.has(`${g.batchId}/${g.line.line}`) ? g.out.settlements : g.out.settlements.map((x) => unwritten(x, g.abandon ? "batch_line_interrupted" : causes.get(g.batchId)!))));
    if (settlements.length === 0) return new Set();
    const applied = new Set((await settleBatch(tx, settlements)).applied.map((a) => a.ref));
    // an applied settlement's account was locked (settleBatch locks the accounts of all it applies)
    return new Set(settlements.filter((x) => applied.has(x.usage.ref)).map((x) => x.usage.accountId));
  }

  /** the lines' holds, taken by the writer's groups */
  const holds = new LineHolds(db, writer);

  /**
   * The line's result and its charge, in one transaction: both or neither. `abandon`: the line
   * failed while its slice was being stopped (shutdown, or the slice's lease lost): its failure may
   * be the stop's, so no result is written, its hold is given back, and it runs again later.
   */
  const commitLine = (batchId: string, line: PendingLine, out: LineOutcome, abandon = false) => writer.add({ kind: "result", batchId, line, out, abandon });

  async function runSlice(slice: ClaimedSlice, signal: AbortSignal): Promise<void> {
    const batch = await findBatch(db, slice.batchId, null);
    if (!batch || batch.status !== "in_progress") return void (await closeSlice(db, owner, slice, false));
    const view = { id: batch.id, endpoint: batch.endpoint as BatchEndpoint, principal: batch.principal as unknown as Principal, traceparent: batch.traceparent };
    const lines = await pendingLines(db, slice);
    // a line that starts after the batch's key was revoked is not run: it fails with key_revoked, uncharged
    let keyRevoked = (await batchState(db, batch.id))?.keyRevoked ?? false;
    let checkedAt = performance.now();
    let stopped = false;
    const inFlight = new Set<Promise<void>>();
    for (const line of lines) {
      await acquire();
      await turns.next();
      if (signal.aborted) { releaseSlot(); stopped = true; break; }
      if (performance.now() - checkedAt > STATUS_CHECK_MS) {
        checkedAt = performance.now();
        const state = await batchState(db, batch.id);
        if (state?.status !== "in_progress") { releaseSlot(); stopped = true; break; }
        keyRevoked = state.keyRevoked;
      }
      const place = places.gate(signal);
      const unsettled = uncommitted.gate(signal);
      const gate = { enter: async () => { await unsettled.enter(); await place.enter(); } };
      const outcome = keyRevoked ? Promise.resolve(revokedLine(batch.id, line.customId)) : runLine(deps, seal, { holds, gate }, view, line, signal).finally(place.leave);
      const p: Promise<void> = outcome
        .then((out) => commitLine(batch.id, line, out, signal.aborted && !out.ok))
        .catch((err) => void deps.logger.error({ err, batchId: batch.id, line: line.line }, "batches: a line's result could not be written; it runs again when its slice is taken over"))
        .finally(() => { unsettled.leave(); releaseSlot(); inFlight.delete(p); });
      inFlight.add(p);
    }
    await Promise.all(inFlight);
    // done only when every line of the slice has its result (a line whose write failed leaves it open for a retry)
    const left = stopped || signal.aborted ? 1 : (await pendingLines(db, slice)).length;
    await closeSlice(db, owner, slice, left === 0);
  }

  /**
   * Run a long step of batch `b` — its validation (a 50,000-line file read from a slow blob store),
   * its files — holding the batch's lease: renewed every lease/3 while the step runs, as the
   * slices' are. A lease that lapsed mid-step let another instance claim the batch and do the step
   * again (a second validation; a second output file, left in the account's file list). A renewal
   * that finds the lease gone (claimed by another instance after a stall, the batch expired) or the
   * batch out of `statuses` (cancelled while validating) aborts `signal`: the step stops and writes
   * no result (validate.ts's writes and the final transitions are guarded by the lease's owner too).
   */
  async function holdingLease<T>(b: BatchRow, statuses: readonly BatchStatus[], step: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const lost = new AbortController();
    const renewal = every(Math.max(200, Math.floor(leaseMs / 3)), async () => {
      if (!lost.signal.aborted && !(await renewBatchLease(db, b.id, owner, leaseMs, statuses))) lost.abort();
    }, (e) => deps.logger.warn({ err: e, batchId: b.id }, "batches: a batch's lease renewal failed; tried again on the next beat"));
    renewal.start();
    try {
      return await step(lost.signal);
    } finally {
      await renewal.stop();
    }
  }

  async function finalize(b: BatchRow): Promise<void> {
    const final = b.expiredAt ? "expired" : b.status === "cancelling" ? "cancelled" : "completed";
    const unrun = final === "expired" ? "batch_expired" : "batch_cancelled";
    const written: FileRow[] = [];
    let finishing = false;
    let ended: boolean | undefined;
    try {
      ended = await holdingLease(b, ["finalizing", "cancelling"], async (signal) => {
        // an earlier finalization of this batch killed before its final transition left files naming
        // the batch that the batch does not name (complete, or half-written): gone before ours are written
        const left = await deleteUnnamedBatchFiles(deps, b.id, owner);
        if (left.length > 0) deps.logger.info({ batchId: b.id, files: left.map((f) => f.id) }, "batches: deleted the files of an earlier finalization that did not end the batch");
        const counts = await lineCounts(db, b.id);
        const failed = b.total - counts.completed;
        const file = async (ok: boolean, suffix: string) => {
          const f = await writeFile(deps, { accountId: b.accountId, filename: `${b.id}_${suffix}.jsonl`, purpose: "batch_output", batchId: b.id }, linesOf(b, ok, unrun, signal));
          written.push(f);
          return f;
        };
        let output: FileRow | null, errors: FileRow | null;
        try {
          output = counts.completed > 0 ? await file(true, "output") : null;
          errors = failed > 0 ? await file(false, "error") : null;
        } catch (e) {
          // FileWriteTaken: the finalization that took the batch over deleted this one's files (its lease is gone, the renewal has not seen it yet)
          if (signal.aborted || e instanceof FileWriteTaken) return false;
          throw e;
        }
        if (signal.aborted) return false;
        finishing = true;
        const row = await db.transaction(async (tx) => {
          const row = await finishBatch(tx, b.id, owner, { status: final, outputFileId: output?.id ?? null, errorFileId: errors?.id ?? null, completed: counts.completed, failed });
          if (row) {
            await batchEvent(deps, tx, row);
            await deleteLines(tx, b.id);
          }
          return row;
        });
        if (row) deps.logger.info({ batchId: b.id, status: final, completed: counts.completed, failed }, "batches: batch finished");
        return row !== null;
      });
    } finally {
      // Files no batch names: the finalization lost its lease (the instance that took the batch over
      // writes its own), its final transition did not take, or it failed before that transition (it
      // runs again once the lease lapses). A failure in the final transaction may come after its
      // commit: those files are kept.
      if (ended === false || (ended === undefined && !finishing)) {
        if (written.length > 0) deps.logger.info({ batchId: b.id, files: written.map((f) => f.id) }, "batches: a finalization did not end its batch; its files are deleted");
        for (const f of written) await deleteFile(deps, b.accountId, f.id).catch((err) => deps.logger.warn({ err, batchId: b.id, fileId: f.id }, "batches: could not delete the files of a stopped finalization"));
      }
    }
  }

  /** the batch's result lines in input order, a page at a time; stops (throws) once the batch's lease is lost */
  async function* linesOf(b: BatchRow, ok: boolean, unrun: "batch_cancelled" | "batch_expired", signal: AbortSignal): AsyncGenerator<string> {
    for (let from = 0; ; ) {
      signal.throwIfAborted();
      const page = await linesPage(db, b.id, from, PAGE_LINES);
      for (const l of page) {
        if (l.result === null) { if (!ok) yield unrunLine(l.customId, unrun); }
        else if (l.ok === ok) yield l.result;
      }
      if (page.length < PAGE_LINES) return;
      from = page.at(-1)!.line + 1;
    }
  }

  async function validateOne(): Promise<void> {
    const b = await claimBatchToValidate(db, owner, leaseMs);
    if (!b) return;
    const checked = await holdingLease(b, ["validating"], (signal) => validateInput(deps, b, owner, deps.config.batchSliceLines, signal));
    if (!checked) return void deps.logger.info({ batchId: b.id }, "batches: validation stopped: the batch's lease was lost (another instance validates it), or it was cancelled or expired");
    const { errors, total } = checked;
    if (errors.length > 0) {
      await db.transaction(async (tx) => {
        if (!(await failBatch(tx, b.id, owner, errors))) return;
        const row = await findBatch(tx, b.id, null);
        if (row) await batchEvent(deps, tx, row);
      });
    } else await startBatch(db, b.id, owner, total);
  }

  async function tick(): Promise<void> {
    await expireOverdue(db, new Date(deps.billing.now()));
    await validateOne();
    // one slice more than the slots can start keeps them busy while a slice ends
    const want = Math.max(0, Math.min(4, Math.ceil(underWay / deps.config.batchSliceLines) + 1) - active.size);
    for (const slice of await claimSlices(db, owner, leaseMs, want)) {
      const key = `${slice.batchId}/${slice.slice}`;
      // a slice still running here whose lease lapsed (its renewal came late: a stalled event loop)
      // is claimed back by this same instance: the claim renewed the lease, the runner goes on;
      // a second runner would send its lines in flight upstream again
      if (active.has(key)) continue;
      const abort = new AbortController();
      const done = runSlice(slice, abort.signal)
        .catch((err) => deps.logger.error({ err, batchId: slice.batchId, slice: slice.slice }, "batches: a slice failed; it is taken over when its lease runs out"))
        .finally(() => active.delete(key));
      active.set(key, { slice, abort, done });
    }
    for (let b = await claimBatchToFinalize(db, owner, leaseMs); b; b = await claimBatchToFinalize(db, owner, leaseMs)) await finalize(b);
  }

  const task = every(deps.config.schedulerPollMs, tick, (e) => deps.logger.error({ err: e }, "batches: scheduler tick failed"));

  /**
   * The leases of the slices we run, renewed every lease/3 on their own, as the video jobs' are: a
   * tick can outlast a lease (a large batch validated, files written), and a lapsed slice is taken
   * over by another instance, which sends its lines in flight here upstream a second time. One we
   * lost (stalled past the lease) is stopped.
   */
  const heartbeat = every(Math.max(200, Math.floor(leaseMs / 3)), async () => {
    const slices = [...active];
    const mine = await renewSliceLeases(db, owner, slices.map(([, a]) => a.slice), leaseMs);
    for (const [key, a] of slices) if (!mine.has(key)) a.abort.abort();
  }, (e) => deps.logger.error({ err: e }, "batches: slice lease renewal failed"));
  return {
    get running() {
      return places.inUse;
    },
    start() {
      task.start();
      heartbeat.start();
    },
    async stop() {
      await task.stop();
      for (const a of active.values()) a.abort.abort();
      await Promise.all([...active.values()].map((a) => a.done));
      await heartbeat.stop();
    },
  };
}

/**
 * Why a line's result was not written, for its usage row (cost 0): the batch was cancelled or
 * expired, the key that created it was revoked (401), or the line was interrupted — its slice
 * stopped (shutdown, lease lost) or another instance wrote it — and it is not charged by this run.
 */
export type UnwrittenCause = "batch_cancelled" | "batch_expired" | "key_revoked" | "batch_line_interrupted";

function causeOf(state: { status: string; expired: boolean; keyRevoked: boolean } | null): UnwrittenCause {
  if (state === null) return "batch_cancelled";
  if (state.status !== "in_progress") return state.expired || state.status === "expired" ? "batch_expired" : "batch_cancelled";
  return state.keyRevoked ? "key_revoked" : "batch_line_interrupted";
}

/** A settlement whose line was not written: nothing charged, the hold given back; its usage row names the cause. */
function unwritten(s: Settlement, cause: UnwrittenCause): Settlement {
  const status = cause === "key_revoked" ? 401 : 499;
  // An interrupted line runs again, and its charge then is written under the line's ref: this
  // cost-0 row takes a ref of its own (a settlement whose ref has a usage row is skipped as done,
  // so with the line's ref here the rerun was served free).
  const ref = cause === "batch_line_interrupted" ? `${s.usage.ref}~interrupted-${randomId("try", 8).slice(4)}` : s.usage.ref;
  return { ...s, mode: "release", actual: 0, reason: `${s.reason}: not written (${cause})`, usage: { ...s.usage, ref, status, errorCode: cause, promptTokens: null, completionTokens: null } };
}
