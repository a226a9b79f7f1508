/**
 * Anthropic's Messages API wire format (https://docs.anthropic.com/en/api/messages), as far as a
 * plugin's native `messages` capability and reelay's checks need it. Loose on purpose, like
 * openai-chat.ts: a pass-through must keep every field it does not know (thinking signatures,
 * `cache_control`, beta fields), so every object allows unknown keys.
 */

/** One content block of a request or an answer: `text`, `image`, `tool_use`, `tool_result`, `thinking` … */
export interface MessagesContentBlock {
  type: string;
  [key: string]: unknown;
}

export interface MessagesInputMessage {
  role: "user" | "assistant" | (string & {});
  content: string | MessagesContentBlock[];
  [key: string]: unknown;
}

/**
 * The body a `messages` capability receives: the client's request with `max_tokens` clamped to the
 * model's maximum and `model` still reelay's model id (send your upstream's own name).
 */
export interface MessagesRequest {
  model: string;
  messages: MessagesInputMessage[];
  max_tokens: number;
  system?: string | MessagesContentBlock[];
  stream?: boolean;
  [key: string]: unknown;
}

/** Usage as Anthropic reports it: `input_tokens` excludes the cache reads and writes. */
export interface MessagesUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  [key: string]: unknown;
}

/** A non-streamed answer (`type: "message"`). */
export interface AnthropicMessage {
  id: string;
  type: "message";
  role: "assistant";
  content: MessagesContentBlock[];
  model: string;
  stop_reason: string | null;
  stop_sequence?: string | null;
  usage: MessagesUsage;
  [key: string]: unknown;
}

/**
 * One streamed event, relayed to the client as `event: <event>\ndata: <data>\n\n`: `json` is
 * `data` parsed, and `json.type` is `event` (message_start, content_block_start,
 * content_block_delta, content_block_stop, message_delta, message_stop, ping).
 */
export interface MessagesStreamEvent {
  event: string;
  data: string;
  json: { type: string; [key: string]: unknown };
}

/**
 * Anthropic usage in OpenAI's shape, values unchecked (reelay judges them): `prompt_tokens` counts
 * every prompt token — `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`
 * (Anthropic's `input_tokens` leaves the cache out; subtracting the cache from it a second time is
 * the negative-input bug other gateways have had) — with the cache reads as
 * `prompt_tokens_details.cached_tokens` and the writes as `cache_write_tokens`. A field that is not
 * a count stays as it came, so the host can say what was wrong with it.
 */
export function chatUsageOfMessages(u: unknown): { prompt_tokens: unknown; completion_tokens: unknown; total_tokens?: number; prompt_tokens_details: { cached_tokens: unknown; cache_write_tokens: unknown } } {
  const x = (typeof u === "object" && u !== null ? u : {}) as Partial<Record<keyof MessagesUsage, unknown>>;
  const orZero = (v: unknown) => (v === undefined || v === null ? 0 : v);
  const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
  const input = x.input_tokens;
  const read = orZero(x.cache_read_input_tokens);
  const written = orZero(x.cache_creation_input_tokens);
  const prompt = isCount(input) ? input + (isCount(read) ? read : 0) + (isCount(written) ? written : 0) : input;
  const total = isCount(prompt) && isCount(x.output_tokens) ? prompt + x.output_tokens : undefined;
  return { prompt_tokens: prompt, completion_tokens: x.output_tokens, ...(total === undefined ? {} : { total_tokens: total }), prompt_tokens_details: { cached_tokens: read, cache_write_tokens: written } };
}
