/**
 * One render slot: a long-lived worker drawing the camera move's frames (frames-worker.ts), feeding
 * the host's H.264 encoder (ctx.host.encodeMp4, itself on a worker thread), so drawing and encoding
 * each keep a core busy; this thread decodes the source image once (ctx.host.decodeImage, as the
 * submit did to validate it) and passes the transferred frame buffers along. The frames worker
 * stays alive between jobs (warm JIT; a fresh drawing + encoding pair took 4.6 s for the first 5 s
 * clip at 480x832, a warm one 1.9 s); a job that is aborted or fails tears it down.
 */
import { workerUrl, type HostServices, type VideoRequest } from "@reelay/plugin-sdk";

/** A render that failed inside the frames worker, with its code (render_failed). */
export class RenderError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** frames drawn ahead of the encoder at most: 8 × 1.6 MB at 480x832 */
const FRAMES_IN_FLIGHT = 8;

export class RenderPipeline {
  private worker: Worker | null = null;
  private busy = false;

  constructor(private readonly fps: number, private readonly host: Pick<HostServices, "decodeImage" | "encodeMp4">) {}

  async render(req: VideoRequest, opts: { quantizer?: number; minRenderMs?: number }, signal: AbortSignal, onProgress: (p: number) => void): Promise<Uint8Array> {
    if (this.busy) throw new Error("a render pipeline runs one job at a time");
    this.busy = true;
    let ok = false;
    try {
      const source = await this.host.decodeImage(req.image.bytes);
      signal.throwIfAborted();
      const frameCount = req.seconds * this.fps;
      const frames = this.frames(source, req, frameCount, opts.minRenderMs ?? 0, signal, onProgress);
      const mp4 = await this.host.encodeMp4(frames, { width: req.width, height: req.height, fps: this.fps, quantizer: opts.quantizer, signal });
      ok = true;
      return mp4;
    } finally {
      this.busy = false;
      if (!ok) this.close(); // a half-finished job leaves the worker in an unknown state
    }
  }

  /** The frames, in order, drawn by the worker at most FRAMES_IN_FLIGHT ahead of the encoder. */
  private async *frames(source: { width: number; height: number; rgba: Uint8Array }, req: VideoRequest, frameCount: number, minRenderMs: number, signal: AbortSignal, onProgress: (p: number) => void): AsyncGenerator<Uint8Array> {
    const worker = (this.worker ??= new Worker(workerUrl(import.meta.url, "./frames-worker.ts", "plugins/preview-video/frames-worker.ts")));
    const ready: Uint8Array[] = [];
    let failure: unknown = null;
    let done = false;
    let wake: (() => void) | null = null;
    const notify = () => {
      wake?.();
      wake = null;
    };
    worker.onmessage = (e: MessageEvent) => {
      const m = e.data as { type: string; frame?: ArrayBuffer; code?: string; message?: string };
      if (m.type === "frame") ready.push(new Uint8Array(m.frame!));
      else if (m.type === "done") done = true;
      else failure = new RenderError(m.code ?? "render_failed", m.message ?? "frame rendering failed");
      notify();
    };
    worker.onerror = (e: ErrorEvent) => {
      failure = new RenderError("render_failed", e.message);
      notify();
    };
    const onAbort = () => {
      failure = signal.reason ?? new Error("aborted");
      notify();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const rgba = source.rgba.slice(); // transferred: the host's decoded buffer stays usable
    worker.postMessage({ type: "start", image: rgba, imageWidth: source.width, imageHeight: source.height, width: req.width, height: req.height, frameCount, prompt: req.prompt, seed: req.seed, credits: FRAMES_IN_FLIGHT }, [rgba.buffer]);
    const started = performance.now();
    try {
      for (let i = 0; i < frameCount; i++) {
        while (ready.length === 0 && !failure && !done) await new Promise<void>((r) => (wake = r));
        // pacing: frame i leaves no earlier than its share of minRenderMs (an abort wakes the wait)
        for (let due = started + (minRenderMs * i) / frameCount - performance.now(); due > 0 && !failure; due = started + (minRenderMs * i) / frameCount - performance.now()) {
          await new Promise<void>((r) => {
            const t = setTimeout(r, due);
            wake = () => (clearTimeout(t), r());
          });
        }
        if (failure) throw failure;
        const frame = ready.shift();
        if (!frame) throw new RenderError("render_failed", `the frames worker stopped after ${i} of ${frameCount} frames`);
        worker.postMessage({ type: "credit" });
        onProgress(i / frameCount);
        yield frame;
      }
      onProgress(1);
    } finally {
      signal.removeEventListener("abort", onAbort);
      worker.onmessage = worker.onerror = null;
    }
  }

  close() {
    this.worker?.terminate();
    this.worker = null;
  }
}
