/** Shared OpenAPI/validation schemas. */
import { t } from "elysia";

export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      message: t.String(),
      type: t.String(),
      param: t.Union([t.String(), t.Null()]),
      code: t.Union([t.String(), t.Null()]),
    }),
  },
  { examples: [{ error: { message: "Invalid API key provided.", type: "authentication_error", param: null, code: "invalid_api_key" } }] },
);

/**
 * 402: not enough credits (`insufficient_quota`) or a budget window that cannot take the request
 * (`budget_exceeded`, with `resets_at` and the window as extra fields of the error object, and
 * Retry-After until the window resets). docs/budgets-and-plans.md.
 */
export const PaymentRequired = t.Object(
  {
    error: t.Object({
      message: t.String(),
      type: t.Literal("insufficient_quota"),
      param: t.Null(),
      code: t.UnionEnum(["insufficient_quota", "budget_exceeded"]),
      resets_at: t.Optional(t.Nullable(t.String({ description: "budget_exceeded: when the window resets (null: a lifetime budget, never)" }))),
      budget: t.Optional(t.Object({
        id: t.String(),
        window: t.String(),
        scope: t.UnionEnum(["account", "key"]),
        key_id: t.Nullable(t.String()),
        period: t.UnionEnum(["day", "week", "month", "lifetime"]),
        timezone: t.String(),
        models: t.Nullable(t.Array(t.String())),
        limit: t.Integer({ description: "micro-dollars per window" }),
        remaining: t.Integer({ description: "what the window could still reserve, micro-dollars (less than this request's worst case)" }),
      }, { description: "budget_exceeded: the window that refused (the tightest of the key's and the account's)" })),
    }),
  },
  {
    description: "Not enough credits, or a budget exceeded. Retry-After: until the budget's window resets; 1 when other instances are giving reserved credit back.",
    examples: [{
      error: {
        message: "Budget exceeded: key key_Qw3r's daily budget (UTC) of $5.000000 (5000000 micro-dollars) has $0.000100 (100 micro-dollars) left; this request needs $0.000153 (153 micro-dollars). It resets at 2026-03-08T00:00:00.000Z.",
        type: "insufficient_quota", param: null, code: "budget_exceeded", resets_at: "2026-03-08T00:00:00.000Z",
        budget: { id: "bud_7fQm", window: "bud_7fQm@1772841600", scope: "key", key_id: "key_Qw3r", period: "day", timezone: "UTC", models: null, limit: 5_000_000, remaining: 100 },
      },
    }],
  },
);

/** the usual error responses of an authenticated route, for the OpenAPI document */
export const authErrors = { 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope, 500: ErrorEnvelope };

/**
 * A strict JSON integer in [minimum, maximum]. Elysia's `t.Integer` also accepts numeric strings
 * ("5") and has no range by default; every number reelay reads has a documented range, checked
 * before use (an unbounded `n: 1e300` or a limit of 3e9 in an int4 column was a 500).
 */
export const JsonInteger = (o: { minimum: number; maximum: number; description?: string; error?: string; default?: number }) => t.Number({ multipleOf: 1, ...o });

/** Newest-first pages of usage records and ledger entries (accounts/usage-and-ledger.ts) */
export const PageQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 500, default: 50, description: "page size (1–500)" })),
  before: t.Optional(t.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "cursor: the `next_before` of the previous page (1 to 2^53−1)" })),
});

/** PostgreSQL `integer` columns (rate limits, token counts) */
export const INT4_MAX = 2_147_483_647;
/** One grant or adjustment: at most 10^15 micro-dollars (1 billion USD), far from 2^53 (exact in JS) and int8 */
export const MAX_CREDITS_PER_OPERATION = 1_000_000_000_000_000;
