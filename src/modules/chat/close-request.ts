/**
 * The end of every chat request: settle (or release) its hold and write its usage record in one
 * statement, so a usage row exists exactly when the money moved.
 */
import { release, settle } from "../../billing/index.ts";
import type { Db } from "../../db/index.ts";
import type { UsageFacts } from "../../usage/record-usage.ts";
import type { ModelPricing } from "../../plugin-sdk/index.ts";

/** Cost in integer micro-dollars, rounded up once over the whole request (rates are per million tokens). */
export function chatCost(pricing: ModelPricing, promptTokens: number, completionTokens: number): number {
  return Math.ceil((promptTokens * (pricing.inputPerMillion ?? 0) + completionTokens * (pricing.outputPerMillion ?? 0)) / 1_000_000);
}

export interface OpenRequest {
  holdId: string;
  accountId: string;
  keyId: string;
  ref: string;
  model: string;
  plugin: string;
  pricing: ModelPricing;
  startedAt: number;
}

export interface ChatOutcome {
  /** HTTP status the client got (200 for a stream that failed after its headers) */
  status: number;
  /** false: nothing is charged and the hold is released (no token was produced or delivered) */
  charge: boolean;
  promptTokens: number;
  completionTokens: number;
  deliveredTokens: number | null;
  reportedTokens: number | null;
  tokenSource: "upstream" | "local" | null;
  disconnected: boolean;
  errorCode: string | null;
}

/** Returns the micro-dollars actually charged. */
export async function closeRequest(db: Db, req: OpenRequest, out: ChatOutcome): Promise<number> {
  const cost = out.charge ? chatCost(req.pricing, out.promptTokens, out.completionTokens) : 0;
  const reason = `chat ${req.model}`;
  const usage: UsageFacts = {
    accountId: req.accountId,
    keyId: req.keyId,
    ref: req.ref,
    kind: "chat",
    model: req.model,
    promptTokens: out.charge ? out.promptTokens : null,
    completionTokens: out.charge ? out.completionTokens : null,
    deliveredTokens: out.deliveredTokens,
    reportedTokens: out.reportedTokens,
    tokenSource: out.tokenSource,
    status: out.status,
    disconnected: out.disconnected,
    latencyMs: Math.round(performance.now() - req.startedAt),
    plugin: req.plugin,
    errorCode: out.errorCode,
  };
  // One autocommitted statement each: the money and the usage row move together.
  if (out.charge) return (await settle(db, req.holdId, cost, reason, { usage })).charged;
  await release(db, req.holdId, `${reason}: ${out.errorCode ?? "no tokens produced"}`, { usage });
  return 0;
}
