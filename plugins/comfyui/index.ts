/**
 * comfyui: image-to-video on the operator's own ComfyUI servers, running the operator's workflow
 * (an API-format export with {{placeholders}}: workflow.ts) — Wan 2.x, LTX-Video, HunyuanVideo …
 * examples/comfyui/ has two. A job:
 *   submit: POST /upload/image (the source image) → POST /prompt {prompt: the filled workflow,
 *           client_id}; the handle is "<deployment>/<prompt_id>", saved by the host at once, so a
 *           restarted reelay follows the same prompt instead of queueing it again
 *   follow: the server's websocket pushes progress and the prompt's end (live-events.ts), which
 *           wakes the job's poll at once; without it (or after a break) polls read GET /history/{id}
 *           and GET /queue
 *   result: the output node's .mp4 from GET /view, checked to be an MP4
 *   cancel: POST /queue {"delete": [id]} while it waits, POST /interrupt while it runs
 * A workflow the server refuses (400 with node_errors: a missing model file, a missing custom
 * node) fails the job with a message naming the node. Several servers (`deployments`): the SDK's
 * VideoJobRouter spreads jobs and follows each on its own server.
 */
import { definePlugin, isMp4, VideoJobRouter, DEFAULT_BREAKER, DEFAULT_VIDEO_SECONDS, type Deployment, type DeploymentSpec, type ModelInstance, type PluginContext, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { ComfyClient, executionError, videoOutput } from "./comfy-client.ts";
import { framesFunction } from "./frames.ts";
import { LiveEvents } from "./live-events.ts";
import { COMFY_SIZES, ComfyOptions, deploymentNames, validateOptions } from "./options.ts";
import { fillWorkflow, readWorkflow, samplerCount } from "./workflow.ts";

export type { ComfyOptions } from "./options.ts";
export { fillWorkflow, readWorkflow } from "./workflow.ts";

/** polls answered from the websocket alone still check /queue this often: a prompt the server dropped is noticed */
const HTTP_CHECK_MS = 30_000;

interface Server {
  client: ComfyClient;
  events: LiveEvents | null;
}

export default definePlugin({
  name: "comfyui",
  options: ComfyOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const o = ctx.options;
    const { workflow, problems } = readWorkflow(o.workflowFile, o.outputNode);
    if (!workflow) throw new Error(problems.join("; "));
    const frames = framesFunction(o.framesFor, o.fps);
    const samplers = samplerCount(workflow);
    const single = o.deployments === undefined;
    const jobs = new VideoJobRouter(servers(ctx, o, samplers, (name, promptId) => ctx.video?.wake(`${name}/${promptId}`)), {
      breaker: single ? { ...DEFAULT_BREAKER, enabled: false } : o.routing.breaker,
      budget: o.routing,
    });
    const lastHttpCheck = new Map<string, number>();
    const ended = (handle: string, d: Deployment<Server>, promptId: string) => {
      jobs.finished(handle);
      d.target.events?.forget(promptId);
      lastHttpCheck.delete(handle);
    };

    return {
      upstreams: () => jobs.status(),
      close: () => {
        jobs.close();
        for (const d of jobs.router.deployments) d.target.events?.close();
      },
      video: {
        maxConcurrency: o.maxConcurrency,
        pollIntervalMs: o.pollIntervalMs,
        sizes: o.sizes ?? COMFY_SIZES,
        seconds: o.seconds ?? (typeof o.framesFor === "string" ? DEFAULT_VIDEO_SECONDS : Object.keys(o.framesFor).map(Number).sort((a, b) => a - b)),

        async submit(req, call) {
          const handle = await jobs.submit(call, async (d) => {
            const { client, events } = d.target;
            await events?.ready();
            const image = await client.uploadImage(`${req.jobId}.${extension(req.image.mime)}`, req.image.bytes, req.image.mime, call.signal);
            const promptId = await client.queuePrompt(fillWorkflow(workflow, values(req, image, o, frames)), events?.clientId ?? crypto.randomUUID(), call.signal);
            events?.track(promptId);
            call.logger.debug("ComfyUI prompt queued", { jobId: req.jobId, promptId, deployment: d.name });
            return promptId;
          });
          return { handle };
        },

        async poll(handle, call): Promise<VideoPollResult> {
          const { deployment: d, id } = jobs.locate(handle);
          const { client, events } = d.target;
          const live = events?.state(id);
          if (live && !lastHttpCheck.has(handle)) lastHttpCheck.set(handle, Date.now());
          if (live && live.phase !== "ended" && Date.now() - lastHttpCheck.get(handle)! < HTTP_CHECK_MS) {
            return live.phase === "queued" ? { state: "queued" } : { state: "running", progress: live.progress };
          }
          lastHttpCheck.set(handle, Date.now());
          let entry = await jobs.on(d, call.signal, () => client.history(id, call.signal));
          if (!entry) {
            const where = await jobs.on(d, call.signal, () => client.queued(id, call.signal));
            if (where === "pending") return { state: "queued" };
            if (where === "running") return live ? { state: "running", progress: live.progress } : { state: "running" };
            // it may have finished between the two calls
            entry = await jobs.on(d, call.signal, () => client.history(id, call.signal));
            if (!entry) {
              ended(handle, d, id);
              return { state: "lost" };
            }
          }
          if (!entry.status?.completed && entry.status?.status_str !== "error") return { state: "running", progress: live?.progress ?? 0.99 };
          const failure = executionError(entry);
          if (failure) {
            ended(handle, d, id);
            return { state: "failed", code: failure.code, message: failure.message, retryable: false };
          }
          const file = videoOutput(entry, o.outputNode);
          if ("problem" in file) {
            ended(handle, d, id);
            return { state: "failed", code: "output_invalid", message: file.problem, retryable: false };
          }
          const bytes = await jobs.on(d, call.signal, () => client.view(file, o.maxOutputBytes, call.signal));
          ended(handle, d, id);
          if (!isMp4(bytes)) return { state: "failed", code: "output_invalid", message: `${file.filename} from node ${file.node} is not an MP4 (no ftyp box)`, retryable: false };
          return { state: "succeeded", mp4: bytes };
        },

        async cancel(handle, call) {
          const { deployment: d, id } = jobs.locate(handle);
          await d.target.client.cancel(id, call.signal);
          ended(handle, d, id);
        },
      },
    };
  },
});

function values(req: VideoRequest, image: string, o: ComfyOptions, frames: (seconds: number) => number) {
  return {
    prompt: req.prompt,
    negative_prompt: req.negativePrompt ?? o.negativePrompt,
    image,
    seed: req.seed,
    steps: req.steps ?? o.steps,
    width: req.width,
    height: req.height,
    frames: frames(req.seconds),
    fps: o.fps,
    seconds: req.seconds,
  };
}

const extension = (mime: string) => (mime === "image/jpeg" ? "jpg" : mime === "image/webp" ? "webp" : "png");

/** One client (and websocket) per server; a server's unset key stops the boot. */
function servers(ctx: PluginContext, o: ComfyOptions, samplers: number, wake: (name: string, promptId: string) => void): Array<DeploymentSpec<Server>> {
  const list = o.deployments ?? [{ baseUrl: o.baseUrl!, apiKeyEnv: o.apiKeyEnv, weight: 1, maxConcurrent: undefined, name: undefined }];
  const names = deploymentNames(list);
  return list.map((d, i) => {
    const name = names[i]!;
    const who = o.deployments ? `deployment "${name}": ` : "";
    const key = d.apiKeyEnv ? ctx.env(d.apiKeyEnv) : undefined;
    if (d.apiKeyEnv && !key) throw new Error(`${who}apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    const client = new ComfyClient(ctx, d.baseUrl.replace(/\/+$/, ""), key, o.timeouts);
    const events = o.websocket ? new LiveEvents((clientId) => client.wsUrl(clientId), client.wsHeaders(), samplers, (promptId) => wake(name, promptId), ctx.logger) : null;
    return { name, weight: d.weight, maxConcurrent: d.maxConcurrent, target: { client, events } };
  });
}
