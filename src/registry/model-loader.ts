/**
 * One model's heavy start-up (`ModelInstance.load`): run at most once at a time, in the background
 * (preload) or on the model's first request, with its state for /readyz. Requests for the model
 * wait for the load, bounded by `waitMs`; past that they get 503 + Retry-After instead of an
 * unbounded wait. A failed load is retried by the next request that comes after `retryAfterMs`,
 * so a model whose files were briefly unreadable recovers without a restart.
 */
import { ApiError } from "../errors.ts";
import type { ModelInstance } from "../plugin-sdk/index.ts";

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

export class ModelLoader {
  private state: ModelState;
  private loading: Promise<void> | null = null;
  private error: string | undefined;
  private failedAt = 0;
  private loadMs: number | undefined;
  private readonly controller = new AbortController();

  constructor(
    readonly id: string,
    private readonly load: ((opts: { signal: AbortSignal }) => Promise<void>) | undefined,
    private readonly opts: { waitMs: number; retryAfterMs: number; log: LoaderLog },
  ) {
    this.state = load ? "unloaded" : "ready";
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
    this.loading = this.load!({ signal: this.controller.signal }).then(
      () => {
        this.state = "ready";
        this.loadMs = Math.round(performance.now() - started);
        this.loading = null;
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

  /** stops a load in progress (shutdown) */
  close(): void {
    this.controller.abort(new Error("shutting down"));
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
 * The instance the host calls: every capability call first waits for the model to be loaded, so
 * no route, the video scheduler included, can reach a model that is not ready. Other members
 * (limits, countTokens) are read through from the plugin's own objects.
 */
export function waitingInstance(instance: ModelInstance, loader: ModelLoader): ModelInstance {
  if (!instance.load) return instance;
  const guard = <T extends object>(cap: T | undefined, methods: Array<keyof T>): T | undefined => {
    if (!cap) return undefined;
    const wrapped = Object.create(cap) as T;
    for (const name of methods) {
      const fn = cap[name] as unknown as ((...args: any[]) => Promise<unknown>) | undefined;
      if (typeof fn !== "function") continue;
      (wrapped as any)[name] = async (...args: any[]) => {
        await loader.ready((args[args.length - 1] as { signal?: AbortSignal } | undefined)?.signal);
        return fn.apply(cap, args);
      };
    }
    return wrapped;
  };
  return {
    chat: guard(instance.chat, ["complete", "stream"]),
    embeddings: guard(instance.embeddings, ["embed"]),
    video: guard(instance.video, ["submit", "poll", "cancel"]),
    load: instance.load.bind(instance),
    close: instance.close?.bind(instance),
  };
}
