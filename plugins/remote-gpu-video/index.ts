/**
 * remote-gpu-video: image-to-video on a queue-based GPU endpoint speaking the RunPod serverless
 * protocol (POST /run, GET /status/{id}, POST /cancel/{id}; see docs/remote-gpu-protocol.md), e.g.
 * a Wan 2.1 I2V worker. The handle is the worker's job id, so after a reelay restart the host polls
 * the same job instead of submitting again. Options: see options.ts; field mapping: input-mapping.ts.
 */
import { definePlugin, PluginError, type ModelInstance, type VideoPollResult } from "@reelay/plugin-sdk";
import { buildInput } from "./input-mapping.ts";
import { parseOptions, RemoteGpuOptions, validateOptions } from "./options.ts";
import { readOutput } from "./read-output.ts";
import { RunpodClient } from "./runpod-client.ts";

export type { RemoteGpuOptions } from "./options.ts";

/** the boot reachability probe gives up after 5 s (a cold RunPod endpoint answers /health in < 1 s) */
const BOOT_PROBE_MS = 5_000;
export { buildInput, DEFAULT_MAPPING } from "./input-mapping.ts";

export default definePlugin({
  name: "remote-gpu-video",
  options: RemoteGpuOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const opts = parseOptions(ctx.options);
    let apiKey: string | undefined;
    if (opts.apiKeyEnv) {
      apiKey = ctx.env(opts.apiKeyEnv);
      if (!apiKey) throw new Error(`apiKeyEnv names the environment variable ${opts.apiKeyEnv}, which is not set`);
    }
    const worker = new RunpodClient(ctx, opts, apiKey);
    // a typo'd or down worker is said at boot, not at the first paid job; boot does not wait for it
    const probing = new AbortController();
    void worker.probe(AbortSignal.any([probing.signal, AbortSignal.timeout(BOOT_PROBE_MS)])).then((r) => {
      if (!r.reachable && !probing.signal.aborted) ctx.logger.warn("GPU worker unreachable at boot: check the model's baseUrl and the worker", { baseUrl: opts.baseUrl, reason: r.reason });
    });

    return {
      close: async () => probing.abort(),
      video: {
        maxConcurrency: opts.maxConcurrency,
        pollIntervalMs: opts.pollIntervalMs,

        async submit(req, { signal }) {
          const { json } = await worker.run(buildInput(req, opts.inputMapping, opts.staticInput), signal);
          if (typeof json.id !== "string" || !json.id) throw new PluginError("malformed", "GPU worker accepted /run but its answer has no job id", { retryable: true });
          ctx.logger.debug("GPU job submitted", { jobId: req.jobId, workerJobId: json.id });
          return { handle: json.id };
        },

        async poll(handle, { signal }): Promise<VideoPollResult> {
          const answer = await worker.status(handle, signal);
          if (answer.status === 404) return { state: "lost" };
          const json = answer.json;
          switch (json.status) {
            case "IN_QUEUE":
              return { state: "queued" };
            case "IN_PROGRESS": {
              const progress = readProgress(json);
              return progress === undefined ? { state: "running" } : { state: "running", progress };
            }
            case "COMPLETED": {
              const out = await readOutput(ctx, opts, json, signal);
              return out instanceof Uint8Array ? { state: "succeeded", mp4: out } : out;
            }
            case "FAILED":
              return { state: "failed", code: "worker_failed", message: workerError(json.error), retryable: false };
            case "TIMED_OUT":
              return { state: "failed", code: "worker_timeout", message: "the GPU worker timed out before finishing the video", retryable: false };
            case "CANCELLED":
              return { state: "failed", code: "cancelled", message: "the job was cancelled on the GPU worker", retryable: false };
            default:
              throw new PluginError("malformed", `GPU worker reported an unknown status ${JSON.stringify(json.status)}`, { retryable: true });
          }
        },

        async cancel(handle, { signal }) {
          // 404: the worker no longer knows the job, which is what cancel wants anyway
          await worker.cancel(handle, signal);
        },
      },
    };
  },
});

/** `progress` at the top level or inside `output`, as 0..1 or a percentage. */
function readProgress(json: any): number | undefined {
  const raw = typeof json.progress === "number" ? json.progress : typeof json.output?.progress === "number" ? json.output.progress : undefined;
  if (raw === undefined || !Number.isFinite(raw) || raw < 0) return undefined;
  return Math.min(1, raw > 1 ? raw / 100 : raw);
}

/** RunPod's `error` is a string, sometimes JSON text like {"error_type", "error_message"}. */
function workerError(error: unknown): string {
  let msg: unknown = error;
  if (typeof error === "string") {
    try {
      const parsed = JSON.parse(error);
      if (parsed && typeof parsed === "object") msg = parsed.error_message ?? parsed.message ?? error;
    } catch { /* plain text */ }
  } else if (error && typeof error === "object") {
    msg = (error as any).error_message ?? (error as any).message ?? JSON.stringify(error);
  }
  const text = typeof msg === "string" && msg ? msg : "the GPU worker reported a failure without a message";
  return text.length > 500 ? text.slice(0, 500) + "…" : text;
}
