/**
 * ctx.host.encodeMp4 for every plugin: H.264 encoding on worker threads (src/media/encode-worker.ts),
 * never on the thread that serves requests (a 5 s clip at 480x832 is ~2 s of encoder CPU). Frames
 * are pulled from the plugin's iterable only while fewer than FRAMES_IN_FLIGHT wait at the encoder,
 * so a lazy generator keeps memory flat. Each frame is copied into a buffer the worker gave back
 * after encoding an earlier one (spare frame buffers): a 1.6 MB allocation per frame on this thread
 * made the garbage collector run, on a large heap for tens of ms, several times per clip. The worker
 * also keeps the first frame and one per second (downscaled) and returns the video's thumbnail and spritesheet as JPEGs beside the MP4; they
 * travel on the returned bytes (media/video-stills.ts). A worker is kept warm between jobs (its wasm compiled, its
 * heap grown: a warm pair rendered a 5 s clip in 1.9 s where a fresh one took 4.6 s) and closed
 * after IDLE_MS unused.
 */
import { attachStills, type StillJpegs } from "../media/video-stills.ts";
import { workerUrl } from "../plugin-sdk/index.ts";

const FRAMES_IN_FLIGHT = 4;
const IDLE_MS = 120_000;
const MAX_IDLE_WORKERS = 4;
/** spare frame buffers kept per frame size (what two encodes have in flight), and in all */
const MAX_SPARE_FRAMES = 2 * FRAMES_IN_FLIGHT;
const MAX_SPARE_BYTES = 64 * 1024 * 1024;

export interface EncodeOptions {
  width: number;
  height: number;
  fps: number;
  quantizer?: number;
  signal?: AbortSignal;
}

export class Mp4EncoderPool {
  private readonly idle: Array<{ worker: Worker; timer: ReturnType<typeof setTimeout> }> = [];
  private readonly all = new Set<Worker>();
  /** frame buffers given back by the workers, by byte length, for the next frames' copies */
  private readonly spares = new Map<number, ArrayBuffer[]>();
  private spareBytes = 0;
  /** frame buffers this pool has allocated (the rest were spares): for tests and the curious */
  allocatedFrameBuffers = 0;
  private closed = false;

  async encode(frames: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts: EncodeOptions): Promise<Uint8Array> {
    if (this.closed) throw new Error("the MP4 encoder is shut down");
    opts.signal?.throwIfAborted();
    const worker = this.take();
    const it = Symbol.asyncIterator in frames ? frames[Symbol.asyncIterator]() : (frames as Iterable<Uint8Array>)[Symbol.iterator]();
    const frameBytes = opts.width * opts.height * 4;
    let ok = false;
    try {
      let stills: StillJpegs | null = null;
      const mp4 = await new Promise<Uint8Array>((resolve, reject) => {
        let inFlight = 0;
        let pulling = false;
        let ended = false;
        let count = 0;
        const fail = (err: unknown) => {
          ended = true;
          reject(err);
        };
        const pump = async () => {
          if (pulling || ended) return;
          pulling = true;
          try {
            while (!ended && inFlight < FRAMES_IN_FLIGHT) {
              opts.signal?.throwIfAborted();
              const r = await it.next();
              if (r.done) {
                ended = true;
                worker.postMessage({ type: "end" });
                break;
              }
              const frame = r.value;
              if (!(frame instanceof Uint8Array) || frame.byteLength !== frameBytes) throw new Error(`frame ${count} has ${frame?.byteLength} bytes; ${opts.width}x${opts.height} RGBA needs ${frameBytes}`);
              // a copy: the plugin may reuse its buffer for the next frame, and a transfer would detach it
              const copy = this.takeSpare(frameBytes) ?? (this.allocatedFrameBuffers++, new ArrayBuffer(frameBytes));
              new Uint8Array(copy).set(frame);
              worker.postMessage({ type: "frame", frame: copy }, [copy]);
              inFlight++;
              count++;
            }
          } catch (err) {
            fail(err);
          } finally {
            pulling = false;
          }
        };
        worker.onmessage = (e: MessageEvent) => {
          const m = e.data as { type: string; frame?: ArrayBuffer; mp4?: ArrayBuffer; thumbnail?: ArrayBuffer; spritesheet?: ArrayBuffer; message?: string };
          if (m.type === "consumed") {
            if (m.frame) this.giveBack(m.frame);
            inFlight--;
            void pump();
          } else if (m.type === "mp4") {
            if (m.thumbnail) stills = { thumbnail: new Uint8Array(m.thumbnail), ...(m.spritesheet ? { spritesheet: new Uint8Array(m.spritesheet) } : {}) };
            resolve(new Uint8Array(m.mp4!));
          }
          else fail(new Error(m.message ?? "encoding failed"));
        };
        worker.onerror = (e: ErrorEvent) => fail(new Error(e.message));
        worker.postMessage({ type: "start", width: opts.width, height: opts.height, fps: opts.fps, quantizer: opts.quantizer });
        void pump();
      });
      ok = true;
      return attachStills(mp4, stills);
    } finally {
      worker.onmessage = worker.onerror = null;
      if (ok) this.park(worker);
      else this.drop(worker); // a half-finished encode leaves the worker in an unknown state
      if (!ok) await (it as AsyncIterator<Uint8Array>).return?.(undefined)?.catch?.(() => {});
    }
  }

  private takeSpare(bytes: number): ArrayBuffer | undefined {
    const spare = this.spares.get(bytes)?.pop();
    if (spare) this.spareBytes -= bytes;
    return spare;
  }

  private giveBack(frame: ArrayBuffer): void {
    const list = this.spares.get(frame.byteLength) ?? [];
    if (this.closed || list.length >= MAX_SPARE_FRAMES || this.spareBytes + frame.byteLength > MAX_SPARE_BYTES) return;
    list.push(frame);
    this.spares.set(frame.byteLength, list);
    this.spareBytes += frame.byteLength;
  }

  private dropSpares(): void {
    this.spares.clear();
    this.spareBytes = 0;
  }

  close(): void {
    this.closed = true;
    this.dropSpares();
    for (const w of this.all) w.terminate();
    for (const e of this.idle) clearTimeout(e.timer);
    this.idle.length = 0;
    this.all.clear();
  }

  private take(): Worker {
    const entry = this.idle.pop();
    if (entry) {
      clearTimeout(entry.timer);
      entry.worker.ref?.();
      return entry.worker;
    }
    const worker = new Worker(workerUrl(import.meta.url, "../media/encode-worker.ts", "src/media/encode-worker.ts"));
    this.all.add(worker);
    return worker;
  }

  private park(worker: Worker): void {
    if (this.closed || this.idle.length >= MAX_IDLE_WORKERS) return this.drop(worker);
    worker.unref?.(); // an idle encoder must not keep the process alive
    const entry = { worker, timer: setTimeout(() => this.retire(entry), IDLE_MS) };
    (entry.timer as { unref?: () => void }).unref?.();
    this.idle.push(entry);
  }

  private retire(entry: { worker: Worker; timer: ReturnType<typeof setTimeout> }): void {
    const i = this.idle.indexOf(entry);
    if (i !== -1) this.idle.splice(i, 1);
    this.drop(entry.worker);
    if (this.all.size === 0) this.dropSpares(); // no encoder left: nothing needs them warm
  }

  private drop(worker: Worker): void {
    this.all.delete(worker);
    worker.terminate();
  }
}
