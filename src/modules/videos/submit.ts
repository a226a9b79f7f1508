/**
 * POST /v1/videos/generations: validate, then in ONE transaction: idempotency check, the key's
 * concurrent-jobs limit, the hold (price/s × seconds) and the job row. A 402 from `hold` rolls the
 * transaction back, so an unaffordable submit leaves no job behind.
 */
import { createHash, randomInt } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Principal } from "../../auth/authenticate-key.ts";
import { applyPlan, openJobCharge, StaleBudgets } from "../../billing/index.ts";
import type { HoldWindows } from "../../billing/exact-holds.ts";
import { randomId } from "../../ids.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import { checkJobWebhook } from "../webhooks/service.ts";
import { readSourceImage } from "./image-input.ts";
import { assertRenderCapacity } from "./render-capacity.ts";
import { insertJob } from "./job-table/insert-job.ts";
import { countActiveJobsOfKey, findJobByIdempotencyKey, type OwnJob } from "./job-table/read-jobs.ts";
import type { PublicJobStatus, SubmitBody, VideoSize } from "./model.ts";
import { videoExpired } from "./poll.ts";

export const DEFAULT_SECONDS = 5;
export const DEFAULT_SIZE: VideoSize = "480x832";
/** advisory-lock namespace for "one submit at a time per API key" (the concurrent-jobs count) */
const SUBMIT_LOCK_NS = 7_312_006;
/** a queued job waits a few seconds for a slot; tell clients to come back after roughly that */
const RETRY_AFTER_SECONDS = 5;

export interface SubmitResult {
  status: 200 | 202;
  job: { id: string; object: "video.generation"; status: PublicJobStatus; model: string; seconds: number; created_at: number };
}

class IdempotencyRace extends Error {}

/** `origin`: where the client reached us; webhook payloads link back to it unless REELAY_PUBLIC_URL says otherwise. */
export async function submitVideo(deps: AppDeps, principal: Principal, body: SubmitBody, idempotencyKey: string | null, origin: string | null = null): Promise<SubmitResult> {
  const model = resolveModel(deps, principal, body.model, "video");
  if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
    throw badRequest("The Idempotency-Key header must be 1 to 255 characters.", "Idempotency-Key");
  }
  const seconds = body.seconds ?? DEFAULT_SECONDS;
  const size = body.size ?? DEFAULT_SIZE;
  const [width, height] = size.split("x").map(Number) as [number, number];
  const requestHash = idempotencyKey ? hashRequest(body, seconds, size) : null;
  const db = deps.database.db;

  // a replay must not download image_url again or decode the image again
  if (idempotencyKey) {
    const existing = await findJobByIdempotencyKey(db, principal.accountId, idempotencyKey);
    if (existing) return replay(existing, requestHash!);
  }
  await assertRenderCapacity(db, model);
  const webhookUrl = body.webhook_url === undefined ? null : await checkJobWebhook(db, { allowedNetworks: deps.config.webhooks.allowedNetworks }, principal.accountId, body.webhook_url);
  const image = await readSourceImage(body, { maxImageBytes: deps.config.maxImageBytes });
  const seed = body.seed ?? randomInt(0, 2 ** 32 - 1);
  const limit = principal.limits.videoConcurrency ?? deps.config.rateLimits.concurrentVideoJobs;
  const id = randomId("vid");
  // the account's prices, and the budget windows the job counts in (read before the transaction: PGlite has one connection)
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
      const holdId = await openJobCharge(tx, { accountId: principal.accountId, jobId: id, model: model.id, seconds, pricing, budget });
      const createdAt = await insertJob(tx, {
        id, accountId: principal.accountId, keyId: principal.keyId, model: model.id, prompt: body.prompt, negativePrompt: body.negative_prompt ?? null,
        seed, steps: body.steps ?? null, seconds, width, height, image: image.bytes, imageMime: image.mime, holdId, idempotencyKey, requestHash,
        webhookUrl, linksBase: deps.config.publicUrl ?? origin,
      });
      // another key of the same account won the race for this Idempotency-Key: undo our hold
      if (!createdAt) throw new IdempotencyRace();
      return { createdAt };
    });

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
    deps.telemetry.videoTransition({ jobId: id, model: model.id, from: null, to: "queued", accountId: principal.accountId });
    return { status: 202, job: { id, object: "video.generation", status: "queued", model: model.id, seconds, created_at: Math.floor(outcome.createdAt.getTime() / 1000) } };
  } catch (e) {
    if (!(e instanceof IdempotencyRace)) throw e;
    const winner = await findJobByIdempotencyKey(db, principal.accountId, idempotencyKey!);
    if (!winner) throw e;
    return replay(winner, requestHash!);
  }
}

function replay(job: OwnJob, requestHash: string): SubmitResult {
  if (job.requestHash !== requestHash) {
    throw new ApiError(409, "conflict_error", "This Idempotency-Key was already used with a different request body. Use a new key for a new request.", { code: "idempotency_key_reused", param: "Idempotency-Key" });
  }
  if (job.status === "expired") throw videoExpired(job.id);
  return { status: 200, job: { id: job.id, object: "video.generation", status: job.status, model: job.model, seconds: job.seconds, created_at: Math.floor(job.createdAt.getTime() / 1000) } };
}

/** What makes two submits "the same request": every field, with defaults applied. */
function hashRequest(body: SubmitBody, seconds: number, size: string): string {
  const canonical = JSON.stringify([body.model, body.prompt, body.negative_prompt ?? null, body.image ?? null, body.image_url ?? null, seconds, size, body.seed ?? null, body.steps ?? null, ...(body.webhook_url === undefined ? [] : [body.webhook_url])]);
  return createHash("sha256").update(canonical).digest("hex");
}

