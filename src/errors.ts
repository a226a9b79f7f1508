/**
 * The one error type of the HTTP surface. Everything a client sees as an error is an ApiError,
 * rendered in the app's one error hook (app.ts, which turns anything thrown into an ApiError with
 * http/error-handler.ts): into the OpenAI envelope by its `toJSON()`, or on the routes of
 * Anthropic's API into Anthropic's (http/anthropic-errors.ts); nothing else builds error bodies.
 */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "insufficient_quota"
  | "rate_limit_error"
  | "upstream_error"
  | "timeout_error"
  | "server_error"
  | "service_unavailable";

export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers?: Record<string, string>;
  /** extra fields of the error object beside message/type/param/code (a budget refusal's `budget` and `resets_at`) */
  readonly details?: Record<string, unknown>;
  constructor(status: number, type: ErrorType, message: string, opts: { code?: string | null; param?: string | null; headers?: Record<string, string>; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "ApiError";
    this.status = status;
    this.type = type;
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
    this.headers = opts.headers;
    this.details = opts.details;
  }

  toJSON() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code, ...this.details } };
  }
}

export const badRequest = (message: string, param: string | null = null, code = "invalid_request") =>
  new ApiError(400, "invalid_request_error", message, { param, code });
export const unauthorized = (message = "Invalid API key provided.") =>
  new ApiError(401, "authentication_error", message, { code: "invalid_api_key" });
export const forbidden = (message: string) => new ApiError(403, "permission_error", message, { code: "insufficient_scope" });
export const notFound = (message: string, code = "not_found", param: string | null = null) =>
  new ApiError(404, "not_found_error", message, { code, param });
export const modelNotFound = (model: string) =>
  new ApiError(404, "not_found_error", `The model '${quoted(model)}' does not exist or you do not have access to it.`, { code: "model_not_found", param: "model" });

/** A client-supplied name inside a message: at most 100 characters, control characters escaped. */
export function quoted(s: string, max = 100): string {
  const cut = s.length > max ? s.slice(0, max) + "…" : s;
  return cut.replace(/[\u0000-\u001f\u007f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
/** `elsewhere`: credit other reelay instances reserved ahead and were asked to give back (a busy account across instances) */
export const insufficientQuota = (needed: number, available: number, elsewhere = 0) =>
  new ApiError(402, "insufficient_quota", `Insufficient credits: this request needs ${formatUsd(needed)} but only ${formatUsd(available)} is available` +
    (elsewhere > 0 ? `; ${formatUsd(elsewhere)} more is reserved by other reelay instances and is being given back: retry shortly.` : "."), { code: "insufficient_quota" });
export const tooLarge = (message: string, param: string | null = null) =>
  new ApiError(413, "invalid_request_error", message, { param, code: "payload_too_large" });

/**
 * The database cannot be reached (src/db/unavailable.ts decides): nothing was done and nothing
 * charged, so the client may retry. Retry-After 1 s: the pool reconnects within ~0.25 s of the
 * database's return.
 */
export const databaseUnavailable = (cause?: unknown) =>
  new ApiError(503, "service_unavailable", "The service is temporarily unavailable: its database cannot be reached. Nothing was charged; retry in a moment.", { code: "service_unavailable", headers: { "retry-after": "1" }, cause });

/** The only 500 a client ever sees: no cause, no stack; the caller logs the cause with the request id. */
export const internalError = (cause?: unknown) =>
  new ApiError(500, "server_error", "The server had an error while processing your request. Retry, and contact the operator with the x-request-id if it persists.", { code: "internal_error", cause });

/** 1 USD = 1,000,000 micro-dollars */
export function formatUsd(micros: number): string {
  return `$${(micros / 1_000_000).toFixed(6)} (${micros} micro-dollars)`;
}

/** A setting that stops the boot: names the environment variable or models-file key. */
export class ConfigError extends Error {
  constructor(readonly key: string, message: string) {
    super(`invalid configuration: ${key}: ${message}`);
    this.name = "ConfigError";
  }
}
