/**
 * Anthropic's failures as the SDK's error kinds. HTTP errors come from callUpstream as
 * `upstream_http` with Anthropic's own message (and its Retry-After on 429): only 529 needs more,
 * since it means what a 503 means elsewhere — the model is overloaded, try again or elsewhere.
 * A stream's `error` event is a failure too: before anything reached the client it is the kind
 * its type means (so another deployment or a fallback model may answer), after it the stream broke.
 */
import { isPluginError, PluginError } from "@reelay/plugin-sdk";

/** Anthropic's "overloaded" status (not in HTTP's table). */
export const OVERLOADED_STATUS = 529;

/** An error thrown by callUpstream, with 529 as `overloaded` (503 with Retry-After to the client, retried elsewhere). */
export function fromUpstream(err: unknown): unknown {
  if (isPluginError(err) && err.kind === "upstream_http" && err.status === OVERLOADED_STATUS) {
    return new PluginError("overloaded", `Anthropic is overloaded: ${err.message}`, { retryAfterSeconds: err.retryAfterSeconds, cause: err });
  }
  return err;
}

/** An `error` event of a stream (`{type: "error", error: {type, message}}`) as what to throw. */
export function errorEventFailure(json: { error?: { type?: unknown; message?: unknown } }, started: boolean): PluginError {
  const type = typeof json.error?.type === "string" ? json.error.type : "api_error";
  const message = `${type}: ${typeof json.error?.message === "string" ? json.error.message : "the upstream's stream failed"}`;
  if (started) return new PluginError("stream_interrupted", `upstream error event after the answer began (${message})`);
  switch (type) {
    case "overloaded_error":
      return new PluginError("overloaded", `Anthropic is overloaded (${message})`);
    case "rate_limit_error":
      return new PluginError("upstream_http", message, { status: 429 });
    case "invalid_request_error":
      return new PluginError("upstream_http", message, { status: 400, code: type });
    default:
      return new PluginError("upstream_http", message, { status: 500, code: type });
  }
}
