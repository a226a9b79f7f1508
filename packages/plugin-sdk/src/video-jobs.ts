/**
 * Video jobs over a model's deployments (SDK 1.2): a job is submitted to one deployment — the
 * router's pick, and on a failure safe to repeat another one (routedCall) — then polled and
 * cancelled there; its handle `<deployment>/<upstream id>` says where, so after a restart the host
 * polls the same job on the same deployment. A job holds a slot of its deployment's
 * `maxConcurrent` from submit until this instance sees it end, or `slotTtlMs` at most (after a
 * restart another instance may poll it to its end). Calls about a job on its own deployment
 * (`on`) teach that deployment's circuit breaker, so a dead deployment stops getting new jobs.
 *
 *   const jobs = new VideoJobRouter(deployments, { breaker: o.routing.breaker, budget: o.routing });
 *   submit: const handle = await jobs.submit(call, async (d) => (await d.target.create(req, call)).id);
 *   poll:   const { deployment, id } = jobs.locate(handle);
 *           const s = await jobs.on(deployment, call.signal, () => deployment.target.status(id, call));
 *           if (final(s)) jobs.finished(handle);
 *   create: return { video, upstreams: () => jobs.status(), close: () => jobs.close() };
 */
import type { CallOptions } from "./capabilities.ts";
import { isPluginError } from "./errors.ts";
import { DEFAULT_RETRY, outcomeOf, routedCall, type Lease, type RetryBudget } from "./routed-call.ts";
import { DEFAULT_BREAKER, UpstreamRouter, type BreakerPolicy, type Deployment, type DeploymentSpec, type DeploymentStatus } from "./router.ts";

export interface VideoJobRouterOptions {
  /** each deployment's circuit breaker (default DEFAULT_BREAKER) */
  breaker?: BreakerPolicy;
  /** attempts per submit over distinct deployments (default DEFAULT_RETRY) */
  budget?: RetryBudget;
  /** a job gives its deployment's slot back after this long at the latest (default 15 min: an image-to-video job takes 30 s to 5 min) */
  slotTtlMs?: number;
}

export class VideoJobRouter<T> {
  readonly router: UpstreamRouter<T>;
  private readonly budget: RetryBudget;
  private readonly slotTtlMs: number;
  private readonly running = new Map<string, { lease: Lease<T>; timer: ReturnType<typeof setTimeout> }>();

  constructor(deployments: ReadonlyArray<DeploymentSpec<T>>, opts: VideoJobRouterOptions = {}) {
    for (const d of deployments) if (!d.name || d.name.includes("/")) throw new Error(`deployment name ${JSON.stringify(d.name)} must be non-empty and without "/" (it starts each job's handle)`);
    this.router = new UpstreamRouter(deployments, opts.breaker ?? DEFAULT_BREAKER);
    this.budget = opts.budget ?? DEFAULT_RETRY;
    this.slotTtlMs = opts.slotTtlMs ?? 15 * 60_000;
  }

  /** Submit on a deployment; `attempt` returns the upstream's job id, the result is the job's handle. */
  async submit(call: Pick<CallOptions, "signal" | "routed"> & { logger?: CallOptions["logger"] }, attempt: (deployment: Deployment<T>) => Promise<string>): Promise<string> {
    const { value: id, lease } = await routedCall(this.router, call, (l) => attempt(l.deployment), { budget: this.budget, holdOnSuccess: true });
    const handle = `${lease.deployment.name}/${id}`;
    const timer = setTimeout(() => this.finished(handle), this.slotTtlMs);
    (timer as { unref?: () => void }).unref?.();
    this.running.set(handle, { lease, timer });
    return handle;
  }

  /**
   * The deployment and upstream id of a handle. A handle whose prefix names no deployment (a
   * deployment renamed or removed, a handle from elsewhere) goes to the first deployment whole, where
   * it is usually unknown: poll it as `lost` and the host submits the job again. With a single
   * deployment, any prefix is that deployment's (its default name is its host, which may change).
   */
  locate(handle: string): { deployment: Deployment<T>; id: string } {
    const cut = handle.indexOf("/");
    const list = this.router.deployments;
    if (cut > 0) {
      const named = list.find((d) => d.name === handle.slice(0, cut));
      if (named) return { deployment: named, id: handle.slice(cut + 1) };
      if (list.length === 1) return { deployment: list[0]!, id: handle.slice(cut + 1) };
    }
    return { deployment: list[0]!, id: handle };
  }

  /** A call about an existing job on its own deployment: its failures (unreachable, 5xx) count against that deployment. */
  async on<R>(deployment: Deployment<T>, signal: AbortSignal, fn: () => Promise<R>): Promise<R> {
    const started = performance.now();
    try {
      const r = await fn();
      this.router.observe(deployment, { ok: true, ms: performance.now() - started });
      return r;
    } catch (err) {
      if (!signal.aborted && isPluginError(err)) this.router.observe(deployment, outcomeOf(err, performance.now() - started));
      throw err;
    }
  }

  /** This instance saw the job end (or cancelled it): its deployment slot is free. */
  finished(handle: string): void {
    const r = this.running.get(handle);
    if (!r) return;
    clearTimeout(r.timer);
    r.lease.end();
    this.running.delete(handle);
  }

  status(): DeploymentStatus[] {
    return this.router.status();
  }

  close(): void {
    for (const h of [...this.running.keys()]) this.finished(h);
  }
}
