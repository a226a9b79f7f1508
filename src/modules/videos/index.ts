/**
 * Image-to-video jobs: POST/GET /v1/videos/generations (+ list and cancel), and the background
 * work that runs them (scheduler/) and drops results past retention.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { BackgroundTask } from "../../background.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { cancelVideo } from "./cancel.ts";
import { ListQuery, SubmitBody, SubmitReply, VideoJob, VideoList } from "./model.ts";
import { getVideo, listVideos } from "./poll.ts";
import { createVideoScheduler } from "./scheduler/index.ts";
import { imageLimits, readSourceImage } from "./image-input.ts";
import { DEFAULT_SECONDS, DEFAULT_SIZE } from "./model.ts";
import { submitVideo, type VideoSubmission } from "./submit.ts";

const security = [{ bearer: [] }];
const IdParams = t.Object({ id: t.String({ maxLength: 64, error: "'id' must be a video job id." }) });

/** POST/GET /v1/videos/generations */
export const videoRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["videos"] })
    .use(requireKey(deps))
    .post(
      "/videos/generations",
      async ({ principal, body, headers, request, set }) => {
        deps.requestLog.note(request, { model: body.model, seconds: body.seconds ?? DEFAULT_SECONDS });
        const r = await submitVideo(deps, principal, { ...generationSubmission(deps, body), traceparent: deps.tracing.of(request)?.traceparent() }, headers["idempotency-key"] ?? null, new URL(request.url).origin);
        deps.requestLog.note(request, { jobId: r.job.id });
        set.status = r.status;
        const status = r.job.status === "expired" ? "completed" : r.job.status;
        return { id: r.job.id, object: "video.generation" as const, status, model: r.job.model, seconds: r.job.seconds, created_at: Math.floor(r.job.createdAt.getTime() / 1000) };
      },
      {
        body: SubmitBody,
        detail: {
          summary: "Submit an image-to-video job",
          description: "Answers 202 with the queued job; poll GET /v1/videos/generations/{id} (the same job is readable as GET /v1/videos/{id}). Holds the model's price per second (at the requested size, when it prices sizes) × seconds now; charged only on completion. `size` and `seconds` must be ones the model takes (a 400 lists them; GET /v1/models shows them). Exactly one of `image` (base64 or data URL: PNG, JPEG, WebP) and `image_url` (http/https, downloaded once now). An `Idempotency-Key` header makes retries safe: the same key and body return the same job (200); a different body is a 409.",
          security,
        },
        response: { 200: SubmitReply, 202: SubmitReply, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 409: ErrorEnvelope, 413: ErrorEnvelope, ...authErrors },
      },
    )
    .get("/videos/generations", ({ principal, query }) => listVideos(deps.database.db, principal.accountId, { limit: query.limit ?? 20, after: query.after }), {
      query: ListQuery,
      detail: { summary: "List video jobs", description: "The account's video jobs, newest first, without results (cursor: `after` = previous page's last_id)", security },
      response: { 200: VideoList, ...authErrors },
    })
    .get("/videos/generations/:id", ({ principal, params }) => getVideo(deps, params.id, principal.accountId), {
      params: IdParams,
      detail: { summary: "Poll a video job", description: "Poll a video job: queued | processing | completed (with data[0].b64_json MP4 and expires_at) | failed (with error). 410 after retention.", security },
      response: { 200: VideoJob, 404: ErrorEnvelope, 410: ErrorEnvelope, ...authErrors },
    })
    .post("/videos/generations/:id/cancel", ({ principal, params }) => cancelVideo(deps, params.id, principal.accountId), {
      params: IdParams,
      detail: { summary: "Cancel a video job", description: "Cancel a queued or processing job: it fails with code `cancelled` and nothing is charged", security },
      response: { 200: VideoJob, 404: ErrorEnvelope, 409: ErrorEnvelope, ...authErrors },
    });

/** The body of POST /v1/videos/generations as a submission. */
function generationSubmission(deps: AppDeps, body: SubmitBody): VideoSubmission {
  const limits = imageLimits(deps);
  const hasImage = (body.image ?? "") !== "" || (body.image_url ?? "") !== "";
  return {
    model: body.model, prompt: body.prompt, negativePrompt: body.negative_prompt, seconds: body.seconds, size: body.size, seed: body.seed, steps: body.steps, webhookUrl: body.webhook_url,
    image: hasImage ? () => readSourceImage(body, limits) : null,
    imageField: { param: "image", hint: "'image' (base64 or data URL) or 'image_url'" },
    fingerprint: [body.model, body.prompt, body.negative_prompt ?? null, body.image ?? null, body.image_url ?? null, body.seed ?? null, body.steps ?? null, ...(body.webhook_url === undefined ? [] : [body.webhook_url])],
    defaults: { seconds: DEFAULT_SECONDS, size: DEFAULT_SIZE },
    route: "/v1/videos/generations",
  };
}

/** The video scheduler (with its lease heartbeat and retention sweeper), started by boot. */
export const videoBackgroundTasks = (deps: AppDeps): BackgroundTask[] => [createVideoScheduler(deps)];
