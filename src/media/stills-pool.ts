/**
 * Thumbnails of videos made elsewhere (a GPU backend's MP4: the job's source image cropped and
 * scaled to the video's size, video-stills.ts) on worker threads, never on the thread that serves
 * requests: decoding the source and one 480x832 JPEG in jpeg-js cost ~25-60 ms of CPU here, and
 * 1,000 jobs completing within seconds made every completion wait a minute behind them
 * (bench/video-backends.ts). At most `size` thumbnails are made at once (one per worker); the rest
 * wait their turn in order. Workers start on first use and are closed after IDLE_MS unused. The
 * same workers check that a large submitted image decodes (checkImage, image-input.ts).
 */
import { workerUrl } from "../plugin-sdk/index.ts";
import { ImageDecodeError, type ImageDecodeErrorCode } from "./decode-image.ts";

const IDLE_MS = 60_000;

interface Task {
  id: number;
  source: Uint8Array;
  width: number;
  height: number;
  /** a decode check (checkImage) with this pixel limit, not a thumbnail */
  check?: number;
  resolve: (result: Uint8Array | null) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  task: Task | null;
  idleTimer: ReturnType<typeof setTimeout> | null;
}

/** one worker per core beyond the one serving requests, at least one */
export const defaultStillsWorkers = () => Math.max(1, Math.min(4, (navigator.hardwareConcurrency ?? 2) - 1));

export class StillsPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Task[] = [];
  private nextId = 0;
  private closed = false;

  constructor(private readonly size = defaultStillsWorkers()) {}

  /** The JPEG thumbnail of `source` at width x height; null when the source is no image reelay decodes. */
  thumbnailFromImage(source: Uint8Array, width: number, height: number): Promise<Uint8Array | null> {
    if (this.closed) return Promise.reject(new Error("the stills pool is shut down"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ id: ++this.nextId, source, width, height, resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Decode `source` on a worker and throw away its pixels: resolves when it decodes within
   * `maxPixels`, rejects with the ImageDecodeError decodeImage would have thrown when it does not.
   * For a submitted image too large to decode on the thread that serves requests.
   */
  checkImage(source: Uint8Array, maxPixels: number): Promise<void> {
    if (this.closed) return Promise.reject(new Error("the stills pool is shut down"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ id: ++this.nextId, source, width: 0, height: 0, check: maxPixels, resolve: () => resolve(), reject });
      this.dispatch();
    });
  }

  close(): void {
    this.closed = true;
    for (const s of this.slots) {
      if (s.idleTimer) clearTimeout(s.idleTimer);
      s.task?.reject(new Error("the stills pool is shut down"));
      s.worker.terminate();
    }
    this.slots.length = 0;
    for (const t of this.waiting.splice(0)) t.reject(new Error("the stills pool is shut down"));
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      const slot = this.slots.find((s) => !s.task) ?? (this.slots.length < this.size ? this.spawn() : null);
      if (!slot) return;
      const task = this.waiting.shift()!;
      slot.task = task;
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.idleTimer = null;
      slot.worker.ref?.();
      // a copy to transfer: the caller keeps its bytes
      const source = task.source.slice();
      slot.worker.postMessage({ id: task.id, source: source.buffer, width: task.width, height: task.height, check: task.check }, [source.buffer]);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(workerUrl(import.meta.url, "./stills-worker.ts", "src/media/stills-worker.ts"));
    const slot: Slot = { worker, task: null, idleTimer: null };
    worker.onmessage = (e: MessageEvent) => {
      const m = e.data as { id: number; jpeg?: ArrayBuffer | null; refused?: { code: ImageDecodeErrorCode; message: string } | null; error?: string };
      const task = slot.task;
      if (!task || task.id !== m.id) return;
      slot.task = null;
      if (m.error !== undefined) task.reject(new Error(`${task.check === undefined ? "making the thumbnail" : "decoding the image"} failed: ${m.error}`));
      else if (m.refused) task.reject(new ImageDecodeError(m.refused.code, m.refused.message));
      else task.resolve(m.jpeg ? new Uint8Array(m.jpeg) : null);
      this.idle(slot);
      this.dispatch();
    };
    worker.onerror = (e: ErrorEvent) => {
      // a worker that crashed is replaced by the next dispatch
      this.remove(slot);
      slot.task?.reject(new Error(`the stills worker failed: ${e.message}`));
      slot.task = null;
      this.dispatch();
    };
    this.slots.push(slot);
    return slot;
  }

  private idle(slot: Slot): void {
    if (slot.task || this.closed) return;
    slot.worker.unref?.(); // an idle worker must not keep the process alive
    slot.idleTimer = setTimeout(() => this.remove(slot), IDLE_MS);
    (slot.idleTimer as { unref?: () => void }).unref?.();
  }

  private remove(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i !== -1) this.slots.splice(i, 1);
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    slot.worker.terminate();
  }
}
