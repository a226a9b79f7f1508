/**
 * Requests-per-minute and tokens-per-minute limits, per API key AND per account, on top of the
 * limiters of this folder (GCRA: `limit` units back-to-back, then one every 60 s / limit).
 *
 * Limits: the key's bucket uses the key override ?? account override ?? config default (what the
 * admin API shows as the key's limit). The account's bucket, shared by all its keys, uses the account
 * override ?? config default, so a key override can lower one key's rate below the account's, and an
 * account override caps all its keys together. A limit of 0 means "no limit" (the config's integer
 * settings accept 0; the limiter needs >= 1).
 *
 * Both buckets are asked in parallel (one Redis round trip of latency, not two). The price: when one
 * bucket refuses, the other has already counted the unit, so a refused request can still use up a
 * unit of the other bucket; limits err on the strict side by at most the refused requests.
 *
 * Batch lines (modules/batches) count in buckets of their own, at `share` % of each limit (the
 * operator's REELAY_BATCH_SHARE): a key's batch uses at most that share of its limits, and its live
 * requests keep their whole limits, exactly as without a batch.
 */
import type { Principal } from "../auth/authenticate-key.ts";
import type { RateLimitDefaults } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { ConsumeResult, RateLimiter } from "./index.ts";

/** A batch line's limits: its own buckets, at `share` % (1–100) of each of the key's and account's limits. */
export interface LimitShare {
  share: number;
}

export interface RequestLimit {
  /**
   * Count one request against the key's (and account's) requests-per-minute limit. Throws an
   * ApiError 429 (with Retry-After and x-ratelimit-*-requests headers) when over; otherwise returns
   * the x-ratelimit-*-requests headers to add to the response. `batch`: a batch line's share.
   */
  admit(principal: Principal, batch?: LimitShare): Promise<Record<string, string>>;
}

export interface TokenBudget {
  /**
   * Count `tokens` against the key's (and account's) tokens-per-minute limit. Throws an ApiError
   * 429 (with Retry-After and x-ratelimit-*-tokens headers) when over; otherwise returns the
   * x-ratelimit-*-tokens headers to add to the response. `batch`: a batch line's share.
   */
  consume(principal: Principal, tokens: number, batch?: LimitShare): Promise<Record<string, string>>;
}

/** The refusals this module made: when each fits again, and whether it ever can (a request larger than the limit never does). */
const refusals = new WeakMap<ApiError, { retryAfterMs: number; tooLarge: boolean }>();

/** `err` is a 429 of these limits that a wait can cure: the ms to wait (its Retry-After, exact); otherwise null. */
export function retryAfterOf(err: unknown): number | null {
  const r = err instanceof ApiError ? refusals.get(err) : undefined;
  return r && !r.tooLarge ? r.retryAfterMs : null;
}

const WINDOW_MS = 60_000;

export type LimitKind = "requests" | "tokens";
export type LimitScope = "key" | "account";

interface Bucket {
  scope: LimitScope;
  key: string;
  limit: number;
}

export interface RateLimits {
  requestLimit: RequestLimit;
  tokenBudget: TokenBudget;
}

export function createRateLimits(opts: {
  limiter: RateLimiter;
  defaults: RateLimitDefaults;
  onReject?: (kind: LimitKind, scope: LimitScope) => void;
}): RateLimits {
  const { limiter, defaults } = opts;
  // A principal's buckets, worked out once per principal object (KeyAuthenticator hands out the same
  // object for its cache TTL): the key strings and limits are not rebuilt on every request.
  // (a batch share's buckets are kept under "<kind>@<share>")
  const plans = new WeakMap<Principal, Record<string, Bucket[]>>();
  const bucketsOf = (kind: LimitKind, principal: Principal, batch?: LimitShare) => {
    let plan = plans.get(principal);
    if (!plan) plans.set(principal, (plan = { requests: buckets("requests", principal), tokens: buckets("tokens", principal) }));
    if (!batch) return plan[kind];
    const name = `${kind}@${batch.share}`;
    return (plan[name] ??= buckets(kind, principal).map((b) => ({ ...b, key: `batch:${b.key}`, limit: Math.max(1, Math.floor((b.limit * batch.share) / 100)) })));
  };

  function buckets(kind: LimitKind, principal: Principal): Bucket[] {
    const fallback = kind === "requests" ? defaults.requestsPerMinute : defaults.tokensPerMinute;
    const keyLimit = (kind === "requests" ? principal.limits.rpm : principal.limits.tpm) ?? fallback;
    const accountLimit = (kind === "requests" ? principal.accountLimits?.rpm : principal.accountLimits?.tpm) ?? fallback;
    const bucket = kind === "requests" ? "rpm" : "tpm";
    const out: Bucket[] = [];
    if (keyLimit > 0) out.push({ scope: "key", key: `${bucket}:key:${principal.keyId}`, limit: keyLimit });
    if (accountLimit > 0) out.push({ scope: "account", key: `${bucket}:acct:${principal.accountId}`, limit: accountLimit });
    return out;
  }

  async function consume(kind: LimitKind, principal: Principal, cost: number, batch?: LimitShare): Promise<Record<string, string>> {
    const [first, second] = bucketsOf(kind, principal, batch);
    if (!first) return {};
    // both buckets are asked at once (one Redis round trip of latency when both need one)
    const pending = second ? limiter.consume(second.key, cost, second.limit, WINDOW_MS) : null;
    let a: ConsumeResult;
    try {
      a = await limiter.consume(first.key, cost, first.limit, WINDOW_MS);
    } catch (err) {
      pending?.catch(() => {}); // already failing: the second answer no longer matters
      throw err;
    }
    const b = pending ? await pending : null;
    if (!a.allowed || (b && !b.allowed)) {
      const [bucket, r] = !a.allowed ? [first, a] : [second!, b!];
      opts.onReject?.(kind, bucket.scope);
      throw rateLimited(kind, bucket.scope, principal, r, cost, batch);
    }
    // report the bucket closest to refusing, as a client pacing itself needs that one
    return rateLimitHeaders(kind, b && b.remaining < a.remaining ? b : a);
  }

  return {
    requestLimit: { admit: (principal, batch) => consume("requests", principal, 1, batch) },
    tokenBudget: {
      consume: (principal, tokens, batch) => consume("tokens", principal, Math.max(0, Math.ceil(tokens)), batch),
    },
  };
}

export function rateLimitHeaders(kind: LimitKind, r: ConsumeResult): Record<string, string> {
  return {
    [`x-ratelimit-limit-${kind}`]: String(r.limit),
    [`x-ratelimit-remaining-${kind}`]: String(r.remaining),
    [`x-ratelimit-reset-${kind}`]: formatDuration(r.resetMs),
  };
}

function rateLimited(kind: LimitKind, scope: LimitScope, principal: Principal, r: ConsumeResult, cost: number, batch?: LimitShare): ApiError {
  const retryAfter = Math.max(1, Math.ceil(r.resetMs / 1000));
  const unit = kind === "requests" ? "requests per minute (RPM)" : "tokens per minute (TPM)";
  const who = (scope === "key" ? `API key ${principal.keyPrefix}…` : "your account") + (batch ? ` (its batches' share, ${batch.share} %)` : "");
  const message =
    cost > r.limit
      ? `Request too large: it needs ${cost} tokens but the limit on ${unit} for ${who} is ${r.limit}.`
      : `Rate limit reached for ${unit} on ${who}: limit ${r.limit}. Retry after ${retryAfter} s.`;
  const err = new ApiError(429, "rate_limit_error", message, {
    code: kind === "requests" ? "rate_limit_exceeded" : "tokens_rate_limit_exceeded",
    headers: { "retry-after": String(retryAfter), ...rateLimitHeaders(kind, r) },
  });
  refusals.set(err, { retryAfterMs: r.resetMs, tooLarge: cost > r.limit });
  return err;
}

/** OpenAI's (Go's) duration format: "20ms", "1s", "6.5s", "6m0s", "1h2m3s". */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total < 1000) return `${total}ms`;
  const h = Math.floor(total / 3_600_000);
  const m = Math.floor((total % 3_600_000) / 60_000);
  const sMs = total % 60_000;
  const s = sMs % 1000 === 0 ? String(sMs / 1000) : (sMs / 1000).toFixed(3).replace(/0+$/, "");
  return (h ? `${h}h` : "") + (h || m ? `${m}m` : "") + `${s}s`;
}
