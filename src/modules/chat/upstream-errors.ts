/** PluginError → the ApiError a chat client sees (status and envelope per DESIGN.md). */
import { ApiError, type ErrorType } from "../../errors.ts";
import { PluginError } from "../../plugin-sdk/index.ts";

const TYPE_BY_STATUS: Record<number, ErrorType> = { 401: "authentication_error", 403: "permission_error", 404: "not_found_error", 409: "conflict_error", 429: "rate_limit_error" };

/** Anything that is not a PluginError is a bug on our side: a 500 (the caller logs the cause). */
export function upstreamApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (!(err instanceof PluginError)) {
    return new ApiError(500, "server_error", "The server had an error while processing your request. Retry, and contact the operator with the x-request-id if it persists.", { code: "internal_error", cause: err });
  }
  switch (err.kind) {
    case "upstream_http": {
      const status = err.status ?? 502;
      if (status === 401 || status === 403) {
        // The client's key was fine (we checked it); it is reelay's upstream credential that was refused.
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
    case "invalid_request":
      return new ApiError(400, "invalid_request_error", err.message, { code: err.code ?? "invalid_request", param: err.param ?? null, cause: err });
    case "failed":
      return new ApiError(502, "upstream_error", err.message, { code: err.code ?? "upstream_error", cause: err });
  }
}
