/**
 * POST /v1/responses over every chat model: the request is checked, the conversation it continues
 * (previous_response_id) and the items it references (item_reference) are read from the account's
 * stored responses, everything is translated into one chat request (to-chat.ts) and run by the chat
 * pipeline (chat-bridge/): same hold, same limits, same settlement as /v1/chat/completions, the
 * usage row marked with route /v1/responses. The answer is translated back (output.ts,
 * stream-events.ts) and, unless `store: false`, kept for REELAY_RESPONSES_RETENTION_SECONDS.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import { badRequest, forbidden, notFound } from "../../errors.ts";
import type { RequestFacts, RequestTrace } from "../../ops/hooks.ts";
import { completeViaChat } from "../chat-bridge/complete.ts";
import { streamViaChat } from "../chat-bridge/stream.ts";
import type { BatchLineCall, ChatCall } from "../chat/service.ts";
import type { ChatCompletionRequest } from "../chat/model.ts";
import { itemId, newResponseId, responseIdOfItem } from "./ids.ts";
import { normalizeInput, type InputItem } from "./input-items.ts";
import type { ResponsesRequest, StoredResponseBody } from "./model.ts";
import { outputFromCompletion, responseObject, usageOf, type ResponseBody, type ResponseContext } from "./output.ts";
import { deleteResponse, getResponse, getResponses, insertResponse, MAX_CHAIN, renewChain, responseChain } from "./store.ts";
import type { ReasoningField, ReasoningSeal } from "./reasoning-seal.ts";
import { ResponsesStream } from "./stream-events.ts";
import { refuseUnsupported, responsesError, toChatRequest } from "./to-chat.ts";
import { OMITTED_TOOLS_HEADER, offeredTools } from "./tools.ts";

export const ROUTE = "/v1/responses";

export interface ResponsesCall {
  principal: Principal;
  body: ResponsesRequest & Record<string, unknown>;
  requestId: string;
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
  /** the request's trace (deps.tracing.of; undefined when tracing is off) */
  trace?: RequestTrace;
  /** a batch line (modules/batches): billed at the batch price through its own ledger, usage rows on route "batch" */
  batch?: BatchLineCall;
  /** seals and opens reasoning for `include: ["reasoning.encrypted_content"]` */
  seal: ReasoningSeal;
}

const storageOff = (param: string, what: string) =>
  badRequest(`'${param}': this server keeps no responses (the operator set REELAY_RESPONSES_STORE=off), so ${what}. Send the whole conversation as input, with store: false.`, param, "unsupported_parameter");

export async function createResponse(deps: AppDeps, call: ResponsesCall): Promise<Response> {
  const { body, principal } = call;
  refuseUnsupported(body);
  if (!deps.config.responsesStore) {
    if (body.store === true) throw storageOff("store", "a response cannot be stored");
    if (body.previous_response_id) throw storageOff("previous_response_id", "no earlier response can be continued");
  }
  const store = deps.config.responsesStore && body.store !== false;
  const history = body.previous_response_id ? await conversation(deps, principal.accountId, body.previous_response_id) : { items: [], ids: [] };
  const input = await resolveReferences(deps, principal.accountId, normalizeInput(body.input as string | object[] | undefined));
  // the request's tools, and those that `additional_tools` items of the conversation add
  const tools = offeredTools([...(body.tools ?? []), ...[...history.items, ...input].flatMap((it) => (it.type === "additional_tools" ? it.tools : []))]);
  const replayReasoning = (item: { encrypted_content?: string | null }) => {
    const opened = item.encrypted_content ? call.seal.open(item.encrypted_content, principal.accountId) : null;
    return opened?.model === body.model ? opened : null; // only to the model that produced it (reasoning-seal.ts)
  };
  const chatBody = toChatRequest({ body, history: history.items, input, tools, replayReasoning });
  const { id, stem } = newResponseId();
  const sealReasoning = body.include?.includes("reasoning.encrypted_content") ? (text: string, field: ReasoningField) => call.seal.seal({ model: body.model, text, field }, principal.accountId) : null;
  const ctx: ResponseContext = { id, stem, createdAt: Math.floor(Date.now() / 1000), model: body.model, body, store, tools: tools.targets, sealReasoning };
  // what the model cannot run is left out, and said so (DESIGN: only what the client forces is refused)
  const omitted = tools.omitted.length ? { [OMITTED_TOOLS_HEADER]: tools.omitted.join(", ") } : {};
  if (tools.omitted.length) call.note({ omittedTools: tools.omitted });

  /** Keep the finished response (before the client is told it is finished, so it can be continued at once). */
  const settle = async (response: ResponseBody): Promise<ResponseBody> => {
    if (!store) return response;
    try {
      await insertResponse(deps.database.db, {
        id, accountId: principal.accountId, keyId: principal.keyId, model: body.model, previousResponseId: body.previous_response_id ?? null,
        input: withIds(input, stem), response, retentionMs: deps.config.responsesRetentionMs,
      });
      await renewChain(deps.database.db, principal.accountId, history.ids, deps.config.responsesRetentionMs);
      return response;
    } catch (err) {
      // the answer is paid for and delivered; say honestly that it was not kept
      deps.logger.error({ err, requestId: call.requestId, responseId: id }, "responses: could not store the response");
      return { ...response, store: false };
    }
  };

  const chatCall: ChatCall = {
    principal, body: chatBody as ChatCompletionRequest, requestId: call.requestId, signal: call.signal, startedAt: call.startedAt, note: call.note, route: call.batch ? "batch" : ROUTE, batch: call.batch, trace: call.trace,
  };
  try {
    if (body.stream === true) {
      chatBody.stream_options = { include_usage: true }; // the upstream's cached / reasoning token details, for usage
      const res = await streamViaChat(deps, chatCall, new ResponsesStream(ctx, settle));
      for (const [k, v] of Object.entries(omitted)) res.headers.set(k, v);
      return res;
    }
    const { results, headers } = await completeViaChat(deps, [chatCall]);
    const { completion, billed, upstreamUsage } = results[0]!;
    const { output, incomplete } = outputFromCompletion(ctx, completion);
    const response = await settle(responseObject(ctx, incomplete ? "incomplete" : "completed", output, { usage: usageOf(billed, upstreamUsage), incomplete }));
    return new Response(JSON.stringify(response), { headers: { "content-type": "application/json", ...headers, ...omitted } });
  } catch (err) {
    throw responsesError(err);
  }
}

/** The conversation ending in `previousId`, oldest first, as input items; and the ids it is made of. */
async function conversation(deps: AppDeps, accountId: string, previousId: string): Promise<{ items: InputItem[]; ids: string[] }> {
  const chain = await responseChain(deps.database.db, accountId, previousId);
  const missing = (message: string) => badRequest(message, "previous_response_id", "previous_response_not_found");
  if (chain.length === 0) throw missing(`Previous response with id '${previousId.slice(0, 64)}' not found.`);
  const oldest = chain.at(-1)!;
  if (oldest.previous_response_id) {
    throw missing(chain.length > MAX_CHAIN
      ? `The conversation ending in '${previousId}' is longer than ${MAX_CHAIN} responses; start a new one with the input you need.`
      : `The conversation ending in '${previousId}' continues '${oldest.previous_response_id}', which was deleted or has expired; send the conversation as input instead.`);
  }
  const items = chain.reverse().flatMap((link) => [...link.input, ...(link.output as InputItem[])]);
  return { items, ids: chain.map((l) => l.id) };
}

/** `item_reference` items replaced by the stored items they name (output or input items of the account's stored responses). */
async function resolveReferences(deps: AppDeps, accountId: string, items: InputItem[]): Promise<InputItem[]> {
  const refs = items.flatMap((it, i) => (it.type === "item_reference" ? [{ i, id: it.id }] : []));
  if (refs.length === 0) return items;
  if (!deps.config.responsesStore) throw storageOff(`input[${refs[0]!.i}]`, "an item_reference cannot be resolved");
  const responseIds = [...new Set(refs.map((r) => responseIdOfItem(r.id)).filter((id): id is string => id !== null))];
  const byId = new Map<string, InputItem>();
  for (const row of await getResponses(deps.database.db, accountId, responseIds)) {
    for (const it of [...row.input, ...(row.response.output as InputItem[])]) if ("id" in it && it.id) byId.set(it.id, it);
  }
  return items.map((it, i) => {
    if (it.type !== "item_reference") return it;
    const found = byId.get(it.id);
    if (!found) throw badRequest(`Item with id '${it.id.slice(0, 64)}' not found (it must belong to a response this account stored, within its retention).`, `input[${i}].id`, "item_not_found");
    return found;
  });
}

/** Input items as stored: each with an id (GET …/input_items lists them; item_reference can name them). */
function withIds(items: InputItem[], stem: string): InputItem[] {
  const prefix = { message: "msg", function_call: "fc", function_call_output: "fco", custom_tool_call: "ctc", custom_tool_call_output: "ctco", reasoning: "rs", additional_tools: "at", item_reference: "msg" } as const;
  return items.map((it, i) => ("id" in it && it.id ? it : { ...it, id: itemId(prefix[it.type], stem, "i", i) }));
}

const needChatScope = (p: Principal) => {
  if (p.scopes && !p.scopes.includes("chat")) throw forbidden(`This API key lacks the 'chat' scope needed for responses (its scopes: ${p.scopes.join(", ") || "none"}).`);
};
const responseNotFound = (id: string) => notFound(`Response with id '${id.slice(0, 64)}' not found.`, "response_not_found", "id");

export async function readResponse(deps: AppDeps, principal: Principal, id: string): Promise<StoredResponseBody> {
  needChatScope(principal);
  const row = await getResponse(deps.database.db, principal.accountId, id);
  if (!row) throw responseNotFound(id);
  return row.response as unknown as StoredResponseBody;
}

export async function removeResponse(deps: AppDeps, principal: Principal, id: string) {
  needChatScope(principal);
  if (!(await deleteResponse(deps.database.db, principal.accountId, id))) throw responseNotFound(id);
  return { id, object: "response" as const, deleted: true as const };
}

export async function listInputItems(deps: AppDeps, principal: Principal, id: string, q: { limit?: number; order?: "asc" | "desc"; after?: string }) {
  needChatScope(principal);
  const row = await getResponse(deps.database.db, principal.accountId, id);
  if (!row) throw responseNotFound(id);
  const all = q.order === "asc" ? row.input : [...row.input].reverse();
  const start = q.after ? all.findIndex((it) => "id" in it && it.id === q.after) + 1 : 0;
  if (q.after && start === 0) throw badRequest(`'after': no input item '${q.after.slice(0, 64)}' in this response.`, "after");
  const limit = q.limit ?? 20;
  const page = all.slice(start, start + limit);
  const idOf = (it: InputItem | undefined) => (it && "id" in it ? it.id ?? null : null);
  return { object: "list" as const, data: page, first_id: idOf(page[0]), last_id: idOf(page.at(-1)), has_more: start + limit < all.length };
}
