/**
 * Drives one claimed job until it ends or is handed back to the queue:
 *   no handle → plugin.submit → save the handle at once (own statement) → processing
 *   handle    → plugin.poll every pollIntervalMs, in place, while the heartbeat renews our lease
 *   succeeded → MP4 and stills into the blob store (store-result.ts), then completed + settle (one transaction)
 *   failed    → failed + release (one transaction)
 *   lost      → forget the handle and submit again (bounded by MAX_SUBMIT_ATTEMPTS)
 *
 * Why poll in place instead of releasing the lease between polls: a job then occupies one of the
 * model's `maxConcurrency` slots from submit to result, which is what that number promises the
 * provider, and a poll costs no database round trip unless the progress moved. The price is that a
 * job stays on the instance that submitted it until its lease lapses (instance died) or it ends.
 * Retryable errors do release the lease: the job is due again after a backoff, on any instance.
 */
import { isBlobStoreError, readAll, type BlobStore } from "../../../blob-store/index.ts";
import type { AppDeps } from "../../../deps.ts";
import { jobFailureFrom, pluginErrorKind } from "../../../http/plugin-errors.ts";
import type { HostPollResult, HostVideo } from "../../../plugin-host/types.ts";
import { sourceKey } from "../blob-keys.ts";
import { beginSubmitAttempt, forgetHandle, readHandle, releaseJob, saveProgress, type ClaimedJob } from "../job-table/claim-due-jobs.ts";
import { STORE_ATTEMPTS, storeBackoffMs, storeResult } from "./store-result.ts";
import { completeJob, failJob, saveHandle } from "../job-table/transitions.ts";
import type { PollPacer } from "./poll-pacer.ts";
import type { TraceSpan, TraceValue } from "../../../ops/hooks.ts";
import { GEN_AI, REELAY } from "../../../ops/tracing/attributes.ts";

/** consecutive retryable errors before the job fails: 0.5+1+2+4 s of backoff ≈ 8 s of outage tolerated */
export const MAX_ERROR_STREAK = 5;
/**
 * Submits per job, whatever ended the previous ones (a retryable error, a lost handle): equal to
 * MAX_ERROR_STREAK so a worker refusing every /run fails the job after the documented "5 in a row"
 * (it was 3, which stopped submits after 1.5 s of backoff); a provider that loses a job five times
 * will lose it again, so the loop ends there.
 */
export const MAX_SUBMIT_ATTEMPTS = MAX_ERROR_STREAK;
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30_000;
const DEFAULT_POLL_MS = 1_000;
/** progress moves below this are not worth a database write (a 100-job poll loop would write 200/s) */
const PROGRESS_STEP = 0.05;

export interface RunJobContext {
  deps: Pick<AppDeps, "database" | "telemetry" | "config" | "logger" | "blobs"> & Partial<Pick<AppDeps, "tracing">>;
  owner: string;
  plugin: string;
  /** checked by the host (plugin-host/checked-video.ts): handles, states, progress and MP4s are valid, result URLs downloaded */
  video: HostVideo;
  signal: AbortSignal;
  /** the waits between polls, cut short when the plugin wakes the job (poll-pacer.ts) */
  pacer?: PollPacer;
}

export const backoffMs = (streak: number) => Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, streak - 1));

/**
 * One run of a claimed job; with tracing on, a `video.job.run` span in the trace of the request
 * that submitted it (its traceparent is on the job row, so any instance continues it), with the
 * provider submit, the completion or the failure as spans under it.
 */
export async function runJob(ctx: RunJobContext, job: ClaimedJob): Promise<void> {
  const span = job.traceparent ? ctx.deps.tracing?.background("video.job.run", job.traceparent, {
    [REELAY.jobId]: job.id, [GEN_AI.requestModel]: job.model, [GEN_AI.provider]: ctx.plugin, "reelay.job.status": job.status, "reelay.job.submits": job.attempts,
  }) : undefined;
  if (!span) return runSteps(ctx, job, undefined);
  try {
    await runSteps(ctx, job, span);
    span.end();
  } catch (err) {
    span.end(err);
    throw err;
  }
}

async function runSteps(ctx: RunJobContext, job: ClaimedJob, span: TraceSpan | undefined): Promise<void> {
  const { deps, owner, video, signal } = ctx;
  /** a step of the run as a span under it (tracing on) */
  const step = async <T>(name: string, fn: (s?: TraceSpan) => Promise<T>, attributes?: Record<string, TraceValue>): Promise<T> => {
    if (!span) return fn();
    const s = span.child(name, attributes);
    try {
      const r = await fn(s);
      s.end();
      return r;
    } catch (err) {
      s.end(err);
      throw err;
    }
  };
  let polls = 0;
  /** the store the job's source went to at submit (its result goes there too); a job with none yet uses the configured one */
  const storeOf = (j: ClaimedJob): BlobStore | null => (j.blobStore ? deps.blobs.byName(j.blobStore) : deps.blobs.current);
  const db = deps.database.db;
  const fail = (code: string, message: string) => {
    span?.set({ "reelay.job.outcome": "failed", "error.type": code });
    return step("video.fail", () => failJob(deps, job.id, { code, message }, { plugin: ctx.plugin }), { "error.type": code });
  };
  const pollEvery = Math.max(10, video.pollIntervalMs ?? DEFAULT_POLL_MS);
  let handle = job.pluginHandle;
  let lastProgress = job.progress ?? 0;
  const pacer = ctx.pacer;
  if (handle) pacer?.track(job.id, job.model, handle);
  const waitForNextPoll = () => (pacer ? pacer.pause(job.id, pollEvery, signal) : sleep(pollEvery, signal));

  /** a retryable problem: back off and hand the job back, or give up after MAX_ERROR_STREAK */
  const retryLater = async (message: string, opts: { clearHandle?: boolean } = {}) => {
    const streak = job.errorStreak + 1;
    if (streak >= MAX_ERROR_STREAK) return void (await fail("upstream_error", `the provider kept failing (${streak} times); last error: ${message}`));
    span?.set({ "reelay.job.outcome": "retry_later", "reelay.job.last_error": message });
    await releaseJob(db, job.id, owner, backoffMs(streak), { errorStreak: streak, clearHandle: opts.clearHandle, lastError: message });
  };
  const onError = async (err: unknown, what: "submit" | "poll") => {
    if (signal.aborted) throw signal.reason ?? err;
    // the same table as the chat and embeddings routes (the SDK's describeFailure): code, message, retried or not
    const failure = jobFailureFrom(err);
    if (!failure.retryable) return fail(failure.code, failure.message);
    deps.logger.warn({ err, jobId: job.id, model: job.model, plugin: ctx.plugin, what }, "video job: retryable error");
    await retryLater(`${what}: ${(err as Error)?.message ?? String(err)}`);
  };
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      const r = await call();
      deps.telemetry.upstream({ plugin: ctx.plugin, model: job.model, ms: performance.now() - t0, outcome: "ok" });
      return r;
    } catch (e) {
      deps.telemetry.upstream({ plugin: ctx.plugin, model: job.model, ms: performance.now() - t0, outcome: "error", errorKind: pluginErrorKind(e) });
      throw e;
    }
  };

  for (;;) {
    signal.throwIfAborted();
    if (!handle) {
      if (job.attempts >= MAX_SUBMIT_ATTEMPTS) {
        // attempts end either in retryable failures (errorStreak > 0) or in lost handles
        if (job.errorStreak > 0) return void (await fail("upstream_error", `the provider failed the job ${job.attempts} times; last error: ${job.errorMessage ?? "unknown"}`));
        return void (await fail("provider_lost_job", `the provider lost the job ${job.attempts} times`));
      }
      const store = storeOf(job);
      if (!store || !job.imageMime) return void (await fail("source_image_missing", "the source image is no longer stored"));
      let image: Uint8Array | null;
      try {
        image = await readAll(store, sourceKey(job.id));
      } catch (e) {
        if (!isBlobStoreError(e)) throw e;
        return void (await retryLater(`reading the source image: ${e.message}`));
      }
      if (!image) return void (await fail("source_image_missing", "the source image is no longer stored"));
      const remixOf = job.remixedFrom ? { jobId: job.remixedFrom, handle: (await readHandle(db, job.remixedFrom)) ?? "" } : undefined;
      if (remixOf && !remixOf.handle) return void (await fail("remix_source_missing", `the video ${job.remixedFrom} this job remixes has no provider handle`));
      const attempts = await beginSubmitAttempt(db, job.id, owner);
      if (attempts === null) return; // lease lost or job ended meanwhile: someone else owns it now
      job.attempts = attempts;
      let submitted: { handle: string };
      try {
        // the provider's requests carry the step's traceparent (a GPU worker that traces joins the job's trace)
        submitted = await step("video.provider.submit", (s) => timed(() => video.submit({
          jobId: job.id, prompt: job.prompt, negativePrompt: job.negativePrompt ?? undefined, image: { bytes: image!, mime: job.imageMime! },
          width: job.width, height: job.height, seconds: job.seconds, seed: job.seed, steps: job.steps ?? undefined, ...(remixOf ? { remixOf } : {}),
        }, { signal, requestId: job.id, trace: s?.upstream })), { "reelay.job.submit": attempts });
      } catch (e) {
        return void (await onError(e, "submit"));
      }
      // saved before anything else: after a crash from here on, a restart polls instead of resubmitting
      const saved = await saveHandle(deps, job.id, owner, submitted.handle);
      if (!saved) {
        // cancelled (or taken over) while the provider was accepting it: do not leave it running there
        await video.cancel?.(submitted.handle, { signal: AbortSignal.timeout(10_000), requestId: job.id, trace: span?.upstream }).catch(() => {});
        return;
      }
      handle = submitted.handle;
      pacer?.track(job.id, job.model, handle);
      job.errorStreak = 0;
      lastProgress = 0;
      await waitForNextPoll();
      continue;
    }

    let r: HostPollResult;
    try {
      span?.set({ "reelay.job.polls": ++polls });
      r = await timed(() => video.poll(handle!, { signal, requestId: job.id, trace: span?.upstream }));
    } catch (e) {
      return void (await onError(e, "poll"));
    }
    switch (r.state) {
      case "queued":
      case "running": {
        const p = r.state === "running" && typeof r.progress === "number" && Number.isFinite(r.progress) ? Math.min(1, Math.max(0, r.progress)) : null;
        if (p !== null && (p - lastProgress >= PROGRESS_STEP || job.errorStreak > 0)) {
          await saveProgress(db, job.id, owner, p);
          lastProgress = p;
          job.errorStreak = 0;
        }
        await waitForNextPoll();
        continue;
      }
      case "succeeded": {
        // a result URL was downloaded (SSRF-guarded) and checked by the host before it got here
        const store = storeOf(job);
        if (!store) return void (await fail("storage_unavailable", `the blob store "${job.blobStore}" this job was submitted to is not configured`));
        for (let attempt = 1; ; attempt++) {
          try {
            await step("video.complete", async () => {
              const stored = await storeResult(store, job, r.mp4);
              await completeJob(deps, job.id, { blobStore: store.name, ...stored }, { plugin: ctx.plugin });
            }, { "reelay.video.bytes": r.mp4.byteLength });
            span?.set({ "reelay.job.outcome": "completed" });
            return;
          } catch (e) {
            if (!isBlobStoreError(e) || signal.aborted) throw e;
            deps.logger.warn({ err: e, jobId: job.id, attempt }, "video job: storing the result failed");
            if (attempt >= STORE_ATTEMPTS) {
              // the handle stays: the next round polls the provider again for the result
              return void (await releaseJob(db, job.id, owner, storeBackoffMs(attempt), { errorStreak: job.errorStreak, lastError: `storing the result: ${e.message}` }));
            }
            await sleep(storeBackoffMs(attempt), signal);
          }
        }
      }
      case "failed":
        if (r.retryable) return void (await retryLater(`${r.code}: ${r.message}`, { clearHandle: true }));
        return void (await fail(r.code || "generation_failed", r.message || "the provider reported a failure"));
      case "lost":
        deps.logger.warn({ jobId: job.id, model: job.model, attempts: job.attempts }, "video job: provider lost the handle, submitting again");
        await forgetHandle(db, job.id, owner, handle);
        handle = null;
        continue;
      default:
        return void (await fail("invalid_provider_reply", `the provider answered an unknown state`));
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
