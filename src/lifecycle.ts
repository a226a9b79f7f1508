/**
 * The server's way out, shared by the parts that must notice it (boot.ts drives it):
 *  1. `drain()` — on SIGTERM/SIGINT: /readyz answers 503 at once and responses say
 *     `Connection: close`, while requests are still served for REELAY_SHUTDOWN_DRAIN_DELAY_MS (so a
 *     load balancer's health check takes the instance out before it stops accepting);
 *  2. the listener closes, in-flight requests and streams run for up to REELAY_SHUTDOWN_GRACE_MS;
 *  3. `cut()` — at that timeout: streams still open end with an SSE error event
 *     (`server_shutting_down`) and are billed on what was delivered, then connections close.
 */
import { ApiError } from "./errors.ts";

export class Lifecycle {
  /** set from the moment the server began to shut down */
  draining = false;
  private readonly cutter = new AbortController();
  /** aborted at the drain timeout: open streams end with an error event */
  readonly cutSignal: AbortSignal = this.cutter.signal;

  drain() {
    this.draining = true;
  }

  cut() {
    this.cutter.abort(serverShuttingDown());
  }
}

/** the error event a stream ends with when the drain timeout cut it */
export const serverShuttingDown = () =>
  new ApiError(503, "service_unavailable", "The server is shutting down and its drain timeout ended this stream; what was delivered is billed. Send the request again to continue.", { code: "server_shutting_down" });
