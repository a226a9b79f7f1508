/**
 * Legacy text completions (POST /v1/completions) over chat models: each prompt is sent as one user
 * message through the chat pipeline (chat-bridge/: same hold, limits and settlement as
 * /v1/chat/completions; usage rows marked /v1/completions) and the answers come back in the
 * text_completion shape. A prompt array runs one chat call per prompt, together; their usage rows
 * are `<request id>` for the first prompt and `<request id>.<i>` for the others.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { randomId } from "../../ids.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import type { RequestFacts, RequestTrace } from "../../ops/hooks.ts";
import { completeViaChat, type BilledChat } from "../chat-bridge/complete.ts";
import { streamViaChat, type ChatStreamRewriter, type StreamError } from "../chat-bridge/stream.ts";
import type { ChatCompletionRequest } from "../chat/model.ts";
import type { BatchLineCall, ChatCall } from "../chat/service.ts";
import { DEFAULT_MAX_TOKENS, type CompletionRequest } from "./model.ts";

export const ROUTE = "/v1/completions";

/** Read here, never forwarded as they are. */
const LEGACY_ONLY = new Set(["prompt", "suffix", "echo", "logprobs", "best_of", "stream_options", "max_tokens", "stream"]);

export interface CompletionCall {
  principal: Principal;
  body: CompletionRequest & Record<string, unknown>;
  requestId: string;
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
  /** the request's trace (deps.tracing.of; undefined when tracing is off) */
  trace?: RequestTrace;
  /** a batch line (modules/batches): billed at the batch price through its own ledger, usage rows on route "batch" */
  batch?: BatchLineCall;
}

const unsupported = (message: string, param: string) => badRequest(message, param, "unsupported_parameter");

function refuseUnsupported(b: CompletionRequest): void {
  if (b.echo === true) throw unsupported("'echo': only false — a chat model does not return the prompt with its answer.", "echo");
  if (typeof b.suffix === "string" && b.suffix !== "") throw unsupported("'suffix' is not supported: chat models do not fill in text between a prompt and a suffix.", "suffix");
  if (b.logprobs !== undefined && b.logprobs !== null) throw unsupported("'logprobs' is not supported on /v1/completions; use /v1/chat/completions with logprobs: true.", "logprobs");
  if (b.best_of !== undefined && b.best_of !== null && b.best_of !== 1) throw unsupported("'best_of': only 1 — send n for several completions.", "best_of");
}

/** The chat request for one prompt. */
function chatBody(b: CompletionRequest & Record<string, unknown>, prompt: string): Record<string, unknown> {
  const chat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (!LEGACY_ONLY.has(k) && v !== null) chat[k] = v; // temperature, stop, n, seed, vendor extras …
  chat.messages = [{ role: "user", content: prompt }];
  chat.max_tokens = b.max_tokens ?? DEFAULT_MAX_TOKENS;
  if (b.stream === true) chat.stream = true;
  return chat;
}

/** Chat parameter names in plugin errors are this route's names too, except the messages the prompt became. */
function completionsError(err: unknown): unknown {
  if (!(err instanceof ApiError) || !err.param || !/^messages(\[|\.|$)/.test(err.param)) return err;
  return new ApiError(err.status, err.type, `${err.message} (the prompt is sent to the model as a user message)`, { code: err.code, param: "prompt", headers: err.headers, cause: err });
}

export async function createCompletion(deps: AppDeps, call: CompletionCall): Promise<Response> {
  const b = call.body;
  refuseUnsupported(b);
  const prompts = typeof b.prompt === "string" ? [b.prompt] : b.prompt;
  const id = randomId("cmpl", 24).replace("_", "-");
  const created = Math.floor(Date.now() / 1000);
  const head = { id, object: "text_completion" as const, created, model: b.model };
  const chatCall = (prompt: string, i: number): ChatCall => ({
    principal: call.principal, body: chatBody(b, prompt) as ChatCompletionRequest, requestId: i === 0 ? call.requestId : `${call.requestId}.${i}`,
    signal: call.signal, startedAt: call.startedAt, route: call.batch ? "batch" : ROUTE, batch: call.batch, trace: call.trace, operation: "text_completion",
    // a prompt array has one settlement per prompt: the request log gets their sum below
    note: (facts) => (prompts.length === 1 ? call.note(facts) : facts.model ? call.note({ model: facts.model }) : undefined),
  });
  try {
    if (b.stream === true) {
      if (prompts.length > 1) throw unsupported(`'prompt': a streamed request takes one prompt (got ${prompts.length}); stream each prompt in its own request.`, "prompt");
      return await streamViaChat(deps, chatCall(prompts[0]!, 0), new CompletionChunks(head, b.stream_options?.include_usage === true));
    }
    const { results, headers } = await completeViaChat(deps, prompts.map(chatCall));
    const n = b.n ?? 1;
    const choices = results.flatMap(({ completion }, p) =>
      (Array.isArray(completion?.choices) ? completion.choices : []).map((c: any, j: number) => ({
        text: typeof c?.message?.content === "string" ? c.message.content : "",
        index: p * n + (Number.isSafeInteger(c?.index) ? c.index : j),
        logprobs: null,
        finish_reason: c?.finish_reason ?? null,
      })),
    );
    const usage = sum(results.map((r) => r.billed));
    if (prompts.length > 1) call.note({ promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cost: usage.cost });
    const { cost: _, ...shown } = usage;
    return new Response(JSON.stringify({ ...head, choices, usage: shown }), { headers: { "content-type": "application/json", ...headers } });
  } catch (err) {
    throw completionsError(err);
  }
}

function sum(billed: BilledChat[]) {
  let prompt = 0, completion = 0, cost = 0;
  for (const b of billed) { prompt += b.promptTokens; completion += b.completionTokens; cost += b.cost; }
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cost };
}

/** chat.completion.chunk → text_completion chunk, as OpenAI streams this API. */
class CompletionChunks implements ChatStreamRewriter {
  constructor(private readonly head: { id: string; object: "text_completion"; created: number; model: string }, private readonly wantsUsage: boolean) {}

  private data(json: unknown): string {
    return `data: ${JSON.stringify(json)}\n\n`;
  }

  chunk(json: any): string {
    const choices = (Array.isArray(json?.choices) ? json.choices : [])
      .filter((c: any) => (typeof c?.delta?.content === "string" && c.delta.content !== "") || c?.finish_reason)
      .map((c: any) => ({ text: typeof c.delta?.content === "string" ? c.delta.content : "", index: Number.isSafeInteger(c.index) ? c.index : 0, logprobs: null, finish_reason: c.finish_reason ?? null }));
    return choices.length ? this.data({ ...this.head, choices }) : "";
  }

  done(billed: BilledChat): string {
    const usage = { prompt_tokens: billed.promptTokens, completion_tokens: billed.completionTokens, total_tokens: billed.promptTokens + billed.completionTokens };
    return (this.wantsUsage ? this.data({ ...this.head, choices: [], usage }) : "") + "data: [DONE]\n\n";
  }

  failed(error: StreamError): string {
    return this.data({ error });
  }
}
