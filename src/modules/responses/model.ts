/**
 * Schemas of the Responses API routes. Fields reelay reads are typed here; the shape of each input
 * item, tool and format is checked when it is translated (to-chat.ts), where the message can name
 * the exact place (`input[2].content[0].type`). Other top-level fields are forwarded to the chat
 * request unchanged, as on POST /v1/chat/completions (vendor extras such as `top_k`).
 */
import { t } from "elysia";
import { INT4_MAX, JsonInteger } from "../../http/schemas.ts";

const Obj = (description?: string) => t.Object({}, { additionalProperties: true, description });
const Nullable = <T extends Parameters<typeof t.Nullable>[0]>(s: T) => t.Optional(t.Nullable(s));

export const ResponsesRequest = t.Object(
  {
    model: t.String({ minLength: 1, maxLength: 256, description: "a chat model id from GET /v1/models (any chat model, whatever its plugin)" }),
    input: t.Optional(t.Union([t.String(), t.Array(Obj())], {
      description: "a string (one user message), or input items: messages (`input_text`, `input_image`; assistant `output_text`; `developer` → system), `function_call` (with its `namespace`), `function_call_output` (text and images), `custom_tool_call`, `custom_tool_call_output`, `item_reference`, `additional_tools` (its tools are offered with `tools`), `reasoning` (its text goes back to the model only from reelay's own `encrypted_content`, and only to the model that produced it)",
    })),
    instructions: Nullable(t.String({ description: "a system message put before the input (not carried over by previous_response_id)" })),
    max_output_tokens: Nullable(JsonInteger({ minimum: 1, maximum: INT4_MAX, description: "1 to 2147483647; clamped to the model's maximum output like max_tokens. Reaching it gives status `incomplete`" })),
    temperature: Nullable(t.Number({ minimum: 0, maximum: 2 })),
    top_p: Nullable(t.Number({ minimum: 0, maximum: 1 })),
    stream: Nullable(t.Boolean({ description: "stream typed server-sent events (response.created … response.completed)" })),
    store: Nullable(t.Boolean({ description: "keep the response for GET /v1/responses/{id}, previous_response_id and item_reference (default true, as on OpenAI; refused when the operator turned storage off)" })),
    previous_response_id: Nullable(t.String({ maxLength: 64, description: "continue the conversation that ended in this stored response" })),
    tools: Nullable(t.Array(Obj(), {
      description: "`function` tools; `namespace` groups (each member offered to the model as `<namespace>__<name>`, its calls returned with `namespace` and `name`); `custom` (free-form) tools (offered as a function taking one string, calls returned as `custom_tool_call`). " +
        "Tools the model cannot run (web_search, file_search, code_interpreter, image_generation, computer_use, mcp, local_shell, shell, apply_patch …) are left out and named in the `x-reelay-omitted-tools` response header",
    })),
    tool_choice: Nullable(t.Union([t.String(), Obj()], { description: "`none`, `auto`, `required`, `{type: \"function\" | \"custom\", name}` or `{type: \"allowed_tools\", mode, tools}`; forcing a tool that was left out is a 400" })),
    parallel_tool_calls: Nullable(t.Boolean()),
    prompt_cache_key: Nullable(t.String({ maxLength: 1024, description: "forwarded to the model's upstream (prompt caching)" })),
    client_metadata: Nullable(Obj("the client's own tags (Codex sends its session and turn ids); accepted, not sent to the model")),
    text: Nullable(t.Object({ format: Nullable(Obj("`{type: \"text\"}`, `{type: \"json_object\"}` or `{type: \"json_schema\", name, schema, strict}` (sent to the model as the chat `response_format`)")) }, { additionalProperties: true })),
    metadata: Nullable(t.Record(t.String({ maxLength: 64 }), t.String({ maxLength: 512 }), { maxProperties: 16, description: "returned with the response; not sent to the model" })),
    truncation: Nullable(t.Union([t.Literal("disabled"), t.Literal("auto")], { description: "`disabled` only: a conversation longer than the model's context is a 400, never cut silently" })),
    background: Nullable(t.Boolean({ description: "`false` only: responses are answered on the request" })),
    top_logprobs: Nullable(JsonInteger({ minimum: 0, maximum: 20 })),
    include: Nullable(t.Array(t.String({ maxLength: 128 }), {
      maxItems: 32,
      description: "`message.output_text.logprobs` asks for log probabilities; `reasoning.encrypted_content` puts the model's reasoning, sealed with the operator's key (AES-256-GCM, bound to the account), into each reasoning item, to be sent back with `store: false`; the other values concern tools reelay does not run and change nothing",
    })),
    reasoning: Nullable(t.Object({ effort: Nullable(t.String()), summary: Nullable(t.String()) }, { additionalProperties: true, description: "`effort` is sent to the model as `reasoning_effort`; `summary` is accepted and echoed (a chat model's reasoning is returned whole, as `reasoning_text`)" })),
  },
  {
    additionalProperties: true,
    examples: [{ model: "llama-3-8b", instructions: "Be brief.", input: "Name three colours.", max_output_tokens: 32 }],
  },
);
export type ResponsesRequest = typeof ResponsesRequest.static;

const OutputItem = t.Object({ id: t.String(), type: t.String() }, { additionalProperties: true });

export const ResponseObject = t.Object(
  {
    id: t.String(),
    object: t.Literal("response"),
    created_at: t.Integer(),
    status: t.Union([t.Literal("completed"), t.Literal("incomplete"), t.Literal("failed"), t.Literal("in_progress")]),
    error: t.Nullable(t.Object({ code: t.Nullable(t.String()), message: t.String() })),
    incomplete_details: t.Nullable(t.Object({ reason: t.String() })),
    model: t.String(),
    output: t.Array(OutputItem),
    output_text: t.String({ description: "all output_text of the output, joined (a convenience, as the official SDKs compute it)" }),
    usage: t.Nullable(t.Object({ input_tokens: t.Integer(), output_tokens: t.Integer(), total_tokens: t.Integer() }, { additionalProperties: true })),
    store: t.Boolean(),
    previous_response_id: t.Nullable(t.String()),
  },
  {
    additionalProperties: true,
    description:
      "With `stream: true` the answer is `text/event-stream`: `response.created`, `response.in_progress`, then per output item " +
      "`response.output_item.added`, `response.content_part.added`, `response.output_text.delta`… (`response.function_call_arguments.delta`… for a tool call), " +
      "the matching `.done` events, and finally `response.completed` (or `response.incomplete` when max_output_tokens was reached) with the usage billed. " +
      "A failure after the stream started sends an `error` event and `response.failed`.",
    examples: [
      {
        id: "resp_AbCd…", object: "response", created_at: 1767225600, status: "completed", error: null, incomplete_details: null, model: "llama-3-8b",
        output: [{ id: "msg_AbCd…o0", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Red, green, blue.", annotations: [], logprobs: [] }] }],
        output_text: "Red, green, blue.", usage: { input_tokens: 24, output_tokens: 6, total_tokens: 30 }, store: true, previous_response_id: null,
      },
    ],
  },
);

/** what GET /v1/responses/{id} answers: the stored JSON, as the client got it */
export type StoredResponseBody = typeof ResponseObject.static;

export const ResponseIdParams = t.Object({ id: t.String({ maxLength: 64, description: "a response id (resp_…)" }) });

export const InputItemsQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, description: "page size (1–100, default 20)" })),
  order: t.Optional(t.Union([t.Literal("asc"), t.Literal("desc")], { description: "`desc` (default): newest first" })),
  after: t.Optional(t.String({ maxLength: 64, description: "cursor: the last item id of the previous page" })),
});
