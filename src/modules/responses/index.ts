import { Elysia, t } from "elysia";
import { every, type BackgroundTask } from "../../background.ts";
import type { AppDeps } from "../../deps.ts";
import { badRequest } from "../../errors.ts";
import { authErrors, ErrorEnvelope, PaymentRequired } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { InputItemsQuery, ResponseIdParams, ResponseObject, ResponsesRequest } from "./model.ts";
import { reasoningSeal } from "./reasoning-seal.ts";
import { createResponse, listInputItems, readResponse, removeResponse } from "./service.ts";
import { sweepExpiredResponses } from "./store.ts";

const STORAGE =
  "Responses are kept (unless `store: false`) for REELAY_RESPONSES_RETENTION_SECONDS (default 30 days; continuing a conversation renews it), " +
  "readable only by keys of the same account; the operator can turn storage off (REELAY_RESPONSES_STORE=off: `store: true`, `previous_response_id` and `item_reference` are then a 400).";

/** OpenAI's Responses API over every chat model, billed like chat. */
export const responsesRoutes = (deps: AppDeps, seal = reasoningSeal(deps.config)) =>
  new Elysia({ prefix: "/v1", tags: ["chat"] })
    .use(requireKey(deps))
    .post(
      "/responses",
      ({ body, principal, request, set }) =>
        createResponse(deps, {
          principal, body, requestId: String(set.headers["x-request-id"]), signal: request.signal, startedAt: performance.now(),
          note: (facts) => deps.requestLog.note(request, facts), trace: deps.tracing.of(request), seal,
        }),
      {
        body: ResponsesRequest,
        detail: {
          summary: "Create a response",
          description:
            "OpenAI's Responses API, served by any chat model (pass-through or local): the request is translated into a chat completion " +
            "(`instructions` and `developer` messages → system messages, input items → messages, function, `namespace` (flattened to `<namespace>__<name>`) and `custom` tools → function tools, " +
            "`text.format` → `response_format`, `max_output_tokens` → `max_tokens`, clamped; `prompt_cache_key` forwarded) " +
            "and billed exactly like POST /v1/chat/completions (worst case held, usage settled; a stream cut by the client pays prompt + delivered tokens). " +
            "Tools the model cannot run (web_search, file_search, code_interpreter, image_generation, computer_use, mcp, local_shell, shell, apply_patch …) are left out of what it is offered and named in the `x-reelay-omitted-tools` response header. " +
            "`include: [\"reasoning.encrypted_content\"]` seals the model's reasoning into each reasoning item (operator key); sent back, it reaches the model that produced it again. " +
            "Refused with a 400 naming the field: a `tool_choice` forcing a tool that was left out, `background: true`, `conversation`, `prompt`, `truncation: auto`, file inputs. " +
            STORAGE,
          security: [{ bearer: [] }],
        },
        response: { 200: ResponseObject, 400: ErrorEnvelope, 402: PaymentRequired, 404: ErrorEnvelope, 502: ErrorEnvelope, 503: ErrorEnvelope, 504: ErrorEnvelope, ...authErrors },
      },
    )
    .get(
      "/responses/:id",
      ({ params, principal, query }) => {
        // OpenAI's `stream=true` replays a stored response as events; not implemented, so not a documented parameter
        const { stream } = query as Record<string, string | undefined>;
        if (stream !== undefined && stream !== "false") throw badRequest("'stream': a stored response cannot be replayed as events; read it without stream.", "stream", "unsupported_parameter");
        return readResponse(deps, principal, params.id);
      },
      {
        params: ResponseIdParams,
        query: t.Object({}, { additionalProperties: t.String() }),
        detail: { summary: "Retrieve a response", description: `A stored response, as POST /v1/responses returned it (404 for an unknown, deleted, expired or another account's response). Replaying it as events (OpenAI's \`?stream=true\`) is not implemented: a 400. ${STORAGE}`, security: [{ bearer: [] }] },
        // the response object without what POST says of streams: this route never streams
        response: { 200: { ...ResponseObject, description: "The stored response, as it was answered." }, 400: ErrorEnvelope, 404: ErrorEnvelope, ...authErrors },
      },
    )
    .delete("/responses/:id", ({ params, principal }) => removeResponse(deps, principal, params.id), {
      params: ResponseIdParams,
      detail: { summary: "Delete a response", description: "Deletes a stored response. A conversation that continued it can no longer be continued past it (400 `previous_response_not_found`).", security: [{ bearer: [] }] },
      response: { 200: t.Object({ id: t.String(), object: t.Literal("response"), deleted: t.Literal(true) }), 404: ErrorEnvelope, ...authErrors },
    })
    .get("/responses/:id/input_items", ({ params, principal, query }) => listInputItems(deps, principal, params.id, query), {
      params: ResponseIdParams,
      query: InputItemsQuery,
      detail: { summary: "List a response's input items", description: "The input items of a stored response (its own request's, item references resolved), newest first unless `order=asc`.", security: [{ bearer: [] }] },
      response: {
        200: t.Object({ object: t.Literal("list"), data: t.Array(t.Object({}, { additionalProperties: true })), first_id: t.Nullable(t.String()), last_id: t.Nullable(t.String()), has_more: t.Boolean() }),
        400: ErrorEnvelope, 404: ErrorEnvelope, ...authErrors,
      },
    });

/**
 * Retention: expired responses are already invisible (every read checks expires_at); the sweeper
 * gives their space back, once a minute, 500 rows per statement until none is left.
 */
export const responsesBackgroundTasks = (deps: AppDeps): BackgroundTask[] => [
  every(60_000, async () => {
    while ((await sweepExpiredResponses(deps.database.db, 500)) === 500);
  }, (err) => deps.logger.error({ err }, "responses sweeper failed")),
];
