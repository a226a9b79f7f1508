/**
 * Gathers items from concurrent callers into batches for one model, runs at most `parallel`
 * batches at once (one per inference worker), and hands each caller its own results in order.
 *
 * Why batches: a USE-lite forward pass has a fixed overhead (~30 ms at batch 1 on the wasm
 * backend), so batches carry more sentences per second (bench/embeddings-direct.ts); waiting a few
 * milliseconds for company pays off under load. Items that arrive while every runner is busy form
 * the next batch, which starts as soon as a runner is free.
 *
 * - Length buckets: the graph pads every sentence of a batch to the longest one for its attention
 *   layers (about a third of the FLOPs), so a batch holds items of one length bucket only, and its
 *   rows × longest item stay under `maxBatchTokens` (which also bounds the worker's WASM heap: it
 *   grows to the largest batch it ever ran and never shrinks).
 * - Fair: batches are filled round-robin across callers, so a 2,048-input request is processed
 *   batch by batch while single-sentence requests that arrive meanwhile go into the next batch
 *   instead of queueing behind it.
 * - Bounded: past `maxQueuedTokens` waiting, `submit` rejects with `overloaded()` at once (the
 *   host answers 503 + Retry-After) instead of letting latency grow without limit. A request alone
 *   in an empty queue is always taken, whatever its size.
 */

export interface MicroBatcherOptions {
  /** how long the first item of a batch waits for company, ms */
  windowMs: number;
  /** most items in one batch; a full batch starts without waiting for the window */
  maxBatchSize: number;
  /** most padded tokens in one batch: items × the longest item's size */
  maxBatchTokens: number;
  /** batches that may run at once (one per inference worker); default 1 */
  parallel?: number;
  /** most tokens waiting (not yet in a running batch); beyond, submit rejects with overloaded() */
  maxQueuedTokens: number;
  /** upper bounds of the length buckets, ascending; sizes above the last share the last bucket */
  buckets: number[];
  overloaded(queuedTokens: number): Error;
}

interface Caller<O> {
  results: O[];
  remaining: number;
  settled: boolean;
  /** items not yet in a batch, per bucket, in input order */
  pending: Array<Array<Pending<O>>>;
  waiting: number;
  resolve(results: O[]): void;
  reject(err: unknown): void;
}

interface Pending<O> {
  item: unknown;
  size: number;
  /** position in the caller's input */
  index: number;
  caller: Caller<O>;
}

export class MicroBatcher<I, O> {
  /** callers with items waiting, in arrival order; batches are filled round-robin from `next` */
  private callers: Array<Caller<O>> = [];
  private next = 0;
  private queuedItems = 0;
  private queuedTokens = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = 0;
  private closed = false;

  constructor(
    private readonly runBatch: (items: I[]) => Promise<O[]>,
    private readonly opts: MicroBatcherOptions,
  ) {}

  /** tokens waiting for a runner (for metrics and Retry-After estimates) */
  get queued(): number {
    return this.queuedTokens;
  }

  /** results in the order of `items`; `sizes[i]` is item i's length in tokens; rejects with the signal's reason if aborted first */
  submit(items: I[], sizes: number[], signal?: AbortSignal): Promise<O[]> {
    if (this.closed) return Promise.reject(new Error("embeddings model is closed"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (items.length === 0) return Promise.resolve([]);
    const tokens = sizes.reduce((a, b) => a + b, 0);
    if (this.queuedItems > 0 && this.queuedTokens + tokens > this.opts.maxQueuedTokens) return Promise.reject(this.opts.overloaded(this.queuedTokens));
    return new Promise<O[]>((resolve, reject) => {
      const onAbort = () => this.fail(caller, signal!.reason);
      const caller: Caller<O> = {
        results: new Array(items.length),
        remaining: items.length,
        settled: false,
        pending: this.opts.buckets.map(() => []),
        waiting: items.length,
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
      items.forEach((item, index) => caller.pending[this.bucketOf(sizes[index]!)]!.push({ item, size: sizes[index]!, index, caller }));
      this.callers.push(caller);
      this.queuedItems += items.length;
      this.queuedTokens += tokens;
      this.schedule();
    });
  }

  /** rejects everything still queued; a batch already running finishes and its callers get results */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const c of [...this.callers]) this.fail(c, new Error("embeddings model is closed"));
  }

  private bucketOf(size: number): number {
    const i = this.opts.buckets.findIndex((upper) => size <= upper);
    return i === -1 ? this.opts.buckets.length - 1 : i;
  }

  private schedule(): void {
    if (this.running >= (this.opts.parallel ?? 1) || this.queuedItems === 0) return;
    if (this.queuedItems >= this.opts.maxBatchSize) {
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

  /** One batch: the bucket of the next caller's first waiting item, filled round-robin across callers. */
  private take(): Array<Pending<O>> {
    const start = this.next % this.callers.length;
    const first = this.callers[start]!;
    const bucket = first.pending.findIndex((p) => p.length > 0);
    const batch: Array<Pending<O>> = [];
    let longest = 0;
    let lastServed = start;
    for (let progress = true; progress && batch.length < this.opts.maxBatchSize; ) {
      progress = false;
      for (let k = 0; k < this.callers.length && batch.length < this.opts.maxBatchSize; k++) {
        const i = (start + k) % this.callers.length;
        const queue = this.callers[i]!.pending[bucket]!;
        const p = queue[0];
        if (!p) continue;
        const wider = Math.max(longest, p.size);
        if (batch.length > 0 && wider * (batch.length + 1) > this.opts.maxBatchTokens) return this.taken(batch, lastServed);
        queue.shift();
        batch.push(p);
        longest = wider;
        lastServed = i;
        progress = true;
      }
    }
    return this.taken(batch, lastServed);
  }

  private taken(batch: Array<Pending<O>>, lastServed: number): Array<Pending<O>> {
    for (const p of batch) {
      p.caller.waiting--;
      this.queuedItems--;
      this.queuedTokens -= p.size;
    }
    // the next batch starts with the caller after the last one served here
    const after = this.callers[(lastServed + 1) % this.callers.length];
    this.callers = this.callers.filter((c) => c.waiting > 0);
    this.next = Math.max(0, after ? this.callers.indexOf(after) : 0);
    return batch;
  }

  private async runNext(): Promise<void> {
    if (this.running >= (this.opts.parallel ?? 1) || this.queuedItems === 0) return;
    this.running++;
    const batch = this.take();
    // another runner is free: let what is left queue up for it (after its own window)
    this.schedule();
    try {
      const outputs = await this.runBatch(batch.map((p) => p.item as I));
      batch.forEach((p, i) => this.deliver(p, outputs[i]!));
    } catch (err) {
      for (const p of batch) this.fail(p.caller, err);
    } finally {
      this.running--;
    }
    // Whatever queued during the pass already waited at least that long: start it on the next
    // macrotask (so I/O callbacks run between two batches) without another window.
    if (this.queuedItems > 0) {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        void this.runNext();
      }, 0);
    }
  }

  private deliver(p: Pending<O>, output: O): void {
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
    for (const queue of caller.pending) {
      for (const p of queue) {
        this.queuedItems--;
        this.queuedTokens -= p.size;
      }
      queue.length = 0;
    }
    caller.waiting = 0;
    const at = this.callers.indexOf(caller);
    if (at !== -1) {
      this.callers.splice(at, 1);
      if (at < this.next) this.next--;
    }
    caller.reject(err);
  }
}
