/** Request and response schemas of the video routes (types come from `.static`). */
import { t } from "elysia";

import { VIDEO_JOB_STATUSES, type VideoJobStatus } from "../../db/schema/index.ts";
// strict JSON integers: a client sending a string for `seconds` has a bug we should report, not paper over
import { JsonInteger } from "../../http/schemas.ts";

/** what POST /v1/videos/generations assumes when the client names none (a model that does not take them: its first) */
export const DEFAULT_SIZE = "480x832";
export const DEFAULT_SECONDS = 5;
export const MAX_PROMPT_CHARS = 4000;
export const MAX_STEPS = 100;

export const SubmitBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, error: "'model' must be a non-empty string (at most 256 characters) naming a video model." }),
    prompt: t.String({ minLength: 1, maxLength: MAX_PROMPT_CHARS, error: `'prompt' is required: a non-empty string of at most ${MAX_PROMPT_CHARS} characters.` }),
    negative_prompt: t.Optional(t.String({ maxLength: MAX_PROMPT_CHARS, error: `'negative_prompt' must be a string of at most ${MAX_PROMPT_CHARS} characters.` })),
    image: t.Optional(t.String({ description: "Source image: base64 or a data URL of a PNG, JPEG or WebP of at most 4096x4096 pixels (16,777,216) and REELAY_MAX_IMAGE_BYTES (10 MiB by default). Exactly one of image and image_url.", error: "'image' must be a string: base64 or a data URL of a PNG, JPEG or WebP image." })),
    image_url: t.Optional(t.String({ description: "Source image URL (http or https), fetched once at submit; the same format and size limits as image.", error: "'image_url' must be a string: an http or https URL." })),
    seconds: t.Optional(JsonInteger({ minimum: 1, maximum: 3600, description: "whole seconds, one the model takes (GET /v1/models shows each video model's `video.seconds`; 1 to 10 unless its plugin says otherwise); default 5", error: "'seconds' must be an integer (whole seconds) the model takes." })),
    size: t.Optional(t.String({ pattern: "^[0-9]{2,4}x[0-9]{2,4}$", description: "WIDTHxHEIGHT, one the model takes (GET /v1/models shows each video model's `video.sizes`; 480x832, 832x480 and 624x624 unless its plugin says otherwise); default 480x832", error: "'size' must be a size like 480x832 that the model takes." })),
    seed: t.Optional(JsonInteger({ minimum: 0, maximum: 2 ** 32 - 1, error: "'seed' must be an integer from 0 to 4294967295." })),
    steps: t.Optional(JsonInteger({ minimum: 1, maximum: MAX_STEPS, error: `'steps' must be an integer from 1 to ${MAX_STEPS}.` })),
    webhook_url: t.Optional(t.String({ maxLength: 2048, description: "http(s) URL that receives this job's final event (completed, failed or cancelled), signed with the account's webhook secret (POST /v1/webhooks/secret). Public addresses only.", error: "'webhook_url' must be an http or https URL of at most 2048 characters." })),
  },
  {
    examples: [{ model: "preview-motion", prompt: "slow zoom in on the lighthouse", image_url: "https://example.com/lighthouse.jpg", seconds: 5, size: "480x832" }],
  },
);
export type SubmitBody = typeof SubmitBody.static;

/** What polling shows: an expired job reads as completed (and answers 410) */
export const PUBLIC_JOB_STATUSES = ["queued", "processing", "completed", "failed"] as const satisfies readonly VideoJobStatus[];
export type PublicJobStatus = (typeof PUBLIC_JOB_STATUSES)[number];
export const JobStatus = t.UnionEnum([...PUBLIC_JOB_STATUSES]);

export const VideoJob = t.Object({
  id: t.String(),
  object: t.Literal("video.generation"),
  status: JobStatus,
  model: t.String(),
  seconds: t.Integer(),
  size: t.String(),
  seed: t.Integer(),
  created_at: t.Integer({ description: "unix seconds" }),
  progress: t.Optional(t.Number({ description: "0..1 while processing, when the provider reports it" })),
  expires_at: t.Optional(t.Integer({ description: "unix seconds; the result is gone afterwards (410)" })),
  data: t.Optional(t.Array(t.Object({ b64_json: t.String(), format: t.Literal("mp4") }))),
  error: t.Optional(t.Object({ code: t.String(), message: t.String() })),
});
export type VideoJob = typeof VideoJob.static;

export const SubmitReply = t.Object(
  { id: t.String(), object: t.Literal("video.generation"), status: JobStatus, model: t.String(), seconds: t.Integer(), created_at: t.Integer() },
  { examples: [{ id: "vid_abc", object: "video.generation", status: "queued", model: "preview-motion", seconds: 5, created_at: 1767225600 }] },
);

export const VideoList = t.Object(
  {
    object: t.Literal("list"),
    // listed jobs may also be `expired` (their result is gone; polling them answers 410)
    data: t.Array(t.Object({ ...VideoJob.properties, status: t.UnionEnum([...VIDEO_JOB_STATUSES]) })),
    has_more: t.Boolean(),
    last_id: t.Nullable(t.String()),
  },
  { examples: [{ object: "list", data: [{ id: "vid_abc", object: "video.generation", status: "completed", model: "preview-motion", seconds: 5, size: "480x832", seed: 42, created_at: 1767225600, expires_at: 1767227400 }], has_more: false, last_id: "vid_abc" }] },
);

export const ListQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20, error: "'limit' must be an integer from 1 to 100." })),
  after: t.Optional(t.String({ maxLength: 64, description: "cursor: the last id of the previous page" })),
});
