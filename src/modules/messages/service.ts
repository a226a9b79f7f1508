/**
 * POST /v1/messages over every chat model: the request is translated into a chat completion
 * (to-chat.ts) and run through the chat pipeline's own steps (chat-bridge/: model resolution, the
 * key's scope and models, token budget, worst-case hold, upstream call with fallbacks, usage
 * checks, settlement, abort on disconnect, delivered-token billing), then answered in Anthropic's
 * shape (output.ts, stream-events.ts). Only the shapes differ from /v1/chat/completions; the money
 * is the same.
 *
 * Native pass-through (a model whose plugin speaks the Messages API itself) belongs at the top of
 * createMessage / countMessageTokens: resolve the model (resolveModel, capability "chat"), and when
 * its instance offers a `messages` capability hand it the request unchanged, through the same
 * hold and settlement (a prepareChat-like step that takes the Messages body's estimate) instead of
 * translating it. Everything below that branch stays as it is.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import type { RequestFacts } from "../../ops/hooks.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import { completeViaChat } from "../chat-bridge/complete.ts";
import { streamViaChat } from "../chat-bridge/stream.ts";
import type { ChatCompletionRequest } from "../chat/model.ts";
import { estimatePrompt, type ChatCall } from "../chat/service.ts";
import type { CountTokensRequest, MessagesRequest } from "./model.ts";
import { messageFromCompletion, newMessageId, type MessageContext } from "./output.ts";
import { MessagesStream } from "./stream-events.ts";
import { messagesError, toChatRequest } from "./to-chat.ts";

export const ROUTE = "/v1/messages";
/** names the tools a request offered that reelay left out (Anthropic's own tools): `web_search, code_execution` */
export const OMITTED_TOOLS_HEADER = "x-reelay-omitted-tools";

export interface MessagesCall {
  principal: Principal;
  body: MessagesRequest & Record<string, unknown>;
  requestId: string;
  signal: AbortSignal;
  startedAt: number;
  note(facts: RequestFacts): void;
}

export async function createMessage(deps: AppDeps, call: MessagesCall): Promise<Response> {
  const { chat, omittedTools, stopSequences } = toChatRequest(call.body);
  const extra: Record<string, string> = {};
  if (omittedTools.length) {
    call.note({ omittedTools });
    extra[OMITTED_TOOLS_HEADER] = headerList(omittedTools);
  }
  const ctx: MessageContext = { id: newMessageId(), stopSequences };
  const chatCall: ChatCall = {
    principal: call.principal, body: chat as ChatCompletionRequest, requestId: call.requestId, signal: call.signal, startedAt: call.startedAt, note: call.note, route: ROUTE,
  };
  try {
    if (chat.stream === true) {
      chat.stream_options = { include_usage: true }; // the usage chunk: billed counts and the upstream's cached tokens
      const res = await streamViaChat(deps, chatCall, new MessagesStream(ctx, deps.config.streamPingMs));
      for (const [k, v] of Object.entries(extra)) res.headers.set(k, v);
      return res;
    }
    const { results, headers } = await completeViaChat(deps, [chatCall]);
    const { completion, billed, upstreamUsage } = results[0]!;
    const message = messageFromCompletion(ctx, completion, billed, upstreamUsage);
    return new Response(JSON.stringify(message), { headers: { "content-type": "application/json", ...headers, ...extra } });
  } catch (err) {
    throw messagesError(err);
  }
}

/**
 * POST /v1/messages/count_tokens: reelay's own count of the prompt the request would send (the
 * estimate its credit hold uses), for any chat model the key may use; nothing is charged.
 */
export async function countMessageTokens(deps: AppDeps, principal: Principal, body: CountTokensRequest & Record<string, unknown>, signal: AbortSignal): Promise<{ input_tokens: number }> {
  const model = resolveModel(deps, principal, body.model, "chat");
  const { chat } = toChatRequest(body);
  await model.ready(signal); // the counter is built as part of loading a chat model
  return { input_tokens: estimatePrompt(chat) };
}

/** Tool names as a header value: printable ASCII only, bounded. */
function headerList(names: string[]): string {
  return names.map((n) => n.replace(/[^\x21-\x7e]/g, "?").slice(0, 64)).join(", ").slice(0, 1024);
}
