/**
 * Chat completions: resolve the model, clamp output limits, hold the worst case, call the plugin,
 * settle on the real usage. Streaming continues in relay-stream.ts.
 *
 * These steps are every chat-like route's: the bridges (chat-bridge/) run them on the chat request
 * they translate to, and /v1/messages on the client's own body for a model that speaks Anthropic's
 * Messages API (messages/native.ts) — prepareRequest with its RequestView, withFallbacks,
 * finishAnswer / failChat, relayStream with its RelayFormat. One copy of the money and the logs.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { ABSURD_TOKENS, applyPlan, batchPlan, openCharge, worstPriceOf, type Charge, type ChargeLedger } from "../../billing/index.ts";
import type { AppDeps } from "../../deps.ts";
import type { LimitShare } from "../../rate-limit/key-and-account-limits.ts";
import { fallbackModels, resolveModel } from "../../registry/resolve-model.ts";
import type { RequestFacts, RequestTrace } from "../../ops/hooks.ts";
import { readPluginError, type ChatCompletionRequest as PluginChatRequest, type ChatResult } from "../../plugin-sdk/index.ts";
import type { HostChat } from "../../plugin-host/types.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { countTextTokens, estimateChatRequestTokens } from "../../text/tokens.ts";
import { closeRequest, reportedUsage, type ChatAllowance, type ChatOutcome, type ClosedRequest, type ReportedUsage } from "./close-request.ts";
import type { ChatCompletionRequest } from "./model.ts";
import { clientErrorFrom, pluginErrorKind } from "../../http/plugin-errors.ts";
import { GEN_AI, REELAY } from "../../ops/tracing/attributes.ts";

/**
 * Output tokens held when neither the client nor the model config bounds the reply (and the model
 * has no context length either). A reply longer than this is still billed in full from the
 * account's available credits at settlement (never below zero; see billing/settle-batch.ts).
 */
export const DEFAULT_HOLD_OUTPUT_TOKENS = 4096;
/**
 * Prompt tokens an upstream may credibly report beyond reelay's estimate: other tokenizers count
 * up to ~2–3× cl100k on code or non-English text, chat templates add a few hundred, and an image or
 * audio part costs up to ~16k tokens on today's vision models (the estimate counts text only).
 */
const PROMPT_SLACK_FACTOR = 4;
const PROMPT_SLACK_TOKENS = 256;
const MEDIA_PART_TOKENS = 16_384;

/**
 * A request through the chat pipeline, whatever wire format the client used (chat completions,
 * Responses, legacy completions, Anthropic Messages): no Elysia context, only plain values.
 */
export interface PipelineCall {
  principal: Principal;
  requestId: string;
  /** aborts when the client goes away */
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
  /** the route the client called, for its usage row (default /v1/chat/completions; /v1/responses, /v1/completions and /v1/messages run through here too) */
  route?: string;
  /** told what the request was billed for once it is closed (a bridge's closing events carry it) */
  billed?(closed: ClosedRequest): void;
  /** the GenAI operation for the trace (default "chat"; legacy completions: "text_completion") */
  operation?: string;
  /** the request's trace (undefined: tracing off, or not sampled): spans for the charge, the attempts and the settlement */
  trace?: RequestTrace;
  /** a batch line (modules/batches): priced at the batch price, approved and settled by the line's ledger, outside the key's live token budget */
  batch?: BatchLineCall;
}

/** What makes a pipeline call a batch line. */
export interface BatchLineCall {
  /** takes an exact hold for the line, and its settlement for the transaction that writes the line's output */
  ledger: ChargeLedger;
  /** the share of the key's limits batch lines count in (REELAY_BATCH_SHARE) */
  limits: LimitShare;
}

/** What the chat controller hands the service. */
export interface ChatCall extends PipelineCall {
  body: ChatCompletionRequest;
}

/**
 * How the pipeline sees a request before it holds credit for it: the chat body (chatView), or a
 * route's own body that some models' plugins take natively (the Messages API) — the estimate and
 * the body each model is sent come from the route, everything else is the same.
 */
export interface RequestView<B> {
  /** the prompt estimate of the hold, and the bill when the upstream reports none (called once the model is ready: the counter is built as part of loading) */
  estimate(): number;
  /** prompt parts that are not text (images, documents …): each may cost up to MEDIA_PART_TOKENS */
  mediaParts: number;
  /** choices asked for (chat's `n`) */
  choices: number;
  /**
   * The body model `m` would be sent, before its output limit (max_tokens / max_completion_tokens)
   * is clamped to m's; null: m cannot serve this request (a fallback left out; never the requested model).
   */
  bodyFor(m: RegisteredModel): B | null;
}

/** One model that may serve the request: the requested one, then its fallbacks, each with its own limits. */
export interface ChatCandidate<B = PluginChatRequest> {
  model: RegisteredModel;
  chat: HostChat;
  forwarded: B;
  allowed: ChatAllowance;
}

export interface PreparedChat<B = PluginChatRequest> {
  /** the model serving the request now (a fallback once the requested one failed) */
  model: RegisteredModel;
  chat: HostChat;
  /** the client's body with max tokens clamped; `model` stays reelay's id (the plugin sends its upstream's name) */
  forwarded: B;
  promptEstimate: number;
  charge: Charge;
  /** the most the request may be billed for (usage beyond it is an upstream anomaly) */
  allowed: ChatAllowance;
  /** x-ratelimit-*-tokens headers from the token budget */
  headers: Record<string, string>;
  /** the requested model first, then its fallbacks the key may use */
  candidates: ChatCandidate<B>[];
  /** upstream attempts made for the request so far (over every candidate) */
  attempts: number;
  /** the HostCall's `routed`: notes the deployment and the attempts in the request's log line */
  routed(info: { deployment: string; attempts: number }): void;
  /** the HostCall's `trace` (the plugin's view of the request's trace) */
  trace?: RequestTrace["upstream"];
  /** ends the request's span once settled (it outlives the response of a stream) */
  untraced?: () => void;
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
  // bounded: the reply cannot credibly be longer than maxOutput (else only the hold is maxOutput)
  const bounded = asked.length > 0 || cap !== undefined || model.contextLength !== undefined;
  return { forwarded, maxOutput, bounded };
}

/** What a request allows to be billed: output up to its bound × n, prompt up to a generous multiple of the estimate and the context. */
export function chatAllowance(mediaParts: number, model: Pick<RegisteredModel, "contextLength">, promptEstimate: number, out: { maxOutput: number; bounded: boolean }, choices: number): ChatAllowance {
  const prompt = Math.min(model.contextLength ?? Infinity, PROMPT_SLACK_FACTOR * promptEstimate + PROMPT_SLACK_TOKENS + MEDIA_PART_TOKENS * mediaParts);
  return { prompt, completion: (out.bounded ? out.maxOutput : ABSURD_TOKENS) * choices };
}

/** content parts that are not text (images, audio, files) */
function mediaParts(messages: unknown): number {
  let n = 0;
  if (Array.isArray(messages))
    for (const m of messages) if (Array.isArray(m?.content)) for (const part of m.content) if (part && typeof part === "object" && part.type !== "text") n++;
  return n;
}

/** A chat completion request as the pipeline sees it: every model is sent the client's body. */
export function chatView(body: ChatCompletionRequest): RequestView<PluginChatRequest> {
  return { estimate: () => estimatePrompt(body), mediaParts: mediaParts(body.messages), choices: body.n ?? 1, bodyFor: () => body as PluginChatRequest };
}

/** Prompt estimate for the hold and for bills without upstream usage; tool definitions count as their JSON. */
export function estimatePrompt(body: Record<string, unknown>): number {
  return estimateChatRequestTokens(body); // bounded in time whatever the text (src/text/tokens.ts)
}

export async function prepareChat(deps: AppDeps, call: ChatCall): Promise<PreparedChat> {
  return prepareRequest(deps, call, resolveModel(deps, call.principal, call.body.model, "chat"), chatView(call.body));
}

/**
 * The steps before the upstream call, for every route over chat: the model's fallbacks the key may
 * use, the prompt estimate, each candidate's output limit, the token budget and the credit hold
 * for the dearest candidate. `model` is resolved by the caller (resolveModel, capability "chat").
 */
export async function prepareRequest<B>(deps: AppDeps, call: PipelineCall, model: RegisteredModel, view: RequestView<B>): Promise<PreparedChat<B>> {
  const models = [model, ...fallbackModels(deps, call.principal, model, "chat")];
  await model.ready(call.signal);
  const promptEstimate = view.estimate();
  const choices = view.choices;
  call.note({ model: model.id });
  // the account's prices (its price plan, or the list prices)
  const accountPlan = deps.billing.plans.get(call.principal.planId);
  const plan = call.batch ? batchPlan(accountPlan) : accountPlan;
  // the hold covers the dearest candidate: whichever serves, its exact price fits in it
  let worst = { cost: -1, output: 0, model };
  let maxOutput = 0;
  const candidates: ChatCandidate<B>[] = [];
  for (const m of models) {
    const body = view.bodyFor(m);
    if (body === null) continue;
    const output = clampOutput(body as Record<string, unknown>, m, promptEstimate);
    maxOutput = Math.max(maxOutput, output.maxOutput);
    // an absurd `n` or max_tokens makes an absurd worst case: a 402, not an arithmetic error
    const cost = Math.min(Number.MAX_SAFE_INTEGER, worstPriceOf(applyPlan(plan, m.id, m.pricing), { promptTokens: promptEstimate, completionTokens: output.maxOutput * choices }));
    if (cost > worst.cost || (cost === worst.cost && output.maxOutput > worst.output)) worst = { cost, output: output.maxOutput, model: m };
    candidates.push({ model: m, chat: m.instance.chat!, forwarded: output.forwarded as B, allowed: chatAllowance(view.mediaParts, m, promptEstimate, output, choices) });
  }
  // a batch line counts in its batches' share of the key's token budget (not in the live one)
  const headers = await deps.tokenBudget.consume(call.principal, promptEstimate + maxOutput * choices, call.batch?.limits);
  const dearest = worst.model === model ? "" : ` (at the prices of fallback ${worst.model.id})`;
  const trace = call.trace;
  if (trace) traceRequest(trace, call, model, view);
  const holding = trace?.child("reelay.charge", { [REELAY.holdMicros]: worst.cost });
  const charge = await openCharge(call.batch ? { ...deps, billing: call.batch.ledger } : deps, {
    accountId: call.principal.accountId, keyId: call.principal.keyId, ref: call.requestId, kind: "chat", route: call.route ?? "/v1/chat/completions",
    model: model.id, plugin: model.plugin, pricing: applyPlan(plan, model.id, model.pricing), plan, worstCase: worst.cost, startedAt: call.startedAt,
    reason: `chat ${model.id}: hold for ${promptEstimate} prompt + ${worst.output * choices} output tokens${dearest}`,
  }).catch((err) => {
    holding?.end(err);
    throw err;
  });
  holding?.end();
  const first = candidates[0]!;
  const p: PreparedChat<B> = {
    model, chat: first.chat, forwarded: first.forwarded, promptEstimate, charge, allowed: first.allowed, headers, candidates, attempts: 0,
    routed: (info) => call.note({ deployment: info.deployment, attempts: (p.attempts += info.attempts) }),
    trace: trace?.upstream, untraced: trace?.hold(),
  };
  return p;
}

/**
 * Run `attempt` on the requested model, then on each fallback while the failure is one another
 * model may fix (retryable: unreachable, timed out, 429 / 5xx, no deployment available) and nothing
 * has reached the client. The model that serves is priced at settlement (Charge.servedBy).
 */
export async function withFallbacks<R, B>(deps: AppDeps, call: PipelineCall, p: PreparedChat<B>, attempt: (p: PreparedChat<B>) => Promise<R>): Promise<R> {
  for (let i = 1; ; i++) {
    try {
      return await attempt(p);
    } catch (err) {
      const next = p.candidates[i];
      if (next === undefined || call.signal.aborted || readPluginError(err)?.retryable !== true) throw err;
      deps.telemetry.upstream({ plugin: p.model.plugin, model: p.model.id, ms: performance.now() - call.startedAt, outcome: "error", errorKind: pluginErrorKind(err) });
      deps.logger.info({ requestId: call.requestId, model: p.model.id, fallback: next.model.id, kind: readPluginError(err)?.kind }, "chat: model failed before any output, trying its fallback");
      await next.model.ready(call.signal);
      Object.assign(p, { model: next.model, chat: next.chat, forwarded: next.forwarded, allowed: next.allowed });
      p.charge.servedBy(next.model);
      call.trace?.set({ [GEN_AI.provider]: next.model.plugin });
      call.note({ model: next.model.id, requestedModel: p.candidates[0]!.model.id });
    }
  }
}

/** Close the request (money + usage row, queued), report it, and return what was charged. */
export function finishChat(call: PipelineCall, p: PreparedChat<unknown>, out: ChatOutcome): ClosedRequest {
  const settling = call.trace?.child("reelay.settle");
  let r: ClosedRequest;
  try {
    r = closeRequest(p.charge, p.allowed, out, p.chat.countsTokens === true);
  } catch (err) {
    settling?.end(err);
    p.untraced?.();
    throw err;
  }
  if (settling) {
    settling.set({ [REELAY.chargeMicros]: r.cost, [GEN_AI.inputTokens]: r.promptTokens, [GEN_AI.outputTokens]: r.completionTokens, "reelay.usage.anomaly": r.anomaly ?? undefined, "reelay.charged": out.charge });
    settling.end();
  }
  call.note({ promptTokens: r.promptTokens, completionTokens: r.completionTokens, cost: r.cost, disconnected: out.disconnected });
  call.billed?.(r);
  p.untraced?.();
  return r;
}

/**
 * A whole (non-streamed) answer is in: settle it on the upstream's report as received (judged by
 * closeRequest), with reelay's count of `text` (only counted when needed) to fall back on.
 */
export function finishAnswer(deps: AppDeps, call: PipelineCall, p: PreparedChat<unknown>, reported: ReportedUsage, text: () => string): ClosedRequest {
  deps.telemetry.upstream({ plugin: p.model.plugin, model: p.model.id, ms: performance.now() - call.startedAt, outcome: "ok" });
  let counted: number | null = null;
  return finishChat(call, p, {
    status: 200, charge: true, reported,
    local: { prompt: p.promptEstimate, completion: () => (counted ??= countTextTokens(text())) },
    deliveredTokens: null, disconnected: false, errorCode: null,
  });
}

/** Release the hold of a request that produced nothing, record it, and return the client's error. */
export function failChat(deps: AppDeps, call: PipelineCall, p: PreparedChat<unknown>, err: unknown, disconnected = false) {
  const apiError = clientErrorFrom(err);
  if (apiError.status === 500 && !disconnected) deps.logger.error({ err, requestId: call.requestId, plugin: p.model.plugin, model: p.model.id }, "chat: unexpected error");
  deps.telemetry.upstream({ plugin: p.model.plugin, model: p.model.id, ms: performance.now() - call.startedAt, outcome: "error", errorKind: pluginErrorKind(err) });
  finishChat(call, p, {
    status: disconnected ? 499 : apiError.status, charge: false, reported: { prompt: undefined, completion: undefined }, local: { prompt: 0, completion: 0 },
    deliveredTokens: 0, disconnected, errorCode: disconnected ? "client_disconnected" : apiError.code,
  });
  return apiError;
}

/** Non-streamed completion: the upstream's object with `model` set to reelay's model id. */
export async function completeChat(deps: AppDeps, call: ChatCall): Promise<Response> {
  const p = await prepareChat(deps, call);
  let result: ChatResult;
  try {
    result = await withFallbacks(deps, call, p, (p) => p.chat.complete(p.forwarded, { signal: call.signal, requestId: call.requestId, allowed: p.allowed, routed: p.routed, trace: p.trace }));
  } catch (err) {
    throw failChat(deps, call, p, err, call.signal.aborted);
  }
  // only the returned usage is billed (checked by the host), else the upstream's report as relayed, never completion.usage
  const completion: any = result.completion;
  const u = result.usage ?? result.upstreamUsage;
  if (call.trace) traceAnswer(call.trace, completion);
  const billed = finishAnswer(deps, call, p, reportedUsage(u), () => completionText(completion));
  if (completion && typeof completion === "object") {
    completion.model = p.model.id;
    // the usage the client sees is what it was billed for (an upstream's made-up numbers, or counts the plugin put there and did not return)
    const shown = completion.usage;
    if ((billed.anomaly && u) || (shown && (shown.prompt_tokens !== billed.promptTokens || shown.completion_tokens !== billed.completionTokens))) {
      completion.usage = { ...(shown && typeof shown === "object" ? shown : {}), prompt_tokens: billed.promptTokens, completion_tokens: billed.completionTokens, total_tokens: billed.promptTokens + billed.completionTokens, ...billedCacheDetails(shown, billed) };
    }
  }
  return new Response(JSON.stringify(completion), { headers: { "content-type": "application/json", ...p.headers } });
}

/** `prompt_tokens_details` saying the cache reads and writes billed, when the upstream's said any or some were billed. */
export function billedCacheDetails(shown: any, billed: { cachedTokens: number; cacheWriteTokens: number }): { prompt_tokens_details?: Record<string, unknown> } {
  const details = shown && typeof shown === "object" && typeof shown.prompt_tokens_details === "object" && shown.prompt_tokens_details !== null ? shown.prompt_tokens_details : undefined;
  if (!details && !billed.cachedTokens && !billed.cacheWriteTokens) return {};
  return { prompt_tokens_details: { ...details, cached_tokens: billed.cachedTokens, ...(billed.cacheWriteTokens || details?.cache_write_tokens !== undefined ? { cache_write_tokens: billed.cacheWriteTokens } : {}) } };
}

/** All generated text of a completion object: message content and tool-call arguments of every choice. */
export function completionText(completion: any): string {
  let text = "";
  for (const c of Array.isArray(completion?.choices) ? completion.choices : []) {
    const m = c?.message;
    if (typeof m?.content === "string") text += m.content;
    if (typeof m?.reasoning_content === "string") text += m.reasoning_content;
    else if (typeof m?.reasoning === "string") text += m.reasoning;
    for (const tc of Array.isArray(m?.tool_calls) ? m.tool_calls : []) if (typeof tc?.function?.arguments === "string") text += tc.function.arguments;
  }
  return text;
}

/** The GenAI attributes known before the call; content only when the operator opted in. */
function traceRequest(trace: RequestTrace, call: PipelineCall, model: RegisteredModel, view: RequestView<unknown>) {
  const operation = call.operation ?? "chat";
  trace.rename(`${operation} ${model.id}`);
  const body = view.bodyFor(model) as Record<string, unknown> | null;
  trace.set({
    [GEN_AI.operation]: operation, [GEN_AI.provider]: model.plugin, [GEN_AI.requestModel]: model.id,
    [GEN_AI.maxTokens]: typeof body?.max_tokens === "number" ? body.max_tokens : typeof body?.max_completion_tokens === "number" ? body.max_completion_tokens : undefined,
    [REELAY.keyId]: call.principal.keyId, [REELAY.accountId]: call.principal.accountId, [REELAY.route]: call.route ?? "/v1/chat/completions",
  });
  if (trace.content && body) trace.set({ [GEN_AI.inputMessages]: JSON.stringify(body.messages ?? body.prompt ?? body.input ?? null) });
}

/** The response's GenAI attributes: the upstream's model name, finish reasons (and the answer, when opted in). */
export function traceAnswer(trace: RequestTrace, completion: any) {
  const choices: any[] = Array.isArray(completion?.choices) ? completion.choices : [];
  trace.set({
    [GEN_AI.responseModel]: typeof completion?.model === "string" ? completion.model : undefined,
    [GEN_AI.responseId]: typeof completion?.id === "string" ? completion.id : undefined,
    [GEN_AI.finishReasons]: choices.map((c) => String(c?.finish_reason ?? "")).filter(Boolean),
  });
  if (trace.content) trace.set({ [GEN_AI.outputMessages]: JSON.stringify(choices.map((c) => c?.message ?? { content: c?.text ?? null })) });
}
