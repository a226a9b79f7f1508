/**
 * The three calls of the RunPod serverless protocol (docs/remote-gpu-protocol.md), with reelay's
 * error policy: connection errors, timeouts, 5xx and 429 are retryable PluginErrors (the scheduler
 * backs off and asks again); other 4xx are final. The API key only ever goes into the
 * Authorization header — it is not logged and not sent to output URLs.
 */
import { PluginError, readBodyCapped, type CallTrace, type PluginContext } from "@reelay/plugin-sdk";
import type { RemoteGpuOptions } from "./options.ts";

/** the call's trace (CallOptions.trace, when tracing is on): each request carries its W3C traceparent */
type Trace = Pick<CallTrace, "outgoing"> | undefined;

export interface WorkerAnswer {
  status: number;
  json: any;
}

export class RunpodClient {
  private readonly headers: Record<string, string>;

  /** baseUrl: this worker's endpoint, without a trailing slash */
  constructor(private readonly ctx: PluginContext, private readonly opts: RemoteGpuOptions, readonly baseUrl: string, apiKey: string | undefined) {
    this.headers = { "content-type": "application/json", accept: "application/json" };
    if (apiKey) this.headers.authorization = `Bearer ${apiKey}`;
  }

  /**
   * 404 or 405 to POST /run means no RunPod-style endpoint lives at baseUrl (a typo, a missing
   * /v2/<endpoint-id>, a web server): no retry can fix that, so it is a final failure telling the
   * operator where to look (the URL itself goes to the log, not to the API client).
   */
  async run(input: Record<string, unknown>, signal: AbortSignal, trace?: Trace): Promise<WorkerAnswer> {
    const answer = await this.call("POST", "/run", signal, trace, { input }, true);
    if (answer.status === 404 || answer.status === 405) {
      this.ctx.logger.error("GPU worker has no /run endpoint at baseUrl: check the model's baseUrl", { baseUrl: this.baseUrl, status: answer.status });
      throw new PluginError("upstream_http", `the GPU worker answered ${answer.status} to POST /run: no worker endpoint at the model's baseUrl (the operator must check baseUrl)`, {
        status: answer.status,
        code: "worker_endpoint_not_found",
        retryable: false,
      });
    }
    return answer;
  }

  /**
   * Boot check: does anything answer at baseUrl? Any HTTP status counts as reachable (RunPod serves
   * GET /health, other workers may 404 it); only a connection error or a timeout is reported.
   */
  async probe(signal: AbortSignal): Promise<{ reachable: true; status: number } | { reachable: false; reason: string }> {
    try {
      const res = await this.ctx.fetch(this.baseUrl + "/health", { headers: this.headers, signal });
      await res.body?.cancel();
      return { reachable: true, status: res.status };
    } catch (err) {
      return { reachable: false, reason: (err as Error)?.message ?? String(err) };
    }
  }

  status(id: string, signal: AbortSignal, trace?: Trace): Promise<WorkerAnswer> {
    return this.call("GET", `/status/${encodeURIComponent(id)}`, signal, trace);
  }

  cancel(id: string, signal: AbortSignal, trace?: Trace): Promise<WorkerAnswer> {
    return this.call("POST", `/cancel/${encodeURIComponent(id)}`, signal, trace);
  }

  /**
   * One call. 404 is returned (not thrown): on /status it means the worker lost the job. Bodies are
   * read with a cap: a base64 output is 4/3 of maxOutputBytes, plus room for the JSON around it.
   */
  private async call(method: string, path: string, signal: AbortSignal, trace: Trace, body?: unknown, returnMissing = false): Promise<WorkerAnswer> {
    const deadline = AbortSignal.timeout(this.opts.timeouts.requestMs);
    const both = AbortSignal.any([signal, deadline]);
    const what = `${method} ${path.replace(/\/[^/]+$/, path === "/run" ? "/run" : "/{id}")}`;
    let res: Response;
    try {
      const url = this.baseUrl + path;
      res = await this.ctx.fetch(url, { method, headers: trace ? { ...trace.outgoing(url), ...this.headers } : this.headers, body: body === undefined ? undefined : JSON.stringify(body), signal: both });
    } catch (err) {
      throw this.transportError(err, what, signal, deadline);
    }
    let text: string;
    try {
      text = await readCapped(res, Math.ceil((this.opts.maxOutputBytes * 4) / 3) + 64 * 1024);
    } catch (err) {
      if (err instanceof PluginError) throw err;
      throw this.transportError(err, what, signal, deadline);
    }
    if (res.status === 404 || (returnMissing && res.status === 405)) return { status: res.status, json: null };
    if (res.status < 200 || res.status > 299) {
      // RunPod error bodies are {"error": "..."}; keep it short, it ends up in job errors and logs
      const detail = safeJson(text)?.error ?? text.slice(0, 200);
      throw new PluginError("upstream_http", `GPU worker answered ${what} with HTTP ${res.status}: ${String(detail).slice(0, 200)}`, { status: res.status });
    }
    const json = safeJson(text);
    if (json === undefined || typeof json !== "object" || json === null) {
      throw new PluginError("malformed", `GPU worker answered ${what} with something that is not a JSON object`, { retryable: true });
    }
    return { status: res.status, json };
  }

  private transportError(err: unknown, what: string, signal: AbortSignal, deadline: AbortSignal): unknown {
    if (signal.aborted) return signal.reason; // the host's own cancel
    if (deadline.aborted) return new PluginError("timeout", `GPU worker did not answer ${what} within ${this.opts.timeouts.requestMs} ms`, { cause: err });
    return new PluginError("connect", `GPU worker unreachable (${what}): ${(err as Error)?.message ?? err}`, { cause: err });
  }
}

async function readCapped(res: Response, maxBytes: number): Promise<string> {
  const bytes = await readBodyCapped(res, maxBytes, () =>
    new PluginError("failed", `GPU worker answer is larger than ${maxBytes} bytes (maxOutputBytes)`, { code: "output_too_large", retryable: false }),
  );
  return new TextDecoder().decode(bytes);
}

function safeJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
