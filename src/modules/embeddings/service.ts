/**
 * One embeddings request: model → limits → token count → rate budget → hold → plugin → settle and
 * usage row in one transaction (or release and usage row on failure).
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { hold, release, settle } from "../../billing/index.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { apiErrorFromPlugin } from "../../http/plugin-errors.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import type { EmbeddingsResult } from "../../plugin-sdk/index.ts";
import { PluginError } from "../../plugin-sdk/index.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { encodeEmbedding, type EncodingFormat } from "./encode.ts";
import { countInputTokens, limitsFor, normalizeInput } from "./inputs.ts";
import type { EmbeddingsBody, EmbeddingsResponse } from "./model.ts";
import type { UsageFacts } from "../../usage/record-usage.ts";

type EmbeddingsUsage = Pick<UsageFacts, "promptTokens" | "tokenSource" | "status" | "errorCode" | "disconnected">;

export interface EmbeddingsOutcome {
  body: EmbeddingsResponse;
  /** x-ratelimit-*-tokens headers from the token budget */
  headers: Record<string, string>;
  promptTokens: number;
  cost: number;
}

/** micro-dollars for `tokens` at `perMillion` micro-dollars per million tokens, rounded up */
export const costOf = (tokens: number, perMillion: number) => Math.ceil((tokens * perMillion) / 1_000_000);

export async function createEmbeddings(
  deps: AppDeps,
  principal: Principal,
  body: EmbeddingsBody,
  opts: { ref: string; signal: AbortSignal },
): Promise<EmbeddingsOutcome> {
  const model = resolveModel(deps, principal, body.model, "embeddings");
  const cap = model.instance.embeddings!;
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

  const estimate = (await countInputTokens(cap, input, limits)).reduce((n, c) => n + c, 0);
  const headers = await deps.tokenBudget.consume(principal, estimate);
  const price = model.pricing.inputPerMillion ?? 0;
  const db = deps.database.db;
  const reason = `embeddings ${model.id} ${opts.ref}`;
  const h = await hold(db, {
    accountId: principal.accountId,
    amount: costOf(estimate, price),
    ref: opts.ref,
    reason,
    expiresAt: new Date(Date.now() + deps.config.holdTtlMs),
  });

  const started = performance.now();
  const usageRow = (u: EmbeddingsUsage): UsageFacts => ({
    ...u, kind: "embeddings", accountId: principal.accountId, keyId: principal.keyId, ref: opts.ref, model: model.id, plugin: model.plugin,
    latencyMs: Math.round(performance.now() - started),
  });
  let result: EmbeddingsResult;
  try {
    const inputs = input.kind === "text" ? input.texts : [];
    result = await cap.embed({ body, inputs }, { signal: opts.signal });
  } catch (err) {
    throw await failure(deps, model, err, opts.signal, started, async (row) => {
      await release(db, h.id, `${reason}: failed`, { usage: usageRow(row) });
    });
  }
  deps.telemetry.upstream({ plugin: model.plugin, model: model.id, ms: performance.now() - started, outcome: "ok" });

  const reported = result.usage?.prompt_tokens;
  const reportedOk = Number.isSafeInteger(reported) && reported >= 0 && !(input.kind === "tokens" && reported === 0);
  const promptTokens = reportedOk ? reported : estimate;
  const format: EncodingFormat = body.encoding_format ?? "float";
  const response: EmbeddingsResponse = {
    object: "list",
    data: result.data.map((d) => ({ object: "embedding" as const, index: d.index, embedding: encodeEmbedding(d.embedding, format) })),
    model: model.id,
    usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
  };

  const settlement = await settle(db, h.id, costOf(promptTokens, price), reason, {
    usage: usageRow({ promptTokens, tokenSource: reportedOk ? "upstream" : "local", status: 200, errorCode: null, disconnected: false }),
  });
  deps.telemetry.charged({ model: model.id, kind: "embeddings", micros: settlement.charged, promptTokens });
  return { body: response, headers, promptTokens, cost: settlement.charged };
}

/** Record the failure (release + usage row) and return what the client should see. */
async function failure(
  deps: AppDeps,
  model: RegisteredModel,
  err: unknown,
  signal: AbortSignal,
  started: number,
  record: (row: EmbeddingsUsage) => Promise<void>,
): Promise<unknown> {
  const disconnected = signal.aborted && !(err instanceof PluginError);
  let mapped: ApiError | null = null;
  if (!disconnected) {
    try {
      mapped = apiErrorFromPlugin(err);
    } catch {
      mapped = null; // a bug: the original error goes to the app's handler (logged, 500)
    }
  }
  const status = disconnected ? 499 : mapped?.status ?? 500;
  const errorCode = disconnected ? "client_disconnected" : mapped?.code ?? "internal_error";
  deps.telemetry.upstream({ plugin: model.plugin, model: model.id, ms: performance.now() - started, outcome: "error", errorKind: err instanceof PluginError ? err.kind : "internal" });
  await record({ promptTokens: null, tokenSource: "local", status, errorCode, disconnected });
  if (disconnected) return new ApiError(499, "invalid_request_error", "The client closed the request.", { code: "client_disconnected" });
  return mapped ?? err;
}
