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
import type { GroupCommit } from "./group-commit.ts";
import { LineLedger } from "./line-ledger.ts";
import type { BatchEndpoint } from "./model.ts";
import type { PendingLine } from "./batch-table.ts";
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

export async function runLine(deps: AppDeps, seal: ReasoningSeal, holds: GroupCommit, batch: { id: string; endpoint: BatchEndpoint; principal: Principal; traceparent: string | null }, line: PendingLine, signal: AbortSignal): Promise<LineOutcome> {
  const ledger = new LineLedger({ holds, billing: deps.billing, holdTtlMs: deps.config.holdTtlMs });
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
    const call = { principal: batch.principal, requestId, signal, startedAt: performance.now(), note: trace ? (facts: RequestFacts) => trace.note(facts) : () => {}, route: "batch", batch: { ledger }, trace };
    let answer: unknown;
    if (batch.endpoint === "/v1/embeddings") {
      answer = (await createEmbeddings(deps, batch.principal, body as EmbeddingsBody, { ref: requestId, signal, route: "batch", batch: { ledger } })).body;
    } else {
      const response =
        batch.endpoint === "/v1/chat/completions" ? await completeChat(deps, { ...call, body: body as ChatCompletionRequest })
        : batch.endpoint === "/v1/responses" ? await createResponse(deps, { ...call, body: body as ResponsesRequest & Record<string, unknown>, seal })
        : await createCompletion(deps, { ...call, body: body as CompletionRequest & Record<string, unknown> });
      answer = await response.json();
    }
    const result = { id, custom_id: line.customId, response: { status_code: 200, request_id: requestId, body: answer }, error: null };
    trace?.set({ [REELAY.batchOutcome]: "completed" });
    trace?.end();
    return { ok: true, result: JSON.stringify(result), settlements: ledger.settlements };
  } catch (err) {
    const e = err instanceof ApiError ? err : clientErrorFrom(err);
    if (e.status >= 500 && !(err instanceof ApiError)) deps.logger.warn({ err, batchId: batch.id, customId: line.customId }, "batches: a line failed");
    const result = { id, custom_id: line.customId, response: { status_code: e.status, request_id: requestId, body: e.toJSON() }, error: { code: e.code ?? e.type, message: e.message } };
    trace?.set({ [REELAY.batchOutcome]: "failed", "http.response.status_code": e.status });
    trace?.end({ message: e.message, kind: e.code ?? e.type });
    return { ok: false, result: JSON.stringify(result), settlements: ledger.settlements };
  }
}

/** The error line of a line that never ran (the batch was cancelled or expired first). */
export function unrunLine(customId: string, code: "batch_cancelled" | "batch_expired"): string {
  const message = code === "batch_cancelled" ? "The batch was cancelled before this request ran." : "The batch expired (its completion window ended) before this request ran.";
  return JSON.stringify({ id: randomId("batch_req", 24), custom_id: customId, response: null, error: { code, message } });
}
