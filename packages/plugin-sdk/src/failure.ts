/**
 * The one meaning of every error kind, the same for chat, embeddings and video: what the API client
 * is answered, whether the video scheduler tries again, and what is billed. reelay's routes and
 * scheduler use this table, and so does the contract runner, so a plugin tested here behaves the
 * same inside reelay.
 *
 * | kind                     | client (chat, embeddings)            | video job                     | retried by default | billed |
 * |--------------------------|--------------------------------------|-------------------------------|--------------------|--------|
 * | invalid_request          | 400, `param`                         | failed                        | no                 | nothing |
 * | upstream_http 400-499    | same status (its message, code)      | failed                        | no                 | nothing |
 * | upstream_http 401, 403   | 502 upstream_auth_failed             | failed                        | no                 | nothing |
 * | upstream_http 429        | 429                                  | tried again after a backoff   | yes                | nothing |
 * | upstream_http 5xx        | 502 upstream_error                   | tried again after a backoff   | yes                | nothing |
 * | connect                  | 502 upstream_unavailable             | tried again                   | yes                | nothing |
 * | timeout                  | 504 upstream_timeout                 | tried again                   | yes                | nothing |
 * | malformed                | 502 upstream_malformed               | failed                        | no                 | nothing |
 * | failed                   | 502, `code` (default generation_failed) | failed with `code`         | no                 | nothing |
 * | overloaded               | 503 + Retry-After                    | tried again                   | yes                | nothing |
 * | stream_interrupted       | before any output: 502 upstream_interrupted; after: an SSE error event ends the stream | failed | no | the tokens delivered |
 * | anything else thrown     | 502 plugin_failed                    | failed (plugin_failed)        | no                 | nothing |
 *
 * "Retried" is the error's `retryable` (a plugin may set it either way); video jobs that keep failing
 * fail after 5 attempts. Chat and embeddings are never retried by the host today.
 */
import { readPluginError, type PluginErrorFields } from "./errors.ts";

export type ClientErrorType = "invalid_request_error" | "not_found_error" | "conflict_error" | "rate_limit_error" | "upstream_error" | "timeout_error" | "service_unavailable";

export interface ClientFailure {
  /** HTTP status the API client gets (before any output) */
  status: number;
  type: ClientErrorType;
  /** `error.code` for the client; also the code of a failed video job */
  code: string | null;
  message: string;
  param: string | null;
  /** does the video scheduler try again */
  retryable: boolean;
  /** seconds, for a Retry-After header */
  retryAfterSeconds?: number;
  /** false: the thrown value was not a PluginError (a plugin bug) */
  branded: boolean;
}

/** an upstream's Retry-After passed to a client is capped: a broken upstream must not park clients for days */
const MAX_RETRY_AFTER_S = 3600;

const TYPE_BY_STATUS: Record<number, ClientErrorType> = { 404: "not_found_error", 409: "conflict_error", 429: "rate_limit_error" };

/** The answer for anything a plugin threw. */
export function describeFailure(err: unknown): ClientFailure {
  const e = readPluginError(err);
  if (!e) {
    // the thrown text stays out of the answer: a stack or an upstream URL may carry paths or credentials
    return { status: 502, type: "upstream_error", code: "plugin_failed", message: "The model's plugin failed unexpectedly; the operator's log has the details.", param: null, retryable: false, branded: false };
  }
  return { ...byKind(e), retryable: e.retryable, branded: true };
}

function byKind(e: PluginErrorFields): Omit<ClientFailure, "retryable" | "branded"> {
  const base = { param: null, message: e.message };
  switch (e.kind) {
    case "invalid_request":
      return { ...base, status: 400, type: "invalid_request_error", code: e.code ?? "invalid_request", param: e.param };
    case "upstream_http": {
      const status = e.status ?? 502;
      if (status === 401 || status === 403) {
        // the client's key was already accepted: it is reelay's credential for the upstream that was refused
        return { ...base, status: 502, type: "upstream_error", code: "upstream_auth_failed", message: `The model's upstream refused reelay's credentials (HTTP ${status}: ${e.message}). This is a server configuration problem, not a problem with your API key; contact the operator.` };
      }
      if (status === 429 && e.retryAfterSeconds) {
        // the upstream's own Retry-After, so a client's SDK waits as long as the upstream asked (at most an hour)
        return { ...base, status, type: "rate_limit_error", code: e.code ?? null, param: e.param, retryAfterSeconds: Math.min(e.retryAfterSeconds, MAX_RETRY_AFTER_S) };
      }
      if (status >= 400 && status < 500) return { ...base, status, type: TYPE_BY_STATUS[status] ?? "invalid_request_error", code: e.code ?? null, param: e.param };
      return { ...base, status: 502, type: "upstream_error", code: "upstream_error", message: `The model's upstream failed (HTTP ${status}): ${e.message}` };
    }
    case "connect":
      return { ...base, status: 502, type: "upstream_error", code: "upstream_unavailable", message: `The model's upstream could not be reached: ${e.message}.` };
    case "timeout":
      return { ...base, status: 504, type: "timeout_error", code: "upstream_timeout", message: `The model's upstream did not answer in time: ${e.message}.` };
    case "malformed":
      return { ...base, status: 502, type: "upstream_error", code: e.code ?? "upstream_malformed", message: `The model's upstream sent an invalid answer: ${e.message}.` };
    case "failed":
      return { ...base, status: 502, type: "upstream_error", code: e.code ?? "generation_failed" };
    case "overloaded":
      return { ...base, status: 503, type: "service_unavailable", code: e.code ?? "model_overloaded", retryAfterSeconds: e.retryAfterSeconds ?? 1 };
    case "stream_interrupted":
      return { ...base, status: 502, type: "upstream_error", code: "upstream_interrupted", message: `The model's upstream response broke off: ${e.message}.` };
  }
}
