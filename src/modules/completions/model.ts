/**
 * Schemas of the legacy POST /v1/completions. Typed fields are the ones reelay reads or refuses;
 * the rest (presence_penalty, seed, logit_bias, vendor extras …) is forwarded to the chat request.
 */
import { t } from "elysia";
import { INT4_MAX, JsonInteger } from "../../http/schemas.ts";

/** prompts per request: each is a chat call of its own, run together (LangChain batches 20) */
export const MAX_PROMPTS = 32;
/** OpenAI's default for this API when the client sends no max_tokens */
export const DEFAULT_MAX_TOKENS = 16;

const Nullable = <T extends Parameters<typeof t.Nullable>[0]>(s: T) => t.Optional(t.Nullable(s));

export const CompletionRequest = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, description: "a chat model id from GET /v1/models" }),
    prompt: t.Union([t.String(), t.Array(t.String(), { minItems: 1, maxItems: MAX_PROMPTS })], {
      description: `a string, or an array of 1 to ${MAX_PROMPTS} strings (one completion per prompt; token-id prompts are not accepted). Each prompt is sent to the chat model as one user message`,
    }),
    max_tokens: Nullable(JsonInteger({ minimum: 1, maximum: INT4_MAX, description: `1 to 2147483647 (default ${DEFAULT_MAX_TOKENS}, as on OpenAI); clamped to the model's maximum output` })),
    n: Nullable(JsonInteger({ minimum: 1, maximum: 128, description: "completions per prompt" })),
    stream: Nullable(t.Boolean({ description: "stream text_completion chunks as server-sent events (one prompt only)" })),
    stream_options: Nullable(t.Object({ include_usage: t.Optional(t.Boolean()) }, { additionalProperties: true })),
    stop: Nullable(t.Union([t.String(), t.Array(t.String(), { maxItems: 4 })])),
    temperature: Nullable(t.Number({ minimum: 0, maximum: 2 })),
    top_p: Nullable(t.Number({ minimum: 0, maximum: 1 })),
    echo: Nullable(t.Boolean({ description: "`false` only: a chat model does not return the prompt" })),
    suffix: Nullable(t.String({ description: "refused (a chat model does not fill in between a prompt and a suffix)" })),
    logprobs: Nullable(JsonInteger({ minimum: 0, maximum: 5, description: "refused: token log probabilities are not returned on this route" })),
    best_of: Nullable(JsonInteger({ minimum: 1, maximum: 20, description: "1 only" })),
  },
  {
    additionalProperties: true,
    examples: [{ model: "llama-3-8b", prompt: "Once upon a time", max_tokens: 32 }],
  },
);
export type CompletionRequest = typeof CompletionRequest.static;

export const TextCompletion = t.Object(
  {
    id: t.String(),
    object: t.Literal("text_completion"),
    created: t.Integer(),
    model: t.String(),
    choices: t.Array(t.Object({ text: t.String(), index: t.Integer(), logprobs: t.Null(), finish_reason: t.Nullable(t.String()) })),
    usage: t.Object({ prompt_tokens: t.Integer(), completion_tokens: t.Integer(), total_tokens: t.Integer() }),
  },
  {
    description:
      "With `stream: true` the answer is `text/event-stream`: `data: {\"object\": \"text_completion\", \"choices\": [{\"text\": …, \"index\", \"finish_reason\"}]}` per chunk, " +
      "a last chunk with `usage` (and `choices: []`) when `stream_options.include_usage` is true, then `data: [DONE]`. A failure mid-stream sends `data: {\"error\": …}` and ends the stream.",
    examples: [{ id: "cmpl-AbCd…", object: "text_completion", created: 1767225600, model: "llama-3-8b", choices: [{ text: " there was a cat.", index: 0, logprobs: null, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } }],
  },
);
