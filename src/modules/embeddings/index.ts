import { Elysia } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { EmbeddingsBody, EmbeddingsResponse } from "./model.ts";
import { createEmbeddings } from "./service.ts";

/** POST /v1/embeddings: OpenAI's request and response shapes; billed on input tokens. */
export const embeddingsRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["embeddings"] })
    .use(requireKey(deps))
    .post(
      "/embeddings",
      async ({ principal, body, request, set }) => {
        deps.requestLog.note(request, { model: body.model });
        const out = await createEmbeddings(deps, principal, body, { ref: String(set.headers["x-request-id"]), signal: request.signal, note: (facts) => deps.requestLog.note(request, facts) });
        deps.requestLog.note(request, { promptTokens: out.promptTokens, cost: out.cost });
        Object.assign(set.headers, out.headers);
        return out.body;
      },
      {
        body: EmbeddingsBody,
        detail: {
          summary: "Create embeddings",
          description:
            "One vector per input, in input order. Billed on input tokens at the model's per-million rate (`usage.prompt_tokens`). " +
            "Limits (OpenAI's, in tokens): 2,048 inputs, 8,192 tokens per input, 300,000 tokens per request; a model may set lower ones (400 `input_too_long` / `too_many_inputs` beyond them).",
          security: [{ bearer: [] }],
        },
        response: { 200: EmbeddingsResponse, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 502: ErrorEnvelope, 503: ErrorEnvelope, 504: ErrorEnvelope, ...authErrors },
      },
    );
