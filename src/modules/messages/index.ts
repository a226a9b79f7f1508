import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { requireKey } from "../../http/require-key.ts";
import { AnthropicError, CountTokensRequest, CountTokensResponse, MessageObject, MessagesRequest } from "./model.ts";
import { countMessageTokens, createMessage, OMITTED_TOOLS_HEADER, type MessagesCall } from "./service.ts";

const errors = { 400: AnthropicError, 401: AnthropicError, 402: AnthropicError, 403: AnthropicError, 404: AnthropicError, 429: AnthropicError, 500: AnthropicError };
const AUTH = "Authenticate with `x-api-key: <API key>` (what Anthropic's SDKs and Claude Code send) or `Authorization: Bearer <API key>`; `anthropic-version` and `anthropic-beta` are accepted. ";
const ERRORS =
  "Errors use Anthropic's envelope `{\"type\": \"error\", \"error\": {\"type\", \"message\"}}` and statuses (invalid_request_error 400, authentication_error 401, " +
  "billing_error 402 — not enough credits, permission_error 403, not_found_error 404, rate_limit_error 429, api_error 500/502, timeout_error 504, overloaded_error 529 where reelay is out of capacity).";

/** The client's Anthropic headers, for a model that speaks Messages natively. */
function anthropicHeaders(request: Request): Pick<MessagesCall, "anthropicVersion" | "anthropicBeta"> {
  const version = request.headers.get("anthropic-version") ?? undefined;
  const beta = request.headers.get("anthropic-beta")?.split(",").map((b) => b.trim()).filter((b) => b !== "");
  return { anthropicVersion: version, anthropicBeta: beta?.length ? beta : undefined };
}

/** Anthropic's Messages API over every chat model, billed like chat (docs/messages-api.md). */
export const messagesRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["chat"] })
    .use(requireKey(deps, { xApiKey: true }))
    .post(
      "/messages",
      ({ body, principal, request, set }) =>
        createMessage(deps, {
          principal, body, requestId: String(set.headers["x-request-id"]), signal: request.signal, startedAt: performance.now(),
          note: (facts) => deps.requestLog.note(request, facts), trace: deps.tracing.of(request), ...anthropicHeaders(request),
        }),
      {
        body: MessagesRequest,
        detail: {
          summary: "Create a message (Anthropic)",
          description:
            "Anthropic's Messages API (`?beta=true` accepted), served by any chat model, two ways. " +
            "**Native pass-through**, for a model whose plugin speaks the Messages API (Claude models of the `anthropic` plugin): the body goes upstream as sent — " +
            "only `model` (the upstream's name) and `max_tokens` (clamped to the model's maximum) changed; `thinking` blocks with their signatures, `cache_control`, server tools and beta fields kept — " +
            "with the client's `anthropic-version` and `anthropic-beta`; the answer, or each event as it arrives (pings too), comes back as the upstream sent it, " +
            "`model` the name asked for (a fallback's id when one served) and `usage` what was billed (a stream's `message_delta` carries it). " +
            "**The bridge**, for every other chat model: the request is translated into a chat completion " +
            "(`system` → system message, content blocks → messages, `tool_use` / `tool_result` → tool calls and tool messages, images → image parts, custom tools → function tools, " +
            "`tool_choice` → its chat form, `stop_sequences` → `stop`, `metadata.user_id` → `user`, `thinking: {type: \"enabled\"}` → `reasoning_effort`; `max_tokens` required and clamped); " +
            "left out, never refused: earlier `thinking` blocks, `cache_control`, beta fields such as `context_management`, and Anthropic's own server tools, which are named in the " +
            `\`${OMITTED_TOOLS_HEADER}\` response header (a \`tool_choice\` forcing one is a 400). ` +
            "Both are billed exactly like POST /v1/chat/completions (worst case held, usage settled with cache reads and writes at the model's cache prices; " +
            "`usage.input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` is the prompt billed; a stream the client cuts pays prompt + delivered tokens). " + AUTH + ERRORS,
          security: [{ apiKey: [] }, { bearer: [] }],
        },
        response: { 200: MessageObject, ...errors, 502: AnthropicError, 504: AnthropicError, 529: AnthropicError },
      },
    )
    .post("/messages/count_tokens", ({ body, principal, request, set }) =>
      countMessageTokens(deps, {
        principal, body, requestId: String(set.headers["x-request-id"]), signal: request.signal, startedAt: performance.now(),
        note: (facts) => deps.requestLog.note(request, facts), trace: deps.tracing.of(request), ...anthropicHeaders(request),
      }), {
      body: CountTokensRequest,
      detail: {
        summary: "Count a message's tokens (Anthropic)",
        description:
          "The prompt tokens POST /v1/messages would send for this request, for any chat model the key may use: asked of the upstream for a model whose plugin speaks the Messages API natively " +
          "(the client's `anthropic-beta` passed on), else reelay's own count (the estimate its credit hold uses; an upstream's count may differ). Nothing is charged. " +
          AUTH + ERRORS,
        security: [{ apiKey: [] }, { bearer: [] }],
      },
      response: { 200: CountTokensResponse, ...errors, 529: AnthropicError },
    });
