/**
 * Wake-ups plugins ask for through `ctx.video.wake(handle)`: "the job with this handle changed, poll
 * it now". Plugins are created at boot, before the scheduler exists, so the plugin host hands them
 * this relay and the scheduler subscribes to it once it starts (scheduler/poll-pacer.ts decides
 * which job that is, here or on another instance). A wake-up before that, or after it stopped, is
 * dropped: nothing is polling then, and the job's next poll sees the change anyway.
 */
export type WakeListener = (model: string, handle: string) => void;

export class VideoWakeups {
  private listener: WakeListener | null = null;

  wake(model: string, handle: string): void {
    if (typeof handle !== "string" || handle.length === 0) return;
    try {
      this.listener?.(model, handle);
    } catch {
      // a wake-up is a hint: the job's own poll interval still applies
    }
  }

  /** One subscriber (the instance's scheduler); returns the unsubscribe. */
  subscribe(listener: WakeListener): () => void {
    this.listener = listener;
    return () => {
      if (this.listener === listener) this.listener = null;
    };
  }
}
