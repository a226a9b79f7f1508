/**
 * OpenAI's chat completions wire format (https://platform.openai.com/docs/api-reference/chat), as
 * reelay receives it from clients and relays it back. Written out here instead of importing the
 * `openai` package: the request a plugin gets may carry parameters OpenAI does not know (vendor
 * extras are forwarded unchanged), so it allows unknown keys; answers may carry more fields than
 * named here too (they are relayed). test/openai-types.check.ts checks that messages, completions
 * and chunks typed by the `openai` package fit these types.
 */

/* ------------------------------------------------------------------ request */

export interface ChatTextPart {
  type: "text";
  text: string;
}
export interface ChatImagePart {
  type: "image_url";
  image_url: { url: string; detail?: "auto" | "low" | "high" | (string & {}) };
}
export interface ChatAudioPart {
  type: "input_audio";
  input_audio: { data: string; format: "wav" | "mp3" | (string & {}) };
}
export interface ChatFilePart {
  type: "file";
  file: { file_data?: string; file_id?: string; filename?: string };
}
export interface ChatRefusalPart {
  type: "refusal";
  refusal: string;
}
export type ChatUserContentPart = ChatTextPart | ChatImagePart | ChatAudioPart | ChatFilePart;

export interface ChatFunctionToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}
/** a call of a custom (free-form input) tool */
export interface ChatCustomToolCall {
  id: string;
  type: "custom";
  custom: { name: string; input: string };
}
export type ChatToolCall = ChatFunctionToolCall | ChatCustomToolCall;

export interface ChatSystemMessage {
  role: "system" | "developer";
  content: string | ChatTextPart[];
  name?: string;
}
export interface ChatUserMessage {
  role: "user";
  content: string | ChatUserContentPart[];
  name?: string;
}
export interface ChatAssistantMessage {
  role: "assistant";
  content?: string | Array<ChatTextPart | ChatRefusalPart> | null;
  name?: string;
  refusal?: string | null;
  tool_calls?: ChatToolCall[];
  /** deprecated by OpenAI, still sent by old clients */
  function_call?: { name: string; arguments: string } | null;
  audio?: { id: string } | null;
}
export interface ChatToolMessage {
  role: "tool";
  content: string | ChatTextPart[];
  tool_call_id: string;
}
export interface ChatFunctionMessage {
  role: "function";
  content: string | null;
  name: string;
}
export type ChatMessage = ChatSystemMessage | ChatUserMessage | ChatAssistantMessage | ChatToolMessage | ChatFunctionMessage;

export interface ChatFunctionTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}
/** a tool that takes free-form text (or a grammar) instead of JSON arguments */
export interface ChatCustomTool {
  type: "custom";
  custom: { name: string; description?: string; format?: unknown };
}
export type ChatTool = ChatFunctionTool | ChatCustomTool;

export type ChatToolChoice = "none" | "auto" | "required" | { type: "function"; function: { name: string } } | { type: "custom"; custom: { name: string } } | { type: "allowed_tools"; allowed_tools: unknown };

export type ChatResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/**
 * The body a chat plugin receives: the client's body, `max_tokens` / `max_completion_tokens`
 * clamped to the model's maximum, and `model` still the client's (reelay's) model id: a plugin
 * that talks to an upstream sends its own upstream model name.
 */
export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  n?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; include_obfuscation?: boolean } | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  seed?: number | null;
  user?: string;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean;
  response_format?: ChatResponseFormat;
  reasoning_effort?: string | null;
  metadata?: Record<string, string> | null;
  /** parameters this type does not name are forwarded unchanged */
  [key: string]: unknown;
}

/* ----------------------------------------------------------------- response */

export type ChatFinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "function_call";

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number; audio_tokens?: number; /** written to a prompt cache (OpenRouter's name; reelay's Anthropic plugin reports it) */ cache_write_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number; audio_tokens?: number; accepted_prediction_tokens?: number; rejected_prediction_tokens?: number } | null;
}

export interface ChatCompletionMessage {
  role: "assistant";
  content: string | null;
  refusal?: string | null;
  tool_calls?: ChatToolCall[];
  function_call?: { name: string; arguments: string } | null;
  /** reasoning models served by vLLM / DeepSeek */
  reasoning_content?: string | null;
}

export interface ChatLogprobs {
  content: Array<{ token: string; logprob: number; bytes: number[] | null; top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }> }> | null;
  refusal?: unknown;
}

export interface ChatCompletionChoice {
  index: number;
  message: ChatCompletionMessage;
  finish_reason: ChatFinishReason | null;
  logprobs?: ChatLogprobs | null;
}

/** A non-streamed answer. reelay sets `model` to its own model id before the client sees it. */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: ChatCompletionChoice[];
  usage?: ChatCompletionUsage;
  system_fingerprint?: string | null;
  service_tier?: string | null;
}

export interface ChatChunkToolCall {
  index: number;
  id?: string;
  type?: "function" | "custom";
  function?: { name?: string; arguments?: string };
  custom?: { name?: string; input?: string };
}

export interface ChatChunkDelta {
  role?: "assistant" | "developer" | "system" | "tool" | "user";
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ChatChunkToolCall[];
  function_call?: { name?: string; arguments?: string };
  reasoning_content?: string | null;
}

export interface ChatChunkChoice {
  index: number;
  delta: ChatChunkDelta;
  finish_reason: ChatFinishReason | null;
  logprobs?: ChatLogprobs | null;
}

/**
 * One streamed chunk. The last one before `[DONE]` may carry `usage` with `choices: []` (OpenAI's
 * `stream_options.include_usage`); vLLM's `continuous_usage_stats` puts running usage on every chunk.
 */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: ChatChunkChoice[];
  usage?: ChatCompletionUsage | null;
  system_fingerprint?: string | null;
  service_tier?: string | null;
}
