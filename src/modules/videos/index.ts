/**
 * Image-to-video jobs: POST/GET /v1/videos/generations (+ list and cancel), and the background
 * work that runs them (scheduler/) and drops results past retention.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import type { BackgroundTask } from "../../background.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { cancelVideo } from "./cancel.ts";
import { ListQuery, SubmitBody, SubmitReply, VideoJob, VideoList } from "./model.ts";
import { getVideo, listVideos } from "./poll.ts";
import { createVideoScheduler } from "./scheduler/index.ts";
import { DEFAULT_SECONDS, submitVideo } from "./submit.ts";

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
        const r = await submitVideo(deps, principal, body, headers["idempotency-key"] ?? null, new URL(request.url).origin);
        deps.requestLog.note(request, { jobId: r.job.id });
        set.status = r.status;
        return r.job;
      },
      {
        body: SubmitBody,
        detail: {
          summary: "Submit an image-to-video job",
          description: "Answers 202 with the queued job; poll GET /v1/videos/generations/{id}. Holds price per second × seconds now; charged only on completion. Exactly one of `image` (base64 or data URL: PNG, JPEG, WebP) and `image_url` (http/https, downloaded once now). An `Idempotency-Key` header makes retries safe: the same key and body return the same job (200); a different body is a 409.",
          security,
        },
        response: { 200: SubmitReply, 202: SubmitReply, 400: ErrorEnvelope, 402: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, 413: ErrorEnvelope, ...authErrors },
      },
    )
    .get("/videos/generations", ({ principal, query }) => listVideos(deps.database.db, principal.accountId, { limit: query.limit ?? 20, after: query.after }), {
      query: ListQuery,
      detail: { summary: "List video jobs", description: "The account's video jobs, newest first, without results (cursor: `after` = previous page's last_id)", security },
      response: { 200: VideoList, ...authErrors },
    })
    .get("/videos/generations/:id", ({ principal, params }) => getVideo(deps.database.db, params.id, principal.accountId), {
      params: IdParams,
      detail: { summary: "Poll a video job", description: "Poll a video job: queued | processing | completed (with data[0].b64_json MP4 and expires_at) | failed (with error). 410 after retention.", security },
      response: { 200: VideoJob, 404: ErrorEnvelope, 410: ErrorEnvelope, ...authErrors },
    })
    .post("/videos/generations/:id/cancel", ({ principal, params }) => cancelVideo(deps, params.id, principal.accountId), {
      params: IdParams,
      detail: { summary: "Cancel a video job", description: "Cancel a queued or processing job: it fails with code `cancelled` and nothing is charged", security },
      response: { 200: VideoJob, 404: ErrorEnvelope, 409: ErrorEnvelope, ...authErrors },
    });

/** The video scheduler (with its lease heartbeat and retention sweeper), started by boot. */
export const videoBackgroundTasks = (deps: AppDeps): BackgroundTask[] => [createVideoScheduler(deps)];
