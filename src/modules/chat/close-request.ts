/**
 * The end of every chat request: turn what the upstream reported and what reelay counted into
 * credible usage (usage-sanity.ts), then settle or release the request's charge.
 */
import { credibleCount, joinAnomalies, type Charge } from "../../billing/index.ts";

/** The most a request may be billed for, in tokens. */
export interface ChatAllowance {
  prompt: number;
  completion: number;
}

export interface ChatOutcome {
  /** HTTP status the client got (200 for a stream that failed after its headers) */
  status: number;
  /** false: nothing is charged and the worst case is given back (no token was produced or delivered) */
  charge: boolean;
  /** the upstream's numbers as received (anything at all; undefined when it reported none) */
  reported: { prompt: unknown; completion: unknown };
  /** reelay's own counts: the prompt estimate, and the completion tokens it can see (lazily counted) */
  local: { prompt: number; completion: number | (() => number) };
  /** completion tokens actually written to the client (null: all of the billed completion, a non-streamed reply) */
  deliveredTokens: number | null;
  disconnected: boolean;
  errorCode: string | null;
}

/**
 * Settle or release; returns the micro-dollars charged. `inProcess`: the plugin counts usage with
 * the model's own tokenizer inside reelay (ChatCapability.countsTokens), so even its credible
 * report is a local count.
 */
export function closeRequest(charge: Charge, allowed: ChatAllowance, out: ChatOutcome, inProcess = false): { cost: number; promptTokens: number; completionTokens: number; anomaly: string | null } {
  const reportedCompletion = typeof out.reported.completion === "number" && Number.isSafeInteger(out.reported.completion) && out.reported.completion >= 0 ? out.reported.completion : null;
  if (!out.charge) {
    charge.release({ status: out.status, deliveredTokens: out.deliveredTokens, reportedTokens: reportedCompletion, tokenSource: null, disconnected: out.disconnected, errorCode: out.errorCode });
    return { cost: 0, promptTokens: 0, completionTokens: 0, anomaly: null };
  }
  const prompt = credibleCount("prompt_tokens", out.reported.prompt, { local: out.local.prompt, max: allowed.prompt });
  const completion = credibleCount("completion_tokens", out.reported.completion, { local: out.local.completion, max: allowed.completion });
  const anomaly = joinAnomalies(prompt.anomaly, completion.anomaly);
  const cost = charge.settle({
    status: out.status,
    usage: { promptTokens: prompt.tokens, completionTokens: completion.tokens },
    deliveredTokens: out.deliveredTokens ?? completion.tokens,
    reportedTokens: reportedCompletion,
    tokenSource: inProcess ? "local" : completion.source,
    disconnected: out.disconnected,
    errorCode: out.errorCode,
    anomaly,
  });
  return { cost, promptTokens: prompt.tokens, completionTokens: completion.tokens, anomaly };
}
