/** Request and response schemas of POST /v1/embeddings (OpenAI's shapes). */
import { t } from "elysia";
import { INT4_MAX, JsonInteger } from "../../http/schemas.ts";

const inputError = "'input' must be a string, an array of strings, an array of token ids, or an array of token-id arrays.";

export const EmbeddingsBody = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, description: "model id (see GET /v1/models)", examples: ["use-lite"] }),
    input: t.Union([t.String(), t.Array(t.String()), t.Array(JsonInteger({ minimum: 0, maximum: INT4_MAX })), t.Array(t.Array(JsonInteger({ minimum: 0, maximum: INT4_MAX })))], {
      description: "text to embed: a string or an array of strings (one vector each). Token-id arrays are forwarded to pass-through models only.",
      error: inputError,
    }),
    encoding_format: t.Optional(
      t.Union([t.Literal("float"), t.Literal("base64")], {
        description: "`float` (default): arrays of numbers; `base64`: little-endian float32 bytes, base64-encoded (what the openai SDKs request by default)",
        error: "'encoding_format' must be 'float' or 'base64'.",
      }),
    ),
    dimensions: t.Optional(JsonInteger({ minimum: 1, maximum: 65_536, description: "output size, 1 to 65536; only for models that support it (400 otherwise)", error: "'dimensions' must be an integer from 1 to 65536." })),
    user: t.Optional(t.String({ description: "end-user id; accepted, forwarded to pass-through upstreams" })),
  },
  {
    // Pass-through models get the body unchanged except `model`, unknown parameters included.
    additionalProperties: true,
    examples: [
      { model: "use-lite", input: ["How old are you?", "What is your age?"] },
      { model: "use-lite", input: "The food was delicious.", encoding_format: "base64" },
    ],
  },
);
export type EmbeddingsBody = typeof EmbeddingsBody.static;

export const EmbeddingsResponse = t.Object(
  {
    object: t.Literal("list"),
    data: t.Array(
      t.Object({
        object: t.Literal("embedding"),
        index: t.Integer(),
        embedding: t.Union([t.Array(t.Number()), t.String()], { description: "numbers (float) or base64 of little-endian float32 (base64)" }),
      }),
    ),
    model: t.String(),
    usage: t.Object({ prompt_tokens: t.Integer(), total_tokens: t.Integer() }),
  },
  {
    examples: [
      {
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: [0.0123, -0.0456, 0.0789] }],
        model: "use-lite",
        usage: { prompt_tokens: 6, total_tokens: 6 },
      },
    ],
  },
);
export type EmbeddingsResponse = typeof EmbeddingsResponse.static;
