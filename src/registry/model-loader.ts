/**
 * One model's heavy start-up (`ModelInstance.load`): run at most once at a time, in the background
 * (preload) or on the model's first request, with its state for /readyz. Requests for the model
 * wait for the load, bounded by `waitMs`; past that they get 503 + Retry-After instead of an
 * unbounded wait. A failed load is retried by the next request that comes after `retryAfterMs`,
 * so a model whose files were briefly unreadable recovers without a restart. A model that has
 * had no call for `idleUnloadMs` is unloaded (`ModelInstance.unload`, never with a call in
 * flight) and loads again on its next request: the local embeddings model's two workers hold
 * ~200 MB that an idle server gives back (measured: 262 → 57 MB RSS after terminating them).
 */
import { ApiError } from "../errors.ts";
import type { HostInstance } from "../plugin-host/types.ts";

/** unloaded: nothing loaded yet (lazy) · loading · ready · failed: the last load threw */
export type ModelState = "unloaded" | "loading" | "ready" | "failed";

export interface ModelStatus {
  id: string;
  state: ModelState;
  /** why the last load failed */
  error?: string;
  /** how long the last successful load took */
  load_ms?: number;
}

export interface LoaderLog {
  info(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export interface LoaderOptions {
  waitMs: number;
  retryAfterMs: number;
  /** unload after this long without a call; 0: never */
  idleUnloadMs: number;
  log: LoaderLog;
}

export class ModelLoader {
  private state: ModelState;
  private loading: Promise<void> | null = null;
  private unloading: Promise<void> = Promise.resolve();
  private error: string | undefined;
  private failedAt = 0;
  private loadMs: number | undefined;
  private inFlight = 0;
  private lastUsed = 0;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly controller = new AbortController();
  private readonly load: ((opts: { signal: AbortSignal }) => Promise<void>) | undefined;
  private readonly unload: (() => Promise<void> | void) | undefined;

  constructor(
    readonly id: string,
    instance: Pick<HostInstance, "load" | "unload">,
    private readonly opts: LoaderOptions,
  ) {
    this.load = instance.load?.bind(instance);
    this.unload = instance.unload?.bind(instance);
    this.state = this.load ? "unloaded" : "ready";
  }

  status(): ModelStatus {
    return { id: this.id, state: this.state, ...(this.error && this.state === "failed" ? { error: this.error } : {}), ...(this.loadMs !== undefined ? { load_ms: this.loadMs } : {}) };
  }

  /** Begin loading unless loaded or loading (the background preload and the first request). */
  start(): Promise<void> {
    if (this.state === "ready") return Promise.resolve();
    if (this.loading) return this.loading;
    const started = performance.now();
    this.state = "loading";
    this.loading = this.unloading.then(() => this.load!({ signal: this.controller.signal })).then(
      () => {
        this.state = "ready";
        this.loadMs = Math.round(performance.now() - started);
        this.loading = null;
        this.lastUsed = Date.now();
        this.armIdleTimer(this.opts.idleUnloadMs);
        this.opts.log.info({ model: this.id, ms: this.loadMs }, "model ready");
      },
      (err: unknown) => {
        this.state = "failed";
        this.error = (err as Error)?.message ?? String(err);
        this.failedAt = Date.now();
        this.loading = null;
        this.opts.log.error({ model: this.id, err }, "model failed to load");
        throw err;
      },
    );
    return this.loading;
  }

  /** Resolves once the model can serve; throws a 503 ApiError when it cannot within `waitMs`. */
  async ready(signal?: AbortSignal): Promise<void> {
    if (this.state === "ready") return;
    if (this.state === "failed" && Date.now() - this.failedAt < this.opts.retryAfterMs) throw this.unavailable();
    const loading = this.start();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const outcome = await Promise.race([
      loading.then(() => "ready" as const, () => "failed" as const),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), this.opts.waitMs))),
      new Promise<"aborted">((resolve) => {
        onAbort = () => resolve("aborted");
        signal?.addEventListener("abort", onAbort, { once: true });
      }),
    ]).finally(() => {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    });
    if (outcome === "ready") return;
    if (outcome === "aborted") throw signal!.reason;
    if (outcome === "failed") throw this.unavailable();
    throw new ApiError(503, "service_unavailable", `The model '${this.id}' is still loading; retry shortly.`, {
      code: "model_loading",
      headers: { "retry-after": String(Math.max(1, Math.ceil(this.opts.waitMs / 1000))) },
    });
  }

  /** One capability call: waits until the model is ready and counts as in flight until it settles. */
  async use<T>(signal: AbortSignal | undefined, call: () => Promise<T>): Promise<T> {
    await this.ready(signal);
    this.inFlight++;
    try {
      return await call();
    } finally {
      this.done();
    }
  }

  /** Like `use`, for a call whose result is consumed later (a stream): in flight until it is iterated to its end. */
  async useStream<E>(signal: AbortSignal | undefined, call: () => Promise<AsyncIterable<E>>): Promise<AsyncIterable<E>> {
    await this.ready(signal);
    this.inFlight++;
    let events: AsyncIterable<E>;
    try {
      events = await call();
    } catch (e) {
      this.done();
      throw e;
    }
    const done = () => this.done();
    return (async function* () {
      try {
        yield* events;
      } finally {
        done();
      }
    })();
  }

  /** stops a load in progress and the idle timer (shutdown) */
  close(): void {
    clearTimeout(this.idleTimer);
    this.controller.abort(new Error("shutting down"));
  }

  private done(): void {
    this.inFlight--;
    this.lastUsed = Date.now();
  }

  private armIdleTimer(ms: number): void {
    if (!this.unload || this.opts.idleUnloadMs <= 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.unloadIfIdle(), ms);
    (this.idleTimer as { unref?: () => void }).unref?.();
  }

  private unloadIfIdle(): void {
    if (this.state !== "ready") return;
    const idleFor = Date.now() - this.lastUsed;
    if (this.inFlight > 0 || idleFor < this.opts.idleUnloadMs) return this.armIdleTimer(Math.max(1_000, this.opts.idleUnloadMs - idleFor));
    // synchronous up to here: a call arriving from now on sees "unloaded" and loads again after the unload
    this.state = "unloaded";
    this.loadMs = undefined;
    this.opts.log.info({ model: this.id, idleMs: idleFor }, "model unloaded after being idle");
    this.unloading = Promise.resolve()
      .then(() => this.unload!())
      .catch((err) => this.opts.log.error({ model: this.id, err }, "model unload failed"));
  }

  private unavailable(): ApiError {
    const retryIn = Math.max(1, Math.ceil((this.failedAt + this.opts.retryAfterMs - Date.now()) / 1000));
    return new ApiError(503, "service_unavailable", `The model '${this.id}' could not be loaded on this server (${this.error}); it is tried again in ${retryIn} s.`, {
      code: "model_unavailable",
      headers: { "retry-after": String(retryIn) },
    });
  }
}

/**
 * The instance the host calls: every capability call first waits for the model to be loaded and
 * counts as in flight (so an idle unload never pulls a model from under a call); no route, the
 * video scheduler included, can reach a model that is not ready. Other members (limits,
 * countTokens) are read through from the plugin's own objects.
 */
export function waitingInstance(instance: HostInstance, loader: ModelLoader): HostInstance {
  if (!instance.load) return instance;
  const signalOf = (args: unknown[]) => (args[args.length - 1] as { signal?: AbortSignal } | undefined)?.signal;
  const guard = <T extends object>(cap: T | undefined, methods: Array<keyof T>, streams: Array<keyof T> = []): T | undefined => {
    if (!cap) return undefined;
    const wrapped = Object.create(cap) as T;
    for (const name of [...methods, ...streams]) {
      const fn = cap[name] as unknown as ((...args: any[]) => Promise<any>) | undefined;
      if (typeof fn !== "function") continue;
      (wrapped as any)[name] = streams.includes(name)
        ? (...args: any[]) => loader.useStream(signalOf(args), () => fn.apply(cap, args))
        : (...args: any[]) => loader.use(signalOf(args), () => fn.apply(cap, args));
    }
    return wrapped;
  };
  return {
    chat: guard(instance.chat, ["complete"], ["stream"]),
    messages: guard(instance.messages, ["create", "countTokens"], ["stream"]),
    embeddings: guard(instance.embeddings, ["embed"]),
    video: guard(instance.video, ["submit", "poll", "cancel", "webhook"]),
    load: instance.load.bind(instance),
    unload: instance.unload?.bind(instance),
    close: instance.close?.bind(instance),
    upstreams: instance.upstreams,
  };
}
