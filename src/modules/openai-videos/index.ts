/**
 * OpenAI's Videos API (what the official SDK's `client.videos` calls): POST/GET /v1/videos,
 * GET/DELETE /v1/videos/{id}, GET /v1/videos/{id}/content, POST /v1/videos/{id}/remix — over every
 * video model and the same jobs as /v1/videos/generations (service.ts). Errors in OpenAI's envelope.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { videoContent } from "../videos/content.ts";
import { CONTENT_GET_DOCS, CONTENT_HEAD_DOCS } from "../videos/stream-docs.ts";
import { submitVideo } from "../videos/submit.ts";
import { ContentQuery, CreateBody, ListQuery, RemixBody, Video, VideoDeleted, VideoPage } from "./model.ts";
import { presentVideo } from "./present.ts";
import { readCreateRequest } from "./read-create.ts";
import { deleteVideo, listOpenAiVideos, remixVideo, retrieveVideo } from "./service.ts";

const security = [{ bearer: [] }];
/** routes whose body may be multipart/form-data as well as JSON (http/json-body.ts reads both) */
export const FORM_ROUTES = new Set(["POST /v1/videos"]);
const IdParams = t.Object({ id: t.String({ maxLength: 64, error: "'id' must be a video id." }) });
const jsonOf = (schema: object) => ({ schema: schema as Record<string, never> });

export const openAiVideoRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["videos"] })
    .use(requireKey(deps))
    .post(
      "/videos",
      async ({ principal, body, headers, request, set }) => {
        const submission = await readCreateRequest(deps, body);
        deps.requestLog.note(request, { model: submission.model, seconds: submission.seconds });
        const r = await submitVideo(deps, principal, { ...submission, traceparent: deps.tracing.of(request)?.traceparent() }, headers["idempotency-key"] ?? null, new URL(request.url).origin);
        deps.requestLog.note(request, { jobId: r.job.id });
        set.status = 200;
        return presentVideo(r.job);
      },
      {
        detail: {
          summary: "Create a video (OpenAI)",
          description: "Starts an image-to-video job on any video model and answers its video object (status `queued`); poll GET /v1/videos/{id}. JSON or multipart/form-data (as OpenAI's SDK sends it): `input_reference` is the source image — an uploaded file, `input_reference[image_url]`, a URL or data URL string, or {\"image_url\": …} — checked like `image_url` of /v1/videos/generations (PNG, JPEG, WebP; size limits; public addresses only). `seconds` may be OpenAI's string (\"4\") or an integer; `size` and `seconds` must be ones the model takes (a 400 lists them; GET /v1/models shows them under `video`). Defaults: 720x1280 and 4 s where the model takes them, else its first. Billing as /v1/videos/generations: the price per second (at the size, when the model prices sizes) × seconds is held now and charged once on completion. The job is the same job /v1/videos/generations/{id} shows. An `Idempotency-Key` header makes retries safe.",
          security,
          requestBody: { required: true, content: { "application/json": jsonOf(CreateBody), "multipart/form-data": jsonOf(CreateBody) } },
        },
        response: { 200: Video, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 409: ErrorEnvelope, 413: ErrorEnvelope, 503: ErrorEnvelope, ...authErrors },
      },
    )
    .get("/videos", ({ principal, query }) => listOpenAiVideos(deps, principal.accountId, { limit: query.limit ?? 20, after: query.after, order: query.order ?? "desc" }), {
      query: ListQuery,
      detail: { summary: "List videos (OpenAI)", description: "The account's video jobs (made through either API) as video objects, newest first unless `order=asc`; cursor: `after` = the previous page's `last_id`.", security },
      response: { 200: VideoPage, ...authErrors },
    })
    .get("/videos/:id", async ({ principal, params, set }) => {
      const r = await retrieveVideo(deps, params.id, principal.accountId);
      if (r.pollAfterMs !== null) set.headers["openai-poll-after-ms"] = String(r.pollAfterMs);
      return r.video;
    }, {
      params: IdParams,
      detail: { summary: "Retrieve a video (OpenAI)", description: "The video object: status queued | in_progress | completed | failed, progress 0–100, error when failed. While it runs, the `openai-poll-after-ms` header says when to poll again (the SDK's poller honours it). 410 `video_expired` after retention or deletion. Any job of the account, whichever API made it.", security },
      response: { 200: Video, 404: ErrorEnvelope, 410: ErrorEnvelope, ...authErrors },
    })
    .delete("/videos/:id", ({ principal, params }) => deleteVideo(deps, params.id, principal.accountId), {
      params: IdParams,
      detail: { summary: "Delete a video (OpenAI)", description: "A queued or running job is cancelled (nothing charged, its hold released, its provider asked to stop); a completed one is expired now. Its stored video, thumbnail, spritesheet and source image are deleted.", security },
      response: { 200: VideoDeleted, 404: ErrorEnvelope, ...authErrors },
    })
    .head("/videos/:id/content", ({ principal, params, query, request }) => videoContent(deps, params.id, principal.accountId, request, query.variant ?? "video"), {
      params: IdParams,
      query: ContentQuery,
      detail: { summary: "Download headers of a video's content", description: "The download's headers (length, type, ETag) without the bytes", security, ...CONTENT_HEAD_DOCS },
    })
    .get("/videos/:id/content", ({ principal, params, query, request }) => videoContent(deps, params.id, principal.accountId, request, query.variant ?? "video"), {
      params: IdParams,
      query: ContentQuery,
      detail: {
        summary: "Download a video's content (OpenAI)",
        description: "`variant=video` (default): the MP4, with byte ranges as /v1/videos/generations/{id}/content. `thumbnail`: a JPEG of the video's first frame at the video's size. `spritesheet`: a JPEG grid of one frame per second (up to 25), each a quarter of the video's width and height, `ceil(sqrt(n))` columns. Thumbnails and spritesheets are taken from the frames reelay encodes; a video a backend delivered as a finished MP4 has a thumbnail made from its source image and no spritesheet (404 `variant_not_available`). 409 while not completed, 410 after retention. With REELAY_S3_PRESIGN_SECONDS set: a 302 to a short-lived presigned URL of the object.",
        security,
        ...CONTENT_GET_DOCS,
      },
      response: { 404: ErrorEnvelope, 409: ErrorEnvelope, 410: ErrorEnvelope, 416: ErrorEnvelope, 503: ErrorEnvelope, ...authErrors },
    })
    .post("/videos/:id/remix", async ({ principal, params, body, headers, request }) => {
      const r = await remixVideo(deps, principal, params.id, body.prompt, headers["idempotency-key"] ?? null, new URL(request.url).origin, deps.tracing.of(request)?.traceparent());
      return presentVideo(r.job);
    }, {
      params: IdParams,
      body: RemixBody,
      detail: { summary: "Remix a video (OpenAI)", description: "A new job of the same model, size and length from the completed video with a new prompt, for models whose plugin declares remix (GET /v1/models: `video.remix`); any other model answers 400 `remix_not_supported`. Billed as a new video.", security },
      response: { 200: Video, 400: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, ...authErrors },
    });
