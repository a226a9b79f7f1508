/**
 * One attempt of one delivery: sign, POST through the SSRF guard, and say what the answer means.
 * 2xx = delivered; 410 Gone = the receiver wants no more (its endpoint is disabled); anything else
 * (other statuses, refused connections, timeouts, a target that now resolves somewhere private)
 * is retried later.
 */
import { safePost, type TargetPolicy } from "../../net/safe-post.ts";
import { SafeFetchError } from "../../net/safe-fetch.ts";
import type { ClaimedDelivery } from "./deliveries.ts";
import { SecretBoxError, type SecretBox } from "./secret-box.ts";
import { webhookHeaders } from "./signing.ts";
import type { TraceSpan } from "../../ops/hooks.ts";

export type AttemptOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "gone"; status: 410 }
  | { kind: "retry"; status: number | null; error: string }
  | { kind: "give_up"; error: string };

export interface AttemptContext {
  box: SecretBox | null;
  policy: TargetPolicy;
  timeoutMs: number;
  signal?: AbortSignal;
  /** the attempt's span (tracing on): the POST carries its W3C traceparent, so a receiver that traces joins the job's trace */
  trace?: TraceSpan["upstream"];
}

const USER_AGENT = "reelay-webhooks/1 (+https://www.standardwebhooks.com)";

export async function sendAttempt(ctx: AttemptContext, d: ClaimedDelivery): Promise<AttemptOutcome> {
  if (!ctx.box) return { kind: "retry", status: null, error: "webhooks are not configured on this instance: set REELAY_SECRET_KEY" };
  if (!d.secretCiphertext) return { kind: "give_up", error: "the signing secret no longer exists" };
  let secret: string;
  try {
    secret = ctx.box.open(d.secretCiphertext, d.endpointId ?? d.accountId);
  } catch (e) {
    // an operator problem (wrong REELAY_SECRET_KEY on this instance): keep retrying, it may be fixed
    if (e instanceof SecretBoxError) return { kind: "retry", status: null, error: `cannot open the signing secret: ${e.message}` };
    throw e;
  }
  const headers = { ...ctx.trace?.outgoing(d.url), "content-type": "application/json", "user-agent": USER_AGENT, ...webhookHeaders(secret, d.id, d.payload) };
  try {
    const { status } = await safePost(d.url, { body: d.payload, headers, timeoutMs: ctx.timeoutMs, policy: ctx.policy, signal: ctx.signal });
    if (status >= 200 && status <= 299) return { kind: "delivered", status };
    if (status === 410) return { kind: "gone", status };
    return { kind: "retry", status, error: `the receiver answered HTTP ${status}` };
  } catch (e) {
    if (ctx.signal?.aborted) throw e;
    if (e instanceof SafeFetchError) return { kind: "retry", status: null, error: `${e.code}: ${e.message}` };
    return { kind: "retry", status: null, error: (e as Error)?.message ?? String(e) };
  }
}
