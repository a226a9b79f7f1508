/**
 * remote-gpu-video: image-to-video on a queue-based GPU endpoint speaking the RunPod serverless
 * protocol (POST /run, GET /status/{id}, POST /cancel/{id}; see docs/remote-gpu-protocol.md), e.g.
 * a Wan 2.1 I2V worker. The handle is the worker's job id, so after a reelay restart the host polls
 * the same job instead of submitting again. Options: see options.ts; field mapping: input-mapping.ts.
 * Several workers (`deployments`): a job is submitted to one the SDK's UpstreamRouter picks (weights,
 * maxConcurrent jobs, circuit breakers; a failing submit goes to the next) and its handle,
 * "<deployment>/<job id>", says where to poll and cancel it.
 */
import {
  DEFAULT_BREAKER, definePlugin, isPluginError, outcomeOf, PluginError, routedCall, UpstreamRouter,
  type Deployment, type DeploymentSpec, type Lease, type ModelInstance, type PluginContext, type VideoPollResult,
} from "@reelay/plugin-sdk";
import { buildInput } from "./input-mapping.ts";
import { parseOptions, RemoteGpuOptions, validateOptions, workerNames } from "./options.ts";
import { readOutput } from "./read-output.ts";
import { RunpodClient } from "./runpod-client.ts";

export type { RemoteGpuOptions } from "./options.ts";

/** the boot reachability probe gives up after 5 s (a cold RunPod endpoint answers /health in < 1 s) */
const BOOT_PROBE_MS = 5_000;
export { buildInput, DEFAULT_MAPPING } from "./input-mapping.ts";
/**
 * A job holds a slot of its worker's maxConcurrent until this instance sees it finish, or for 15
 * minutes at most (an image-to-video job takes 30 s to 5 min; another instance may poll it to its end).
 */
const SLOT_TTL_MS = 15 * 60_000;

export default definePlugin({
  name: "remote-gpu-video",
  options: RemoteGpuOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const opts = parseOptions(ctx.options);
    const legacy = opts.deployments === undefined;
    const router = new UpstreamRouter(workers(ctx, opts), legacy ? { ...DEFAULT_BREAKER, enabled: false } : opts.routing.breaker);
    // jobs this instance submitted and has not seen finish, each holding its worker's maxConcurrent slot
    const running = new Map<string, { lease: Lease<RunpodClient>; timer: ReturnType<typeof setTimeout> }>();
    const finished = (handle: string) => {
      const r = running.get(handle);
      if (!r) return;
      clearTimeout(r.timer);
      r.lease.end();
      running.delete(handle);
    };
    // a typo'd or down worker is said at boot, not at the first paid job; boot does not wait for it
    const probing = new AbortController();
    for (const d of router.deployments) {
      void d.target.probe(AbortSignal.any([probing.signal, AbortSignal.timeout(BOOT_PROBE_MS)])).then((r) => {
        if (!r.reachable && !probing.signal.aborted) ctx.logger.warn("GPU worker unreachable at boot: check the model's baseUrl and the worker", { baseUrl: d.target.baseUrl, reason: r.reason, ...(legacy ? {} : { deployment: d.name }) });
      });
    }
    /** the worker a handle names ("<deployment>/<job id>"); a bare job id (a single baseUrl, or a job from before `deployments`) is the first worker's */
    const locate = (handle: string): { d: Deployment<RunpodClient>; id: string } => {
      if (!legacy) {
        const cut = handle.indexOf("/");
        const d = cut > 0 ? router.deployments.find((x) => x.name === handle.slice(0, cut)) : undefined;
        if (d) return { d, id: handle.slice(cut + 1) };
      }
      return { d: router.deployments[0]!, id: handle };
    };
    /** a call to the job's own worker: its failures (unreachable, 5xx) teach that worker's breaker */
    const onWorker = async <R>(d: Deployment<RunpodClient>, signal: AbortSignal, fn: () => Promise<R>): Promise<R> => {
      const started = performance.now();
      try {
        const r = await fn();
        router.observe(d, { ok: true, ms: performance.now() - started });
        return r;
      } catch (err) {
        if (!signal.aborted && isPluginError(err)) router.observe(d, outcomeOf(err, performance.now() - started));
        throw err;
      }
    };

    return {
      close: async () => {
        probing.abort();
        for (const h of [...running.keys()]) finished(h);
      },
      upstreams: () => router.status(),
      video: {
        maxConcurrency: opts.maxConcurrency,
        pollIntervalMs: opts.pollIntervalMs,

        async submit(req, call) {
          // a worker failing at submit (unreachable, 5xx, 429, no job id) → the next one, before the job fails or waits
          const { value: handle, lease } = await routedCall(router, call, async ({ deployment: d }) => {
            const { json } = await d.target.run(buildInput(req, opts.inputMapping, opts.staticInput), call.signal, call.trace);
            if (typeof json.id !== "string" || !json.id) throw new PluginError("malformed", "GPU worker accepted /run but its answer has no job id", { retryable: true });
            ctx.logger.debug("GPU job submitted", { jobId: req.jobId, workerJobId: json.id, ...(legacy ? {} : { deployment: d.name }) });
            return legacy ? json.id : `${d.name}/${json.id}`;
          }, { budget: opts.routing, holdOnSuccess: true });
          // another instance may poll the job to its end: the slot is given back after SLOT_TTL_MS at the latest
          const timer = setTimeout(() => finished(handle), SLOT_TTL_MS);
          (timer as { unref?: () => void }).unref?.();
          running.set(handle, { lease, timer });
          return { handle };
        },

        async poll(handle, { signal, trace }): Promise<VideoPollResult> {
          const { d, id } = locate(handle);
          const answer = await onWorker(d, signal, () => d.target.status(id, signal, trace));
          if (answer.status === 404) {
            finished(handle);
            return { state: "lost" };
          }
          const json = answer.json;
          switch (json.status) {
            case "IN_QUEUE":
              return { state: "queued" };
            case "IN_PROGRESS": {
              const progress = readProgress(json);
              return progress === undefined ? { state: "running" } : { state: "running", progress };
            }
            case "COMPLETED": {
              finished(handle);
              const out = await readOutput(ctx, opts, json, signal);
              return out instanceof Uint8Array ? { state: "succeeded", mp4: out } : out;
            }
            case "FAILED":
              finished(handle);
              return { state: "failed", code: "worker_failed", message: workerError(json.error), retryable: false };
            case "TIMED_OUT":
              finished(handle);
              return { state: "failed", code: "worker_timeout", message: "the GPU worker timed out before finishing the video", retryable: false };
            case "CANCELLED":
              finished(handle);
              return { state: "failed", code: "cancelled", message: "the job was cancelled on the GPU worker", retryable: false };
            default:
              throw new PluginError("malformed", `GPU worker reported an unknown status ${JSON.stringify(json.status)}`, { retryable: true });
          }
        },

        async cancel(handle, { signal, trace }) {
          const { d, id } = locate(handle);
          // 404: the worker no longer knows the job, which is what cancel wants anyway
          await d.target.cancel(id, signal, trace);
          finished(handle);
        },
      },
    };
  },
});

/** One RunPod client per worker, with its key (a deployment's unset key stops the boot, like the single apiKeyEnv). */
function workers(ctx: PluginContext, opts: RemoteGpuOptions): Array<DeploymentSpec<RunpodClient>> {
  const key = (env: string | undefined, who: string) => {
    if (!env) return undefined;
    const value = ctx.env(env);
    if (!value) throw new Error(`${who}apiKeyEnv names the environment variable ${env}, which is not set`);
    return value;
  };
  if (opts.deployments === undefined) {
    const baseUrl = opts.baseUrl!.replace(/\/+$/, "");
    return [{ name: hostOf(baseUrl), weight: 1, target: new RunpodClient(ctx, opts, baseUrl, key(opts.apiKeyEnv, "")) }];
  }
  const names = workerNames(opts.deployments);
  return opts.deployments.map((d, i) => {
    const baseUrl = d.baseUrl.replace(/\/+$/, "");
    return { name: names[i]!, weight: d.weight, maxConcurrent: d.maxConcurrent, target: new RunpodClient(ctx, opts, baseUrl, key(d.apiKeyEnv, `deployment "${names[i]}": `)) };
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

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
