/**
 * A throwaway redis-server on a free port that a test may kill and restart (the shared Redis on
 * 6379 is never touched).
 */
import type { Subprocess } from "bun";
import { freePort } from "../../test/support/harness.ts";

export interface ThrowawayRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** redis-server on a free port, no persistence; stop/start it to simulate an outage. */
export async function startThrowawayRedis(): Promise<ThrowawayRedis> {
  const port = freePort();
  let proc: Subprocess | null = null;
  const start = async () => {
    proc = Bun.spawn(["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const s = Bun.connect({ hostname: "127.0.0.1", port, socket: { open: (sock) => { sock.end(); resolve(true); }, data() {}, error: () => resolve(false), connectError: () => resolve(false) } }).catch(() => resolve(false));
        void s;
      });
      if (up) return;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
      await Bun.sleep(25);
    }
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    async stop() {
      const p = proc as Subprocess | null;
      if (!p) return;
      p.kill("SIGKILL");
      await p.exited;
      proc = null;
    },
  };
}
