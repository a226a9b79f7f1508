import { afterAll, expect, test } from "bun:test";
import { redisProcessId, startThrowawayRedis, type ThrowawayRedis } from "./throwaway-redis.ts";

const started: ThrowawayRedis[] = [];
afterAll(() => Promise.all(started.map((r) => r.stop())));

test("the Redis that answers is the one we spawned, across a stop and a restart", async () => {
  const r = await startThrowawayRedis();
  started.push(r);
  expect(r.port).not.toBe(6379);
  expect(await redisProcessId(r.port)).toBe(r.pid()!);
  const first = r.pid();
  await r.stop();
  expect(await redisProcessId(r.port)).toBeNull();
  await r.start();
  expect(r.pid()).not.toBe(first);
  expect(await redisProcessId(r.port)).toBe(r.pid()!);
});

test("a port held by another Redis is reported, never used as ours", async () => {
  const ours = await startThrowawayRedis();
  started.push(ours);
  await ours.stop();
  // another server takes our port while ours is down: restarting must refuse, naming the port
  const foreign = Bun.spawn(["redis-server", "--port", String(ours.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
  try {
    for (let i = 0; i < 200 && (await redisProcessId(ours.port)) !== foreign.pid; i++) await Bun.sleep(25);
    await expect(ours.start()).rejects.toThrow(`port ${ours.port} is held by another process (redis pid ${foreign.pid})`);
  } finally {
    foreign.kill("SIGKILL");
    await foreign.exited;
  }
});
