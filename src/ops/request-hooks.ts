/**
 * Global request hooks, mounted before every route by createApp:
 * - request-rate limit per key and per account on authenticated /v1/* routes, in the transform
 *   phase: after routing (so the route template is known for metrics) and before validation and
 *   the route's own work. A request whose key does not authenticate is left alone: the route answers
 *   401. The key lookup is cached by KeyAuthenticator, so the route's second lookup is a Map hit.
 * - x-ratelimit-*-requests headers on every limited response (success or 429);
 * - one log line and the request metrics after the response.
 */
import { Elysia } from "elysia";
import type { AppDeps } from "../deps.ts";
import type { Logger } from "../logger.ts";
import { annotate, factsOf } from "./hooks.ts";
import type { OpsMetrics } from "./metrics.ts";
import type { RateLimits } from "./rate-limits.ts";
import { requestLogLevel, requestLogLine } from "./request-log.ts";

export function createRequestHooks(deps: Pick<AppDeps, "auth" | "registry">, parts: { limits: RateLimits; metrics: OpsMetrics; logger: Logger }) {
  const { limits, metrics, logger } = parts;
  const startedAt = new WeakMap<Request, number>();

  return new Elysia()
    .onRequest(({ request }) => {
      startedAt.set(request, performance.now());
    })
    .onTransform({ as: "global" }, async ({ request, path, set }) => {
      if (!path.startsWith("/v1/")) return;
      if (!request.headers.has("authorization")) return;
      let principal;
      try {
        principal = await deps.auth.authenticateRequest(request);
      } catch {
        return;
      }
      annotate(request, { accountId: principal.accountId, keyPrefix: principal.keyPrefix });
      const headers = await limits.request(principal);
      for (const name in headers) set.headers[name] = headers[name]!;
    })
    .onAfterResponse({ as: "global" }, (ctx) => {
      const { request, set, path } = ctx;
      const response = (ctx as { response?: unknown }).response;
      const status = response instanceof Response ? response.status : typeof set.status === "number" ? set.status : 200;
      const route = (ctx as { route?: string }).route ?? "unmatched";
      const start = startedAt.get(request);
      const latencyMs = start === undefined ? null : performance.now() - start;
      const facts = factsOf(request);
      // a label per unknown model name would let clients grow the metric without bound
      const model = facts.model ? (deps.registry.get(facts.model) ? facts.model : "unknown") : "";

      metrics.requests.inc({ route, method: request.method, model, status: String(status) });
      if (latencyMs !== null) metrics.requestDuration.observe({ route, method: request.method }, latencyMs / 1000);

      const line = requestLogLine({ requestId: String(set.headers["x-request-id"] ?? ""), method: request.method, route, path, status, latencyMs, facts });
      logger[requestLogLevel(route, status)](line, "request");
    });
}
