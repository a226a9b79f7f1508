/**
 * PluginError → the ApiError a client sees, for every route that calls a plugin (chat, embeddings,
 * video submit). Statuses per DESIGN.md: the request is wrong → 400; the upstream's own 4xx is
 * passed on (it is about the request), except 401/403, which are about reelay's credentials → 502;
 * 5xx, refused/reset connections and garbage → 502; timeouts → 504; a local model at capacity → 503
 * with Retry-After.
 */
import { ApiError, internalError, type ErrorType } from "../errors.ts";
import { PluginError } from "../plugin-sdk/index.ts";

const TYPE_BY_STATUS: Record<number, ErrorType> = { 404: "not_found_error", 409: "conflict_error", 429: "rate_limit_error" };

/**
 * Anything that is neither an ApiError nor a PluginError is a bug, not an upstream answer: it is
 * rethrown so the app logs it and answers a generic 500.
 */
export function apiErrorFromPlugin(err: unknown): ApiError {
  if (err instanceof ApiError || err instanceof PluginError) return clientErrorFrom(err);
  throw err;
}

/**
 * Like apiErrorFromPlugin, but never throws: anything unexpected becomes the generic 500 (the caller
 * logs the cause). For places that cannot throw any more, such as a stream already under way.
 */
export function clientErrorFrom(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (!(err instanceof PluginError)) {
    return internalError(err);
  }
  switch (err.kind) {
    case "invalid_request":
      return new ApiError(400, "invalid_request_error", err.message, { code: err.code ?? "invalid_request", param: err.param ?? null, cause: err });
    case "upstream_http": {
      const status = err.status ?? 502;
      if (status === 401 || status === 403) {
        // The client's key was already accepted; it is reelay's upstream credential that was refused.
        return new ApiError(502, "upstream_error", `The model's upstream refused reelay's credentials (HTTP ${status}: ${err.message}). This is a server configuration problem, not a problem with your API key; contact the operator.`, { code: "upstream_auth_failed", cause: err });
      }
      if (status >= 400 && status < 500) {
        return new ApiError(status, TYPE_BY_STATUS[status] ?? "invalid_request_error", err.message, { code: err.code ?? null, param: err.param ?? null, cause: err });
      }
      return new ApiError(502, "upstream_error", `The model's upstream failed (HTTP ${status}): ${err.message}`, { code: "upstream_error", cause: err });
    }
    case "connect":
      return new ApiError(502, "upstream_error", `The model's upstream could not be reached: ${err.message}.`, { code: "upstream_unavailable", cause: err });
    case "timeout":
      return new ApiError(504, "timeout_error", `The model's upstream did not answer in time: ${err.message}.`, { code: "upstream_timeout", cause: err });
    case "malformed":
      return new ApiError(502, "upstream_error", `The model's upstream sent an invalid answer: ${err.message}.`, { code: "upstream_malformed", cause: err });
    case "failed":
      return new ApiError(502, "upstream_error", err.message, { code: err.code ?? "upstream_error", cause: err });
    case "overloaded":
      return new ApiError(503, "service_unavailable", err.message, { code: err.code ?? "model_overloaded", headers: { "retry-after": String(err.retryAfterSeconds ?? 1) }, cause: err });
  }
}
