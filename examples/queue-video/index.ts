/**
 * queue-video: a reelay image-to-video plugin for a queue-style provider API, shaped like fal's
 * queue (submit → status → result URL). Built from @reelay/plugin-sdk alone:
 *
 *   bun build index.ts --outfile dist/queue-video.js --target bun --format esm
 *
 * Models file entry:
 *   { "id": "kling-i2v", "plugin": "queue-video", "pricing": { "perSecond": 70000 },
 *     "options": { "baseUrl": "https://queue.fal.run", "app": "fal-ai/kling-video/v2/master/image-to-video", "apiKeyEnv": "FAL_KEY" } }
 *
 * The handle is the provider's request id: after a reelay restart the host polls the same job.
 * The result is returned as its URL; reelay downloads it through its SSRF guard (a provider on a
 * private network needs the model's `allowPrivateNetwork: true`) and checks it is an MP4.
 */
import { callUpstream, definePlugin, PluginError, Type, type CallOptions, type Static, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";

const Options = Type.Object({
  baseUrl: Type.String({ pattern: "^https?://[^?#]+$", description: 'the queue, e.g. "https://queue.fal.run"' }),
  /** the model's app id; requests live under its first two segments (owner/name), as on fal */
  app: Type.String({ pattern: "^[\\w.-]+/[\\w.-]+(/[\\w.-]+)*$", description: 'e.g. "fal-ai/kling-video/v2/master/image-to-video"' }),
  /** the environment variable holding the key (sent as `Authorization: Key …`) */
  apiKeyEnv: Type.Optional(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$" })),
  /** a video job takes 30 s to minutes: polling every 2 s adds ≤ 2 s and a few dozen status calls */
  pollIntervalMs: Type.Integer({ minimum: 50, default: 2_000 }),
  maxConcurrency: Type.Integer({ minimum: 1, default: 4 }),
  /** one status / result / submit call, headers and body */
  requestMs: Type.Integer({ minimum: 1, default: 30_000 }),
}, { additionalProperties: false });
type Options = Static<typeof Options>;

interface Status {
  status?: string;
  progress?: unknown;
}

export default definePlugin({
  name: "queue-video",
  options: Options,
  create(ctx) {
    const o = ctx.options;
    const key = o.apiKeyEnv ? ctx.env(o.apiKeyEnv) : undefined;
    if (o.apiKeyEnv && !key) throw new Error(`apiKeyEnv names ${o.apiKeyEnv}, which is not set`);
    const base = o.baseUrl.replace(/\/+$/, "");
    const requests = `${base}/${o.app.split("/").slice(0, 2).join("/")}/requests`;
    const headers: Record<string, string> = key ? { authorization: `Key ${key}` } : {};
    const timeouts = { totalMs: o.requestMs };
    const call = <T>(url: string, c: CallOptions, init: { method?: string; json?: unknown } = {}) =>
      callUpstream({ url, headers, ...init }, c, { timeouts, fetch: ctx.fetch }).then((r) => r.json<T>());

    return {
      video: {
        pollIntervalMs: o.pollIntervalMs,
        maxConcurrency: o.maxConcurrency,

        async submit(req, c) {
          const answer = await call<{ request_id?: unknown }>(`${base}/${o.app}`, c, { json: input(req) });
          if (typeof answer?.request_id !== "string" || !answer.request_id) throw new PluginError("malformed", "the queue accepted the job but sent no request_id", { retryable: true });
          c.logger.debug("job queued", { jobId: req.jobId, requestId: answer.request_id });
          return { handle: answer.request_id };
        },

        async poll(handle, c): Promise<VideoPollResult> {
          let s: Status;
          try {
            s = await call<Status>(`${requests}/${encodeURIComponent(handle)}/status`, c);
          } catch (err) {
            // the queue no longer knows the job: reelay submits it again
            if ((err as PluginError).kind === "upstream_http" && (err as PluginError).status === 404) return { state: "lost" };
            throw err;
          }
          switch (s.status) {
            case "IN_QUEUE":
              return { state: "queued" };
            case "IN_PROGRESS":
              return progressOf(s);
            case "COMPLETED":
              return result(handle, c);
            default:
              throw new PluginError("malformed", `the queue reported an unknown status ${JSON.stringify(s.status)}`, { retryable: true });
          }
        },

        async cancel(handle, c) {
          await call(`${requests}/${encodeURIComponent(handle)}/cancel`, c, { method: "PUT" }).catch((err) => {
            if ((err as PluginError).status !== 400) throw err; // 400: already finished, which is what cancel wants
          });
        },
      },
    };

    /** The finished job: its video's URL (reelay downloads and checks it), or why it failed. */
    async function result(handle: string, c: CallOptions): Promise<VideoPollResult> {
      try {
        const r = await call<{ video?: { url?: unknown } }>(`${requests}/${encodeURIComponent(handle)}`, c);
        const url = r?.video?.url;
        if (typeof url !== "string" || !/^https?:\/\//.test(url)) throw new PluginError("malformed", "the queue's result has no video URL", { retryable: true });
        return { state: "succeeded", url };
      } catch (err) {
        const e = err as PluginError;
        // 4xx for a finished job: the provider refused or failed it for good (a content policy, a bad image)
        if (e.kind === "upstream_http" && e.status !== undefined && e.status >= 400 && e.status < 500 && e.status !== 429 && e.status !== 401 && e.status !== 403) {
          return { state: "failed", code: e.code && /^[\w.:-]{1,100}$/.test(e.code) ? e.code : "generation_failed", message: e.message, retryable: false };
        }
        throw err;
      }
    }
  },
});

/** reelay's request → the provider's input (a data URL for the image: nothing is uploaded elsewhere). */
function input(req: VideoRequest) {
  const ratio = req.width === req.height ? "1:1" : req.width > req.height ? "16:9" : "9:16";
  return {
    prompt: req.prompt,
    image_url: `data:${req.image.mime};base64,${Buffer.from(req.image.bytes).toString("base64")}`,
    duration: String(req.seconds),
    aspect_ratio: ratio,
    ...(req.negativePrompt ? { negative_prompt: req.negativePrompt } : {}),
    seed: req.seed,
  };
}

/** Progress as reelay wants it: a fraction from 0 to 1 (the queue sends a percentage, when it sends one). */
function progressOf(s: Status): VideoPollResult {
  const p = typeof s.progress === "number" && Number.isFinite(s.progress) ? Math.min(100, Math.max(0, s.progress)) / 100 : undefined;
  return p === undefined ? { state: "running" } : { state: "running", progress: p };
}

export type { Options as QueueVideoOptions };
