/**
 * Inference on worker threads: each worker holds its own copy of the model, and a batch goes to
 * whichever worker is idle, so on a 2-core machine two batches run at once and the HTTP event loop
 * never waits for a forward pass. (In process, one batch at a time: ~88 sentences/s at batch 32 on
 * this machine, bench/embeddings-direct.ts.) One copy shared by two threads would need the
 * threaded WASM build (setThreadsCount), measured by bench/embeddings-threaded-wasm.ts: as shipped
 * it does not load (TF.js turns it off under Node-compatible runtimes, tfjs#3830; Bun's
 * worker_threads refuse its blob: pthread scripts); forced on with shims of TF.js internals it
 * runs 1 thread on 2 cores (TF.js uses logical cores / 2), and with 2 threads one batch of 32 ran
 * at 68 sentences/s against 144 for two independent copies (medians of 5 in one run; 124 in a
 * quieter run), single sentences slower still. Sharing would save memory only: ~100 MB per extra
 * worker (bench/memory.ts).
 */
import { workerUrl } from "@reelay/plugin-sdk";
import type { BackendChoice } from "./tf-backend.ts";

interface Slot {
  worker: Worker;
  /** resolves once the worker has loaded the model */
  ready: Promise<unknown>;
  busy: boolean;
}

type LoadOptions = { modelDir?: string; backend?: BackendChoice; warmUp?: number[][] };

const WORKER_URL = () => workerUrl(import.meta.url, "./inference-worker.ts", "plugins/local-embeddings/inference-worker.ts");

function spawn(opts: LoadOptions): { worker: Worker; ready: Promise<{ backend: string }> } {
  const worker = new Worker(WORKER_URL());
  return { worker, ready: request<{ backend: string }>(worker, { type: "load", ...opts }) };
}

export class InferencePool {
  private constructor(private readonly slots: Slot[], readonly backend: string, private readonly opts: LoadOptions) {}

  static async start(size: number, opts: LoadOptions): Promise<InferencePool> {
    const slots: Slot[] = Array.from({ length: size }, () => ({ ...spawn(opts), busy: false }));
    try {
      const backends = (await Promise.all(slots.map((s) => s.ready))) as Array<{ backend: string }>;
      return new InferencePool(slots, backends[0]!.backend, opts);
    } catch (err) {
      for (const s of slots) s.worker.terminate();
      throw err;
    }
  }

  get size() {
    return this.slots.length;
  }

  /** runs on an idle worker; the caller (the micro-batcher) never has more batches out than workers */
  async embed(batch: number[][]): Promise<Float32Array[]> {
    const slot = this.slots.find((s) => !s.busy);
    if (!slot) throw new Error("no idle inference worker");
    slot.busy = true;
    try {
      await slot.ready;
      return (await request<{ vectors: Float32Array[] }>(slot.worker, { type: "embed", id: 0, batch })).vectors;
    } catch (err) {
      // a worker that failed may be gone or in an unknown state: replace it before its next batch
      slot.worker.terminate();
      Object.assign(slot, spawn(this.opts));
      slot.ready.catch(() => {});
      throw err;
    } finally {
      slot.busy = false;
    }
  }

  close() {
    for (const s of this.slots) s.worker.terminate();
  }
}

/** one message out, the next message back (a worker serves one request at a time) */
function request<T>(worker: Worker, message: object): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent) => {
      const m = e.data as { type: string; message?: string };
      if (m.type === "error") reject(new Error(m.message));
      else resolve(m as T);
    };
    worker.onerror = (e: ErrorEvent) => reject(new Error(e.message));
    worker.postMessage(message);
  });
}
