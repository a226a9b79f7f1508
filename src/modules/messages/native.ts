/**
 * /v1/messages for a model whose plugin speaks Anthropic's Messages API itself (the SDK's
 * `messages` capability, e.g. plugins/anthropic): the client's body goes to the plugin unchanged
 * but for `model` (the plugin sends its upstream's name) and `max_tokens` (clamped to the model's
 * maximum, as chat clamps it: the hold is sized on it), with the client's `anthropic-version` and
 * `anthropic-beta`; the answer — or each event, as it arrives — comes back as the upstream sent it:
 * thinking blocks and their signatures, `cache_control`, tool blocks and beta fields are never
 * translated. Only `model` and `usage` (what was billed) are reelay's. `model` is the name the client
 * asked for (an alias stays the alias) when that model served, and the serving model's id when a
 * fallback did: a thinking block's signature is bound to the model that made it, and clients keep
 * thinking blocks for the next turn only while the answer's model is the one they ask for (Claude
 * Code drops them otherwise — a fallback's must be dropped, the requested model's kept).
 *
 * Every step around the upstream call is the chat pipeline's own, as for the bridged path:
 * prepareRequest (fallbacks, estimate, token budget, worst-case hold), withFallbacks,
 * finishAnswer / failChat (settlement with cache reads and writes at their prices, usage row,
 * request log), relayStream (delivered-token billing and abort on disconnect). A fallback model
 * without the capability serves through the bridge (to-chat.ts, output.ts, stream-events.ts); one
 * the request cannot be translated for (a PDF document, a file id …) is left out of the fallbacks.
 */
import { ApiError } from "../../errors.ts";
import { clientErrorFrom } from "../../http/plugin-errors.ts";
import { reportedMessagesUsage } from "../../plugin-host/checked-messages.ts";
import type { HostMessagesCall } from "../../plugin-host/types.ts";
import type { ChatCompletionRequest as PluginChatRequest, ChatResult as PluginChatResult, MessagesRequest as PluginMessagesRequest, MessagesResult } from "../../plugin-sdk/index.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import type { AppDeps } from "../../deps.ts";
import { billedChat, finishCompletion } from "../chat-bridge/complete.ts";
import { billingInto, rewriteChatStream } from "../chat-bridge/stream.ts";
import { ChatFormat, relayStream } from "../chat/relay-stream.ts";
import { failChat, finishAnswer, prepareRequest, withFallbacks, type PipelineCall, type PreparedChat, type RequestView } from "../chat/service.ts";
import { NativeMessagesFormat } from "./native-stream.ts";
import { messageFromCompletion, newMessageId, usageOf, type MessageContext } from "./output.ts";
import { messagesEstimate } from "./prompt-estimate.ts";
import { MessagesStream } from "./stream-events.ts";
import { toChatRequest, type ChatTranslation } from "./to-chat.ts";
import { headerList, OMITTED_TOOLS_HEADER, ROUTE, type CountTokensCall, type MessagesCall } from "./call.ts";

/** What a candidate is sent: the client's own body (a model that speaks Messages), or its chat translation (one that does not). */
type Forwarded = PluginMessagesRequest | PluginChatRequest;

/** Does this model take the request natively? A plugin without messages.stream streams through chat. */
export function speaksMessages(model: RegisteredModel, stream: boolean): boolean {
  const m = model.instance.messages;
  return m !== undefined && (!stream || m.stream !== undefined);
}

/** The bridge for fallbacks that do not speak Messages: translated once, when the first of them needs it. */
class Bridge {
  private translation: ChatTranslation | null | undefined;
  constructor(private readonly body: MessagesCall["body"], private readonly stream: boolean) {}


  /** the chat request, or null when this request cannot be put as chat (its fallbacks without the capability are left out) */
  chat(): PluginChatRequest | null {
    if (this.translation === undefined) {
      try {
        this.translation = toChatRequest(this.body);
        // the usage chunk: billed counts and the upstream's cached tokens
        if (this.stream) this.translation.chat.stream_options = { include_usage: true };
      } catch {
        this.translation = null;
      }
    }
    return (this.translation?.chat ?? null) as PluginChatRequest | null;
  }

  context(): MessageContext {
    return { id: newMessageId(), stopSequences: this.translation?.stopSequences ?? [] };
  }

  /** the response headers of an answer the bridge served (the tools it left out) */
  headers(call: PipelineCall): Record<string, string> {
    const omitted = this.translation?.omittedTools ?? [];
    if (!omitted.length) return {};
    call.note({ omittedTools: omitted });
    return { [OMITTED_TOOLS_HEADER]: headerList(omitted) };
  }
}

function view(body: MessagesCall["body"], stream: boolean, bridge: Bridge): RequestView<Forwarded> {
  return { ...messagesEstimate(body), choices: 1, bodyFor: (m) => (speaksMessages(m, stream) ? (body as PluginMessagesRequest) : bridge.chat()) };
}

/** The answer's `model`: the name asked for when the requested model served (see above), else the fallback's id. */
const answeredModel = (call: MessagesCall, p: PreparedChat<Forwarded>) => (p.model === p.candidates[0]!.model ? call.body.model : p.model.id);

const pipelineCall = (call: MessagesCall): PipelineCall => ({
  principal: call.principal, requestId: call.requestId, signal: call.signal, startedAt: call.startedAt, note: call.note, route: ROUTE, trace: call.trace,
});

/** The plugin call's options: the chat pipeline's, and the client's Anthropic headers. */
const hostCall = (call: MessagesCall, p: PreparedChat<Forwarded>, signal: AbortSignal): HostMessagesCall => ({
  signal, requestId: call.requestId, allowed: p.allowed, routed: p.routed, trace: p.trace, anthropicVersion: call.anthropicVersion, anthropicBeta: call.anthropicBeta,
});

/** Non-streamed: the upstream's message with reelay's model id and the usage billed. */
export async function createNative(deps: AppDeps, call: MessagesCall, model: RegisteredModel): Promise<Response> {
  const pc = pipelineCall(call);
  const bridge = new Bridge(call.body, false);
  const p = await prepareRequest(deps, pc, model, view(call.body, false, bridge));
  let served: { native: MessagesResult; chat?: undefined } | { chat: PluginChatResult; native?: undefined };
  try {
    served = await withFallbacks(deps, pc, p, async (p) => {
      const native = speaksMessages(p.model, false) ? p.model.instance.messages! : null;
      if (native) return { native: await native.create(p.forwarded as PluginMessagesRequest, hostCall(call, p, call.signal)) };
      return { chat: await p.chat.complete(p.forwarded as PluginChatRequest, { signal: call.signal, requestId: call.requestId, allowed: p.allowed, routed: p.routed, trace: p.trace }) };
    });
  } catch (err) {
    throw failChat(deps, pc, p, err, call.signal.aborted);
  }
  const headers = { "content-type": "application/json", ...p.headers };
  if (served.chat) {
    const { completion, billed } = finishCompletion(deps, pc, p, served.chat);
    return new Response(JSON.stringify(messageFromCompletion(bridge.context(), completion, billed)), { headers: { ...headers, ...bridge.headers(pc) } });
  }
  const message = served.native.message;
  const billed = finishAnswer(deps, pc, p, reportedMessagesUsage(served.native.upstreamUsage), () => messageText(message.content));
  message.model = answeredModel(call, p);
  message.usage = { ...message.usage, ...usageOf(billedChat(billed)) };
  return new Response(JSON.stringify(message), { headers });
}

/** Streamed: the upstream's events relayed as they arrive (native-stream.ts), or a bridged fallback's rewritten. */
export async function streamNative(deps: AppDeps, call: MessagesCall, model: RegisteredModel, pingMs: number): Promise<Response> {
  const billed = billedChat();
  const pc = billingInto(pipelineCall(call), billed);
  const bridge = new Bridge(call.body, true);
  const p = await prepareRequest(deps, pc, model, view(call.body, true, bridge));
  let bridged = false;
  const res = await relayStream(deps, pc, p, async (p, signal) => {
    bridged = !speaksMessages(p.model, true);
    if (!bridged) {
      const events = (await p.model.instance.messages!.stream!(p.forwarded as PluginMessagesRequest, hostCall(call, p, signal)))[Symbol.asyncIterator]();
      return { events, first: await events.next(), format: new NativeMessagesFormat(answeredModel(call, p)) };
    }
    const chat = p.forwarded as PluginChatRequest;
    const events = (await p.chat.stream(chat, { signal, requestId: call.requestId, routed: p.routed, trace: p.trace }))[Symbol.asyncIterator]();
    return { events, first: await events.next(), format: new ChatFormat(chat, p.model.id) };
  });
  if (!bridged) return res;
  const rewritten = rewriteChatStream(deps, call.requestId, res, new MessagesStream(bridge.context(), pingMs), billed);
  for (const [k, v] of Object.entries(bridge.headers(pc))) rewritten.headers.set(k, v);
  return rewritten;
}

/** count_tokens asked of the upstream; a plugin that cannot ask it gets reelay's estimate of the body as sent. */
export async function countNative(call: CountTokensCall, model: RegisteredModel): Promise<{ input_tokens: number }> {
  const native = model.instance.messages!;
  if (!native.countTokens) {
    await model.ready(call.signal);
    return { input_tokens: messagesEstimate(call.body).estimate() };
  }
  try {
    return await native.countTokens(call.body as PluginMessagesRequest, { signal: call.signal, requestId: call.requestId, anthropicVersion: call.anthropicVersion, anthropicBeta: call.anthropicBeta });
  } catch (err) {
    throw err instanceof ApiError ? err : clientErrorFrom(err);
  }
}

/** The generated text of a message, for reelay's own count when the upstream reports none. */
function messageText(content: unknown): string {
  let text = "";
  for (const b of Array.isArray(content) ? content : []) {
    if (typeof b?.text === "string") text += b.text;
    if (typeof b?.thinking === "string") text += b.thinking;
    if (b?.type === "tool_use" || b?.type === "server_tool_use") text += JSON.stringify(b.input ?? {});
  }
  return text;
}
