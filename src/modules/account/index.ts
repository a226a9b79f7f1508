import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { budgetViews, clientBalance } from "../../billing/index.ts";
import { BudgetView } from "../budgets/model.ts";
import { authErrors, PageQuery } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { listUsage } from "../../accounts/usage-and-ledger.ts";

export const UsageRecord = t.Object({
  id: t.Integer(),
  object: t.Literal("usage_record"),
  ref: t.String(),
  kind: t.String(),
  route: t.Nullable(t.String({ description: "the API route called: /v1/chat/completions, /v1/responses, /v1/completions, /v1/embeddings (null for video jobs)" })),
  model: t.String(),
  prompt_tokens: t.Nullable(t.Integer({ description: "every prompt token billed, cached and cache-write tokens included" })),
  cached_tokens: t.Nullable(t.Integer({ description: "of prompt_tokens: read from the upstream's prompt cache, billed at the model's cached-input price (null: none)" })),
  cache_write_tokens: t.Nullable(t.Integer({ description: "of prompt_tokens: written to the upstream's prompt cache, billed at the model's cache-write price (null: none)" })),
  completion_tokens: t.Nullable(t.Integer()),
  delivered_tokens: t.Nullable(t.Integer()),
  reported_tokens: t.Nullable(t.Integer()),
  token_source: t.Nullable(t.String()),
  seconds: t.Nullable(t.Integer()),
  price_basis: t.Nullable(t.String({ description: "video: the price that applied, e.g. `perSecondBySize[1280x720]=100000` or `perSecond=30000` (micro-dollars per second)" })),
  plan: t.Nullable(t.String({ description: "the price plan the request was priced on (null: list prices)" })),
  pricing: t.Nullable(t.Record(t.String(), t.Unknown(), { description: "with a plan: the prices applied (the model's rates after the plan's overrides), the plan's `adjustmentBp` (basis points of a percent applied to the rates not `overridden`)" })),
  cost: t.Integer({ description: "micro-dollars: the exact price of the usage on these prices, rounded up once" }),
  status: t.Integer(),
  disconnected: t.Boolean(),
  latency_ms: t.Nullable(t.Integer()),
  anomaly: t.Nullable(t.String({ description: "the upstream's usage was not credible (absurd, negative, not a number): what it said, and that reelay's own count, capped to what the request allowed, was billed" })),
  created_at: t.String(),
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
