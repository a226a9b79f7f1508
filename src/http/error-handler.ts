/**
 * Renders every failure as the OpenAI error envelope. Elysia's own errors (validation, parse,
 * not found) are translated here; anything unexpected becomes a generic 500 and is logged with its
 * cause, never echoed to the client.
 */
import { ApiError, internalError } from "../errors.ts";
import type { Logger } from "../logger.ts";

interface ErrorContext {
  code: string | number;
  error: unknown;
  request: Request;
  path: string;
  requestId?: string;
}

export function toApiError(ctx: ErrorContext, methodsFor: (path: string) => string[], logger: Logger): ApiError {
  const { code, error, request } = ctx;
  if (error instanceof ApiError) return error;
  if (code === "VALIDATION") return validationError(error);
  if (code === "PARSE") {
    return new ApiError(400, "invalid_request_error", "We could not parse the JSON body of your request. Send valid JSON with 'Content-Type: application/json'.", { code: "invalid_json" });
  }
  if (code === "NOT_FOUND") {
    const allowed = methodsFor(ctx.path);
    if (allowed.length && !allowed.includes(request.method)) {
      return new ApiError(405, "invalid_request_error", `Method ${request.method} is not allowed for ${ctx.path}; use ${allowed.join(", ")}.`, { code: "method_not_allowed", headers: { allow: allowed.join(", ") } });
    }
    return new ApiError(404, "not_found_error", `Unknown route: ${request.method} ${ctx.path}`, { code: "unknown_route" });
  }
  if ((error as { status?: number })?.status === 413 || code === 413) return new ApiError(413, "invalid_request_error", "Request body too large.", { code: "payload_too_large" });
  logger.error({ err: error, requestId: ctx.requestId, path: ctx.path, code }, "unhandled error");
  return internalError();
}

function validationError(error: unknown): ApiError {
  const all = ((error as { all?: Array<{ path?: string; message?: string; summary?: string; schema?: { error?: string } }> }).all ?? []);
  const first = all.find((e) => e.path) ?? all[0];
  const param = first?.path ? first.path.replace(/^\//, "").replace(/\//g, ".") || null : null;
  const where = (error as { type?: string }).type;
  let message = first?.schema?.error ?? first?.summary ?? first?.message ?? "Invalid request.";
  if (param && !message.includes(param)) message = `Invalid '${param}': ${lowerFirst(message)}`;
  if (!param && where && where !== "body") message = `Invalid ${where}: ${lowerFirst(message)}`;
  return new ApiError(400, "invalid_request_error", message, { param, code: "invalid_request" });
}

const lowerFirst = (s: string) => (s ? s[0]!.toLowerCase() + s.slice(1) : s);

