/**
 * OpenAI's Batch API on reelay's own scheduler: POST /v1/batches, GET /v1/batches/{id},
 * GET /v1/batches, POST /v1/batches/{id}/cancel. Lines run through the live pipeline of the
 * batch's endpoint at the batch price (scheduler.ts, run-line.ts).
 */
import { Elysia, t } from "elysia";
import type { BackgroundTask } from "../../background.ts";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { reasoningSeal } from "../responses/reasoning-seal.ts";
import { listBatches } from "./batch-table.ts";
import { BatchList, BatchListQuery, BatchObject, CreateBatchBody } from "./model.ts";
import { createBatchScheduler } from "./scheduler.ts";
import { batchObject, cancelBatch, createBatch, getBatch } from "./service.ts";

const IdParams = t.Object({ id: t.String() });

export const batchRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["batches"] })
    .use(requireKey(deps))
    .post("/batches", async ({ principal, body, request }) => batchObject(deps, await createBatch(deps, principal, body, deps.tracing.of(request)?.traceparent())), {
      body: CreateBatchBody,
      detail: {
        summary: "Create a batch",
        description:
          "Runs every line of `input_file_id` (a file uploaded with purpose `batch`, one JSON request per line: `{custom_id, method: \"POST\", url, body}`) through `endpoint` " +
          "(/v1/chat/completions, /v1/embeddings, /v1/responses or /v1/completions) within `completion_window` (\"24h\"). The batch starts `validating`: a line that is not JSON, " +
          "a custom_id used twice, a `url` other than `endpoint` or a model the key may not use makes it `failed`, with `errors` naming the lines. Then `in_progress` → " +
          "`finalizing` → `completed`, with `output_file_id` and `error_file_id` (OpenAI's line format). Lines run on reelay's scheduler on a share of capacity " +
          "(REELAY_BATCH_SHARE) at the batch price (a model's `pricing.batchPercent`, default 50 % of the live price); each is charged at most once; usage rows say route `batch`.",
        security: [{ bearer: [] }],
      },
      response: { 200: BatchObject, 400: ErrorEnvelope, 404: ErrorEnvelope, ...authErrors },
    })
    .get("/batches/:id", async ({ principal, params }) => batchObject(deps, await getBatch(deps, principal.accountId, params.id)), {
      params: IdParams,
      detail: { summary: "Retrieve a batch", description: "`request_counts` of a running batch count the lines done so far.", security: [{ bearer: [] }] },
      response: { 200: BatchObject, 404: ErrorEnvelope, ...authErrors },
    })
    .get(
      "/batches",
      async ({ principal, query }) => {
        const limit = query.limit ?? 20;
        const rows = await listBatches(deps.database.db, { accountId: principal.accountId, after: query.after, limit: limit + 1 });
        const data = await Promise.all(rows.slice(0, limit).map((b) => batchObject(deps, b)));
        return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
      },
      {
        query: BatchListQuery,
        detail: { summary: "List batches", description: "The account's batches, newest first; `after` is the cursor (the previous page's last id).", security: [{ bearer: [] }] },
        response: { 200: BatchList, 400: ErrorEnvelope, ...authErrors },
      },
    )
    .post("/batches/:id/cancel", async ({ principal, params }) => batchObject(deps, await cancelBatch(deps, principal.accountId, params.id)), {
      params: IdParams,
      detail: {
        summary: "Cancel a batch",
        description: "The batch becomes `cancelling`: no line starts after this, and no line is charged after it took effect; then `cancelled`, with the files of what was done (lines that never ran are in the error file as `batch_cancelled`).",
        security: [{ bearer: [] }],
      },
      response: { 200: BatchObject, 400: ErrorEnvelope, 404: ErrorEnvelope, ...authErrors },
    });

export function batchBackgroundTasks(deps: AppDeps): BackgroundTask[] {
  return [createBatchScheduler(deps, reasoningSeal(deps.config))];
}
