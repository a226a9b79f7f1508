/**
 * POST /v1/messages over every chat model. A model whose plugin speaks Anthropic's Messages API
 * itself (the `messages` capability) is passed the request natively (native.ts). Any other is
 * served through the chat bridge: the request is translated into a chat completion (to-chat.ts)
 * and run through the chat pipeline's own steps (chat-bridge/: model resolution, the key's scope
 * and models, token budget, worst-case hold, upstream call with fallbacks, usage checks,
 * settlement, abort on disconnect, delivered-token billing), then answered in Anthropic's shape
 * (output.ts, stream-events.ts). Both paths share those steps; only the shapes differ from
 * /v1/chat/completions, the money is the same.
 */
import type { AppDeps } from "../../deps.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import { completeViaChat } from "../chat-bridge/complete.ts";
import { streamViaChat } from "../chat-bridge/stream.ts";
import type { ChatCompletionRequest } from "../chat/model.ts";
import { estimatePrompt, type ChatCall } from "../chat/service.ts";
import { headerList, OMITTED_TOOLS_HEADER, ROUTE, type CountTokensCall, type MessagesCall } from "./call.ts";
import { countNative, createNative, speaksMessages, streamNative } from "./native.ts";
import { messageFromCompletion, newMessageId, type MessageContext } from "./output.ts";
import { MessagesStream } from "./stream-events.ts";
import { messagesError, toChatRequest } from "./to-chat.ts";

export { OMITTED_TOOLS_HEADER, type MessagesCall } from "./call.ts";

export async function createMessage(deps: AppDeps, call: MessagesCall): Promise<Response> {
  const stream = call.body.stream === true;
  try {
    const model = resolveModel(deps, call.principal, call.body.model, "chat");
    if (speaksMessages(model, stream)) return await (stream ? streamNative(deps, call, model, deps.config.streamPingMs) : createNative(deps, call, model));
  } catch (err) {
    throw messagesError(err);
  }
  const { chat, omittedTools, stopSequences } = toChatRequest(call.body);
  const extra: Record<string, string> = {};
  if (omittedTools.length) {
    call.note({ omittedTools });
    extra[OMITTED_TOOLS_HEADER] = headerList(omittedTools);
  }
  const ctx: MessageContext = { id: newMessageId(), stopSequences };
  const chatCall: ChatCall = {
    principal: call.principal, body: chat as ChatCompletionRequest, requestId: call.requestId, signal: call.signal, startedAt: call.startedAt, note: call.note, route: ROUTE, trace: call.trace,
  };
  try {
    if (stream) {
      chat.stream_options = { include_usage: true }; // the usage chunk: billed counts and the upstream's cached tokens
      const res = await streamViaChat(deps, chatCall, new MessagesStream(ctx, deps.config.streamPingMs));
      for (const [k, v] of Object.entries(extra)) res.headers.set(k, v);
      return res;
    }
    const { results, headers } = await completeViaChat(deps, [chatCall]);
    const { completion, billed } = results[0]!;
    const message = messageFromCompletion(ctx, completion, billed);
    return new Response(JSON.stringify(message), { headers: { "content-type": "application/json", ...headers, ...extra } });
  } catch (err) {
    throw messagesError(err);
  }
}

/**
 * POST /v1/messages/count_tokens, for any chat model the key may use; nothing is charged. A model
 * that speaks Messages natively asks its upstream (native.ts); any other gets reelay's own count
 * of the prompt the request would send (the estimate its credit hold uses).
 */
export async function countMessageTokens(deps: AppDeps, call: CountTokensCall): Promise<{ input_tokens: number }> {
  const model = resolveModel(deps, call.principal, call.body.model, "chat");
  if (speaksMessages(model, false)) return countNative(call, model);
  const { chat } = toChatRequest(call.body);
  await model.ready(call.signal); // the counter is built as part of loading a chat model
  return { input_tokens: estimatePrompt(chat) };
}
