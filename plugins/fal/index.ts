/**
 * fal: image-to-video on fal's queue (Kling, Seedance, Hailuo, Wan, Veo … each an app).
 *   submit: POST {queue}/{app} with the input, `Authorization: Key …` → {request_id, status_url,
 *           response_url, cancel_url}; the handle keeps the three URLs as fal returned them
 *           ("<deployment>/<request_id> <status_url> <response_url> <cancel_url>"), so polls,
 *           results and cancels follow them, and a restarted reelay follows the same request
 *   follow: GET status_url → IN_QUEUE (queue_position) / IN_PROGRESS / COMPLETED
 *   result: GET response_url → {video: {url}}; the URL is downloaded by the host through its SSRF
 *           guard (size- and time-limited; a private address only with allowPrivateNetwork); the
 *           app's error payload (422 {detail: [{msg}]}, a 4xx {detail}) fails the job with its message
 *   cancel: PUT cancel_url
 * Returned URLs are followed only on the queue's own origin: the key goes with them, so a URL
 * elsewhere is ignored and the request's URLs are built from its id instead.
 */
import {
  buildInput, callUpstream, DEFAULT_BREAKER, definePlugin, MAX_HANDLE_LENGTH, PluginError, VideoJobRouter,
  type CallOptions, type DeploymentSpec, type ModelInstance, type PluginContext, type VideoPollResult,
} from "@reelay/plugin-sdk";
import { deploymentNames, FAL_INPUT, FAL_QUEUE, FalOptions, validateOptions } from "./options.ts";

export type { FalOptions } from "./options.ts";

interface Queue {
  base: string;
  headers: Record<string, string>;
}

interface Urls {
  status: string;
  response: string;
  cancel: string;
}

export default definePlugin({
  name: "fal",
  options: FalOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const o = ctx.options as FalOptions;
    const single = o.deployments === undefined;
    const jobs = new VideoJobRouter(queues(ctx, o), { breaker: single ? { ...DEFAULT_BREAKER, enabled: false } : o.routing.breaker, budget: o.routing });
    // requests live under the app's first two segments: fal-ai/kling-video/v2.1/… → fal-ai/kling-video/requests/{id}
    const owner = o.app.split("/").slice(0, 2).join("/");
    const api = async <T>(q: Queue, c: Pick<CallOptions, "signal"> & Partial<Pick<CallOptions, "logger">>, url: string, init: { method?: string; json?: unknown } = {}) =>
      (await callUpstream({ url, headers: q.headers, ...init }, c, { timeouts: { totalMs: o.timeouts.requestMs }, fetch: ctx.fetch, ...(single ? {} : { retryRefusedMs: [] }) })).json<T>();
    const urlsOf = (q: Queue, id: string): { requestId: string; urls: Urls } => {
      const [requestId = id, status, response, cancel] = id.split(" ");
      if (status && response && cancel) return { requestId, urls: { status, response, cancel } };
      const base = `${q.base}/${owner}/requests/${encodeURIComponent(requestId)}`;
      return { requestId, urls: { status: `${base}/status`, response: base, cancel: `${base}/cancel` } };
    };

    return {
      upstreams: () => jobs.status(),
      close: () => jobs.close(),
      video: {
        maxConcurrency: o.maxConcurrency,
        sizes: o.sizes,
        seconds: o.seconds,
        pollIntervalMs: o.pollIntervalMs,

        async submit(req, call) {
          const handle = await jobs.submit(call, async (d) => {
            const q = d.target;
            const r = await api<{ request_id?: unknown; status_url?: unknown; response_url?: unknown; cancel_url?: unknown }>(q, call, `${q.base}/${o.app}`, { json: buildInput(req, o.inputMapping, o.staticInput, FAL_INPUT) });
            if (typeof r?.request_id !== "string" || !/^[\w-]{1,200}$/.test(r.request_id)) throw new PluginError("malformed", "fal accepted the request but sent no request_id", { retryable: true });
            call.logger.debug("fal request queued", { jobId: req.jobId, requestId: r.request_id, deployment: d.name });
            const urls = [r.status_url, r.response_url, r.cancel_url];
            const own = urls.every((u) => typeof u === "string" && sameOrigin(u, q.base) && !/\s/.test(u));
            const full = [r.request_id, ...urls].join(" ");
            if (!own) call.logger.warn("fal returned request URLs off its queue's origin; following the request by id instead", { requestId: r.request_id });
            return own && d.name.length + 1 + full.length <= MAX_HANDLE_LENGTH ? full : r.request_id;
          });
          return { handle };
        },

        async poll(handle, call): Promise<VideoPollResult> {
          const { deployment: d, id } = jobs.locate(handle);
          const { urls } = urlsOf(d.target, id);
          let s: { status?: unknown; queue_position?: unknown; error?: unknown; logs?: unknown };
          try {
            s = await jobs.on(d, call.signal, () => api(d.target, call, urls.status));
          } catch (err) {
            if ((err as PluginError).kind === "upstream_http" && (err as PluginError).status === 404) {
              jobs.finished(handle);
              return { state: "lost" };
            }
            throw err;
          }
          switch (s?.status) {
            case "IN_QUEUE":
              return { state: "queued" };
            case "IN_PROGRESS": {
              const progress = progressOf(s.logs);
              return progress === undefined ? { state: "running" } : { state: "running", progress };
            }
            case "COMPLETED": {
              if (typeof s.error === "string" && s.error) {
                jobs.finished(handle);
                return { state: "failed", code: "fal_failed", message: s.error.slice(0, 500), retryable: false };
              }
              const r = await result(d.target, urls.response, call);
              if (r.state !== "running") jobs.finished(handle);
              return r;
            }
            default:
              throw new PluginError("malformed", `fal reported an unknown status ${JSON.stringify(s?.status)}`, { retryable: true });
          }
        },

        async cancel(handle, call) {
          const { deployment: d, id } = jobs.locate(handle);
          await api(d.target, call, urlsOf(d.target, id).urls.cancel, { method: "PUT" }).catch((err) => {
            // 400 ALREADY_COMPLETED, 404 unknown: nothing left to stop
            if (![400, 404].includes((err as PluginError).status ?? 0)) throw err;
          });
          jobs.finished(handle);
        },
      },
    };

    /** The completed request's video URL, or the app's error as a final failure. */
    async function result(q: Queue, url: string, call: CallOptions): Promise<VideoPollResult> {
      try {
        const r = await api<{ video?: { url?: unknown } }>(q, call, url);
        const video = r?.video?.url;
        if (typeof video !== "string" || !/^https?:\/\//i.test(video)) return { state: "failed", code: "output_missing", message: "fal's result has no video URL", retryable: false };
        return { state: "succeeded", url: video };
      } catch (err) {
        const e = err as PluginError;
        // a 4xx for a completed request is the app's refusal (a validation error, a cancelled request): final
        if (e.kind === "upstream_http" && e.status !== undefined && e.status >= 400 && e.status < 500 && ![401, 403, 408, 429].includes(e.status)) {
          return { state: "failed", code: e.code && /^[\w.:-]{1,100}$/.test(e.code) ? e.code : "fal_failed", message: e.message, retryable: false };
        }
        throw err; // 5xx, timeouts, network: the result is still there; the next poll tries again
      }
    }
  },
});

function sameOrigin(url: unknown, base: string): boolean {
  try {
    return typeof url === "string" && new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

/** fal's logs are lines of text; an app that prints "45%" or "step 9/20" gives progress. */
function progressOf(logs: unknown): number | undefined {
  if (!Array.isArray(logs)) return undefined;
  for (let i = logs.length - 1; i >= 0; i--) {
    const text = typeof logs[i]?.message === "string" ? (logs[i].message as string) : "";
    const pct = /(\d{1,3})%/.exec(text);
    if (pct) return Math.min(1, Number(pct[1]) / 100);
    const steps = /(\d+)\s*\/\s*(\d+)/.exec(text);
    if (steps && Number(steps[2]) > 0) return Math.min(1, Number(steps[1]) / Number(steps[2]));
  }
  return undefined;
}

/** One queue client (key) per deployment; an unset key stops the boot. */
function queues(ctx: PluginContext, o: FalOptions): Array<DeploymentSpec<Queue>> {
  const list = o.deployments ?? [{ baseUrl: o.baseUrl, apiKeyEnv: o.apiKeyEnv!, weight: 1, maxConcurrent: undefined, name: undefined }];
  const names = deploymentNames(list);
  return list.map((d, i) => {
    const name = names[i]!;
    const key = ctx.env(d.apiKeyEnv);
    if (!key) throw new Error(`${o.deployments ? `deployment "${name}": ` : ""}apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    return { name, weight: d.weight, maxConcurrent: d.maxConcurrent, target: { base: (d.baseUrl ?? FAL_QUEUE).replace(/\/+$/, ""), headers: { authorization: `Key ${key}` } } };
  });
}
