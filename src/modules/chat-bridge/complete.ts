/**
 * Other wire formats over the chat pipeline, non-streamed: POST /v1/responses and /v1/completions
 * turn their request into one or more chat calls and run them through the chat module's own steps
 * (prepareChat: model, token budget, credit hold; finishChat: usage checks, settlement, usage row).
 * Only the request and response shapes differ from POST /v1/chat/completions; the money is the same.
 *
 * Several calls (a legacy `prompt` array) are approved first and then run together. If any of them
 * fails, the client gets that error and none of them is charged: a client pays for what it receives,
 * and it receives nothing. (OpenAI's batch answer has no shape for "some of your prompts failed".)
 */
import type { ApiError } from "../../errors.ts";
import type { AppDeps } from "../../deps.ts";
import type { ChatResult as PluginChatResult } from "../../plugin-sdk/index.ts";
import { reportedUsage, type ClosedRequest } from "../chat/close-request.ts";
import { completionText, failChat, traceAnswer, finishAnswer, finishChat, prepareChat, withFallbacks, type ChatCall, type PipelineCall, type PreparedChat } from "../chat/service.ts";

/** What a request was charged for (credible counts; micro-dollars), as its usage row says. */
export interface BilledChat {
  /** every prompt token billed, cache reads and writes included */
  promptTokens: number;
  completionTokens: number;
  /** of promptTokens: read from the upstream's prompt cache, billed at the model's cache-read price */
  cachedTokens: number;
  /** of promptTokens: written to the upstream's prompt cache, billed at its cache-write price */
  cacheWriteTokens: number;
  cost: number;
}

/** The counts of a closed request (nothing billed yet without one). */
export function billedChat(closed?: ClosedRequest): BilledChat {
  if (!closed) return { promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, cost: 0 };
  return { promptTokens: closed.promptTokens, completionTokens: closed.completionTokens, cachedTokens: closed.cachedTokens, cacheWriteTokens: closed.cacheWriteTokens, cost: closed.cost };
}

export interface ChatResult {
  /** the plugin's chat.completion object, `model` set to reelay's model id */
  completion: any;
  billed: BilledChat;
  /** the upstream's own usage object as received (cached / reasoning token details), if any */
  upstreamUsage: Record<string, any> | undefined;
}

/** Nothing was produced (or delivered) for this call: give its hold back and record why. */
function release(call: ChatCall, p: PreparedChat, status: number, errorCode: string | null) {
  finishChat(call, p, {
    status, charge: false, reported: { prompt: undefined, completion: undefined }, local: { prompt: 0, completion: 0 },
    deliveredTokens: 0, disconnected: call.signal.aborted, errorCode,
  });
}

/** Run `calls` (one per prompt) as chat completions; returns results in order and the token-budget headers. */
export async function completeViaChat(deps: AppDeps, calls: ChatCall[]): Promise<{ results: ChatResult[]; headers: Record<string, string> }> {
  const prepared: PreparedChat[] = [];
  try {
    for (const call of calls) prepared.push(await prepareChat(deps, call));
  } catch (err) {
    const e = err as Partial<ApiError>;
    prepared.forEach((p, i) => release(calls[i]!, p, e.status ?? 500, e.code ?? "not_started"));
    throw err;
  }
  const settled = await Promise.allSettled(prepared.map((p, i) =>
    withFallbacks(deps, calls[i]!, p, (p) => p.chat.complete(p.forwarded, { signal: calls[i]!.signal, requestId: calls[i]!.requestId, allowed: p.allowed, routed: p.routed, trace: p.trace }))));
  if (settled.some((s) => s.status === "rejected")) {
    let first: ApiError | undefined;
    settled.forEach((s, i) => {
      const call = calls[i]!;
      const p = prepared[i]!;
      if (s.status === "rejected") first ??= failChat(deps, call, p, s.reason, call.signal.aborted);
    });
    settled.forEach((s, i) => {
      if (s.status === "fulfilled") release(calls[i]!, prepared[i]!, first!.status, "batch_failed");
    });
    throw first!;
  }
  const results = settled.map((s, i) => finishCompletion(deps, calls[i]!, prepared[i]!, (s as PromiseFulfilledResult<PluginChatResult>).value));
  return { results, headers: prepared.at(-1)!.headers };
}

/** A chat completion is in: settle it as chat does (the plugin's own usage, checked by the host, else the upstream's report it relayed), `model` reelay's id. */
export function finishCompletion(deps: AppDeps, call: PipelineCall, p: PreparedChat<unknown>, value: PluginChatResult): ChatResult {
  const completion: any = value.completion;
  const usage = value.usage ?? value.upstreamUsage;
  if (call.trace) traceAnswer(call.trace, completion);
  const billed = finishAnswer(deps, call, p, reportedUsage(usage), () => completionText(completion));
  if (completion && typeof completion === "object") completion.model = p.model.id;
  const upstreamUsage = (completion?.usage ?? usage) as Record<string, any> | undefined;
  return { completion, billed: billedChat(billed), upstreamUsage };
}
