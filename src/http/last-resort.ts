/**
 * Bun.serve's `error` handler: the last resort when something throws outside Elysia's own error
 * handling. Without it Bun (in development mode) served its HTML error page with stack frames and
 * source paths. Always the enveloped 500 with a fresh request id, logged with the cause.
 *
 * Its own module, importing nothing heavy: listen.ts needs it before the socket opens, and
 * error-handler.ts would bring Elysia and TypeBox (~40 ms of module evaluation) into that path.
 */
import { internalError } from "../errors.ts";
import type { Logger } from "../logger.ts";

export function lastResortResponse(err: unknown, logger: Logger, requestId: string): Response {
  try {
    logger.error({ err, requestId }, "unhandled error outside the app's error handling");
  } catch {
    // logging must not stop the answer
  }
  return new Response(JSON.stringify(internalError().toJSON()), { status: 500, headers: { "content-type": "application/json", "x-request-id": requestId } });
}
