/**
 * Anthropic's error convention, for the routes Anthropic's clients call (POST /v1/messages …):
 * `{"type": "error", "error": {"type", "message"}}` with Anthropic's types and statuses, so the
 * Anthropic SDK raises its own error classes (BadRequestError, AuthenticationError …) and retries
 * what it retries (429, 529, 5xx). The same ApiError is rendered, in the one error hook (app.ts);
 * only its envelope differs by route. Mid-stream `error` events use the same types
 * (modules/messages/stream-events.ts).
 */
import type { ApiError, ErrorType } from "../errors.ts";

/** Anthropic's `error.type` for each of reelay's types; the status refines a few (413, 405 …). */
const TYPES: Record<ErrorType, string> = {
  invalid_request_error: "invalid_request_error",
  authentication_error: "authentication_error",
  permission_error: "permission_error",
  not_found_error: "not_found_error",
  conflict_error: "invalid_request_error",
  // Anthropic's type for 402; the message says plainly what is missing ("Insufficient credits: …")
  insufficient_quota: "billing_error",
  rate_limit_error: "rate_limit_error",
  upstream_error: "api_error",
  timeout_error: "timeout_error",
  server_error: "api_error",
  service_unavailable: "overloaded_error",
};

export function anthropicErrorType(type: ErrorType | string, status?: number): string {
  if (status === 413) return "request_too_large";
  if (status === 503) return "overloaded_error";
  return TYPES[type as ErrorType] ?? (status !== undefined && status < 500 ? "invalid_request_error" : "api_error");
}

/** Anthropic says 529 (overloaded) where reelay says 503 (no capacity, model loading, database away): its SDK retries both. */
export const anthropicStatus = (status: number) => (status === 503 ? 529 : status);

export function anthropicErrorBody(err: Pick<ApiError, "status" | "type" | "message">) {
  return { type: "error" as const, error: { type: anthropicErrorType(err.type, err.status), message: err.message } };
}

/**
 * Does this request get Anthropic's envelope? The Messages routes always; GET /v1/models (and
 * /v1/models/{id}) when the client says it speaks Anthropic's API (`anthropic-version`, which the
 * Anthropic SDK and Claude Code always send), as it then also gets Anthropic's model list shape.
 */
export function speaksAnthropic(request: Request, path: string): boolean {
  if (path === "/v1/messages" || path.startsWith("/v1/messages/")) return true;
  return (path === "/v1/models" || path.startsWith("/v1/models/")) && request.headers.has("anthropic-version");
}
