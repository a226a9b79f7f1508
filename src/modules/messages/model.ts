/**
 * Schemas of Anthropic's Messages API routes. The fields reelay reads are typed here; the shape of
 * each message, content block and tool is checked when it is translated (to-chat.ts), where the
 * message can name the exact place (`messages[2].content[0].tool_use_id`). Other top-level fields
 * (betas such as `context_management`, `container`, `service_tier` …) are accepted: passed on as
 * sent to a model that speaks Messages natively (native.ts), ignored by the bridge.
 */
import { t } from "elysia";
import { INT4_MAX, JsonInteger } from "../../http/schemas.ts";

const Obj = (description?: string) => t.Object({}, { additionalProperties: true, description });
/** null means "not given", as the Anthropic SDKs may send it */
const Maybe = <T extends Parameters<typeof t.Nullable>[0]>(s: T) => t.Optional(t.Nullable(s));

const conversation = {
  model: t.String({ minLength: 1, maxLength: 256, description: "a chat model id or alias from GET /v1/models (any chat model, whatever its plugin)" }),
  messages: t.Array(Obj(), {
    minItems: 1,
    description:
      "`{role: \"user\" | \"assistant\", content}`; content a string or blocks: `text`, `image` (base64 or URL), `tool_use`, `tool_result` (string or blocks, `is_error`), " +
      "`thinking` / `redacted_thinking` (sent back as given to a model that speaks Messages natively; through the bridge not sent to the model), `document` with a text source. A `system` role message (Claude Code's mid-conversation system beta) becomes a system message in place.",
  }),
  system: Maybe(t.Union([t.String(), t.Array(Obj())], { description: "a string or `text` blocks (`cache_control` accepted)" })),
  tools: Maybe(t.Array(Obj(), {
    description: "custom tools `{name, description, input_schema}` → chat function tools. Anthropic's own tools (`web_search_…`, `bash_…`, `code_execution_…` …) are left out and named in the `x-reelay-omitted-tools` response header",
  })),
  tool_choice: Maybe(Obj("`{type: \"auto\" | \"any\" | \"none\"}` or `{type: \"tool\", name}`; `disable_parallel_tool_use: true` asks for at most one tool call")),
  thinking: Maybe(Obj("`{type: \"enabled\", budget_tokens}` asks the model to reason (sent as `reasoning_effort`); `adaptive` and `disabled` send nothing")),
};

export const MessagesRequest = t.Object(
  {
    ...conversation,
    max_tokens: JsonInteger({ minimum: 1, maximum: INT4_MAX, description: "required; clamped to the model's maximum output (reaching it: `stop_reason: \"max_tokens\"`)" }),
    stream: Maybe(t.Boolean({ description: "stream Anthropic's server-sent events (message_start … message_stop)" })),
    stop_sequences: Maybe(t.Array(t.String({ maxLength: 1000 }), { maxItems: 32, description: "sent as the chat `stop`" })),
    temperature: Maybe(t.Number({ minimum: 0, maximum: 1 })),
    top_p: Maybe(t.Number({ minimum: 0, maximum: 1 })),
    top_k: Maybe(JsonInteger({ minimum: 0, maximum: INT4_MAX, description: "forwarded as `top_k` (vLLM, llama.cpp and others read it)" })),
    metadata: Maybe(t.Object({ user_id: Maybe(t.String({ maxLength: 512 })) }, { additionalProperties: true, description: "`user_id` is sent as the chat `user`" })),
    output_config: Maybe(t.Object({ effort: Maybe(t.String({ description: "low, medium, high, xhigh or max: the `reasoning_effort` of a request with thinking enabled" })) }, { additionalProperties: true })),
  },
  {
    additionalProperties: true,
    examples: [{ model: "stories260k", max_tokens: 32, messages: [{ role: "user", content: "Once upon a time" }] }],
  },
);
export type MessagesRequest = typeof MessagesRequest.static;

export const CountTokensRequest = t.Object(conversation, {
  additionalProperties: true,
  examples: [{ model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }] }],
});
export type CountTokensRequest = typeof CountTokensRequest.static;

export const CountTokensResponse = t.Object({ input_tokens: t.Integer() }, { examples: [{ input_tokens: 14 }] });

export const MessageObject = t.Object(
  {
    id: t.String(),
    type: t.Literal("message"),
    role: t.Literal("assistant"),
    model: t.String({ description: "the id of the model that served (an alias asked for is answered with its model's id); a native pass-through answers the name asked for when that model served" }),
    content: t.Array(t.Object({ type: t.String() }, { additionalProperties: true }), { description: "`thinking` (the model's reasoning, when it sends it), `text`, `tool_use` with the parsed `input`" }),
    stop_reason: t.Nullable(t.String({ description: "end_turn, max_tokens, stop_sequence, tool_use or refusal" })),
    stop_sequence: t.Nullable(t.String()),
    usage: t.Object(
      { input_tokens: t.Integer(), output_tokens: t.Integer(), cache_creation_input_tokens: t.Integer(), cache_read_input_tokens: t.Integer() },
      { additionalProperties: true, description: "what was billed, as the usage row records it: `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` is the prompt charged (cache reads at the model's cache-read price, cache writes at its cache-write price)" },
    ),
  },
  {
    additionalProperties: true,
    description:
      "With `stream: true` the answer is `text/event-stream` in Anthropic's grammar: `message_start`, `ping`, then per content block `content_block_start`, " +
      "`content_block_delta` (`text_delta`, `thinking_delta` + `signature_delta`, `input_json_delta`)… and `content_block_stop` (indices contiguous, one block open at a time), " +
      "then `message_delta` with the stop reason and the usage billed, and `message_stop`; `ping` keeps a quiet stream alive. " +
      "A failure after the stream started sends an `error` event (`{type: \"error\", error: {type, message}}`) and ends the stream; only what was delivered is charged.",
    examples: [
      {
        id: "msg_AbCd…", type: "message", role: "assistant", model: "llama-3-8b", content: [{ type: "text", text: "Red, green, blue." }],
        stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 24, output_tokens: 6, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    ],
  },
);

/** Anthropic's error envelope (the OpenAPI document's schema of these routes' errors) */
export const AnthropicError = t.Object(
  { type: t.Literal("error"), error: t.Object({ type: t.String(), message: t.String() }) },
  { examples: [{ type: "error", error: { type: "invalid_request_error", message: "max_tokens: Field required" } }] },
);
