/**
 * Read routes the web console needs beyond the rest of the API: usage time series for
 * operators and clients, video jobs and batches across accounts, models with prices, state and upstream health,
 * point-in-time stats, keys across accounts. Admin routes take the admin token like every /admin route.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { requireOperator } from "../../http/require-operator.ts";
import { logAudit, writeAudit, type AuditRow } from "../../audit/audit-log.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { parseRange } from "../../ops/usage-views.ts";
import { cancelVideo } from "../videos/cancel.ts";
import { getVideo } from "../videos/poll.ts";
import { VideoJob } from "../videos/model.ts";
import type { BatchStatus } from "../batches/model.ts";
import { listBatchesForOperators } from "./batches.ts";
import { jobAccount, listJobs, listKeysWithAccounts } from "./jobs.ts";
import { AdminBatchList, AdminJobList, AdminKey, AdminModel, BatchStatusFilter, JobStatusFilter, Stats, Timeseries, TimeseriesQuery } from "./model.ts";
import { currentStats, modelHealth } from "./stats.ts";
import { usageTimeseries, type BucketName } from "./timeseries.ts";

const security = [{ admin: [] }];
const adminErrors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };
const HEALTH_WINDOW_MS = 15 * 60_000;

const healthStatus = (requests: number, errors: number): "idle" | "healthy" | "degraded" | "failing" =>
  requests === 0 ? "idle" : errors === 0 ? "healthy" : errors / requests >= 0.5 ? "failing" : "degraded";

export const consoleApiRoutes = (deps: AppDeps) => {
  const db = deps.database.db;
  const series = (query: { bucket?: string; from?: string; to?: string; model?: string }, accountId?: string) => {
    const range = parseRange(query.from, query.to);
    return usageTimeseries(db, { ...range, bucket: (query.bucket ?? "1h") as BucketName, model: query.model || undefined, accountId }, {
      onRefreshError: (err) => deps.logger.warn({ err }, "usage rollup refresh failed; the time series reads raw rows"),
    });
  };

  const admin = new Elysia({ prefix: "/admin", tags: ["admin"] })
    .use(requireOperator(deps))
    .get("/usage/timeseries", ({ query }) => series(query, query.account || undefined), {
      query: t.Object({ ...TimeseriesQuery, account: t.Optional(t.String({ description: "only this account" })) }),
      detail: { summary: "Usage over time", description: "Usage over time in buckets: requests, tokens, credits, errors, p50/p99 latency; totals and per model", security },
      response: { 200: Timeseries, ...adminErrors },
    })
    .get("/stats", () => currentStats(db), {
      detail: { summary: "Current operating figures", description: "Now: video queue depth and oldest job age, open holds, accounts, active keys", security },
      response: { 200: Stats, ...adminErrors },
    })
    .get(
      "/models",
      async () => {
        const health = await modelHealth(db, HEALTH_WINDOW_MS, { onRefreshError: (err) => deps.logger.warn({ err }, "usage rollup refresh failed; the models' health reads raw rows") });
        // the load state /readyz reports, from the same loaders: the two never disagree
        const loads = new Map(deps.registry.statuses().map((s) => [s.id, s]));
        return {
          object: "list" as const,
          data: deps.registry.list().map((m) => {
            const h = health.get(m.id) ?? { requests: 0, errors: 0, client_errors: 0, last_error_at: null, last_error_code: null };
            return {
              id: m.id,
              object: "model" as const,
              plugin: m.plugin,
              capabilities: m.capabilities,
              pricing: {
                input_per_million: m.pricing.inputPerMillion ?? null, output_per_million: m.pricing.outputPerMillion ?? null,
                cached_input_per_million: m.pricing.cachedInputPerMillion ?? null, cache_write_per_million: m.pricing.cacheWritePerMillion ?? null,
                per_second: m.pricing.perSecond ?? null,
              },
              max_output_tokens: m.maxOutputTokens ?? null,
              context_length: m.contextLength ?? null,
              state: loads.get(m.id)?.state ?? "ready",
              state_error: loads.get(m.id)?.error ?? null,
              health: { window_seconds: HEALTH_WINDOW_MS / 1000, ...h, error_rate: h.requests ? Math.round((h.errors / h.requests) * 10_000) / 10_000 : null, status: healthStatus(h.requests, h.errors) },
            };
          }),
        };
      },
      {
        detail: { summary: "Models: state and health", description: "Every configured model: plugin, capabilities, prices (micro-dollars), state and upstream health over the last 15 minutes", security },
        response: { 200: t.Object({ object: t.Literal("list"), data: t.Array(AdminModel) }), ...adminErrors },
      },
    )
    .get("/keys", async ({ query }) => ({ object: "list" as const, data: await listKeysWithAccounts(db, { accountId: query.account || undefined, includeRevoked: query.include_revoked ?? false, limit: query.limit ?? 200 }) }), {
      query: t.Object({
        account: t.Optional(t.String({ description: "only this account's keys" })),
        include_revoked: t.Optional(t.Boolean({ description: "also revoked keys (default false)" })),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 1000, description: "default 200" })),
      }),
      detail: { summary: "List API keys (all accounts)", description: "API keys across accounts, newest first: prefix, scopes, models, last used (never the key)", security },
      response: { 200: t.Object({ object: t.Literal("list"), data: t.Array(AdminKey) }), ...adminErrors },
    })
    .get("/videos", ({ query }) => listJobs(db, { accountId: query.account || undefined, keyId: query.key || undefined, model: query.model || undefined, status: query.status, limit: query.limit ?? 50, after: query.after || undefined }), {
      query: t.Object({
        account: t.Optional(t.String()),
        key: t.Optional(t.String({ description: "only jobs submitted with this key id" })),
        model: t.Optional(t.String()),
        status: t.Optional(JobStatusFilter),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, description: "default 50" })),
        after: t.Optional(t.String({ description: "cursor: the previous page's last_id" })),
      }),
      detail: { summary: "List video jobs (all accounts)", description: "Video jobs across accounts, newest first, filtered by account, key, model, status (no result bytes)", security },
      response: { 200: AdminJobList, ...adminErrors },
    })
    .get("/videos/:id", async ({ params }) => ({ ...(await getVideo(deps, params.id, await jobAccount(db, params.id))), account_id: await jobAccount(db, params.id) }), {
      params: t.Object({ id: t.String({ maxLength: 64 }) }),
      detail: { summary: "Get any account's video job", description: "One video job of any account, as its owner sees it (completed: data[0].b64_json MP4); 410 after retention", security },
      response: { 200: t.Composite([VideoJob, t.Object({ account_id: t.String() })]), 410: ErrorEnvelope, ...adminErrors },
    })
    .get("/batches", ({ query }) => listBatchesForOperators(deps, { accountId: query.account || undefined, status: (query.status || undefined) as BatchStatus | undefined, limit: query.limit ?? 50, after: query.after || undefined }), {
      query: t.Object({
        account: t.Optional(t.String({ description: "only this account's batches" })),
        status: t.Optional(BatchStatusFilter),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, description: "default 50" })),
        after: t.Optional(t.String({ description: "cursor: the previous page's last_id" })),
      }),
      detail: { summary: "List batches (all accounts)", description: "Batches across accounts, newest first, filtered by account and status: each the batch object its owner sees (`request_counts` of a running batch count the lines done so far) with `account_id` and `model`", security },
      response: { 200: AdminBatchList, ...adminErrors },
    })
    .post("/videos/:id/cancel", async ({ params, audit }) => {
      const accountId = await jobAccount(db, params.id);
      const rows: AuditRow[] = [];
      const job = await cancelVideo(deps, params.id, accountId, async (tx) => {
        rows.push(await writeAudit(tx, audit, { action: "job.cancel", target: { type: "video_job", id: params.id }, before: { status: "queued or processing" }, after: { status: "failed", error_code: "cancelled", account_id: accountId } }));
      });
      logAudit(deps.logger, rows);
      return job;
    }, {
      params: t.Object({ id: t.String({ maxLength: 64 }) }),
      detail: { summary: "Cancel any account's video job", description: "Cancel a queued or processing job of any account: it fails with code `cancelled`, its hold is released", security },
      response: { 200: VideoJob, 409: ErrorEnvelope, ...adminErrors },
    });

  const client = new Elysia({ prefix: "/v1", tags: ["account"] })
    .use(requireKey(deps))
    .get("/usage/timeseries", ({ principal, query }) => series(query, principal.accountId), {
      query: t.Object(TimeseriesQuery),
      detail: { summary: "Your usage over time", description: "The calling key's account usage over time in buckets (same shape as /admin/usage/timeseries)", security: [{ bearer: [] }] },
      response: { 200: Timeseries, 400: ErrorEnvelope, ...authErrors },
    });

  return new Elysia().use(admin).use(client);
};
