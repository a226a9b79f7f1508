import { t } from "elysia";

export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses", "/v1/completions"] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

/** every status a batch can have; final ones never change */
export const BATCH_STATUSES = ["validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
export const FINAL_BATCH_STATUSES: readonly BatchStatus[] = ["failed", "completed", "expired", "cancelled"];

const Nullable = <T extends ReturnType<typeof t.Number>>(s: T) => t.Union([s, t.Null()]);
const Time = () => Nullable(t.Number({ description: "unix seconds" }));

export const BatchError = t.Object({
  code: t.String(),
  message: t.String(),
  param: t.Union([t.String(), t.Null()]),
  line: t.Union([t.Number({ description: "1-based line of the input file" }), t.Null()]),
});

/** OpenAI's batch object */
export const BatchObject = t.Object({
  id: t.String(),
  object: t.Literal("batch"),
  endpoint: t.String(),
  errors: t.Union([t.Object({ object: t.Literal("list"), data: t.Array(BatchError) }), t.Null()]),
  input_file_id: t.String(),
  completion_window: t.String(),
  status: t.UnionEnum([...BATCH_STATUSES]),
  output_file_id: t.Union([t.String(), t.Null()]),
  error_file_id: t.Union([t.String(), t.Null()]),
  created_at: t.Number(),
  in_progress_at: Time(),
  expires_at: Time(),
  finalizing_at: Time(),
  completed_at: Time(),
  failed_at: Time(),
  expired_at: Time(),
  cancelling_at: Time(),
  cancelled_at: Time(),
  request_counts: t.Object({ total: t.Number(), completed: t.Number(), failed: t.Number() }),
  metadata: t.Union([t.Record(t.String(), t.String()), t.Null()]),
});

export const CreateBatchBody = t.Object({
  input_file_id: t.String({ description: "a file uploaded with purpose `batch`: one request per line, {custom_id, method: \"POST\", url, body}" }),
  endpoint: t.UnionEnum([...BATCH_ENDPOINTS], { error: `'endpoint' must be one of ${BATCH_ENDPOINTS.join(", ")}.` }),
  completion_window: t.Literal("24h", { error: "'completion_window' must be \"24h\"." }),
  metadata: t.Optional(t.Union([t.Record(t.String({ maxLength: 64 }), t.String({ maxLength: 512 }), { maxProperties: 16 }), t.Null()])),
});

export type CreateBatchBody = typeof CreateBatchBody.static;

export const BatchList = t.Object({
  object: t.Literal("list"),
  data: t.Array(BatchObject),
  first_id: t.Union([t.String(), t.Null()]),
  last_id: t.Union([t.String(), t.Null()]),
  has_more: t.Boolean(),
});

export const BatchListQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20, description: "page size (1–100)" })),
  after: t.Optional(t.String({ description: "cursor: the last id of the previous page" })),
});
