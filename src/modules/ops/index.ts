/**
 * Operations routes: GET /metrics (Prometheus text) and the admin usage views under /admin/usage
 * (what they show is made in src/ops/).
 */
import { Elysia, t } from "elysia";
import { parseBearer, safeEqual } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import { unauthorized } from "../../errors.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { requireOperator } from "../../http/require-operator.ts";
import type { MetricsExport } from "../../ops/hooks.ts";
import { failingUpstreams, parseRange, usageByAccount, usageByModel } from "../../ops/usage-views.ts";

/** Bearer REELAY_METRICS_TOKEN when set (so a scraper need not hold the admin token), else the admin token. */
export function checkMetricsToken(config: AppDeps["config"], authorization: string | null | undefined) {
  const expected = config.metricsToken ?? config.adminToken;
  if (!expected) throw unauthorized("The metrics endpoint is disabled: set REELAY_METRICS_TOKEN or REELAY_ADMIN_TOKEN to enable it.");
  const token = parseBearer(authorization);
  if (!token) throw unauthorized(`Missing token: send 'Authorization: Bearer <${config.metricsToken ? "REELAY_METRICS_TOKEN" : "REELAY_ADMIN_TOKEN"}>'.`);
  if (!safeEqual(token, expected)) throw unauthorized("Invalid metrics token.");
}

/** GET /metrics (mounted when the ops module provides metrics). */
export const metricsRoutes = (deps: Pick<AppDeps, "config" | "database">, metrics: MetricsExport) =>
  new Elysia({ tags: ["operations"] }).get(
    "/metrics",
    async ({ headers }) => {
      checkMetricsToken(deps.config, headers["authorization"]);
      const m = await metrics.scrape(deps.database.db);
      return new Response(m.text, { headers: { "content-type": m.contentType } });
    },
    {
      detail: { summary: "Prometheus metrics", description: "Prometheus metrics (Bearer REELAY_METRICS_TOKEN, or the admin token when that is not set)", security: [{ metrics: [] }] },
      response: { 200: t.String({ description: "Prometheus text exposition format 0.0.4" }), 401: ErrorEnvelope },
    },
  );

const Range = {
  from: t.Optional(t.String({ description: "ISO 8601 start, inclusive (default: `to` minus 24 h)", examples: ["2025-01-01T00:00:00Z"] })),
  to: t.Optional(t.String({ description: "ISO 8601 end, exclusive (default: now)" })),
};

const Totals = {
  requests: t.Integer(),
  prompt_tokens: t.Integer(),
  completion_tokens: t.Integer(),
  tokens: t.Integer(),
  seconds: t.Integer(),
  credits: t.Integer({ description: "micro-dollars charged" }),
};
const AccountUsage = t.Object({ account_id: t.String(), account_name: t.String(), ...Totals });
const ModelUsage = t.Object({ model: t.String(), kind: t.String(), ...Totals });
const FailingUpstream = t.Object({
  plugin: t.String(),
  model: t.String(),
  requests: t.Integer(),
  errors: t.Integer({ description: "failures of the model or its upstream: 5xx, an upstream 429, an answer that broke off" }),
  client_errors: t.Integer({ description: "the clients' own errors (other 4xx), counted apart: not held against the upstream" }),
  error_rate: t.Number({ description: "errors / requests, 0..1" }),
  error_codes: t.Record(t.String(), t.Integer()),
  last_error_at: t.Nullable(t.String()),
});
const list = <T extends Parameters<typeof t.Array>[0]>(item: T) =>
  t.Object({ object: t.Literal("list"), from: t.String(), to: t.String(), data: t.Array(item) });
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope };
const security = [{ admin: [] }];

export const usageRoutes = (deps: AppDeps) => {
  const db = deps.database.db;
  const envelope = <T>(range: { from: Date; to: Date }, data: T[]) => ({ object: "list" as const, from: range.from.toISOString(), to: range.to.toISOString(), data });
  return new Elysia({ prefix: "/admin/usage", tags: ["admin"] })
    .use(requireOperator(deps))
    .get(
      "/accounts",
      async ({ query }) => {
        const range = parseRange(query.from, query.to);
        return envelope(range, await usageByAccount(db, range, { accountId: query.account }));
      },
      {
        query: t.Object({ ...Range, account: t.Optional(t.String({ description: "only this account" })) }),
        detail: { summary: "Usage per account", description: "Usage per account over a time range: requests, tokens, video seconds, credits", security },
        response: { 200: list(AccountUsage), ...errors },
      },
    )
    .get(
      "/models",
      async ({ query }) => {
        const range = parseRange(query.from, query.to);
        return envelope(range, await usageByModel(db, range, { accountId: query.account }));
      },
      {
        query: t.Object({ ...Range, account: t.Optional(t.String({ description: "only this account" })) }),
        detail: { summary: "Usage per model over a time range", security },
        response: { 200: list(ModelUsage), ...errors },
      },
    )
    .get(
      "/top-accounts",
      async ({ query }) => {
        const range = parseRange(query.from, query.to);
        return envelope(range, await usageByAccount(db, range, { limit: query.limit ?? 10 }));
      },
      {
        query: t.Object({ ...Range, limit: t.Optional(t.Integer({ minimum: 1, maximum: 1000, description: "default 10" })) }),
        detail: { summary: "Top accounts by spend", description: "The accounts charged the most credits over a time range", security },
        response: { 200: list(AccountUsage), ...errors },
      },
    )
    .get(
      "/failing-upstreams",
      async ({ query }) => {
        const range = parseRange(query.from, query.to);
        return envelope(range, await failingUpstreams(db, range));
      },
      {
        query: t.Object(Range),
        detail: { summary: "Errors per plugin and model", description: "Plugins/models whose model or upstream failed (5xx, an upstream 429, an answer that broke off; a client's own 4xx is not a failure, counted apart as client_errors) over a time range, with error rate", security },
        response: { 200: list(FailingUpstream), ...errors },
      },
    );
};
