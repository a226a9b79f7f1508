/**
 * A new video job, whichever API asked (POST /v1/videos/generations, POST /v1/videos, a remix):
 * resolve the model, check the size and seconds against what it takes, read the source image, put
 * it in the blob store, then in ONE transaction: idempotency check, the key's concurrent-jobs
 * limit, the hold (price/s at the size × seconds) and the job row. A 402 from `hold` rolls the
 * transaction back (and the stored image is deleted again), so an unaffordable submit leaves no
 * job behind.
 */
import { createHash, randomInt } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Principal } from "../../auth/authenticate-key.ts";
import { applyPlan, openJobCharge, StaleBudgets } from "../../billing/index.ts";
import type { HoldWindows } from "../../billing/exact-holds.ts";
import { isBlobStoreError } from "../../blob-store/index.ts";
import { randomId } from "../../ids.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { checkJobWebhook } from "../webhooks/service.ts";
import { sourceKey } from "./blob-keys.ts";
import type { SourceImage } from "./image-input.ts";
import { assertRenderCapacity } from "./render-capacity.ts";
import { insertJob } from "./job-table/insert-job.ts";
import type { JobView } from "./job-table/columns.ts";
import { countActiveJobsOfKey, findJobByIdempotencyKey, type OwnJob } from "./job-table/read-jobs.ts";
import { videoExpired } from "./poll.ts";

/** advisory-lock namespace for "one submit at a time per API key" (the concurrent-jobs count) */
const SUBMIT_LOCK_NS = 7_312_006;
/** a queued job waits a few seconds for a slot; tell clients to come back after roughly that */
const RETRY_AFTER_SECONDS = 5;

export interface VideoSubmission {
  model: string;
  prompt: string;
  negativePrompt?: string;
  seconds?: number;
  size?: string;
  seed?: number;
  steps?: number;
  webhookUrl?: string;
  /** the source image, read only once the Idempotency-Key check passed (a replay downloads nothing); null: none given */
  image: (() => Promise<SourceImage>) | null;
  /** the field a missing image is reported on, and how to send one ("'image' or 'image_url'") */
  imageField: { param: string; hint: string };
  /** what makes two submits the same request under one Idempotency-Key (every field, as the client sent it) */
  fingerprint: unknown[];
  /** what the API assumes when the client names no seconds / size (used when the model takes it, else the model's first) */
  defaults: { seconds: number; size: string };
  /** the job this one remixes */
  remixedFrom?: string;
  /** the API route called, recorded on the job and so on its usage row */
  route: string;
  /** the submitting request's traceparent (tracing on): the job's steps continue its trace */
  traceparent?: string;
}

export interface SubmitResult {
  status: 200 | 202;
  job: JobView;
}

class IdempotencyRace extends Error {}

/** `origin`: where the client reached us; webhook payloads link back to it unless REELAY_PUBLIC_URL says otherwise. */
export async function submitVideo(deps: AppDeps, principal: Principal, sub: VideoSubmission, idempotencyKey: string | null, origin: string | null = null): Promise<SubmitResult> {
  const model = resolveModel(deps, principal, sub.model, "video");
  if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
    throw badRequest("The Idempotency-Key header must be 1 to 255 characters.", "Idempotency-Key");
  }
  const { seconds, size } = checkShape(model, sub);
  const [width, height] = size.split("x").map(Number) as [number, number];
  const requestHash = idempotencyKey ? hashRequest([...sub.fingerprint, seconds, size]) : null;
  const db = deps.database.db;

  // a replay must not download image_url again or decode the image again
  if (idempotencyKey) {
    const existing = await findJobByIdempotencyKey(db, principal.accountId, idempotencyKey);
    if (existing) return replay(existing, requestHash!);
  }
  await assertRenderCapacity(db, model);
  const webhookUrl = sub.webhookUrl === undefined ? null : await checkJobWebhook(db, { allowedNetworks: deps.config.webhooks.allowedNetworks }, principal.accountId, sub.webhookUrl);
  if (!sub.image) throw badRequest(`A source image is required: the model '${model.id}' makes videos from an image; send ${sub.imageField.hint}.`, sub.imageField.param, "missing_image");
  const image = await sub.image();
  const seed = sub.seed ?? randomInt(0, 2 ** 32 - 1);
  const limit = principal.limits.videoConcurrency ?? deps.config.rateLimits.concurrentVideoJobs;
  const id = randomId("vid");
  const store = deps.blobs.current;
  await store.put(sourceKey(id), image.bytes, { contentType: image.mime }).catch((e) => {
    throw isBlobStoreError(e) ? storageUnavailable(e) : e;
  });

  // the account's prices (its price plan); the budget windows the job counts in are read before each attempt (not inside the transaction: PGlite has one connection)
  const pricing = applyPlan(deps.billing.plans.get(principal.planId), model.id, model.pricing);
  const submitIn = (budget: HoldWindows) =>
    db.transaction(async (tx) => {
      // serialises this key's submits, so "count active jobs, then insert" cannot be raced past the limit;
      // the count is in the database, so the limit holds across instances and restarts
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${SUBMIT_LOCK_NS}, hashtext(${principal.keyId}))`);
      if (idempotencyKey) {
        const existing = await findJobByIdempotencyKey(tx, principal.accountId, idempotencyKey);
        if (existing) return { replayOf: existing };
      }
      if (limit > 0) {
        const n = await countActiveJobsOfKey(tx, principal.keyId);
        if (n >= limit) {
          throw new ApiError(429, "rate_limit_error", `This API key already has ${n} video jobs queued or processing; the limit is ${limit}. Wait for one to finish.`, {
            code: "concurrent_video_jobs_exceeded",
            headers: { "retry-after": String(RETRY_AFTER_SECONDS) },
          });
        }
      }
      const { holdId, priceBasis } = await openJobCharge(tx, { accountId: principal.accountId, jobId: id, model: model.id, seconds, size, pricing, budget });
      const createdAt = await insertJob(tx, {
        id, accountId: principal.accountId, keyId: principal.keyId, model: model.id, prompt: sub.prompt, negativePrompt: sub.negativePrompt ?? null,
        seed, steps: sub.steps ?? null, seconds, width, height, imageMime: image.mime, blobStore: store.name, priceBasis, remixedFrom: sub.remixedFrom ?? null, route: sub.route,
        holdId, idempotencyKey, requestHash, webhookUrl, linksBase: deps.config.publicUrl ?? origin, traceparent: sub.traceparent,
      });
      // another key of the same account won the race for this Idempotency-Key: undo our hold
      if (!createdAt) throw new IdempotencyRace();
      return { createdAt };
    });

  let kept = false;
  try {
    let outcome: Awaited<ReturnType<typeof submitIn>>;
    for (let attempt = 0, reclaimed = false; ; attempt++) {
      try {
        outcome = await submitIn(await deps.billing.windows.holdWindows(principal.accountId, principal.keyId, model.id));
        break;
      } catch (e) {
        // the account's budgets changed since they were read: read them again
        if (e instanceof StaleBudgets && attempt < 4) {
          deps.billing.windows.invalidate(principal.accountId);
          continue;
        }
        // a 402 is final only once the credit instances reserved ahead for the account was offered back (as for every request)
        if (e instanceof ApiError && e.status === 402 && !reclaimed) {
          reclaimed = true;
          if (await deps.billing.offerBack(principal.accountId)) continue;
        }
        throw e;
      }
    }
    if ("replayOf" in outcome) return replay(outcome.replayOf!, requestHash!);
    kept = true;
    deps.telemetry.videoTransition({ jobId: id, model: model.id, from: null, to: "queued", accountId: principal.accountId });
    return {
      status: 202,
      job: {
        id, model: model.id, status: "queued", prompt: sub.prompt, seconds, width, height, seed, progress: null, errorCode: null, errorMessage: null,
        createdAt: outcome.createdAt, completedAt: null, expiresAt: null, remixedFrom: sub.remixedFrom ?? null,
      },
    };
  } catch (e) {
    if (!(e instanceof IdempotencyRace)) throw e;
    const winner = await findJobByIdempotencyKey(db, principal.accountId, idempotencyKey!);
    if (!winner) throw e;
    return replay(winner, requestHash!);
  } finally {
    // no job holds the image: do not keep it (a failure here leaves an object no job names, nothing more)
    if (!kept) await store.delete([sourceKey(id)]).catch((err) => deps.logger.warn({ err, jobId: id }, "could not delete the source image of a submit that made no job"));
  }
}

/** The seconds and size asked for (or the API's defaults), if the model takes them; a 400 listing what it takes otherwise. */
function checkShape(model: RegisteredModel, sub: VideoSubmission): { seconds: number; size: string } {
  const shape = model.video!;
  const seconds = sub.seconds ?? (shape.seconds.includes(sub.defaults.seconds) ? sub.defaults.seconds : shape.seconds[0]!);
  const size = sub.size ?? (shape.sizes.includes(sub.defaults.size) ? sub.defaults.size : shape.sizes[0]!);
  if (!shape.sizes.includes(size)) {
    throw badRequest(`'size' ${JSON.stringify(size).slice(0, 40)} is not a size the model '${model.id}' renders; valid sizes: ${shape.sizes.join(", ")}.`, "size", "invalid_size");
  }
  if (!shape.seconds.includes(seconds)) {
    throw badRequest(`'seconds' ${seconds} is not a length the model '${model.id}' renders; valid seconds: ${describeSeconds(shape.seconds)}.`, "seconds", "invalid_seconds");
  }
  return { seconds, size };
}

/** [1..10] → "1 to 10", [4, 8, 12] → "4, 8, 12" */
function describeSeconds(list: readonly number[]): string {
  const consecutive = list.length > 2 && list.every((s, i) => i === 0 || s === list[i - 1]! + 1);
  return consecutive ? `${list[0]} to ${list.at(-1)}` : list.join(", ");
}

export const storageUnavailable = (cause: unknown) =>
  new ApiError(503, "service_unavailable", "The video storage is temporarily unreachable. Nothing was charged; retry in a moment.", { code: "storage_unavailable", headers: { "retry-after": "5" }, cause });

function replay(job: OwnJob, requestHash: string): SubmitResult {
  if (job.requestHash !== requestHash) {
    throw new ApiError(409, "conflict_error", "This Idempotency-Key was already used with a different request body. Use a new key for a new request.", { code: "idempotency_key_reused", param: "Idempotency-Key" });
  }
  if (job.status === "expired") throw videoExpired(job.id);
  return { status: 200, job };
}

function hashRequest(parts: unknown[]): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}
