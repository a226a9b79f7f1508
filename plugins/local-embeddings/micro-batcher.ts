/**
 * Gathers items from concurrent callers into batches for one model, runs one batch at a time, and
 * hands each caller its own results in order.
 *
 * Why: a USE-lite forward pass has a fixed overhead (~30 ms at batch 1 on the wasm backend), so
 * batches carry more sentences per second (bench/embeddings-direct.ts, 2 loaded cores: 33/s at
 * batch 1, ~60-70/s at batch 32-64); waiting a few milliseconds for company pays off under load.
 * At most `parallel` batches run at once (one per inference worker); items that arrive meanwhile
 * form the next batch, which starts as soon as a runner is free.
 */

export interface MicroBatcherOptions {
  /** how long the first item of a batch waits for company, ms */
  windowMs: number;
  /** most items in one batch; a full batch starts without waiting for the window */
  maxBatchSize: number;
  /** batches that may run at once (one per inference worker); default 1 */
  parallel?: number;
}

interface Caller<O> {
  results: O[];
  remaining: number;
  settled: boolean;
  resolve(results: O[]): void;
  reject(err: unknown): void;
}

interface Pending<I, O> {
  item: I;
  caller: Caller<O>;
  /** position in the caller's input */
  index: number;
}

export class MicroBatcher<I, O> {
  private queue: Array<Pending<I, O>> = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = 0;
  private closed = false;

  constructor(
    private readonly runBatch: (items: I[]) => Promise<O[]>,
    private readonly opts: MicroBatcherOptions,
  ) {}

  /** results in the order of `items`; rejects with the signal's reason if aborted first */
  submit(items: I[], signal?: AbortSignal): Promise<O[]> {
    if (this.closed) return Promise.reject(new Error("embeddings model is closed"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (items.length === 0) return Promise.resolve([]);
    return new Promise<O[]>((resolve, reject) => {
      const onAbort = () => this.fail(caller, signal!.reason);
      const caller: Caller<O> = {
        results: new Array(items.length),
        remaining: items.length,
        settled: false,
        resolve: (r) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(r);
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      items.forEach((item, index) => this.queue.push({ item, caller, index }));
      this.schedule();
    });
  }

  /** rejects everything still queued; a batch already running finishes and its callers get results */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const p of this.queue) this.fail(p.caller, new Error("embeddings model is closed"));
  }

  private schedule(): void {
    if (this.running >= (this.opts.parallel ?? 1) || this.queue.length === 0) return;
    if (this.queue.length >= this.opts.maxBatchSize) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.runNext();
    } else {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        void this.runNext();
      }, this.opts.windowMs);
    }
  }

  private async runNext(): Promise<void> {
    if (this.running >= (this.opts.parallel ?? 1) || this.queue.length === 0) return;
    this.running++;
    const batch = this.queue.splice(0, this.opts.maxBatchSize);
    // another runner is free: let what is left queue up for it (after its own window)
    this.schedule();
    try {
      const outputs = await this.runBatch(batch.map((p) => p.item));
      batch.forEach((p, i) => this.deliver(p, outputs[i]!));
    } catch (err) {
      for (const p of batch) this.fail(p.caller, err);
    } finally {
      this.running--;
    }
    // Whatever queued during the pass already waited at least that long: start it on the next
    // macrotask (so I/O callbacks run between two batches) without another window.
    if (this.queue.length > 0) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        void this.runNext();
      }, 0);
    }
  }

  private deliver(p: Pending<I, O>, output: O): void {
    const caller = p.caller;
    if (caller.settled) return;
    caller.results[p.index] = output;
    if (--caller.remaining === 0) {
      caller.settled = true;
      caller.resolve(caller.results);
    }
  }

  /** settles a caller with an error and drops its items that have not started */
  private fail(caller: Caller<O>, err: unknown): void {
    if (caller.settled) return;
    caller.settled = true;
    this.queue = this.queue.filter((p) => p.caller !== caller);
    caller.reject(err);
  }
}
