/**
 * The context sequences of one model: a request decodes on a free one, else waits in a bounded
 * FIFO queue; past the bound it is refused at once (503 + Retry-After) instead of waiting for
 * minutes. A waiting request whose client goes away leaves the queue. A returned sequence is reset
 * (its KV cache cleared) before anyone gets it, off the next request's time to first token.
 */
import { PluginError } from "@reelay/plugin-sdk";

export interface Lease<S> {
  sequence: S;
  /** idempotent */
  release(): void;
}

interface Waiter<S> {
  resolve(lease: Lease<S>): void;
  reject(err: unknown): void;
}

/** weight of the newest hold time in the running average Retry-After is computed from */
const EWMA_WEIGHT = 0.2;

export class SequencePool<S> {
  private readonly free: S[];
  private readonly waiting: Waiter<S>[] = [];
  private readonly size: number;
  private avgHoldMs = 1_000;
  private closed = false;

  constructor(sequences: S[], private readonly maxQueue: number, private readonly reset: (sequence: S) => Promise<void>) {
    this.free = [...sequences];
    this.size = sequences.length;
  }

  get queued(): number {
    return this.waiting.length;
  }

  get busy(): number {
    return this.size - this.free.length;
  }

  acquire(signal: AbortSignal): Promise<Lease<S>> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.closed) return Promise.reject(new PluginError("overloaded", "the model is shutting down", { code: "model_unavailable", retryAfterSeconds: 1 }));
    const sequence = this.free.pop();
    if (sequence !== undefined) return Promise.resolve(this.lease(sequence));
    if (this.waiting.length >= this.maxQueue) {
      return Promise.reject(new PluginError("overloaded", `The model is at capacity: ${this.size} requests are generating and ${this.waiting.length} are queued. Retry after the Retry-After delay.`, {
        code: "model_overloaded",
        retryAfterSeconds: this.retryAfterSeconds(),
      }));
    }
    return new Promise<Lease<S>>((resolve, reject) => {
      const waiter: Waiter<S> = {
        resolve: (lease) => {
          signal.removeEventListener("abort", onAbort);
          resolve(lease);
        },
        reject: (err) => {
          signal.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** Refuse the waiting requests; later acquires fail too. */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(new PluginError("overloaded", "the model is shutting down", { code: "model_unavailable", retryAfterSeconds: 1 }));
  }

  private lease(sequence: S): Lease<S> {
    const started = performance.now();
    let released = false;
    return {
      sequence,
      release: () => {
        if (released) return;
        released = true;
        this.avgHoldMs += EWMA_WEIGHT * (performance.now() - started - this.avgHoldMs);
        const handOver = () => {
          const next = this.waiting.shift();
          if (next) next.resolve(this.lease(sequence));
          else this.free.push(sequence);
        };
        // a reset that fails (the context is being disposed) leaves nothing worth keeping
        this.reset(sequence).then(handOver, () => {});
      },
    };
  }

  /** seconds until about one queue's worth of requests has finished, 1 to 60 */
  private retryAfterSeconds(): number {
    const ms = this.avgHoldMs * (1 + this.waiting.length / this.size);
    return Math.min(60, Math.max(1, Math.ceil(ms / 1000)));
  }
}
