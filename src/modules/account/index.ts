import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { budgetViews, clientBalance } from "../../billing/index.ts";
import { BudgetView } from "../budgets/model.ts";
import { authErrors, PageQuery } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { listUsage } from "../../accounts/usage-and-ledger.ts";

/** One row per billed request or video job; each field is described in docs/api.md ("Usage records") too. */
export const UsageRecord = t.Object({
  id: t.Integer({ description: "the row's id, newest highest: the `before` cursor of the next page" }),
  object: t.Literal("usage_record"),
  ref: t.String({ description: "the request's `x-request-id` (`req_…`) or the video job's id (`vid_…`); the prompts of a legacy completions array after the first are `<request id>.1`, `.2`, …" }),
  kind: t.String({ description: "`chat` (chat completions, Responses, legacy completions), `embeddings` or `video`" }),
  route: t.Nullable(t.String({ description: "the API route called: /v1/chat/completions, /v1/responses, /v1/messages, /v1/completions, /v1/embeddings, /v1/videos/generations, /v1/videos, /v1/videos/{id}/remix (null only on rows written before reelay recorded it)" })),
  model: t.String({ description: "the model that served; a fallback's id when a fallback served" }),
  prompt_tokens: t.Nullable(t.Integer({ description: "input tokens billed (chat, embeddings), cached and cache-write tokens included; null for video" })),
  cached_tokens: t.Nullable(t.Integer({ description: "of prompt_tokens: read from the upstream's prompt cache, billed at the model's cached-input price (null: none)" })),
  cache_write_tokens: t.Nullable(t.Integer({ description: "of prompt_tokens: written to the upstream's prompt cache, billed at the model's cache-write price (null: none)" })),
  completion_tokens: t.Nullable(t.Integer({ description: "chat: output tokens billed — the upstream's count when credible (see `token_source`, `anomaly`), else reelay's own; a stream cut short is billed what was delivered" })),
  delivered_tokens: t.Nullable(t.Integer({ description: "chat: output tokens written to the client — for a stream, reelay's own count of the text it relayed; for an answer sent whole, `completion_tokens`" })),
  reported_tokens: t.Nullable(t.Integer({ description: "chat: output tokens the upstream reported (null when it reported none, or nothing usable)" })),
  token_source: t.Nullable(t.String({ description: "`upstream`: billed on the upstream's usage; `local`: counted by reelay (a model running inside reelay, or an upstream whose count was missing or not credible); null when nothing was billed" })),
  seconds: t.Nullable(t.Integer({ description: "video: seconds of video billed; null otherwise" })),
  price_basis: t.Nullable(t.String({ description: "video: the price that applied, e.g. `perSecondBySize[1280x720]=100000` or `perSecond=30000` (micro-dollars per second)" })),
  plan: t.Nullable(t.String({ description: "the price plan the request was priced on (null: list prices)" })),
  pricing: t.Nullable(t.Record(t.String(), t.Unknown(), { description: "with a plan: the prices applied (the model's rates after the plan's overrides), the plan's `adjustmentBp` (basis points of a percent applied to the rates not `overridden`)" })),
  cost: t.Integer({ description: "micro-dollars charged (1 USD = 1,000,000); 0 for a failure: the exact price of the usage on these prices, rounded up once" }),
  status: t.Integer({ description: "the HTTP status answered (499: the client went away first); video: 200 completed, 500 failed, 499 cancelled" }),
  disconnected: t.Boolean({ description: "the client closed the connection before the answer ended" }),
  latency_ms: t.Nullable(t.Integer({ description: "request: from arrival to the last byte; video: from submit to the final status" })),
  anomaly: t.Nullable(t.String({ description: "the upstream's usage was not credible (absurd, negative, not a number): what it said, and that reelay's own count, capped to what the request allowed, was billed" })),
  created_at: t.String({ description: "when the row was written (ISO 8601)" }),
});

/** What a client may read about its own account: credits and usage. */
export const accountRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["account"] })
    .use(requireKey(deps))
    .get(
      "/account",
      async ({ principal }) => {
        // this instance's queued settlements land first: a client sees its own requests at once
        await deps.billing.sync();
        const b = await clientBalance(deps.database.db, principal.accountId);
        const budgets = await budgetViews(deps.database.db, principal.accountId, { account: true, keyId: principal.keyId }, deps.billing.now());
        return {
          object: "account" as const, id: principal.accountId, key_prefix: principal.keyPrefix, balance: b.balance, held: b.held, available: b.available, currency: "micro-USD" as const,
          plan: principal.planId ?? null, budgets,
        };
      },
      {
        detail: {
          summary: "Account balance",
          description: "Credits of the calling key's account (integer micro-dollars: 1 USD = 1,000,000). `held`: the worst case of the account's requests and video jobs in flight; `available` = `balance` − `held`, what it can still spend. A request's charge shows here within a second of its response. `budgets`: the calling key's and the account's budgets, each with its current window (what a request may still reserve is the least `remaining` of the windows it counts in, and `available`). `plan`: the price plan the account pays (GET /v1/models shows its prices).",
          security: [{ bearer: [] }],
        },
        response: {
          200: t.Object(
            {
              object: t.Literal("account"), id: t.String(), key_prefix: t.String(), balance: t.Integer(), held: t.Integer(), available: t.Integer(), currency: t.Literal("micro-USD"),
              plan: t.Nullable(t.String()), budgets: t.Array(BudgetView),
            },
            { examples: [{ object: "account", id: "acct_x", key_prefix: "rl-AbCd1234", balance: 5000000, held: 150000, available: 4850000, currency: "micro-USD", plan: null, budgets: [] }] },
          ),
          ...authErrors,
        },
      },
    )
    .get("/usage", async ({ principal, query }) => (await deps.billing.sync(), listUsage(deps.database.db, principal.accountId, { limit: query.limit ?? 50, before: query.before })), {
      query: PageQuery,
      detail: { summary: "List usage records", description: "The account's usage records, newest first (cursor pagination with `before`)", security: [{ bearer: [] }] },
      response: { 200: t.Object({ object: t.Literal("list"), data: t.Array(UsageRecord), has_more: t.Boolean(), next_before: t.Nullable(t.Integer()) }), ...authErrors },
    });
