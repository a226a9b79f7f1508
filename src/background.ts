/** A periodic task that never overlaps itself and stops cleanly (sweepers, schedulers). */
export interface BackgroundTask {
  start(): void;
  stop(): Promise<void>;
}

export function every(intervalMs: number, run: () => Promise<unknown>, onError: (e: unknown) => void): BackgroundTask {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    running = run()
      .catch(onError)
      .finally(() => {
        running = null;
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  return {
    start() {
      stopped = false;
      timer = setTimeout(tick, intervalMs);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
