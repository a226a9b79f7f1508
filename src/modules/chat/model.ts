/**
 * Schemas of POST /v1/chat/completions. Only the fields reelay reads are typed; every other field
 * (tools, response_format, seed, vendor extras …) is allowed through and forwarded unchanged.
 */
import { t } from "elysia";
import { INT4_MAX, JsonInteger } from "../../http/schemas.ts";

/** OpenAI marks these nullable: null means "not given" */
const Count = (maximum: number, description: string) => t.Optional(t.Nullable(JsonInteger({ minimum: 1, maximum, description })));

export const ChatCompletionRequest = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, description: "a chat model id from GET /v1/models" }),
    messages: t.Array(t.Object({}, { additionalProperties: true }), { minItems: 1, description: "the conversation, in OpenAI's message format (forwarded unchanged)" }),
    stream: t.Optional(t.Nullable(t.Boolean({ description: "stream the answer as server-sent events (null: no)" }))),
    max_tokens: Count(INT4_MAX, "1 to 2147483647; clamped to the model's maximum output"),
    max_completion_tokens: Count(INT4_MAX, "1 to 2147483647; clamped to the model's maximum output"),
    n: Count(128, "number of choices, 1 to 128 (OpenAI's limit); the credit hold covers n × max output tokens"),
    stream_options: t.Optional(t.Nullable(t.Object({ include_usage: t.Optional(t.Boolean()) }, { additionalProperties: true }))),
  },
  {
    additionalProperties: true,
    examples: [
      {
        // the built-in local model: the example runs as written on a fresh install (it continues stories)
        model: "stories260k",
        messages: [{ role: "user", content: "Once upon a time" }],
        max_tokens: 32,
        stream: false,
      },
    ],
  },
);
export type ChatCompletionRequest = typeof ChatCompletionRequest.static;

/** The upstream's completion object, relayed with `model` set to reelay's model id. */
export const ChatCompletion = t.Object(
  {
    id: t.String(),
    object: t.Literal("chat.completion"),
    created: t.Integer(),
    model: t.String(),
    choices: t.Array(t.Object({ index: t.Integer(), message: t.Object({}, { additionalProperties: true }), finish_reason: t.Nullable(t.String()) }, { additionalProperties: true })),
    usage: t.Optional(t.Object({ prompt_tokens: t.Integer(), completion_tokens: t.Integer(), total_tokens: t.Integer() }, { additionalProperties: true })),
  },
  {
    additionalProperties: true,
    description:
      "With `stream: true` the answer is `text/event-stream` instead: one `data: <chat.completion.chunk JSON>` event per upstream chunk, " +
      "a final usage chunk (`choices: []`) only when `stream_options.include_usage` is true, then `data: [DONE]`. " +
      "A failure mid-stream sends `data: {\"error\": {message, type, param, code}}` and ends the stream.",
    examples: [
      {
        id: "chatcmpl-123",
        object: "chat.completion",
        created: 1763760000,
        model: "llama-3-8b",
        choices: [{ index: 0, message: { role: "assistant", content: "Red, green, blue." }, finish_reason: "stop" }],
        usage: { prompt_tokens: 24, completion_tokens: 6, total_tokens: 30 },
      },
    ],
  },
);
