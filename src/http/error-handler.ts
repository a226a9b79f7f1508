/**
 * Renders every failure as the OpenAI error envelope. Elysia's own errors (validation, parse,
 * not found) are translated here; a database that cannot be reached is a 503; anything unexpected
 * becomes a generic 500 and is logged with its cause, never echoed to the client. Mapping itself
 * can never throw: whatever goes wrong in here is also the generic 500.
 */
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { ApiError, databaseUnavailable, internalError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { printable } from "./json-body.ts";
import { violationError } from "./validation-message.ts";

interface ErrorContext {
  code: string | number;
  error: unknown;
  request: Request;
  path: string;
  requestId?: string;
}

export function toApiError(ctx: ErrorContext, methodsFor: (path: string) => string[], logger: Logger): ApiError {
  try {
    return classify(ctx, methodsFor, logger);
  } catch (e) {
    logger.error({ err: e, requestId: ctx.requestId }, "error while mapping an error");
    return internalError();
  }
}

function classify(ctx: ErrorContext, methodsFor: (path: string) => string[], logger: Logger): ApiError {
  const { code, error, request } = ctx;
  if (error instanceof ApiError) return error;
  // Elysia wraps what a parse hook throws (json-body.ts's 400s and 413s) in its ParseError
  const cause = (error as { cause?: unknown })?.cause;
  if (code === "PARSE" && cause instanceof ApiError) return cause;
  if (isDatabaseUnavailable(error)) {
    logger.warn({ err: error, requestId: ctx.requestId, path: ctx.path }, "database unavailable: answered 503");
    return databaseUnavailable(error);
  }
  if (code === "VALIDATION") {
    const v = error as { type?: string; valueError?: { path: string; schema: object; value: unknown } };
    if (v.type === "response") {
      // our answer broke its own schema: a bug, not the client's fault
      logger.error({ requestId: ctx.requestId, path: ctx.path, at: v.valueError?.path }, "response does not match its schema");
      return internalError();
    }
    if (v.type === "property" && v.valueError) {
      // a query number that parsed but is out of range: Elysia checks the converted value alone and
      // loses the name, so find the query parameter that holds it
      const name = queryNameOf(request.url, v.valueError.value);
      return violationError({ path: name ? `/${name}` : "", schema: v.valueError.schema as never, value: v.valueError.value }, "query");
    }
    const where = v.type === "query" || v.type === "params" || v.type === "headers" ? v.type : "body";
    if (v.valueError) return violationError({ path: v.valueError.path, schema: v.valueError.schema as never, value: v.valueError.value }, where);
    return new ApiError(400, "invalid_request_error", "Invalid request.", { code: "invalid_request" });
  }
  if (code === "PARSE") {
    return new ApiError(400, "invalid_request_error", "We could not parse the JSON body of your request. Send valid JSON with 'Content-Type: application/json'.", { code: "invalid_json" });
  }
  if (code === "NOT_FOUND") {
    const path = printable(ctx.path, 200);
    const method = printable(request.method, 20);
    const allowed = methodsFor(ctx.path);
    if (allowed.length && !allowed.includes(request.method)) {
      return new ApiError(405, "invalid_request_error", `Method ${method} is not allowed for ${path}; use ${allowed.join(", ")}.`, { code: "method_not_allowed", headers: { allow: allowed.join(", ") } });
    }
    return new ApiError(404, "not_found_error", `Unknown route: ${method} ${path}`, { code: "unknown_route" });
  }
  if ((error as { status?: number })?.status === 413 || code === 413) return new ApiError(413, "invalid_request_error", "Request body too large.", { code: "payload_too_large" });
  // the client went away before its request was read (an upload cut off): not a fault of ours, and
  // nobody reads the answer; the request's log line says 499
  if (request.signal?.aborted) {
    logger.info({ err: error, requestId: ctx.requestId, path: ctx.path }, "the client closed the connection before its request was read");
    return new ApiError(499, "invalid_request_error", "The client closed the connection before the request was read.", { code: "client_disconnected" });
  }
  logger.error({ err: error, requestId: ctx.requestId, path: ctx.path, code }, "unhandled error");
  return internalError();
}

function queryNameOf(url: string, value: unknown): string | null {
  for (const [name, raw] of new URL(url).searchParams) if (raw === String(value) || Number(raw) === value) return name;
  return null;
}
