/** Request and response schemas of the webhook routes, and the event types. */
import { t } from "elysia";
import { BatchObject } from "../batches/model.ts";

/**
 * Final events are always available; `.processing` (the provider accepted the job) is opt-in, and
 * so is `budget.threshold_reached` (a budget window's spending reached one of its thresholds), and so
 * are the `batch.*` events (a batch reached a final status: modules/batches/events.ts).
 */
export const EVENT_TYPES = [
  "video.generation.completed", "video.generation.failed", "video.generation.cancelled", "video.generation.processing", "budget.threshold_reached",
  "batch.completed", "batch.failed", "batch.expired", "batch.cancelled",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** a job's own webhook_url gets these; endpoints get them unless they choose */
export const FINAL_EVENTS: readonly EventType[] = ["video.generation.completed", "video.generation.failed", "video.generation.cancelled"];
export const DEFAULT_EVENTS: EventType[] = [...FINAL_EVENTS];
export const MAX_ENDPOINTS_PER_ACCOUNT = 20;

const EventList = t.Array(t.UnionEnum([...EVENT_TYPES], { error: `each event must be one of ${EVENT_TYPES.join(", ")}.` }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  error: `'events' must be a non-empty list of distinct event types: ${EVENT_TYPES.join(", ")}.`,
});

export const CreateEndpointBody = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: 2048, description: "http(s) URL reelay POSTs events to; public addresses only unless the operator allows a network", error: "'url' must be an http or https URL of at most 2048 characters." }),
    events: t.Optional(EventList),
    description: t.Optional(t.String({ maxLength: 500, error: "'description' must be a string of at most 500 characters." })),
  },
  { examples: [{ url: "https://hooks.example.com/reelay", events: ["video.generation.completed", "video.generation.failed"] }] },
);
export type CreateEndpointBody = typeof CreateEndpointBody.static;

export const UpdateEndpointBody = t.Object(
  {
    enabled: t.Optional(t.Boolean({ error: "'enabled' must be true or false." })),
    events: t.Optional(EventList),
    description: t.Optional(t.Nullable(t.String({ maxLength: 500 }))),
  },
  { examples: [{ enabled: true }] },
);
export type UpdateEndpointBody = typeof UpdateEndpointBody.static;

export const EndpointView = t.Object(
  {
    id: t.String(),
    object: t.Literal("webhook_endpoint"),
    url: t.String(),
    events: t.Array(t.String()),
    description: t.Nullable(t.String()),
    enabled: t.Boolean(),
    disabled_reason: t.Nullable(t.String({ description: "why reelay stopped sending (e.g. the receiver answered 410 Gone)" })),
    created_at: t.Integer({ description: "unix seconds" }),
    secret: t.Optional(t.String({ description: "the `whsec_…` signing secret: in the answer that creates the endpoint only" })),
  },
  {
    examples: [{
      id: "we_3kTq", object: "webhook_endpoint", url: "https://hooks.example.com/reelay", events: ["video.generation.completed", "video.generation.failed", "video.generation.cancelled"],
      description: null, enabled: true, disabled_reason: null, created_at: 1767225600, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }],
  },
);

export const EndpointList = t.Object({ object: t.Literal("list"), data: t.Array(EndpointView) });

export const DeletedView = t.Object({ id: t.String(), object: t.Literal("webhook_endpoint"), deleted: t.Literal(true) });

export const AccountSecretView = t.Object(
  {
    object: t.Literal("webhook_secret"),
    secret: t.String({ description: "signs deliveries to jobs' own `webhook_url`; shown in this answer only" }),
    created_at: t.Integer(),
  },
  { examples: [{ object: "webhook_secret", secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", created_at: 1767225600 }] },
);

export const DeliveryView = t.Object(
  {
    id: t.String({ description: "the `webhook-id` header of every attempt" }),
    object: t.Literal("webhook_delivery"),
    endpoint_id: t.Nullable(t.String({ description: "null: the job's own webhook_url" })),
    job_id: t.String(),
    event_type: t.String(),
    url: t.String(),
    status: t.UnionEnum(["pending", "delivered", "failed"]),
    attempts: t.Integer(),
    last_status: t.Nullable(t.Integer({ description: "HTTP status of the last attempt; null when there was no answer" })),
    last_error: t.Nullable(t.String()),
    next_attempt_at: t.Nullable(t.Integer({ description: "unix seconds; null unless pending" })),
    last_attempt_at: t.Nullable(t.Integer()),
    delivered_at: t.Nullable(t.Integer()),
    created_at: t.Integer(),
  },
  {
    examples: [{
      id: "msg_2Hq0Lx", object: "webhook_delivery", endpoint_id: "we_3kTq", job_id: "vid_abc", event_type: "video.generation.completed", url: "https://hooks.example.com/reelay",
      status: "delivered", attempts: 2, last_status: 200, last_error: null, next_attempt_at: null, last_attempt_at: 1767225731, delivered_at: 1767225731, created_at: 1767225725,
    }],
  },
);

export const DeliveryList = t.Object({ object: t.Literal("list"), data: t.Array(DeliveryView), has_more: t.Boolean(), last_id: t.Nullable(t.String()) });

export const DeliveryQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20, error: "'limit' must be an integer from 1 to 100." })),
  after: t.Optional(t.String({ maxLength: 64, description: "cursor: the last id of the previous page" })),
  job_id: t.Optional(t.String({ maxLength: 64, description: "only this job's deliveries" })),
  // a union of literals, not t.UnionEnum: Elysia fills an absent optional UnionEnum with its first value
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")], { error: "'status' must be pending, delivered or failed." })),
});
export type DeliveryQuery = typeof DeliveryQuery.static;

/**
 * What a receiver gets (the body of every attempt). `data` is the job as polling shows it, without
 * the video bytes, plus links to poll it, stream its events and download the MP4.
 */
export const EventPayload = t.Object(
  {
    type: t.UnionEnum([...EVENT_TYPES]),
    timestamp: t.String({ description: "when the job reached this state (ISO 8601)" }),
    data: t.Object({
      id: t.String(),
      object: t.Literal("video.generation"),
      status: t.UnionEnum(["processing", "completed", "failed"]),
      model: t.String(),
      seconds: t.Integer(),
      size: t.String(),
      seed: t.Integer(),
      created_at: t.Integer(),
      progress: t.Optional(t.Number({ description: "processing events: 0..1 when the provider reports it" })),
      expires_at: t.Optional(t.Integer()),
      error: t.Optional(t.Object({ code: t.String(), message: t.String() })),
      urls: t.Object({
        poll: t.String(),
        events: t.String(),
        content: t.Optional(t.String({ description: "completed jobs: the MP4 (Authorization: Bearer <key>; range requests)" })),
      }),
    }),
  },
  {
    examples: [{
      type: "video.generation.completed", timestamp: "2026-01-01T00:02:05.120Z",
      data: {
        id: "vid_abc", object: "video.generation", status: "completed", model: "preview-motion", seconds: 5, size: "480x832", seed: 42, created_at: 1767225600, expires_at: 1767227525,
        urls: { poll: "https://api.example.com/v1/videos/generations/vid_abc", events: "https://api.example.com/v1/videos/generations/vid_abc/events", content: "https://api.example.com/v1/videos/generations/vid_abc/content" },
      },
    }],
  },
);
export type EventPayload = typeof EventPayload.static;

/** `budget.threshold_reached`: a budget window's spending reached one of its thresholds (once per window and threshold). */
export const BudgetEventPayload = t.Object(
  {
    type: t.Literal("budget.threshold_reached"),
    timestamp: t.String({ description: "when the event was queued (ISO 8601)" }),
    data: t.Object({
      object: t.Literal("budget.threshold"),
      budget_id: t.String(),
      window_id: t.String({ description: "the period: one event per window and threshold, ever" }),
      scope: t.UnionEnum(["account", "key"]),
      key_id: t.Nullable(t.String()),
      period: t.UnionEnum(["day", "week", "month", "lifetime"]),
      timezone: t.String(),
      models: t.Nullable(t.Array(t.String())),
      threshold: t.Integer({ description: "percent of the limit" }),
      limit: t.Integer({ description: "micro-dollars" }),
      spent: t.Integer({ description: "micro-dollars spent in the window when the threshold was crossed" }),
      window_starts_at: t.String(),
      resets_at: t.Nullable(t.String()),
      reached_at: t.String(),
    }),
  },
  {
    examples: [{
      type: "budget.threshold_reached", timestamp: "2026-09-24T16:02:11.480Z",
      data: {
        object: "budget.threshold", budget_id: "bud_7fQm", window_id: "bud_7fQm@1788213600", scope: "key", key_id: "key_Qw3r", period: "month", timezone: "Europe/Paris", models: null,
        threshold: 80, limit: 50_000_000, spent: 40_012_400, window_starts_at: "2026-08-31T22:00:00.000Z", resets_at: "2026-09-30T22:00:00.000Z", reached_at: "2026-09-24T16:02:11.210Z",
      },
    }],
  },
);

/** `batch.completed` / `.failed` / `.expired` / `.cancelled`: a batch reached a final status; `data` is the batch object. */
export const BatchEventPayload = t.Object({
  type: t.UnionEnum(["batch.completed", "batch.failed", "batch.expired", "batch.cancelled"]),
  timestamp: t.String({ description: "when the event was queued (ISO 8601)" }),
  data: BatchObject,
});

const signatureHeaders = [
  { name: "webhook-id", in: "header" as const, required: true, description: "the delivery's id (msg_…): the same on every retry and replay; deduplicate on it", schema: { type: "string" } },
  { name: "webhook-timestamp", in: "header" as const, required: true, description: "unix seconds of this attempt; refuse values more than 5 minutes away from your clock", schema: { type: "string" } },
  { name: "webhook-signature", in: "header" as const, required: true, description: "`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed by the base64-decoded part of your `whsec_` secret (Standard Webhooks)", schema: { type: "string" } },
];

/** OpenAPI 3.1 `webhooks`: what reelay POSTs to endpoints and to jobs' own webhook_url. */
export const WEBHOOKS_OPENAPI = Object.fromEntries(
  EVENT_TYPES.map((type) => [type, {
    post: {
      summary: `${type}${type.endsWith(".processing") ? " (opt-in: the provider accepted the job)" : type.startsWith("budget.") ? " (opt-in: a budget window reached a threshold)" : type.startsWith("batch.") ? " (opt-in: a batch reached a final status)" : ""}`,
      description: "Signed per Standard Webhooks. Answer 2xx within REELAY_WEBHOOK_TIMEOUT_MS (10 s) to acknowledge; 410 disables the endpoint; anything else is retried with exponential backoff for up to 24 h.",
      tags: ["webhooks"],
      parameters: signatureHeaders,
      requestBody: { required: true, content: { "application/json": { schema: type.startsWith("budget.") ? BudgetEventPayload : type.startsWith("batch.") ? BatchEventPayload : EventPayload } } },
      responses: { 200: { description: "delivered (any 2xx)" }, 410: { description: "stop: the endpoint is disabled" } },
    },
  }]),
);
