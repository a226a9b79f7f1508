/**
 * Anthropic Messages answers → OpenAI chat answers.
 *
 * - text blocks → `content`; `thinking` → `reasoning_content`; tool_use → `tool_calls` (input as
 *   JSON arguments; a custom tool's call as a custom tool call with its string input)
 * - thinking and redacted_thinking blocks also as `thinking_blocks` ({type, thinking, signature} /
 *   {type, data}, the field LiteLLM uses): a client that sends them back with the assistant
 *   message lets a thinking turn with tool calls continue (Anthropic checks the signature)
 * - stop_reason: end_turn / stop_sequence / pause_turn → stop, max_tokens /
 *   model_context_window_exceeded → length, tool_use → tool_calls, refusal → content_filter
 * - usage: prompt_tokens = input + cache reads + cache writes, the cache in prompt_tokens_details
 *   (chatUsageOfMessages)
 * Streams: one chat chunk per delta as it arrives; the role comes with the first one; the finish
 * chunk and the usage chunk (`choices: []`) after message_stop, then [DONE].
 */
import {
  chatChunks, chatUsageOfMessages, chunkEvent, PluginError,
  type AnthropicMessage, type ChatCompletion, type ChatCompletionChunk, type ChatFinishReason, type ChatStreamEvent, type ChatToolCall, type MessagesStreamEvent,
} from "@reelay/plugin-sdk";
import { errorEventFailure } from "./upstream-errors.ts";

export function finishReasonOf(stop: unknown): ChatFinishReason {
  switch (stop) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

type ThinkingBlock = { type: "thinking"; thinking: string; signature: string } | { type: "redacted_thinking"; data: string };

/** The chat completion of a non-streamed answer; throws `malformed` for what is not a message. */
export function toChatCompletion(m: AnthropicMessage, model: string, customTools: Set<string>): ChatCompletion {
  if (typeof m !== "object" || m === null || m.type !== "message" || !Array.isArray(m.content)) throw new PluginError("malformed", "upstream answer is not an Anthropic message (no content array)");
  let text = "";
  let reasoning: string | null = null;
  const thinking: ThinkingBlock[] = [];
  const calls: ChatToolCall[] = [];
  for (const b of m.content) {
    if (b.type === "text" && typeof b.text === "string") text += b.text;
    else if (b.type === "thinking" && typeof b.thinking === "string") {
      reasoning = (reasoning ?? "") + b.thinking;
      thinking.push({ type: "thinking", thinking: b.thinking, signature: String(b.signature ?? "") });
    } else if (b.type === "redacted_thinking" && typeof b.data === "string") thinking.push({ type: "redacted_thinking", data: b.data });
    else if (b.type === "tool_use") calls.push(toolCall(String(b.id), String(b.name), b.input, customTools));
  }
  const out = chatChunks({ model, id: typeof m.id === "string" ? m.id : undefined });
  const completion = out.completion({ content: calls.length && !text ? null : text, ...(calls.length ? { tool_calls: calls } : {}) }, finishReasonOf(m.stop_reason));
  const message = completion.choices[0]!.message as ChatCompletion["choices"][number]["message"] & { thinking_blocks?: ThinkingBlock[] };
  if (reasoning !== null) message.reasoning_content = reasoning;
  if (thinking.length) message.thinking_blocks = thinking;
  const usage = chatUsageOfMessages(m.usage);
  return { ...completion, usage: usage as ChatCompletion["usage"] };
}

function toolCall(id: string, name: string, input: unknown, customTools: Set<string>): ChatToolCall {
  if (customTools.has(name)) return { id, type: "custom", custom: { name, input: String((input as { input?: unknown } | null)?.input ?? "") } };
  return { id, type: "function", function: { name, arguments: JSON.stringify(input ?? {}) } };
}

/**
 * Anthropic stream events → chat stream events. A failure event (`error`) throws: before anything
 * was yielded as the kind that lets another deployment answer (overloaded, 429, 5xx), after it as
 * `stream_interrupted`. Ends with the finish chunk, the usage chunk and [DONE] after message_stop.
 */
export async function* toChatStream(events: AsyncIterable<MessagesStreamEvent>, model: string, customTools: Set<string>): AsyncGenerator<ChatStreamEvent> {
  const out = chatChunks({ model });
  const head = { id: out.id, object: "chat.completion.chunk" as const, created: out.created, model };
  const chunk = (delta: ChatCompletionChunk["choices"][number]["delta"] & { thinking_blocks?: ThinkingBlock[] }) => chunkEvent({ ...head, choices: [{ index: 0, delta, finish_reason: null }] });
  let started = false;
  const first = function* (): Generator<ChatStreamEvent> {
    if (started) return;
    started = true;
    yield out.role();
  };
  /** per content block: what it is, and for tool calls their index among the calls */
  const blocks = new Map<number, { type: string; id?: string; tool?: number; name?: string; input?: string; thinking?: string }>();
  let tools = 0;
  let usage: Record<string, unknown> = {};
  let stop: unknown = null;
  for await (const e of events) {
    const j = e.json as Record<string, any>;
    switch (e.event) {
      case "message_start":
        usage = { ...usage, ...definedOf(j.message?.usage) };
        break;
      case "content_block_start": {
        const b = j.content_block ?? {};
        const index = Number(j.index);
        if (b.type === "tool_use") {
          const custom = customTools.has(b.name);
          blocks.set(index, { type: custom ? "custom" : "tool_use", id: String(b.id), tool: tools++, name: String(b.name), input: "" });
          // a custom tool's call goes out whole at the block's end: its string input is inside the JSON
          if (!custom) {
            yield* first();
            yield chunk({ tool_calls: [{ index: blocks.get(index)!.tool!, id: String(b.id), type: "function", function: { name: String(b.name), arguments: "" } }] });
          }
        } else {
          blocks.set(index, { type: String(b.type), thinking: "" });
          if (b.type === "text" && typeof b.text === "string" && b.text) {
            yield* first();
            yield chunk({ content: b.text });
          } else if (b.type === "redacted_thinking" && typeof b.data === "string") {
            yield* first();
            yield chunk({ thinking_blocks: [{ type: "redacted_thinking", data: b.data }] });
          }
        }
        break;
      }
      case "content_block_delta": {
        const d = j.delta ?? {};
        const block = blocks.get(Number(j.index));
        if (d.type === "text_delta" && typeof d.text === "string" && d.text) {
          yield* first();
          yield chunk({ content: d.text });
        } else if (d.type === "thinking_delta" && typeof d.thinking === "string" && d.thinking) {
          if (block) block.thinking = (block.thinking ?? "") + d.thinking;
          yield* first();
          yield chunk({ reasoning_content: d.thinking });
        } else if (d.type === "signature_delta" && typeof d.signature === "string") {
          yield* first();
          yield chunk({ thinking_blocks: [{ type: "thinking", thinking: block?.thinking ?? "", signature: d.signature }] });
        } else if (d.type === "input_json_delta" && typeof d.partial_json === "string" && d.partial_json && block) {
          if (block.type === "custom") block.input += d.partial_json;
          else {
            yield* first();
            yield chunk({ tool_calls: [{ index: block.tool!, function: { arguments: d.partial_json } }] });
          }
        }
        break;
      }
      case "content_block_stop": {
        const block = blocks.get(Number(j.index));
        if (block?.type === "custom") {
          let input: unknown = {};
          try {
            input = JSON.parse(block.input || "{}");
          } catch {
            throw new PluginError(started ? "stream_interrupted" : "malformed", "upstream sent a tool input that is not JSON");
          }
          yield* first();
          yield chunk({ tool_calls: [{ index: block.tool!, id: block.id, type: "custom", custom: { name: block.name, input: String((input as { input?: unknown })?.input ?? "") } }] });
        }
        break;
      }
      case "message_delta":
        usage = { ...usage, ...definedOf(j.usage) };
        if (j.delta?.stop_reason !== undefined) stop = j.delta.stop_reason;
        break;
      case "message_stop": {
        yield* first();
        yield out.finish(finishReasonOf(stop));
        // the upstream's numbers as they came (the host judges them), in OpenAI's shape
        yield chunkEvent({ ...head, choices: [], usage: chatUsageOfMessages(usage) as ChatCompletionChunk["usage"] });
        yield out.done();
        return;
      }
      case "error":
        throw errorEventFailure(j, started);
      default:
        break; // ping, and events of later API versions
    }
  }
  throw new PluginError(started ? "stream_interrupted" : "malformed", "upstream stream ended before message_stop");
}

/** The fields of a usage object that carry a value (message_delta repeats some as null). */
function definedOf(u: unknown): Record<string, unknown> {
  if (typeof u !== "object" || u === null) return {};
  return Object.fromEntries(Object.entries(u).filter(([, v]) => v !== null && v !== undefined));
}
