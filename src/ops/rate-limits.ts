/**
 * Requests-per-minute and tokens-per-minute limits, per API key AND per account, on top of the
 * rate-limit library (GCRA: `limit` units back-to-back, then one every 60 s / limit).
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
 */
import type { Principal } from "../auth/authenticate-key.ts";
import type { RateLimitDefaults } from "../config.ts";
import { ApiError } from "../errors.ts";
import type { ConsumeResult, RateLimiter } from "../rate-limit/index.ts";
import type { RequestLimit, TokenBudget } from "./hooks.ts";

const WINDOW_MS = 60_000;

export type LimitKind = "requests" | "tokens";
export type LimitScope = "key" | "account";

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

  async function consume(kind: LimitKind, principal: Principal, cost: number): Promise<Record<string, string>> {
    const fallback = kind === "requests" ? defaults.requestsPerMinute : defaults.tokensPerMinute;
    const keyLimit = (kind === "requests" ? principal.limits.rpm : principal.limits.tpm) ?? fallback;
    const accountLimit = (kind === "requests" ? principal.accountLimits?.rpm : principal.accountLimits?.tpm) ?? fallback;
    const bucket = kind === "requests" ? "rpm" : "tpm";
    const buckets: Array<{ scope: LimitScope; key: string; limit: number }> = [];
    if (keyLimit > 0) buckets.push({ scope: "key", key: `${bucket}:key:${principal.keyId}`, limit: keyLimit });
    if (accountLimit > 0) buckets.push({ scope: "account", key: `${bucket}:acct:${principal.accountId}`, limit: accountLimit });
    if (buckets.length === 0) return {};

    const results = await Promise.all(buckets.map((b) => limiter.consume(b.key, cost, b.limit, WINDOW_MS)));
    const refused = results.findIndex((r) => !r.allowed);
    if (refused >= 0) {
      const b = buckets[refused]!;
      const r = results[refused]!;
      opts.onReject?.(kind, b.scope);
      throw rateLimited(kind, b.scope, principal, r, cost);
    }
    // report the bucket closest to refusing, as a client pacing itself needs that one
    let tightest = 0;
    for (let i = 1; i < results.length; i++) if (results[i]!.remaining < results[tightest]!.remaining) tightest = i;
    return rateLimitHeaders(kind, results[tightest]!);
  }

  return {
    requestLimit: { admit: (principal) => consume("requests", principal, 1) },
    tokenBudget: {
      consume: (principal, tokens) => consume("tokens", principal, Math.max(0, Math.ceil(tokens))),
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

function rateLimited(kind: LimitKind, scope: LimitScope, principal: Principal, r: ConsumeResult, cost: number): ApiError {
  const retryAfter = Math.max(1, Math.ceil(r.resetMs / 1000));
  const unit = kind === "requests" ? "requests per minute (RPM)" : "tokens per minute (TPM)";
  const who = scope === "key" ? `API key ${principal.keyPrefix}…` : "your account";
  const message =
    cost > r.limit
      ? `Request too large: it needs ${cost} tokens but the limit on ${unit} for ${who} is ${r.limit}.`
      : `Rate limit reached for ${unit} on ${who}: limit ${r.limit}. Retry after ${retryAfter} s.`;
  return new ApiError(429, "rate_limit_error", message, {
    code: kind === "requests" ? "rate_limit_exceeded" : "tokens_rate_limit_exceeded",
    headers: { "retry-after": String(retryAfter), ...rateLimitHeaders(kind, r) },
  });
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
