/**
 * A plugin's failure → the ApiError a client sees, for every route that calls a plugin (chat,
 * embeddings). The meaning of each error kind is the SDK's one table (`describeFailure`,
 * packages/plugin-sdk/src/failure.ts), which the video scheduler reads too. Errors are recognised
 * by their brand, never by `instanceof`: each plugin bundle has its own copy of the SDK.
 */
import { ApiError } from "../errors.ts";
import { describeFailure, readPluginError } from "../plugin-sdk/index.ts";

/** ApiErrors (the host's own: 402, 503 model loading …) pass unchanged; anything else is read by the SDK's table. */
export function clientErrorFrom(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const f = describeFailure(err);
  return new ApiError(f.status, f.type, f.message, {
    code: f.code,
    param: f.param,
    headers: f.retryAfterSeconds !== undefined ? { "retry-after": String(f.retryAfterSeconds) } : undefined,
    cause: err,
  });
}

/** The kind for metrics (`upstream_errors_total{kind}`): a PluginError's kind, else "internal". */
export function pluginErrorKind(err: unknown): string {
  return readPluginError(err)?.kind ?? "internal";
}

/**
 * What the video scheduler makes of a failed plugin call: the SDK's table for plugin errors; the
 * host's own 503 (the model is still loading, or failed to load) is tried again later.
 */
export function jobFailureFrom(err: unknown): { code: string; message: string; retryable: boolean } {
  if (err instanceof ApiError) return { code: err.code ?? "upstream_error", message: err.message, retryable: err.status === 503 };
  const f = describeFailure(err);
  return { code: f.code ?? "generation_failed", message: f.message, retryable: f.retryable };
}
