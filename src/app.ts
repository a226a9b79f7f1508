/**
 * createApp(deps): the whole HTTP surface as an Elysia app, without listening, so tests build it
 * directly. Cross-cutting behaviour lives here: request ids, body limits, the error envelope, the
 * request log (one line + request metrics per request). API-key routes authenticate and count the
 * request against the rate limits in one step of their own: requireKey (http/require-key.ts).
 */
import { Elysia } from "elysia";
import type { AppDeps } from "./deps.ts";
import { tooLarge } from "./errors.ts";
import { docs } from "./http/docs.ts";
import { cors } from "./http/cors.ts";
import { anthropicErrorBody, anthropicStatus, speaksAnthropic } from "./http/anthropic-errors.ts";
import { toApiError } from "./http/error-handler.ts";
import { bodySchemaIndex, inputGuard } from "./http/input-guard.ts";
import { jsonBody } from "./http/json-body.ts";
import { operatorGate } from "./http/require-operator.ts";
import { routeMethodIndex } from "./http/route-methods.ts";
import { randomId } from "./ids.ts";
import { accountRoutes } from "./modules/account/index.ts";
import { adminRoutes } from "./modules/admin/index.ts";
import { operatorRoutes } from "./modules/operators/index.ts";
import { auditLogRoutes } from "./modules/audit-log/index.ts";
import { ssoRoutes } from "./modules/sso/index.ts";
import { budgetAdminRoutes } from "./modules/budgets/index.ts";
import { consoleApiRoutes } from "./modules/console-api/index.ts";
import { consoleRoutes } from "./modules/console/index.ts";
import { healthRoutes } from "./modules/health/index.ts";
import { modelRoutes } from "./modules/models/index.ts";
import { chatRoutes } from "./modules/chat/index.ts";
import { completionsRoutes } from "./modules/completions/index.ts";
import { responsesRoutes } from "./modules/responses/index.ts";
import { messagesRoutes } from "./modules/messages/index.ts";
import { embeddingsRoutes } from "./modules/embeddings/index.ts";
import { FORM_ROUTES, openAiVideoRoutes } from "./modules/openai-videos/index.ts";
import { videoRoutes } from "./modules/videos/index.ts";
import { videoContentRoutes } from "./modules/videos/content.ts";
import { videoEventRoutes } from "./modules/videos/events.ts";
import { webhookRoutes } from "./modules/webhooks/index.ts";
import { fileRoutes, isFileUpload } from "./modules/files/index.ts";
import { batchRoutes } from "./modules/batches/index.ts";
import { pluginHookRoutes } from "./modules/plugin-hooks/index.ts";
import { webhookAdminRoutes } from "./modules/webhooks/admin-routes.ts";
import { WEBHOOKS_OPENAPI } from "./modules/webhooks/model.ts";
import { metricsRoutes, usageRoutes } from "./modules/ops/index.ts";

export function createApp(deps: AppDeps) {
  let methodsFor: (path: string) => string[] = () => [];
  let bodySchema: ReturnType<typeof bodySchemaIndex> = () => undefined;
  const app = new Elysia()
    .onRequest(({ set }) => {
      // Always reelay's own id, never the client's: it is also the billing reference of the
      // request (one hold per reference), so a client reusing an id must not collide.
      set.headers["x-request-id"] = randomId("req", 16);
    })
    // a preflight is answered here, from onRequest, and Elysia runs no afterResponse hook for such
    // an answer: the request log begins after it, so every request it begins also ends
    .use(cors(deps.config.corsOrigins))
    .onRequest(({ request }) => {
      deps.requestLog.begin(request);
    })
    .onRequest(({ request }) => {
      // declared too large: refused before a byte is read (chunked bodies are counted by jsonBody)
      const length = Number(request.headers.get("content-length") ?? 0);
      if (isFileUpload(request)) return; // REELAY_FILES_MAX_BYTES, counted as the file arrives (modules/files)
      if (length > deps.config.maxBodyBytes) throw tooLarge(`Request body of ${length} bytes exceeds the limit of ${deps.config.maxBodyBytes} bytes.`);
    })
    .use(jsonBody({ maxBytes: deps.config.maxBodyBytes, expectsBody: (method, route) => bodySchema(method, route) !== undefined, takesForm: (method, route) => FORM_ROUTES.has(`${method} ${route}`) }))
    .onError({ as: "global" }, ({ code, error, request, path, set }) => {
      const requestId = String(set.headers["x-request-id"] ?? "");
      const err = toApiError({ code, error, request, path, requestId }, methodsFor, deps.logger);
      for (const [k, v] of Object.entries(err.headers ?? {})) set.headers[k] = v;
      set.headers["content-type"] = "application/json";
      // the envelope of the API the client called: Anthropic's on its routes, OpenAI's everywhere else
      if (speaksAnthropic(request, path)) {
        set.status = anthropicStatus(err.status);
        return JSON.stringify(anthropicErrorBody(err));
      }
      set.status = err.status;
      return JSON.stringify(err.toJSON());
    })
    .onAfterResponse({ as: "global" }, (ctx) => {
      const { request, set } = ctx;
      const response = (ctx as { response?: unknown }).response;
      const status = response instanceof Response ? response.status : typeof set.status === "number" ? set.status : 200;
      const route = (ctx as { route?: string }).route ?? "unmatched";
      deps.requestLog.end(request, { requestId: String(set.headers["x-request-id"] ?? ""), method: request.method, route, path: ctx.path, status }, deps.registry);
    })
    .use(operatorGate(deps))
    .use(inputGuard((method, route) => bodySchema(method, route)))
    .use(docs({ webhooks: WEBHOOKS_OPENAPI }))
    .use(healthRoutes(deps, deps.readinessChecks))
    .use(modelRoutes(deps))
    .use(accountRoutes(deps))
    .use(adminRoutes(deps))
    .use(operatorRoutes(deps))
    .use(auditLogRoutes(deps))
    .use(ssoRoutes(deps))
    .use(budgetAdminRoutes(deps))
    .use(consoleApiRoutes(deps))
    .use(consoleRoutes())
    .use(chatRoutes(deps))
    .use(responsesRoutes(deps))
    .use(messagesRoutes(deps))
    .use(completionsRoutes(deps))
    .use(embeddingsRoutes(deps))
    .use(videoRoutes(deps))
    .use(videoContentRoutes(deps))
    .use(videoEventRoutes(deps))
    .use(openAiVideoRoutes(deps))
    .use(fileRoutes(deps))
    .use(batchRoutes(deps))
    .use(webhookRoutes(deps))
    .use(webhookAdminRoutes(deps))
    .use(pluginHookRoutes(deps))
    .use(usageRoutes(deps));
  if (deps.metrics) app.use(metricsRoutes(deps, deps.metrics));
  methodsFor = routeMethodIndex(app.routes);
  bodySchema = bodySchemaIndex(app.routes);
  return app;
}

export type App = ReturnType<typeof createApp>;
