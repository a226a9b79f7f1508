/**
 * The wait between two polls of a running job: its plugin's pollIntervalMs, unless the job is
 * woken. A plugin whose backend pushes (ComfyUI's websocket, a Replicate webhook) asks for a job to
 * be polled now (`ctx.video.wake(handle)`), so a finished job is seen within milliseconds instead
 * of up to a poll interval later, while the poll interval stays long (cheap) as the fallback.
 *
 * A wake-up that arrives while the job is being polled ends its next wait at once (the poll in
 * flight may have read the state from before the push). One for a handle not known here yet is
 * kept for EARLY_TTL_MS: a webhook can beat the handle's save, or another instance's NOTIFY can
 * arrive before this one claimed the job; at most MAX_EARLY are kept (oldest dropped), since most
 * such wake-ups are for jobs another instance runs.
 */

const EARLY_TTL_MS = 30_000;
const MAX_EARLY = 10_000;

interface Waiting {
  key: string;
  woken: boolean;
  wake?: () => void;
}

const keyOf = (model: string, handle: string) => `${model}\n${handle}`;

export class PollPacer {
  private readonly byKey = new Map<string, Waiting>();
  private readonly byJob = new Map<string, Waiting>();
  private readonly early = new Map<string, number>();

  /** The job polls `handle` from now on (a new handle replaces the job's previous one). */
  track(jobId: string, model: string, handle: string): void {
    this.forget(jobId);
    const key = keyOf(model, handle);
    const expires = this.early.get(key);
    if (expires !== undefined) this.early.delete(key);
    const w: Waiting = { key, woken: expires !== undefined && expires > Date.now() };
    this.byKey.set(key, w);
    this.byJob.set(jobId, w);
  }

  /** The job ended here, or gave its lease back. */
  forget(jobId: string): void {
    const w = this.byJob.get(jobId);
    if (!w) return;
    this.byJob.delete(jobId);
    if (this.byKey.get(w.key) === w) this.byKey.delete(w.key);
    w.wake?.();
  }

  /** Wait `ms` before the job's next poll, less if it is woken; rejects when `signal` aborts. */
  pause(jobId: string, ms: number, signal: AbortSignal): Promise<void> {
    const w = this.byJob.get(jobId);
    if (w?.woken) {
      w.woken = false;
      return signal.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        if (w) w.wake = undefined;
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        if (w) w.wake = undefined;
        reject(signal.reason);
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", onAbort, { once: true });
      if (w) w.wake = done;
    });
  }

  /** Poll the job with this handle now; false when no job here polls it (it is remembered a while). */
  wake(model: string, handle: string): boolean {
    const key = keyOf(model, handle);
    const w = this.byKey.get(key);
    if (w) {
      if (w.wake) w.wake();
      else w.woken = true;
      return true;
    }
    this.early.delete(key);
    this.early.set(key, Date.now() + EARLY_TTL_MS);
    if (this.early.size > MAX_EARLY) this.early.delete(this.early.keys().next().value!);
    return false;
  }

  /** jobs tracked here (tests, benchmarks) */
  size(): number {
    return this.byJob.size;
  }
}
