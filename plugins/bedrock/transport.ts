/**
 * The AWS SDK's HTTP handler, on the host's fetch (ctx.fetch), with the deadlines every reelay
 * upstream has: connect (request → headers, for ConverseStream: a non-streamed Converse sends its
 * headers with the whole answer, so only `total` bounds that wait), first byte (headers → first
 * body bytes), idle (between body chunks) and total. A deadline aborts the request with a
 * `timeout` PluginError as the abort reason (from-bedrock.ts turns what the SDK throws into the
 * right kind). HTTP/1.1: the SDK's default for Bedrock is an HTTP/2 handler, which a plain-http
 * endpoint override (a test's fake, a proxy) cannot speak, and ConverseStream needs no more.
 */
import { Readable } from "node:stream";
import { PluginError, type UpstreamTimeouts } from "@reelay/plugin-sdk";

interface HttpRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

export function fetchHandler(doFetch: typeof fetch, timeouts: UpstreamTimeouts) {
  return {
    metadata: { handlerProtocol: "http/1.1" },
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
    async handle(request: HttpRequest, options: { abortSignal?: AbortSignal } = {}) {
      const ac = new AbortController();
      const caller = options.abortSignal;
      const onAbort = () => ac.abort(caller?.reason);
      if (caller?.aborted) onAbort();
      else caller?.addEventListener("abort", onAbort, { once: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = (ms: number, what: string) => {
        clearTimeout(timer);
        timer = setTimeout(() => ac.abort(new PluginError("timeout", `upstream ${what} timeout (${ms} ms)`, { retryable: what !== "idle" })), ms);
      };
      let answered = false;
      // before the headers nothing reached the client: another deployment may answer
      const total = setTimeout(() => ac.abort(new PluginError("timeout", `upstream total timeout (${timeouts.totalMs} ms)`, { retryable: !answered })), timeouts.totalMs);
      const finish = () => {
        clearTimeout(timer);
        clearTimeout(total);
        caller?.removeEventListener("abort", onAbort);
      };
      const streaming = request.path.endsWith("/converse-stream");
      if (streaming) arm(timeouts.connectMs, "connect");
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(request.query ?? {})) for (const x of Array.isArray(v) ? v : v === null ? [] : [v]) query.append(k, x);
      const url = `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ""}${request.path}${query.size ? `?${query}` : ""}`;
      const { host: _, ...headers } = request.headers;
      let res: Response;
      try {
        res = await doFetch(url, { method: request.method, headers, body: request.body as string | Uint8Array<ArrayBuffer> | undefined, signal: ac.signal });
      } catch (err) {
        finish();
        throw ac.signal.aborted ? ac.signal.reason ?? err : err;
      }
      answered = true;
      arm(timeouts.firstByteMs, "first byte");
      const reader = res.body?.getReader();
      // the body as a Node stream (the SDK's collectors and event-stream reader take one), each chunk re-arming the idle deadline
      const body = new Readable({
        async read() {
          try {
            const r = reader ? await reader.read() : { done: true as const, value: undefined };
            if (r.done) {
              finish();
              this.push(null);
            } else {
              arm(timeouts.idleMs, "idle");
              this.push(r.value);
            }
          } catch (err) {
            finish();
            this.destroy((ac.signal.aborted ? ac.signal.reason : err) as Error);
          }
        },
        destroy(err, cb) {
          finish();
          if (!ac.signal.aborted) ac.abort(err ?? new DOMException("body closed", "AbortError"));
          cb(err);
        },
      });
      const out: Record<string, string> = {};
      res.headers.forEach((v, k) => (out[k] = v));
      return { response: { statusCode: res.status, reason: res.statusText, headers: out, body } };
    },
  };
}
