/**
 * A redis-server of the test's own, on a free port, that the test may stop and start again to
 * simulate an outage (the shared Redis on 6379 is never touched). "Own" is checked, not assumed:
 * `INFO server` must report the process id we spawned, so another Redis that happens to hold the
 * port (the old fixed 6390 failed 3 runs out of 3 that way) is never mistaken for ours.
 */
import type { Subprocess } from "bun";
import Redis from "ioredis";
import { freePort } from "./harness.ts";

export interface ThrowawayRedis {
  url: string;
  port: number;
  /** pid of the redis-server currently running (null while stopped) */
  pid(): number | null;
  stop(): Promise<void>;
  /** start again on the same port (the port must still be free: checked like the first start) */
  start(): Promise<void>;
}

/** process_id from `INFO server` of whatever answers on `port`, or null if nothing answers. */
export async function redisProcessId(port: number): Promise<number | null> {
  const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 500 });
  probe.on("error", () => {});
  try {
    await probe.connect();
    const info = await probe.info("server");
    const m = /^process_id:(\d+)/m.exec(info);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  } finally {
    probe.disconnect();
  }
}

async function spawnOn(port: number): Promise<Subprocess> {
  const proc = Bun.spawn(["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answering = await redisProcessId(port);
    if (answering === proc.pid) return proc;
    if (proc.exitCode !== null || (answering !== null && answering !== proc.pid)) {
      proc.kill("SIGKILL");
      await proc.exited;
      throw new Error(`port ${port} is held by another process${answering ? ` (redis pid ${answering})` : ""}; our redis-server (pid ${proc.pid}) could not listen`);
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`redis-server on port ${port} did not start within 10 s`);
    }
    await Bun.sleep(25);
  }
}

/** redis-server on a free port, no persistence; a port lost to a race is replaced (3 tries). */
export async function startThrowawayRedis(): Promise<ThrowawayRedis> {
  let port = 0;
  let proc: Subprocess | null = null;
  for (let attempt = 1; !proc; attempt++) {
    port = freePort();
    try {
      proc = await spawnOn(port);
    } catch (e) {
      if (attempt >= 3) throw e;
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pid: () => proc?.pid ?? null,
    async start() {
      proc = await spawnOn(port);
    },
    async stop() {
      const p = proc;
      if (!p) return;
      p.kill("SIGKILL");
      await p.exited;
      proc = null;
    },
  };
}
