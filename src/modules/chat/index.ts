import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { ChatCompletion, ChatCompletionRequest } from "./model.ts";
import { streamChat } from "./relay-stream.ts";
import { completeChat, type ChatCall } from "./service.ts";

/** POST /v1/chat/completions: OpenAI's chat API, forwarded to the model's plugin. */
export const chatRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["chat"] })
    .use(requireKey(deps))
    .post(
      "/chat/completions",
      ({ body, principal, request, set }) => {
        const call: ChatCall = {
          principal, body, requestId: String(set.headers["x-request-id"]), signal: request.signal,
          startedAt: performance.now(), note: (facts) => deps.requestLog.note(request, facts), trace: deps.tracing.of(request),
        };
        return body.stream === true ? streamChat(deps, call) : completeChat(deps, call);
      },
      {
        body: ChatCompletionRequest,
        detail: {
          summary: "Create a chat completion",
          description:
            "OpenAI-compatible; streamed (SSE) with `stream: true`. The body is forwarded to the model's upstream unchanged (unknown parameters included), except `model` and " +
            "`max_tokens` / `max_completion_tokens`, which are clamped to the model's maximum output. Credits for the worst case " +
            "are held before the call; the charge uses the upstream's reported usage, or for a stream the tokens actually delivered. " +
            "Local GGUF models (plugin local-llm) generate the answer inside reelay and refuse what they cannot do (tools, JSON mode, " +
            "logprobs, n > 1) with a 400; when all their sequences and queue places are taken they answer 503 with Retry-After.",
          security: [{ bearer: [] }],
        },
        response: { 200: ChatCompletion, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 502: ErrorEnvelope, 503: ErrorEnvelope, 504: ErrorEnvelope, ...authErrors },
      },
    );
