/** Schemas of the read routes the console uses (documented in the OpenAPI like every route). */
import { t } from "elysia";
import { VIDEO_JOB_STATUSES } from "../../db/schema/index.ts";
import { BATCH_STATUSES, BatchObject } from "../batches/model.ts";
import { BUCKET_NAMES as bucketNames } from "./timeseries.ts";

export const TimeseriesQuery = {
  // a pattern, not t.UnionEnum: Elysia fills an absent optional enum query parameter with its first value
  bucket: t.Optional(t.String({ pattern: `^(${bucketNames.join("|")})$`, description: "bucket width (default 1h); the range is widened to whole buckets, at most 2,000 of them", error: `'bucket' must be one of ${bucketNames.join(", ")}.` })),
  from: t.Optional(t.String({ description: "ISO 8601 start, inclusive (default: `to` minus 24 h)" })),
  to: t.Optional(t.String({ description: "ISO 8601 end, exclusive (default: now)" })),
  model: t.Optional(t.String({ description: "only this model" })),
};

const nums = t.Array(t.Integer());
const maybe = t.Array(t.Nullable(t.Number()));
export const Series = t.Object({
  requests: nums,
  prompt_tokens: nums,
  completion_tokens: nums,
  tokens: nums,
  seconds: nums,
  credits: t.Array(t.Integer({ description: "micro-dollars" })),
  errors: t.Array(t.Integer({ description: "failures of a model or its upstream: 5xx, an upstream 429, an answer that broke off (a client's own 4xx is not one)" })),
  error_rate: maybe,
  latency_p50_ms: t.Array(t.Nullable(t.Integer()), { description: "from a log histogram: at most 19% above the true value" }),
  latency_p99_ms: t.Array(t.Nullable(t.Integer())),
});

const exampleSeries = { requests: [12, 0], prompt_tokens: [960, 0], completion_tokens: [2400, 0], tokens: [3360, 0], seconds: [0, 0], credits: [38880, 0], errors: [1, 0], error_rate: [0.0833, null], latency_p50_ms: [431, null], latency_p99_ms: [1218, null] };

export const Timeseries = t.Object(
  {
    object: t.Literal("usage.timeseries"),
    bucket: t.String(),
    from: t.String(),
    to: t.String(),
    timestamps: t.Array(t.Integer(), { description: "unix seconds: the start of each bucket; every measure has one value per timestamp" }),
    total: Series,
    models: t.Record(t.String(), Series, { description: "the same measures per model (models with usage in the range)" }),
  },
  { examples: [{ object: "usage.timeseries", bucket: "1h", from: "2026-11-21T10:00:00.000Z", to: "2026-11-21T12:00:00.000Z", timestamps: [1795254400, 1795258000], total: exampleSeries, models: { "chat-a": exampleSeries } }] },
);

export const JobStatusFilter = t.String({ pattern: `^(${VIDEO_JOB_STATUSES.join("|")})$`, error: `'status' must be one of ${VIDEO_JOB_STATUSES.join(", ")}.` });

export const AdminJob = t.Object({
  id: t.String(),
  object: t.Literal("video.generation"),
  account_id: t.String(),
  key_id: t.Nullable(t.String()),
  model: t.String(),
  status: t.String(),
  prompt: t.String(),
  seconds: t.Integer(),
  size: t.String(),
  progress: t.Nullable(t.Number()),
  error: t.Nullable(t.Object({ code: t.String(), message: t.String() })),
  has_result: t.Boolean({ description: "the MP4 is still kept (GET /admin/videos/{id} returns it)" }),
  created_at: t.Integer({ description: "unix seconds" }),
  started_at: t.Nullable(t.Integer()),
  completed_at: t.Nullable(t.Integer()),
  expires_at: t.Nullable(t.Integer()),
});

export const AdminJobList = t.Object(
  { object: t.Literal("list"), data: t.Array(AdminJob), has_more: t.Boolean(), last_id: t.Nullable(t.String()) },
  {
    examples: [{
      object: "list", has_more: false, last_id: "vid_a1",
      data: [{ id: "vid_a1", object: "video.generation", account_id: "acct_x8Kd", key_id: "key_Qw3r", model: "preview-motion", status: "completed", prompt: "slow zoom", seconds: 5, size: "480x832", progress: null, error: null, has_result: true, created_at: 1795254400, started_at: 1795254401, completed_at: 1795254409, expires_at: 1795256209 }],
    }],
  },
);

export const Stats = t.Object(
  {
    object: t.Literal("stats"),
    video_queue: t.Object({ queued: t.Integer(), processing: t.Integer(), oldest_job_age_seconds: t.Nullable(t.Integer({ description: "age of the oldest queued or processing job" })) }),
    holds: t.Object({ open: t.Integer(), amount: t.Integer({ description: "micro-dollars held by open holds" }) }),
    accounts: t.Integer(),
    active_keys: t.Integer(),
  },
  { examples: [{ object: "stats", video_queue: { queued: 3, processing: 2, oldest_job_age_seconds: 41 }, holds: { open: 7, amount: 1_250_000 }, accounts: 12, active_keys: 30 }] },
);

export const AdminModel = t.Object({
  id: t.String(),
  object: t.Literal("model"),
  plugin: t.String(),
  capabilities: t.Array(t.String(), { description: "chat | embeddings | video" }),
  pricing: t.Object({
    input_per_million: t.Nullable(t.Integer({ description: "micro-dollars per million input tokens" })),
    output_per_million: t.Nullable(t.Integer({ description: "micro-dollars per million output tokens" })),
    cached_input_per_million: t.Nullable(t.Integer({ description: "micro-dollars per million input tokens read from the upstream's prompt cache (null: the input price)" })),
    cache_write_per_million: t.Nullable(t.Integer({ description: "micro-dollars per million input tokens written to the upstream's prompt cache (null: the input price)" })),
    per_second: t.Nullable(t.Integer({ description: "micro-dollars per second of video" })),
  }),
  max_output_tokens: t.Nullable(t.Integer()),
  context_length: t.Nullable(t.Integer()),
  state: t.String({ description: "the load state /readyz reports: unloaded (loads on its first request), loading, ready, failed" }),
  state_error: t.Nullable(t.String({ description: "why the last load failed (state failed)" })),
  health: t.Object({
    window_seconds: t.Integer(),
    requests: t.Integer(),
    errors: t.Integer({ description: "failures of the model or its upstream: 5xx, an upstream 429, an answer that broke off" }),
    client_errors: t.Integer({ description: "the clients' own errors (other 4xx: a parameter the model cannot take, a bad field, a client that went away): shown apart, never held against the model" }),
    error_rate: t.Nullable(t.Number({ description: "errors / requests" })),
    last_error_at: t.Nullable(t.String()),
    last_error_code: t.Nullable(t.String()),
    status: t.UnionEnum(["idle", "healthy", "degraded", "failing"], { description: "idle: no requests in the window; failing: ≥ 50% of requests failed; degraded: any failed (client errors do not count)" }),
  }),
});

export const AdminKey = t.Object({
  id: t.String(),
  object: t.Literal("api_key"),
  account_id: t.String(),
  account_name: t.String(),
  name: t.String(),
  prefix: t.String(),
  scopes: t.Nullable(t.Array(t.String())),
  allowed_models: t.Nullable(t.Array(t.String())),
  created_at: t.String(),
  last_used_at: t.Nullable(t.String({ description: "updated at most once a minute per key" })),
  revoked_at: t.Nullable(t.String()),
});

export const BatchStatusFilter = t.String({ pattern: `^(${BATCH_STATUSES.join("|")})$`, error: `'status' must be one of ${BATCH_STATUSES.join(", ")}.` });

/** the batch object its owner sees (GET /v1/batches/{id}), plus whose it is and its model */
export const AdminBatch = t.Composite([
  BatchObject,
  t.Object({
    account_id: t.String(),
    model: t.Nullable(t.String({ description: "the model the batch's first line names, while its lines are kept (validated, not yet final); null otherwise" })),
  }),
]);

export const AdminBatchList = t.Object(
  { object: t.Literal("list"), data: t.Array(AdminBatch), first_id: t.Nullable(t.String()), last_id: t.Nullable(t.String()), has_more: t.Boolean() },
  {
    examples: [{
      object: "list", first_id: "batch_6f2kQm9Zx1Lp0Rt7Yb3Nc8Vd", last_id: "batch_6f2kQm9Zx1Lp0Rt7Yb3Nc8Vd", has_more: false,
      data: [{
        id: "batch_6f2kQm9Zx1Lp0Rt7Yb3Nc8Vd", object: "batch", endpoint: "/v1/chat/completions", errors: null, input_file_id: "file-abc123", completion_window: "24h",
        status: "in_progress", output_file_id: null, error_file_id: null, created_at: 1795254400, in_progress_at: 1795254401, expires_at: 1795340800,
        finalizing_at: null, completed_at: null, failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null,
        request_counts: { total: 120, completed: 80, failed: 2 }, metadata: { job: "nightly" }, account_id: "acct_x8Kd", model: "chat-a",
      }],
    }],
  },
);
