/** Request and response schemas of the admin API (responses: what publicAccount / publicKey / listLedger return). */
import { t } from "elysia";
import { INT4_MAX, JsonInteger, MAX_CREDITS_PER_OPERATION } from "../../http/schemas.ts";
import { BudgetSpecBody, BudgetView } from "../budgets/model.ts";

/* ---------------------------------------------------------------- requests */

/** A rate-limit override: 0 to 2147483647 (an int4 column), null = the account's or the configured default. */
const LimitValue = (what: string) => t.Optional(t.Nullable(JsonInteger({ minimum: 0, maximum: INT4_MAX, description: `${what}; 0 to ${INT4_MAX}, null: default` })));
export const Limits = {
  requests_per_minute: LimitValue("requests per minute"),
  tokens_per_minute: LimitValue("tokens per minute"),
  concurrent_video_jobs: LimitValue("video jobs running at once"),
};

const Credits = (description: string) => t.Optional(JsonInteger({ minimum: 0, maximum: MAX_CREDITS_PER_OPERATION, description }));

export const CreateAccountBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    // `amount` like grants and adjustments; `credits` is the older name, still accepted
    amount: Credits(`initial credits in micro-dollars, 0 to ${MAX_CREDITS_PER_OPERATION}`),
    credits: Credits("older name of `amount`"),
  },
  { examples: [{ name: "acme", amount: 5000000 }] },
);

export const GrantBody = t.Object(
  {
    amount: JsonInteger({ minimum: 1, maximum: MAX_CREDITS_PER_OPERATION, description: `micro-dollars, 1 to ${MAX_CREDITS_PER_OPERATION}` }),
    reason: t.Optional(t.String({ maxLength: 500 })),
    ref: t.Optional(t.String({ maxLength: 200 })),
  },
  { examples: [{ amount: 10000000, reason: "invoice 42" }] },
);

export const AdjustmentBody = t.Object(
  {
    amount: JsonInteger({ minimum: -MAX_CREDITS_PER_OPERATION, maximum: MAX_CREDITS_PER_OPERATION, description: "signed micro-dollars; refused if the balance would drop below what is held" }),
    reason: t.String({ minLength: 1, maxLength: 500 }),
    ref: t.Optional(t.String({ maxLength: 200 })),
  },
  { examples: [{ amount: -250_000, reason: "refund correction" }] },
);

export const CreateKeyBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    scopes: t.Optional(t.Nullable(t.Array(t.UnionEnum(["chat", "embeddings", "video"]), { maxItems: 3, description: "what the key may call (omit or null: everything)" }))),
    models: t.Optional(t.Nullable(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 1000, description: "model ids this key may use (omit or null: all)" }))),
    ...Limits,
    budgets: t.Optional(t.Array(BudgetSpecBody, { maxItems: 20, description: "the key's budgets (see PUT /admin/keys/{id}/budgets)" })),
  },
  { examples: [{ name: "production", scopes: ["chat", "embeddings"] }] },
);

export const AccountsQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 1000, description: "page size (1–1000)" })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000, description: "accounts to skip (0–1000000)" })),
  search: t.Optional(t.String({ maxLength: 200, description: "an exact account id, or part of the name (case-insensitive)" })),
});

/* --------------------------------------------------------------- responses */

const LimitsView = t.Object({
  requests_per_minute: t.Nullable(t.Integer()),
  tokens_per_minute: t.Nullable(t.Integer()),
  concurrent_video_jobs: t.Nullable(t.Integer()),
});
const noLimits = { requests_per_minute: null, tokens_per_minute: null, concurrent_video_jobs: null };

export const AccountView = t.Object(
  {
    id: t.String(),
    object: t.Literal("account"),
    name: t.String(),
    balance: t.Integer({ description: "micro-dollars" }),
    held: t.Integer({ description: "micro-dollars reserved by open holds" }),
    available: t.Integer({ description: "balance − held" }),
    leased: t.Optional(t.Object({
      idle: t.Integer({ description: "credit instances reserved ahead for the account that no request uses yet, micro-dollars (spendable; in the database's held amount, not in `held` here)" }),
      leases: t.Integer({ description: "open credit leases (one per instance serving the account)" }),
    })),
    limits: LimitsView,
    plan: t.Optional(t.Nullable(t.String({ description: "the price plan the account pays (null: list prices)" }))),
    created_at: t.String(),
  },
  { examples: [{ id: "acct_x8Kd", object: "account", name: "acme", balance: 5_000_000, held: 150_000, available: 4_850_000, limits: noLimits, created_at: "2026-11-21T10:00:00.000Z" }] },
);

export const KeyView = t.Object(
  {
    id: t.String(),
    object: t.Literal("api_key"),
    account_id: t.String(),
    name: t.String(),
    prefix: t.String({ description: "visible start of the key, safe to show and log" }),
    scopes: t.Nullable(t.Array(t.String())),
    allowed_models: t.Nullable(t.Array(t.String())),
    limits: LimitsView,
    created_at: t.Nullable(t.String()),
    last_used_at: t.Nullable(t.String()),
    revoked_at: t.Nullable(t.String()),
    key: t.Optional(t.String({ description: "the key itself: only in the answer that creates or rotates it" })),
    replaces: t.Optional(t.String({ description: "rotate: the id of the revoked key" })),
    budgets: t.Optional(t.Array(BudgetView, { description: "creation with `budgets`: the key's budgets as set" })),
  },
  {
    examples: [
      { id: "key_Qw3r", object: "api_key", account_id: "acct_x8Kd", name: "production", prefix: "rl-AbCd1234", scopes: null, allowed_models: null, limits: noLimits, created_at: "2026-11-21T10:00:00.000Z", last_used_at: null, revoked_at: null, key: "rl-AbCd1234…" },
    ],
  },
);

export const LedgerPage = t.Object(
  {
    object: t.Literal("list"),
    data: t.Array(
      t.Object({
        id: t.Integer(),
        object: t.Literal("ledger_entry"),
        kind: t.String({ description: "grant | hold | release | charge | adjustment | shortfall" }),
        amount: t.Integer({ description: "change to the balance, micro-dollars" }),
        held_change: t.Integer({ description: "change to the held amount" }),
        hold_id: t.Nullable(t.String()),
        ref: t.Nullable(t.String()),
        reason: t.String(),
        created_at: t.String(),
      }),
    ),
    has_more: t.Boolean(),
    next_before: t.Nullable(t.Integer()),
  },
  { examples: [{ object: "list", data: [{ id: 12, object: "ledger_entry", kind: "charge", amount: -150_000, held_change: -150_000, hold_id: "hold_Zx9", ref: "vid_abc", reason: "video preview-motion 5 s", created_at: "2026-11-21T10:05:00.000Z" }], has_more: false, next_before: null }] },
);

export const listOf = <T extends ReturnType<typeof t.Object>>(item: T, example: unknown) =>
  t.Object({ object: t.Literal("list"), data: t.Array(item) }, { examples: [{ object: "list", data: [example] }] });

/* --------------------------------------------------------------- upstreams */

const deploymentExample = {
  name: "vllm-a", weight: 3, max_concurrent: 64, state: "closed", in_flight: 2, requests: 1520, successes: 1511,
  errors: { http_503: 6, connect: 3 }, recent_error_rate: 0, recent_requests: 240, latency_ms: 412.5, open_for_ms: 0, opened: 1,
};

export const DeploymentView = t.Object({
  name: t.String(),
  weight: t.Number({ description: "relative share of the traffic" }),
  max_concurrent: t.Nullable(t.Integer({ description: "requests in flight at once on this instance (null: no bound)" })),
  state: t.Union([t.Literal("closed"), t.Literal("open"), t.Literal("half_open")], { description: "circuit breaker: closed (serving), open (cooling down), half_open (one probe request allowed)" }),
  in_flight: t.Integer({ description: "requests in flight now on this instance" }),
  requests: t.Integer({ description: "attempts since start" }),
  successes: t.Integer(),
  errors: t.Record(t.String(), t.Integer(), { description: "failed attempts by kind: connect, timeout, http_<status>, stream_interrupted, malformed …" }),
  recent_error_rate: t.Nullable(t.Number({ description: "failed share of the attempts in the breaker's window (null: none)" })),
  recent_requests: t.Integer({ description: "attempts in the breaker's window" }),
  latency_ms: t.Nullable(t.Number({ description: "moving average of successful attempts (a stream: to its first event)" })),
  open_for_ms: t.Integer({ description: "open: ms until the half-open probe" }),
  opened: t.Integer({ description: "times the circuit opened" }),
});

export const ModelUpstreams = t.Object({
  model: t.String(),
  plugin: t.String(),
  deployments: t.Array(DeploymentView),
});

export const UpstreamsList = t.Object(
  { object: t.Literal("list"), data: t.Array(ModelUpstreams) },
  { examples: [{ object: "list", data: [{ model: "llama-3.1-8b", plugin: "openai-compatible", deployments: [deploymentExample] }] }] },
);
