/**
 * One render slot: two long-lived workers, one decoding the image and drawing frames, one encoding
 * them, each on its own core; this thread only passes the (transferred, not copied) frame buffers
 * along. Kept alive between jobs, so their JIT-compiled code and the encoder's wasm stay warm
 * (a fresh pair took 4.6 s for the first 5 s clip at 480x832, a warm one 1.9 s; the same work one
 * step after the other in one thread took 2.1–3.2 s). A job that is aborted or fails tears the
 * pair down; the next job starts a new one.
 */
import type { VideoRequest } from "../../src/plugin-sdk/index.ts";
import { workerUrl } from "../../src/workers/worker-url.ts";

/** A render that failed inside a worker, with the worker's code (invalid_image | render_failed). */
export class RenderError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** frames drawn ahead of the encoder at most: 8 × 1.6 MB at 480x832 */
const FRAMES_IN_FLIGHT = 8;

export class RenderPipeline {
  private workers: { frames: Worker; encode: Worker } | null = null;
  private busy = false;

  constructor(private readonly fps: number) {}

  render(req: VideoRequest, opts: { quantizer?: number }, signal: AbortSignal, onProgress: (p: number) => void): Promise<Uint8Array> {
    if (this.busy) throw new Error("a render pipeline runs one job at a time");
    this.busy = true;
    const { frames, encode } = (this.workers ??= {
      frames: new Worker(workerUrl(import.meta.url, "./frames-worker.ts", "plugins/preview-video/frames-worker.ts")),
      encode: new Worker(workerUrl(import.meta.url, "../../src/media/encode-worker.ts", "src/media/encode-worker.ts")),
    });
    const frameCount = req.seconds * this.fps;
    return new Promise<Uint8Array>((resolve, reject) => {
      const finish = (err: unknown, mp4?: Uint8Array) => {
        signal.removeEventListener("abort", onAbort);
        frames.onmessage = encode.onmessage = frames.onerror = encode.onerror = null;
        this.busy = false;
        if (err) {
          this.close(); // a half-finished job leaves the workers in an unknown state
          reject(err);
        } else resolve(mp4!);
      };
      const onAbort = () => finish(signal.reason ?? new Error("aborted"));
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      let encoded = 0;
      frames.onmessage = (e: MessageEvent) => {
        const m = e.data as { type: string; frame?: ArrayBuffer; code?: string; message?: string };
        if (m.type === "frame") encode.postMessage({ type: "frame", frame: m.frame }, [m.frame!]);
        else if (m.type === "done") encode.postMessage({ type: "end" });
        else finish(new RenderError(m.code ?? "render_failed", m.message ?? "frame rendering failed"));
      };
      encode.onmessage = (e: MessageEvent) => {
        const m = e.data as { type: string; mp4?: ArrayBuffer; message?: string };
        if (m.type === "consumed") {
          encoded++;
          onProgress(encoded / frameCount);
          frames.postMessage({ type: "credit" });
        } else if (m.type === "mp4") finish(null, new Uint8Array(m.mp4!));
        else finish(new RenderError("render_failed", m.message ?? "encoding failed"));
      };
      frames.onerror = encode.onerror = (e: ErrorEvent) => finish(new RenderError("render_failed", e.message));
      encode.postMessage({ type: "start", width: req.width, height: req.height, fps: this.fps, quantizer: opts.quantizer });
      frames.postMessage({ type: "start", image: req.image.bytes, width: req.width, height: req.height, frameCount, prompt: req.prompt, seed: req.seed, credits: FRAMES_IN_FLIGHT });
    });
  }

  close() {
    this.workers?.frames.terminate();
    this.workers?.encode.terminate();
    this.workers = null;
  }
}
