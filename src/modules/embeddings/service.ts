/**
 * One embeddings request: model → limits → token count → rate budget → charge opened (approval) →
 * plugin → charge settled on credible usage (or released on failure), with its usage row.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { applyPlan, batchPlan, credibleCount, openCharge, priceOf, type Charge, type ChargeLedger } from "../../billing/index.ts";
import type { BatchLineCall } from "../chat/service.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { clientErrorFrom, pluginErrorKind } from "../../http/plugin-errors.ts";
import { fallbackModels, resolveModel } from "../../registry/resolve-model.ts";
import { isPluginError, readPluginError, type EmbeddingsResult } from "../../plugin-sdk/index.ts";
import type { RequestFacts } from "../../ops/hooks.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { encodeEmbedding, type EncodingFormat } from "./encode.ts";
import { countInputTokens, limitsFor, normalizeInput } from "./inputs.ts";
import type { EmbeddingsBody, EmbeddingsResponse } from "./model.ts";

export interface EmbeddingsOutcome {
  body: EmbeddingsResponse;
  /** x-ratelimit-*-tokens headers from the token budget */
  headers: Record<string, string>;
  promptTokens: number;
  cost: number;
}

/**
 * Prompt tokens an upstream may credibly report beyond reelay's count of the inputs (other
 * tokenizers count up to ~2–3× cl100k on code or non-English text).
 */
const PROMPT_SLACK_FACTOR = 4;
const PROMPT_SLACK_TOKENS = 64;

export async function createEmbeddings(
  deps: AppDeps,
  principal: Principal,
  body: EmbeddingsBody,
  opts: { ref: string; signal: AbortSignal; note?: (facts: RequestFacts) => void; route?: string; batch?: BatchLineCall },
): Promise<EmbeddingsOutcome> {
  let model = resolveModel(deps, principal, body.model, "embeddings");
  let cap = model.instance.embeddings!;
  if (body.dimensions !== undefined && !cap.supportsDimensions) {
    throw badRequest(`The model '${model.id}' does not support 'dimensions'; its vectors have a fixed size.`, "dimensions", "unsupported_parameter");
  }
  const limits = limitsFor(cap);
  const input = normalizeInput(body.input, limits);
  // A model that tokenizes in process (countTokens) only understands its own vocabulary's ids;
  // token arrays made by some other tokenizer would embed garbage, so they are refused.
  if (input.kind === "tokens" && cap.countTokens) {
    throw badRequest(`The model '${model.id}' takes text only: send 'input' as a string or an array of strings, not token ids.`, "input", "invalid_input");
  }

  await model.ready(opts.signal);
  const estimate = (await countInputTokens(cap, input, limits)).reduce((n, c) => n + c, 0);
  // a batch line counts in its batches' share of the key's token budget (not in the live one)
  const headers = await deps.tokenBudget.consume(principal, estimate, opts.batch?.limits);
  const started = performance.now();
  // fallbacks that can take this request as sent; the hold covers the dearest of them
  const fallbacks = fallbackModels(deps, principal, model, "embeddings").filter((m) => body.dimensions === undefined || m.instance.embeddings!.supportsDimensions);
  const accountPlan = deps.billing.plans.get(principal.planId);
  const plan = opts.batch ? batchPlan(accountPlan) : accountPlan;
  const worstCase = Math.max(...[model, ...fallbacks].map((m) => priceOf(applyPlan(plan, m.id, m.pricing), { promptTokens: estimate })));
  const charge = await openCharge(opts.batch ? { ...deps, billing: opts.batch.ledger } : deps, {
    accountId: principal.accountId, keyId: principal.keyId, ref: opts.ref, kind: "embeddings", route: opts.route ?? "/v1/embeddings", model: model.id, plugin: model.plugin,
    pricing: applyPlan(plan, model.id, model.pricing), plan, worstCase, reason: `embeddings ${model.id}: hold for ${estimate} tokens`, startedAt: started,
  });

  let result: EmbeddingsResult;
  let attempts = 0;
  const routed = (info: { deployment: string; attempts: number }) => opts.note?.({ deployment: info.deployment, attempts: (attempts += info.attempts) });
  for (let i = 0; ; i++) {
    try {
      const inputs = input.kind === "text" ? input.texts : [];
      const allowed = { prompt: PROMPT_SLACK_FACTOR * estimate + PROMPT_SLACK_TOKENS };
      result = await cap.embed({ body, inputs }, { signal: opts.signal, requestId: opts.ref, allowed, routed });
      break;
    } catch (err) {
      const next = fallbacks[i];
      if (next === undefined || opts.signal.aborted || readPluginError(err)?.retryable !== true) throw failure(deps, model, err, opts.signal, started, charge);
      // the requested model failed before any output: its fallback serves, priced as itself
      deps.telemetry.upstream({ plugin: model.plugin, model: model.id, ms: performance.now() - started, outcome: "error", errorKind: pluginErrorKind(err) });
      await next.ready(opts.signal);
      model = next;
      cap = next.instance.embeddings!;
      charge.servedBy(next);
      opts.note?.({ model: next.id, requestedModel: body.model });
    }
  }
  deps.telemetry.upstream({ plugin: model.plugin, model: model.id, ms: performance.now() - started, outcome: "ok" });

  // A model that tokenizes in process (countTokens) counted the inputs itself: that count is local.
  // Otherwise the upstream's count is billed when credible (token-array inputs: 0 is not).
  const reported = (result.usage ?? (result.upstreamUsage as { prompt_tokens?: unknown } | undefined))?.prompt_tokens;
  const counted = cap.countTokens
    ? { tokens: estimate, source: "local" as const, anomaly: null }
    : credibleCount("prompt_tokens", input.kind === "tokens" && reported === 0 ? undefined : reported, { local: estimate, max: PROMPT_SLACK_FACTOR * estimate + PROMPT_SLACK_TOKENS });
  const promptTokens = counted.tokens;
  const format: EncodingFormat = body.encoding_format ?? "float";
  const response: EmbeddingsResponse = {
    object: "list",
    data: result.data.map((d) => ({ object: "embedding" as const, index: d.index, embedding: encodeEmbedding(d.embedding, format) })),
    model: model.id,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };

  const cost = charge.settle({ status: 200, usage: { promptTokens }, tokenSource: counted.source, anomaly: counted.anomaly });
  return { body: response, headers, promptTokens, cost };
}

/** Record the failure (release + usage row) and return what the client should see. */
function failure(deps: AppDeps, model: RegisteredModel, err: unknown, signal: AbortSignal, started: number, charge: Charge): unknown {
  const disconnected = signal.aborted && !isPluginError(err);
  const mapped = disconnected ? null : clientErrorFrom(err);
  const status = disconnected ? 499 : mapped!.status;
  const errorCode = disconnected ? "client_disconnected" : mapped!.code;
  deps.telemetry.upstream({ plugin: model.plugin, model: model.id, ms: performance.now() - started, outcome: "error", errorKind: pluginErrorKind(err) });
  charge.release({ status, errorCode, disconnected, tokenSource: "local" });
  if (disconnected) return new ApiError(499, "invalid_request_error", "The client closed the request.", { code: "client_disconnected" });
  return mapped!;
}
