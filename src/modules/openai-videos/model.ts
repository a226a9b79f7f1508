/** Request and response schemas of OpenAI's Videos API as reelay serves it (types come from `.static`). */
import { t } from "elysia";

export const OPENAI_SIZES = ["720x1280", "1280x720", "1024x1792", "1792x1024"] as const;
/** OpenAI's defaults: used when the model takes them, else the model's first size / length */
export const DEFAULT_SIZE = "720x1280";
export const DEFAULT_SECONDS = 4;

export const Video = t.Object(
  {
    id: t.String(),
    object: t.Literal("video"),
    model: t.String(),
    status: t.UnionEnum(["queued", "in_progress", "completed", "failed"]),
    progress: t.Integer({ minimum: 0, maximum: 100, description: "percent done" }),
    created_at: t.Integer({ description: "unix seconds" }),
    completed_at: t.Nullable(t.Integer({ description: "unix seconds: when it completed or failed" })),
    expires_at: t.Nullable(t.Integer({ description: "unix seconds: the downloads are deleted then (410 afterwards)" })),
    prompt: t.Nullable(t.String()),
    seconds: t.String({ description: "clip length in whole seconds, as a string (OpenAI's type)" }),
    size: t.String({ description: "WIDTHxHEIGHT" }),
    remixed_from_video_id: t.Nullable(t.String()),
    error: t.Nullable(t.Object({ code: t.String(), message: t.String() })),
  },
  { examples: [{ id: "vid_abc", object: "video", model: "preview-motion", status: "in_progress", progress: 35, created_at: 1767225600, completed_at: null, expires_at: null, prompt: "slow zoom in", seconds: "4", size: "720x1280", remixed_from_video_id: null, error: null }] },
);
export type Video = typeof Video.static;

export const VideoPage = t.Object({
  object: t.Literal("list"),
  data: t.Array(Video),
  first_id: t.Nullable(t.String()),
  last_id: t.Nullable(t.String()),
  has_more: t.Boolean(),
});

export const VideoDeleted = t.Object({ id: t.String(), object: t.Literal("video.deleted"), deleted: t.Literal(true) });

export const ListQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20, error: "'limit' must be an integer from 1 to 100." })),
  after: t.Optional(t.String({ maxLength: 64, description: "cursor: the last_id of the previous page" })),
  order: t.Optional(t.UnionEnum(["asc", "desc"], { default: "desc", error: "'order' must be asc or desc." })),
});

export const ContentQuery = t.Object({
  variant: t.Optional(t.UnionEnum(["video", "thumbnail", "spritesheet"], { default: "video", error: "'variant' must be video, thumbnail or spritesheet." })),
});

export const RemixBody = t.Object({
  prompt: t.String({ minLength: 1, maxLength: 4000, error: "'prompt' is required: a non-empty string of at most 4000 characters." }),
});

/** POST /v1/videos as documented (JSON or multipart/form-data; read by read-create.ts, which accepts both) */
export const CreateBody = t.Object({
  model: t.String({ description: "a video model (GET /v1/models: capabilities include video)" }),
  prompt: t.String({ maxLength: 4000 }),
  input_reference: t.Optional(t.Union([
    t.String({ description: "an http(s) URL or a data URL of a PNG, JPEG or WebP image" }),
    t.Object({ image_url: t.String({ description: "an http(s) URL or a data URL" }) }),
  ], { description: "the source image: in multipart/form-data an uploaded file, or `input_reference[image_url]`; in JSON a URL string or {\"image_url\": …}" })),
  seconds: t.Optional(t.Union([t.String({ pattern: "^[0-9]+$" }), t.Integer()], { description: "whole seconds as OpenAI's string (\"4\", \"8\", \"12\") or an integer; one the model takes (GET /v1/models: video.seconds); default 4 when the model takes it" })),
  size: t.Optional(t.String({ description: "WIDTHxHEIGHT, one the model takes (GET /v1/models: video.sizes): e.g. 720x1280, 1280x720, 1024x1792, 1792x1024, 480x832, 832x480, 624x624; default 720x1280 when the model takes it" })),
  negative_prompt: t.Optional(t.String({ description: "reelay extension" })),
  seed: t.Optional(t.Integer({ description: "reelay extension: 0 to 4294967295" })),
  steps: t.Optional(t.Integer({ description: "reelay extension: 1 to 100" })),
  webhook_url: t.Optional(t.String({ description: "reelay extension: receives this job's final event, as in POST /v1/videos/generations" })),
});
