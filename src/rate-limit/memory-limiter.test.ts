import { expect, test } from "bun:test";
import { runLimiterContract } from "./limiter-contract.ts";
import { createMemoryLimiter } from "./memory-limiter.ts";

runLimiterContract("memory", () => createMemoryLimiter());

test("idle keys and expired slots are swept, so memory does not grow with every key ever seen", async () => {
  let now = 0;
  const limiter = createMemoryLimiter({ now: () => now, sweepIntervalMs: 5 });
  for (let i = 0; i < 1000; i++) await limiter.consume(`k${i}`, 1, 10, 1000);
  await limiter.acquireSlot("job", 1, 50);
  await Bun.sleep(20);
  expect(limiter.trackedKeys()).toBe(1001);
  now = 1000; // each key's TAT (consume time + 100 ms) and the slot's expiry have passed
  await Bun.sleep(20);
  expect(limiter.trackedKeys()).toBe(0);
  expect(limiter.health()).toEqual({ backend: "memory", degraded: false });
  await limiter.close();
});
