import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { CompletionRequest, TextCompletion } from "./model.ts";
import { createCompletion } from "./service.ts";

/** Legacy text completions (POST /v1/completions) over every chat model, billed like chat. */
export const completionsRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["chat"] })
    .use(requireKey(deps))
    .post(
      "/completions",
      ({ body, principal, request, set }) =>
        createCompletion(deps, {
          principal, body, requestId: String(set.headers["x-request-id"]), signal: request.signal, startedAt: performance.now(),
          note: (facts) => deps.requestLog.note(request, facts), trace: deps.tracing.of(request),
        }),
      {
        body: CompletionRequest,
        detail: {
          summary: "Create a completion (legacy)",
          description:
            "OpenAI's legacy text completions, served by any chat model: each prompt is sent as one user message and the answer comes back as `text` " +
            "(a GGUF model without a chat template, such as stories260k, continues the prompt itself). Billed exactly like POST /v1/chat/completions. " +
            "`max_tokens` defaults to 16, as on OpenAI. A prompt array gives one completion per prompt (index = prompt × n + choice); if one of them fails, " +
            "the request fails and none is charged. Refused with a 400 naming the field: `suffix`, `echo: true`, `logprobs`, `best_of` > 1, token-id prompts, a streamed prompt array.",
          security: [{ bearer: [] }],
        },
        response: { 200: TextCompletion, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 502: ErrorEnvelope, 503: ErrorEnvelope, 504: ErrorEnvelope, ...authErrors },
      },
    );
