/**
 * One batch line through the live pipeline of its endpoint — the same functions the routes call
 * (completeChat, createEmbeddings, createResponse, createCompletion): model resolution and scope,
 * the worst-case hold, routing with breakers and fallbacks, the upstream call, the usage checks and
 * the settlement. Only the ledger differs (line-ledger.ts) and the price (the batch plan).
 */
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Principal } from "../../auth/authenticate-key.ts";
import type { Settlement } from "../../billing/index.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { clientErrorFrom } from "../../http/plugin-errors.ts";
import { invalidInput } from "../../http/validation-message.ts";
import { randomId } from "../../ids.ts";
import { ChatCompletionRequest } from "../chat/model.ts";
import { completeChat } from "../chat/service.ts";
import { CompletionRequest } from "../completions/model.ts";
import { createCompletion } from "../completions/service.ts";
import { EmbeddingsBody } from "../embeddings/model.ts";
import { createEmbeddings } from "../embeddings/service.ts";
import { ResponsesRequest } from "../responses/model.ts";
import type { ReasoningSeal } from "../responses/reasoning-seal.ts";
import { createResponse } from "../responses/service.ts";
import { LineLedger, type LineHolds, type UpstreamGate } from "./line-ledger.ts";
import type { BatchEndpoint } from "./model.ts";
import type { PendingLine } from "./batch-table.ts";
import { retryAfterOf } from "../../rate-limit/key-and-account-limits.ts";
import type { RequestFacts } from "../../ops/hooks.ts";
import { REELAY } from "../../ops/tracing/attributes.ts";

const CHECKS = {
  "/v1/chat/completions": TypeCompiler.Compile(ChatCompletionRequest),
  "/v1/embeddings": TypeCompiler.Compile(EmbeddingsBody),
  "/v1/responses": TypeCompiler.Compile(ResponsesRequest),
  "/v1/completions": TypeCompiler.Compile(CompletionRequest),
};

export interface LineOutcome {
  ok: boolean;
  /** the output or error file's line */
  result: string;
  /** what the pipeline closed the line's charge with (none: refused before a hold) */
  settlements: Settlement[];
}

/** The line's charge ref, the key of "at most once": one per (batch, custom_id). */
export const lineRef = (batchId: string, customId: string) => `${batchId}:${customId}`;

/** `gate`: the line's place in its instance's upstream share, entered once its hold is taken (upstream-places.ts) */
export async function runLine(deps: AppDeps, seal: ReasoningSeal, credit: { holds: LineHolds; gate?: UpstreamGate }, batch: { id: string; endpoint: BatchEndpoint; principal: Principal; traceparent: string | null }, line: PendingLine, signal: AbortSignal): Promise<LineOutcome> {
  const ledger = new LineLedger({ holds: credit.holds, gate: credit.gate, billing: deps.billing, holdTtlMs: deps.config.holdTtlMs });
  const requestId = lineRef(batch.id, line.customId);
  const id = randomId("batch_req", 24);
  // tracing on (and the batch created with it): the line is a span in the creating request's trace,
  // with the pipeline's charge, attempt and settlement spans under it, like a request's
  const trace = batch.traceparent
    ? deps.tracing.work("batch.line", batch.traceparent, { [REELAY.batchId]: batch.id, [REELAY.batchCustomId]: line.customId, [REELAY.batchLine]: line.line + 1, [REELAY.route]: "batch", [REELAY.requestId]: requestId })
    : undefined;
  try {
    const body = { ...line.body };
    delete body.stream; // a batch line is answered whole
    const check = CHECKS[batch.endpoint];
    if (!check.Check(body)) throw invalidInput(check, body);
    // the line counts in its batches' share of the key's limits (requests here, tokens in the pipeline)
    const asBatch = { ledger, limits: { share: deps.config.batchShare } };
    await paced(() => deps.requestLimit.admit(batch.principal, asBatch.limits), signal);
    const call = { principal: batch.principal, requestId, signal, startedAt: performance.now(), note: trace ? (facts: RequestFacts) => trace.note(facts) : () => {}, route: "batch", batch: asBatch, trace };
    const answer = await paced(async (): Promise<unknown> => {
      if (batch.endpoint === "/v1/embeddings") return (await createEmbeddings(deps, batch.principal, body as EmbeddingsBody, { ref: requestId, signal, route: "batch", batch: asBatch })).body;
      const response =
        batch.endpoint === "/v1/chat/completions" ? await completeChat(deps, { ...call, startedAt: performance.now(), body: body as ChatCompletionRequest })
        : batch.endpoint === "/v1/responses" ? await createResponse(deps, { ...call, startedAt: performance.now(), body: body as ResponsesRequest & Record<string, unknown>, seal })
        : await createCompletion(deps, { ...call, startedAt: performance.now(), body: body as CompletionRequest & Record<string, unknown> });
      return response.json();
    }, signal);
    const result = { id, custom_id: line.customId, response: { status_code: 200, request_id: requestId, body: answer }, error: null };
    trace?.set({ [REELAY.batchOutcome]: "completed" });
    trace?.end();
    return { ok: true, result: JSON.stringify(result), settlements: ledger.settlements };
  } catch (err) {
    const e = err instanceof ApiError ? err : clientErrorFrom(err);
    if (e.status >= 500 && !(err instanceof ApiError)) deps.logger.warn({ err, batchId: batch.id, customId: line.customId }, "batches: a line failed");
    trace?.set({ [REELAY.batchOutcome]: "failed", "http.response.status_code": e.status });
    trace?.end({ message: e.message, kind: e.code ?? e.type });
    return { ok: false, result: errorLine(batch.id, line.customId, e), settlements: ledger.settlements };
  }
}

/** A line's error line in OpenAI's format: the answer the live route would have given, and its code. */
function errorLine(batchId: string, customId: string, e: ApiError): string {
  const result = { id: randomId("batch_req", 24), custom_id: customId, response: { status_code: e.status, request_id: lineRef(batchId, customId), body: e.toJSON() }, error: { code: e.code ?? e.type, message: e.message } };
  return JSON.stringify(result);
}

/** The outcome of a line not run because the key that created its batch was revoked: a 401 `key_revoked`, nothing charged. */
export function revokedLine(batchId: string, customId: string): LineOutcome {
  const e = new ApiError(401, "authentication_error", "The API key that created this batch was revoked before this request ran; it was not run (nothing charged).", { code: "key_revoked" });
  return { ok: false, result: errorLine(batchId, customId, e), settlements: [] };
}

/**
 * Run `f` until no limit of the batches' share refuses it: a batch line over its share waits for
 * the Retry-After (it is paced, not failed); one larger than the share's limit fails (it never fits).
 * A refused try counts nothing in the live limits (the batch buckets are the batches' own).
 */
async function paced<T>(f: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (;;) {
    try {
      return await f();
    } catch (err) {
      const wait = retryAfterOf(err);
      if (wait === null) throw err;
      await sleep(Math.max(10, wait), signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal.reason); };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error line of a line that never ran (the batch was cancelled or expired first). */
export function unrunLine(customId: string, code: "batch_cancelled" | "batch_expired"): string {
  const message = code === "batch_cancelled" ? "The batch was cancelled before this request ran." : "The batch expired (its completion window ended) before this request ran.";
  return JSON.stringify({ id: randomId("batch_req", 24), custom_id: customId, response: null, error: { code, message } });
}
