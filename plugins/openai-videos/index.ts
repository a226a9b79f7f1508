/**
 * openai-videos: image-to-video on any upstream speaking OpenAI's Videos API (OpenAI's Sora,
 * LiteLLM, new-api, Kong and other gateways), so reelay can resell another gateway's or vendor's
 * video models.
 *   submit: POST {baseUrl}/videos as multipart: model, prompt, seconds (a string, as OpenAI types
 *           it), size ("WxH"), input_reference (the source image as a file); the handle
 *           "<deployment>/<video id>" is saved by the host at once, so a restart polls the same video
 *   follow: GET {baseUrl}/videos/{id} → queued / in_progress (progress 0–100) / completed / failed
 *           (its error's code and message become the job's)
 *   result: GET {baseUrl}/videos/{id}/content with the key (the configured upstream, not a URL
 *           from an answer), at most maxOutputBytes, checked to be an MP4
 *   cancel: DELETE {baseUrl}/videos/{id}
 */
import {
  callUpstream, DEFAULT_BREAKER, definePlugin, isMp4, PluginError, VideoJobRouter,
  type CallOptions, type DeploymentSpec, type ModelInstance, type PluginContext, type VideoPollResult, type VideoRequest,
} from "@reelay/plugin-sdk";
import { deploymentNames, OpenAIVideosOptions, validateOptions } from "./options.ts";

export type { OpenAIVideosOptions } from "./options.ts";

interface Upstream {
  base: string;
  model: string;
  headers: Record<string, string>;
}

interface VideoObject {
  id?: unknown;
  status?: unknown;
  progress?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

export default definePlugin({
  name: "openai-videos",
  options: OpenAIVideosOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const o = ctx.options;
    const single = o.deployments === undefined;
    const jobs = new VideoJobRouter(upstreams(ctx, o), { breaker: single ? { ...DEFAULT_BREAKER, enabled: false } : o.routing.breaker, budget: o.routing });
    const options = { timeouts: { totalMs: o.timeouts.requestMs }, fetch: ctx.fetch, ...(single ? {} : { retryRefusedMs: [] }) };
    const videoOf = async (u: Upstream, id: string, c: CallOptions) => (await callUpstream({ url: `${u.base}/videos/${encodeURIComponent(id)}`, headers: u.headers }, c, options)).json<VideoObject>();

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
            const u = d.target;
            const { body, contentType } = await multipart(req, u.model);
            const v = await (await callUpstream({ url: `${u.base}/videos`, method: "POST", headers: { ...u.headers, "content-type": contentType }, body }, call, options)).json<VideoObject>();
            if (typeof v?.id !== "string" || !/^[\w-]{1,300}$/.test(v.id)) throw new PluginError("malformed", "the upstream accepted the video but sent no id", { retryable: true });
            call.logger.debug("upstream video created", { jobId: req.jobId, video: v.id, deployment: d.name });
            return v.id;
          });
          return { handle };
        },

        async poll(handle, call): Promise<VideoPollResult> {
          const { deployment: d, id } = jobs.locate(handle);
          let v: VideoObject;
          try {
            v = await jobs.on(d, call.signal, () => videoOf(d.target, id, call));
          } catch (err) {
            if ((err as PluginError).kind === "upstream_http" && (err as PluginError).status === 404) {
              jobs.finished(handle);
              return { state: "lost" };
            }
            throw err;
          }
          switch (v?.status) {
            case "queued":
              return { state: "queued" };
            case "in_progress": {
              const p = Number(v.progress);
              return Number.isFinite(p) && p >= 0 ? { state: "running", progress: Math.min(1, p / 100) } : { state: "running" };
            }
            case "completed": {
              const bytes = await jobs.on(d, call.signal, () => content(d.target, id, call));
              jobs.finished(handle);
              if (!isMp4(bytes)) return { state: "failed", code: "output_invalid", message: "the upstream's video content is not an MP4 (no ftyp box)", retryable: false };
              return { state: "succeeded", mp4: bytes };
            }
            case "failed": {
              jobs.finished(handle);
              const code = typeof v.error?.code === "string" && /^[\w.:-]{1,100}$/.test(v.error.code) ? v.error.code : "generation_failed";
              const message = typeof v.error?.message === "string" && v.error.message ? v.error.message.slice(0, 500) : "the upstream reported the video failed";
              return { state: "failed", code, message, retryable: false };
            }
            default:
              throw new PluginError("malformed", `the upstream reported an unknown video status ${JSON.stringify(v?.status)}`, { retryable: true });
          }
        },

        async cancel(handle, call) {
          const { deployment: d, id } = jobs.locate(handle);
          await callUpstream({ url: `${d.target.base}/videos/${encodeURIComponent(id)}`, method: "DELETE", headers: d.target.headers }, call, options)
            .then((r) => r.text())
            .catch((err) => {
              if ((err as PluginError).status !== 404) throw err; // already gone
            });
          jobs.finished(handle);
        },
      },
    };

    /** GET …/content: the finished video's bytes, at most maxOutputBytes */
    async function content(u: Upstream, id: string, call: CallOptions): Promise<Uint8Array> {
      const res = await callUpstream({ url: `${u.base}/videos/${encodeURIComponent(id)}/content`, headers: { ...u.headers, accept: "video/mp4" } }, call, { ...options, timeouts: { totalMs: o.timeouts.downloadMs } });
      const tooLarge = () => new PluginError("failed", `the upstream's video is larger than ${o.maxOutputBytes} bytes (maxOutputBytes)`, { code: "output_too_large", retryable: false });
      if (Number(res.headers.get("content-length") ?? 0) > o.maxOutputBytes) {
        res.close();
        throw tooLarge();
      }
      const parts: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of res.chunks()) {
        size += chunk.byteLength;
        if (size > o.maxOutputBytes) throw tooLarge(); // chunks() cancels the body and clears its deadlines
        parts.push(chunk);
      }
      return Buffer.concat(parts);
    }
  },
});

/** The create's multipart body: what OpenAI's API takes, the image as the input_reference file. */
async function multipart(req: VideoRequest, model: string): Promise<{ body: Uint8Array<ArrayBuffer>; contentType: string }> {
  const form = new FormData();
  form.append("model", model);
  form.append("prompt", req.prompt);
  form.append("seconds", String(req.seconds));
  form.append("size", `${req.width}x${req.height}`);
  const ext = req.image.mime === "image/jpeg" ? "jpg" : req.image.mime === "image/webp" ? "webp" : "png";
  form.append("input_reference", new Blob([req.image.bytes as Uint8Array<ArrayBuffer>], { type: req.image.mime }), `reference.${ext}`);
  const encoded = new Response(form);
  const contentType = encoded.headers.get("content-type")!; // with the boundary; read before the body (Bun drops it after)
  return { body: new Uint8Array(await encoded.arrayBuffer()), contentType };
}

function upstreams(ctx: PluginContext, o: OpenAIVideosOptions): Array<DeploymentSpec<Upstream>> {
  const list = o.deployments ?? [{ baseUrl: o.baseUrl!, apiKeyEnv: o.apiKeyEnv, upstreamModel: undefined, weight: 1, maxConcurrent: undefined, name: undefined }];
  const names = deploymentNames(list);
  return list.map((d, i) => {
    const name = names[i]!;
    const key = d.apiKeyEnv ? ctx.env(d.apiKeyEnv) : undefined;
    if (d.apiKeyEnv && !key) throw new Error(`${o.deployments ? `deployment "${name}": ` : ""}apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    return {
      name, weight: d.weight, maxConcurrent: d.maxConcurrent,
      target: { base: d.baseUrl.replace(/\/+$/, ""), model: d.upstreamModel ?? o.upstreamModel ?? ctx.modelId, headers: (key ? { authorization: `Bearer ${key}` } : {}) as Record<string, string> },
    };
  });
}
