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
