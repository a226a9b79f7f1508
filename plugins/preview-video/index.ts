/**
 * preview-video: a local, CPU-only *preview* renderer for image-to-video jobs. It is not a neural
 * model and generates no new content: it animates the submitted still with a camera move (zoom in
 * or out, pan left/right/up/down, drift) picked from the prompt's words, or from the seed when the
 * prompt names none, and encodes a real H.264 MP4 at 16 fps. Same request and seed → byte-identical
 * MP4. Useful as the zero-configuration default model and for testing clients end to end.
 *
 * Options: `maxConcurrency` (default 2: one render keeps one core busy), `resultTtlMs` (default
 * 10 min), `maxQueued` (default 32), `maxUnpolledResults` (default 16), `quantizer` (H.264 QP,
 * default 30), `idleWorkersMs` (default 2 min), `minRenderMs` (default 0: as fast as the CPU allows;
 * set, a render takes at least that long, its progress rising evenly on any machine).
 *
 * Render workers start with the first job and stay warm between jobs (a warm pair renders a 5 s
 * clip in 1.9 s, a fresh one in 4.6 s); a pair idle for `idleWorkersMs` is closed, so a server
 * that rendered once does not keep ~4 threads and their encoder heaps for good.
 */
import { definePlugin, isPluginError, PluginError, type HostServices, type ModelInstance, type PluginContext, type VideoRequest } from "@reelay/plugin-sdk";
import { RenderError, RenderPipeline } from "./render-pipeline.ts";
import { JobTable } from "./job-table.ts";
import { parseOptions, PreviewOptions } from "./options.ts";

export const FPS = 16;
/** the first API's three sizes and OpenAI's Videos API's four: any even size renders, these are the ones offered */
export const SIZES = ["480x832", "832x480", "624x624", "720x1280", "1280x720", "1024x1792", "1792x1024"] as const;
/** 1 to 12 s: OpenAI's 4, 8 and 12 included */
export const SECONDS = Array.from({ length: 12 }, (_, i) => i + 1);

export default definePlugin({
  name: "preview-video",
  // the embedded default video model: 0.030 USD per second of output
  models: [{ id: "preview-motion", pricing: { perSecond: 30_000 }, ownedBy: "reelay" }],
  options: PreviewOptions,
  create(ctx) {
    return createPreviewRenderer(parseOptions(ctx.options), ctx);
  },
});

export function createPreviewRenderer(opts: PreviewOptions, ctx: Pick<PluginContext, "logger" | "host">): ModelInstance {
  const table = new JobTable({ resultTtlMs: opts.resultTtlMs, maxFinished: opts.maxUnpolledResults });
  const waiting: Array<{ handle: string; req: VideoRequest; controller: AbortController }> = [];
  const running = new Map<string, AbortController>();
  // one warm worker pair per concurrency slot, closed after idleWorkersMs unused
  const idle: Array<{ pipeline: RenderPipeline; timer: ReturnType<typeof setTimeout> }> = [];
  const all = new Set<RenderPipeline>();
  let closed = false;
  const park = (pipeline: RenderPipeline) => {
    const entry = {
      pipeline,
      timer: setTimeout(() => {
        idle.splice(idle.indexOf(entry), 1);
        all.delete(pipeline);
        pipeline.close();
      }, opts.idleWorkersMs),
    };
    (entry.timer as { unref?: () => void }).unref?.();
    idle.push(entry);
  };
  const unpark = (): RenderPipeline | undefined => {
    const entry = idle.pop();
    if (entry) clearTimeout(entry.timer);
    return entry?.pipeline;
  };

  const pump = () => {
    while (!closed && running.size < opts.maxConcurrency && waiting.length > 0) {
      const next = waiting.shift()!;
      running.set(next.handle, next.controller);
      table.set(next.handle, { state: "running", progress: 0 });
      let pipeline = unpark();
      if (!pipeline) all.add((pipeline = new RenderPipeline(FPS, ctx.host)));
      const slot = pipeline;
      void slot
        .render(next.req, opts, next.controller.signal, (progress) => {
          if (table.has(next.handle)) table.set(next.handle, { state: "running", progress });
        })
        .then((mp4) => {
          if (!next.controller.signal.aborted) table.set(next.handle, { state: "succeeded", mp4, finishedAt: Date.now() });
        })
        .catch((err: unknown) => {
          if (next.controller.signal.aborted) return;
          const failure = describeFailure(err);
          if (failure.code === "render_failed") ctx.logger.error("preview render failed", { jobId: next.req.jobId, err: String(err) });
          table.set(next.handle, { state: "failed", ...failure, finishedAt: Date.now() });
        })
        .finally(() => {
          running.delete(next.handle);
          if (closed) slot.close();
          else park(slot);
          pump();
        });
    }
  };

  return {
    video: {
      maxConcurrency: opts.maxConcurrency,
      // the host refuses submits (503) past this many jobs waiting for a slot
      maxQueued: opts.maxQueued,
      pollIntervalMs: 500,
      sizes: SIZES,
      seconds: SECONDS,
      async submit(req) {
        validateRequest(req);
        if (waiting.length >= opts.maxQueued) {
          throw new PluginError("upstream_http", "preview renderer queue is full", { status: 503, retryable: true });
        }
        const handle = `pv_${crypto.randomUUID()}`;
        table.set(handle, { state: "queued" });
        waiting.push({ handle, req, controller: new AbortController() });
        pump();
        return { handle };
      },
      async poll(handle) {
        return table.take(handle);
      },
      async cancel(handle) {
        const i = waiting.findIndex((w) => w.handle === handle);
        if (i !== -1) waiting.splice(i, 1);
        running.get(handle)?.abort();
        table.delete(handle);
      },
    },
    close() {
      closed = true;
      for (const c of running.values()) c.abort();
      waiting.length = 0;
      for (const entry of idle) clearTimeout(entry.timer);
      for (const p of all) p.close();
    },
  };
}

function validateRequest(req: VideoRequest): void {
  const even = (n: number) => Number.isInteger(n) && n >= 16 && n <= 4096 && n % 2 === 0;
  if (!even(req.width) || !even(req.height)) {
    throw new PluginError("invalid_request", `size ${req.width}x${req.height} must be even, 16..4096`, { param: "size" });
  }
  if (!Number.isInteger(req.seconds) || req.seconds < 1 || req.seconds > SECONDS.length) {
    throw new PluginError("invalid_request", `seconds must be an integer 1..${SECONDS.length}`, { param: "seconds" });
  }
}

function describeFailure(err: unknown): { code: string; message: string } {
  // the host's decoder says invalid_image for a source it cannot read (the submit checked it, so rare)
  if (isPluginError(err) && err.code === "invalid_image") return { code: "invalid_image", message: err.message };
  if (err instanceof RenderError && err.code === "invalid_image") return { code: "invalid_image", message: err.message };
  return { code: "render_failed", message: "the preview renderer failed" };
}

/** One job on a throwaway pipeline (tests, benchmarks, the fake GPU worker); the plugin keeps one pipeline per slot. */
export async function render(req: VideoRequest, opts: Pick<PreviewOptions, "quantizer">, signal: AbortSignal, onProgress: (p: number) => void, host: Pick<HostServices, "decodeImage" | "encodeMp4">): Promise<Uint8Array> {
  const pipeline = new RenderPipeline(FPS, host);
  try {
    return await pipeline.render(req, opts, signal, onProgress);
  } finally {
    pipeline.close();
  }
}
