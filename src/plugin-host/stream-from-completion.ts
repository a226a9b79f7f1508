/**
 * `stream: true` for a chat plugin without stream(): the completion, once complete() returned, as
 * the chunks a streaming upstream would have sent (one content chunk per choice, its finish, the
 * usage chunk, [DONE]). The client waits for the whole answer before the first byte, but gets the
 * stream it asked for, billed exactly like the non-streamed call.
 */
import { chunkEvent, DONE_EVENT, type ChatCompletionChunk, type ChatCompletionRequest, type ChatResult, type ChatStreamEvent } from "../plugin-sdk/index.ts";

export async function streamFromCompletion(result: ChatResult, body: ChatCompletionRequest): Promise<AsyncIterable<ChatStreamEvent>> {
  const c = result.completion;
  const head = { id: c.id ?? `chatcmpl-${crypto.randomUUID()}`, object: "chat.completion.chunk" as const, created: c.created ?? Math.floor(Date.now() / 1000), model: c.model ?? body.model };
  const events: ChatStreamEvent[] = [];
  for (const [i, choice] of c.choices.entries()) {
    const index = typeof choice.index === "number" ? choice.index : i;
    const m = choice.message;
    const delta: ChatCompletionChunk["choices"][number]["delta"] = { role: "assistant", content: m.content ?? "" };
    if (m.tool_calls?.length) delta.tool_calls = m.tool_calls.map((t, n) => (t.type === "custom" ? { index: n, id: t.id, type: t.type, custom: t.custom } : { index: n, id: t.id, type: t.type, function: t.function }));
    if (typeof m.reasoning_content === "string") delta.reasoning_content = m.reasoning_content;
    events.push(chunkEvent({ ...head, choices: [{ index, delta, finish_reason: null }] }));
    events.push(chunkEvent({ ...head, choices: [{ index, delta: {}, finish_reason: choice.finish_reason ?? "stop" }] }));
  }
  // the usage chunk carries what complete() returned to be billed (or the upstream's report): the relay bills from it
  const usage = result.usage ?? result.upstreamUsage;
  if (usage && typeof usage === "object") events.push(chunkEvent({ ...head, choices: [], usage: usage as ChatCompletionChunk["usage"] }));
  events.push(DONE_EVENT);
  return (async function* () {
    yield* events;
  })();
}
