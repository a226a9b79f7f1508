/**
 * Chat completions: resolve the model, clamp output limits, hold the worst case, call the plugin,
 * settle on the real usage. Streaming continues in relay-stream.ts.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { hold } from "../../billing/index.ts";
import type { AppDeps } from "../../deps.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import type { RequestFacts } from "../../ops/hooks.ts";
import type { ChatCapability, TokenUsage } from "../../plugin-sdk/index.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { countTextTokens, estimateChatRequestTokens } from "../../text/tokens.ts";
import { chatCost, closeRequest, type ChatOutcome, type OpenRequest } from "./close-request.ts";
import type { ChatCompletionRequest } from "./model.ts";
import { clientErrorFrom } from "../../http/plugin-errors.ts";

/**
 * Output tokens held when neither the client nor the model config bounds the reply (and the model
 * has no context length either). A reply longer than this is still billed in full from the
 * account's available credits at settlement (never below zero; see billing.settle).
 */
export const DEFAULT_HOLD_OUTPUT_TOKENS = 4096;

/** What the controller hands the service: no Elysia context, only plain values. */
export interface ChatCall {
  principal: Principal;
  body: ChatCompletionRequest;
  requestId: string;
  /** aborts when the client goes away */
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
}

export interface PreparedChat {
  model: RegisteredModel;
  chat: ChatCapability;
  /** the client's body with max tokens clamped (model is mapped by the plugin) */
  forwarded: Record<string, unknown>;
  promptEstimate: number;
  open: OpenRequest;
  /** x-ratelimit-*-tokens headers from the token budget */
  headers: Record<string, string>;
}

/**
 * `max_tokens` / `max_completion_tokens` are clamped to the model's maxOutputTokens when present.
 * When the client sent neither, none is added: the body stays the client's, and the operator's
 * maxOutputTokens is taken as the upstream's own limit, so the hold covers it.
 */
export function clampOutput(body: Record<string, unknown>, model: Pick<RegisteredModel, "maxOutputTokens" | "contextLength">, promptTokens: number) {
  const forwarded: Record<string, unknown> = { ...body };
  const cap = model.maxOutputTokens;
  const asked: number[] = [];
  for (const key of ["max_tokens", "max_completion_tokens"] as const) {
    const v = body[key];
    if (typeof v !== "number") continue;
    const clamped = cap ? Math.min(v, cap) : v;
    forwarded[key] = clamped;
    asked.push(clamped);
  }
  const maxOutput = asked.length ? Math.min(...asked) : cap ?? (model.contextLength ? Math.max(1, model.contextLength - promptTokens) : DEFAULT_HOLD_OUTPUT_TOKENS);
  return { forwarded, maxOutput };
}

/** Prompt estimate for the hold and for bills without upstream usage; tool definitions count as their JSON. */
export function estimatePrompt(body: Record<string, unknown>): number {
  return estimateChatRequestTokens(body); // bounded in time whatever the text (src/text/tokens.ts)
}

export async function prepareChat(deps: AppDeps, call: ChatCall): Promise<PreparedChat> {
  const model = resolveModel(deps, call.principal, call.body.model, "chat");
  const chat = model.instance.chat!;
  const promptEstimate = estimatePrompt(call.body);
  const { forwarded, maxOutput } = clampOutput(call.body, model, promptEstimate);
  const choices = call.body.n ?? 1;
  call.note({ model: model.id });
  const headers = await deps.tokenBudget.consume(call.principal, promptEstimate + maxOutput * choices);
  const worstCase = chatCost(model.pricing, promptEstimate, maxOutput * choices);
  const h = await hold(deps.database.db, {
    accountId: call.principal.accountId,
    amount: worstCase,
    ref: call.requestId,
    reason: `chat ${model.id}: hold for ${promptEstimate} prompt + ${maxOutput * choices} output tokens`,
    expiresAt: new Date(Date.now() + deps.config.holdTtlMs),
  });
  const open: OpenRequest = {
    holdId: h.id, accountId: call.principal.accountId, keyId: call.principal.keyId, ref: call.requestId,
    model: model.id, plugin: model.plugin, pricing: model.pricing, startedAt: call.startedAt,
  };
  return { model, chat, forwarded, promptEstimate, open, headers };
}

/** Close the request (billing + usage row), report it, and return what was charged. */
export async function finishChat(deps: AppDeps, call: ChatCall, p: PreparedChat, out: ChatOutcome): Promise<number> {
  const cost = await closeRequest(deps.database.db, p.open, out);
  if (cost > 0) deps.telemetry.charged({ model: p.model.id, kind: "chat", micros: cost, promptTokens: out.promptTokens, completionTokens: out.completionTokens });
  call.note({ promptTokens: out.promptTokens, completionTokens: out.completionTokens, cost, disconnected: out.disconnected });
  return cost;
}

/** Release the hold of a request that produced nothing, record it, and return the client's error. */
export async function failChat(deps: AppDeps, call: ChatCall, p: PreparedChat, err: unknown, disconnected = false) {
  const apiError = clientErrorFrom(err);
  if (apiError.status === 500 && !disconnected) deps.logger.error({ err, requestId: call.requestId }, "chat: unexpected error from the plugin");
  deps.telemetry.upstream({ plugin: p.model.plugin, model: p.model.id, ms: performance.now() - call.startedAt, outcome: "error", errorKind: (err as { kind?: string }).kind });
  await finishChat(deps, call, p, {
    status: disconnected ? 499 : apiError.status, charge: false, promptTokens: 0, completionTokens: 0, deliveredTokens: 0, reportedTokens: null,
    tokenSource: null, disconnected, errorCode: disconnected ? "client_disconnected" : apiError.code,
  });
  return apiError;
}

/** Non-streamed completion: the upstream's object with `model` set to reelay's model id. */
export async function completeChat(deps: AppDeps, call: ChatCall): Promise<Response> {
  const p = await prepareChat(deps, call);
  let result: { completion: any; usage?: TokenUsage };
  try {
    result = await p.chat.complete(p.forwarded, { signal: call.signal });
  } catch (err) {
    throw await failChat(deps, call, p, err, call.signal.aborted);
  }
  deps.telemetry.upstream({ plugin: p.model.plugin, model: p.model.id, ms: performance.now() - call.startedAt, outcome: "ok" });
  const { completion, usage } = result;
  const local = usage ? 0 : countTextTokens(completionText(completion));
  await finishChat(deps, call, p, {
    status: 200, charge: true,
    promptTokens: usage?.prompt_tokens ?? p.promptEstimate,
    completionTokens: usage?.completion_tokens ?? local,
    deliveredTokens: usage?.completion_tokens ?? local,
    reportedTokens: usage?.completion_tokens ?? null,
    tokenSource: usage ? "upstream" : "local",
    disconnected: false, errorCode: null,
  });
  if (completion && typeof completion === "object") completion.model = p.model.id;
  return new Response(JSON.stringify(completion), { headers: { "content-type": "application/json", ...p.headers } });
}

/** All generated text of a completion object: message content and tool-call arguments of every choice. */
function completionText(completion: any): string {
  let text = "";
  for (const c of Array.isArray(completion?.choices) ? completion.choices : []) {
    const m = c?.message;
    if (typeof m?.content === "string") text += m.content;
    if (typeof m?.reasoning_content === "string") text += m.reasoning_content;
    for (const tc of Array.isArray(m?.tool_calls) ? m.tool_calls : []) if (typeof tc?.function?.arguments === "string") text += tc.function.arguments;
  }
  return text;
}
