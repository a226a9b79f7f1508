/**
 * A Responses API request as the chat request every chat plugin serves (the LiteLLM approach):
 * `instructions` → a system message, items → messages (consecutive function_call /
 * custom_tool_call items → one assistant message with tool_calls, their outputs → tool messages, a
 * tool output's images → a user message after the tool results, reelay's sealed reasoning →
 * `reasoning_content` (or `reasoning`, the field it came in) on the assistant message it led to),
 * tools → chat tools (tools.ts),
 * `text.format` → `response_format`, `max_output_tokens` → `max_tokens` (the field every
 * OpenAI-compatible server reads; clamped by the chat pipeline), `reasoning.effort` →
 * `reasoning_effort`. Fields that only mean something to the Responses API (`client_metadata`,
 * `include`, `store` …) are not forwarded; other top-level fields (`prompt_cache_key`,
 * `service_tier`, vendor extras) are forwarded unchanged, as POST /v1/chat/completions does.
 */
import { ApiError, badRequest } from "../../errors.ts";
import type { ContentPart, InputItem } from "./input-items.ts";
import type { ResponsesRequest } from "./model.ts";
import type { ReasoningField } from "./reasoning-seal.ts";
import { customArguments, flatName, toolChoice, type OfferedTools } from "./tools.ts";

/** Read here, never forwarded as they are. */
const RESPONSES_ONLY = new Set([
  "model", "input", "instructions", "max_output_tokens", "stream", "stream_options", "store", "previous_response_id", "tools", "tool_choice",
  "parallel_tool_calls", "text", "metadata", "truncation", "background", "top_logprobs", "include", "reasoning", "max_tool_calls",
  "conversation", "prompt", "temperature", "top_p", "client_metadata",
]);
/** Same name and meaning in both APIs. */
const SHARED = ["temperature", "top_p", "user", "service_tier", "safety_identifier", "prompt_cache_key", "prompt_cache_retention"] as const;

const unsupported = (message: string, param: string) => badRequest(message, param, "unsupported_parameter");
const present = (v: unknown) => v !== undefined && v !== null;

/** What a chat model cannot do at all: refused before anything else happens. */
export function refuseUnsupported(body: ResponsesRequest & Record<string, unknown>): void {
  if (body.background === true) throw unsupported("'background': reelay answers responses on the request; send background: false or leave it out.", "background");
  if (present(body.conversation)) throw unsupported("'conversation': reelay has no Conversations API; continue with previous_response_id, or send the whole conversation as input.", "conversation");
  if (present(body.prompt)) throw unsupported("'prompt': reelay has no stored prompt templates; send instructions and input.", "prompt");
  if (body.truncation === "auto") throw unsupported("'truncation': only 'disabled' — reelay never drops part of a conversation silently; a conversation longer than the model's context is a 400.", "truncation");
}

export interface ChatRequestParts {
  body: ResponsesRequest & Record<string, unknown>;
  /** the conversation so far (previous responses' inputs and outputs), oldest first */
  history: InputItem[];
  /** this request's input, item references resolved */
  input: InputItem[];
  /** the request's tools as chat tools (tools.ts) */
  tools: OfferedTools;
  /** the earlier reasoning a reasoning item gives back to this model, and the field it goes in, if any (reasoning-seal.ts) */
  replayReasoning(item: Extract<InputItem, { type: "reasoning" }>): { text: string; field: ReasoningField } | null;
}

export function toChatRequest({ body, history, input, tools, replayReasoning }: ChatRequestParts): Record<string, unknown> {
  const chat: Record<string, unknown> = { model: body.model };
  for (const [k, v] of Object.entries(body)) if (!RESPONSES_ONLY.has(k) && v !== null) chat[k] = v; // vendor extras, e.g. top_k (null: not given)
  for (const k of SHARED) if (present(body[k])) chat[k] = body[k];
  const messages: ChatMessage[] = [];
  if (present(body.instructions)) messages.push({ role: "system", content: body.instructions });
  appendMessages(messages, [...history, ...input], replayReasoning);
  if (messages.length === 0) throw badRequest("'input' is required: a string or a non-empty array of input items (or previous_response_id with new input).", "input");
  chat.messages = messages;
  if (body.stream === true) chat.stream = true;
  if (present(body.max_output_tokens)) chat.max_tokens = body.max_output_tokens;
  if (tools.chat.length) {
    chat.tools = tools.chat;
    if (present(body.parallel_tool_calls)) chat.parallel_tool_calls = body.parallel_tool_calls;
  }
  if (present(body.tool_choice)) chat.tool_choice = toolChoice(body.tool_choice, tools);
  const format = responseFormat(body.text?.format);
  if (format) chat.response_format = format;
  const verbosity = (body.text as { verbosity?: unknown } | null | undefined)?.verbosity;
  if (present(verbosity)) chat.verbosity = verbosity;
  if (present(body.reasoning?.effort)) chat.reasoning_effort = body.reasoning!.effort;
  if (present(body.top_logprobs) || body.include?.includes("message.output_text.logprobs")) {
    chat.logprobs = true;
    chat.top_logprobs = body.top_logprobs ?? 0;
  }
  return chat;
}

type ChatMessage = { role: string; content?: unknown; tool_calls?: unknown[] } & Record<string, unknown>;

function appendMessages(messages: ChatMessage[], items: InputItem[], replayReasoning: ChatRequestParts["replayReasoning"]): void {
  let lastWasAssistant = false; // a tool call right after assistant text joins that message, as the chat API puts them together
  let reasoning: { text: string; field: ReasoningField } | null = null; // earlier reasoning, for the assistant message it led to
  let images: ContentPart[] = []; // images of tool outputs: a chat tool message holds only text, so they follow the tool results as a user message
  const withReasoning = (m: ChatMessage): ChatMessage => {
    if (reasoning !== null) m[reasoning.field] = reasoning.text;
    reasoning = null;
    return m;
  };
  const flushImages = () => {
    if (images.length) messages.push({ role: "user", content: userContent(images) });
    images = [];
  };
  for (const it of items) {
    if (it.type !== "function_call_output" && it.type !== "custom_tool_call_output" && it.type !== "reasoning" && it.type !== "additional_tools") flushImages();
    switch (it.type) {
      case "message": {
        if (it.role === "assistant") {
          messages.push(withReasoning({ role: "assistant", content: joinText(it.content) }));
          lastWasAssistant = true;
          continue;
        }
        const role = it.role === "developer" ? "system" : it.role; // "developer" is OpenAI-only; every chat server knows "system"
        messages.push({ role, content: role === "system" ? joinText(it.content) : userContent(it.content) });
        break;
      }
      case "function_call":
      case "custom_tool_call": {
        const args = it.type === "function_call" ? it.arguments : customArguments(it.input);
        const call = { id: it.call_id, type: "function", function: { name: flatName(it.namespace, it.name), arguments: args } };
        const last = messages.at(-1);
        if (lastWasAssistant && last?.role === "assistant") {
          (last.tool_calls ??= []).push(call);
          if (last.content === "") last.content = null;
          if (reasoning !== null) withReasoning(last);
        } else messages.push(withReasoning({ role: "assistant", content: null, tool_calls: [call] }));
        lastWasAssistant = true;
        continue;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        const parts = typeof it.output === "string" ? [] : it.output;
        const shown = parts.filter((p) => p.type === "input_image");
        const text = typeof it.output === "string" ? it.output : joinText(parts);
        messages.push({ role: "tool", tool_call_id: it.call_id, content: shown.length ? `${text}${text ? "\n" : ""}(the image${shown.length > 1 ? "s" : ""} of this result follow${shown.length > 1 ? "" : "s"} in the next message)` : text });
        images.push(...shown);
        break;
      }
      case "reasoning": {
        const earlier = replayReasoning(it);
        const before = reasoning as { text: string } | null; // (assigned in withReasoning too, which TypeScript's narrowing does not see)
        if (earlier !== null) reasoning = { text: (before?.text ?? "") + earlier.text, field: earlier.field };
        continue; // does not break an assistant turn
      }
      case "additional_tools":
        continue; // its tools are offered with the request's own (service.ts)
      case "item_reference":
        throw new Error("item references are resolved before translation");
    }
    lastWasAssistant = false;
  }
  flushImages();
}

function joinText(parts: ContentPart[]): string {
  return parts.map((p) => (p.type === "input_text" || p.type === "output_text" ? p.text : p.type === "refusal" ? p.refusal : "")).join("");
}

/** A single text part stays a plain string (what every chat server reads); images and audio become chat content parts. */
function userContent(parts: ContentPart[]): string | Record<string, unknown>[] {
  if (parts.every((p) => p.type === "input_text")) return joinText(parts);
  return parts.map((p) => {
    switch (p.type) {
      case "input_image":
        return { type: "image_url", image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } };
      case "input_audio":
        return { type: "input_audio", input_audio: p.input_audio };
      default:
        return { type: "text", text: joinText([p]) };
    }
  });
}

function responseFormat(format: Record<string, unknown> | null | undefined): Record<string, unknown> | null {
  if (!format || format.type === "text") return null;
  if (format.type === "json_object") return { type: "json_object" };
  if (format.type === "json_schema") {
    if (typeof format.name !== "string" || format.name === "") throw badRequest("'text.format.name' must be a non-empty string.", "text.format.name");
    if (!format.schema || typeof format.schema !== "object") throw badRequest("'text.format.schema' must be a JSON schema object.", "text.format.schema");
    const json_schema: Record<string, unknown> = { name: format.name, schema: format.schema };
    for (const k of ["description", "strict"]) if (present(format[k])) json_schema[k] = format[k];
    return { type: "json_schema", json_schema };
  }
  throw badRequest("'text.format.type' must be text, json_object or json_schema.", "text.format.type");
}

/** The Responses field a chat parameter came from, for errors the model's plugin reports in chat terms. */
const PARAM_FROM_CHAT: Array<[RegExp, string]> = [
  [/^messages(\[|\.|$)/, "input"],
  [/^(max_tokens|max_completion_tokens)$/, "max_output_tokens"],
  [/^response_format/, "text.format"],
  [/^(logprobs|top_logprobs)$/, "top_logprobs"],
  [/^reasoning_effort$/, "reasoning.effort"],
  [/^verbosity$/, "text.verbosity"],
];

export function responsesError(err: unknown): unknown {
  if (!(err instanceof ApiError) || !err.param) return err;
  const hit = PARAM_FROM_CHAT.find(([re]) => re.test(err.param!));
  if (!hit) return err;
  return new ApiError(err.status, err.type, `${err.message} (Responses field '${hit[1]}'; sent to the model as the chat parameter '${err.param}'.)`, { code: err.code, param: hit[1], headers: err.headers, cause: err });
}
