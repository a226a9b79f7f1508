/**
 * Behaviour every RateLimiter must show; memory-limiter.test.ts and redis-limiter.test.ts both run it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { RateLimiter } from "./types.ts";

export function runLimiterContract(name: string, create: () => RateLimiter | Promise<RateLimiter>) {
  describe(`${name}: RateLimiter contract`, () => {
    const run = crypto.randomUUID().slice(0, 8);
    const key = (k: string) => `${run}:${k}`;
    const opened: RateLimiter[] = [];
    const limiter = async () => {
      const l = await create();
      opened.push(l);
      return l;
    };
    afterAll(async () => {
      await Promise.all(opened.map((l) => l.close()));
    });

    test("limit 10: ten allowed with remaining counting down, the eleventh refused", async () => {
      const l = await limiter();
      const remaining: number[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await l.consume(key("ten"), 1, 10, 60_000);
        expect(r.allowed).toBe(true);
        expect(r.limit).toBe(10);
        expect(r.resetMs).toBeGreaterThan(0);
        expect(r.resetMs).toBeLessThanOrEqual(60_000);
        remaining.push(r.remaining);
      }
      expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      const refused = await l.consume(key("ten"), 1, 10, 60_000);
      expect(refused).toMatchObject({ allowed: false, limit: 10, remaining: 0 });
      // one unit frees every 6 s
      expect(refused.resetMs).toBeGreaterThan(5_000);
      expect(refused.resetMs).toBeLessThanOrEqual(6_000);
    });

    test("cost counts several units; a cost above what remains is refused without using any", async () => {
      const l = await limiter();
      expect(await l.consume(key("cost"), 7, 10, 60_000)).toMatchObject({ allowed: true, remaining: 3 });
      expect(await l.consume(key("cost"), 4, 10, 60_000)).toMatchObject({ allowed: false, remaining: 3 });
      expect(await l.consume(key("cost"), 3, 10, 60_000)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await l.consume(key("cost-big"), 11, 10, 60_000)).toMatchObject({ allowed: false, remaining: 10 });
    });

    test("keys are independent and capacity returns with time", async () => {
      const l = await limiter();
      expect((await l.consume(key("a"), 2, 2, 200)).allowed).toBe(true);
      expect((await l.consume(key("a"), 1, 2, 200)).allowed).toBe(false);
      expect((await l.consume(key("b"), 1, 2, 200)).allowed).toBe(true);
      await Bun.sleep(220);
      expect(await l.consume(key("a"), 1, 2, 200)).toMatchObject({ allowed: true, remaining: 1 });
    });

    test("bad arguments throw instead of being treated as an outage", async () => {
      const l = await limiter();
      await expect(l.consume(key("bad"), 1, 0, 1000)).rejects.toThrow(RangeError);
      await expect(l.consume(key("bad"), -1, 1, 1000)).rejects.toThrow(RangeError);
      await expect(l.acquireSlot(key("bad"), 0, 1000)).rejects.toThrow(RangeError);
    });

    test("slots: max 3, the fourth is null, a release frees one", async () => {
      const l = await limiter();
      const tokens = await Promise.all([1, 2, 3].map(() => l.acquireSlot(key("slots"), 3, 60_000)));
      expect(tokens.every((t) => typeof t === "string")).toBe(true);
      expect(new Set(tokens).size).toBe(3);
      expect(await l.acquireSlot(key("slots"), 3, 60_000)).toBeNull();
      await l.releaseSlot(key("slots"), tokens[0]!);
      await l.releaseSlot(key("slots"), "not-a-token");
      const again = await l.acquireSlot(key("slots"), 3, 60_000);
      expect(again).toBeString();
      expect(await l.acquireSlot(key("slots"), 3, 60_000)).toBeNull();
    });

    test("slots expire after their TTL unless extended", async () => {
      // Both slots get 1 s; `kept` is extended at once (well inside its second, even on a box so
      // loaded that a round trip takes 100s of ms), `dropped` is not; after 1.3 s only `kept` holds.
      // (The earlier version extended after a 100 ms sleep against a 150 ms TTL, which a CPU-starved
      // CI machine overran.)
      const l = await limiter();
      const kept = await l.acquireSlot(key("ttl"), 2, 1_000);
      const dropped = await l.acquireSlot(key("ttl"), 2, 1_000);
      expect(dropped).toBeString();
      expect(await l.acquireSlot(key("ttl"), 2, 1_000)).toBeNull();
      expect(await l.extendSlot(key("ttl"), kept!, 60_000)).toBe(true);
      await Bun.sleep(1_300);
      expect(await l.extendSlot(key("ttl"), dropped!, 60_000)).toBe(false);
      expect(await l.extendSlot(key("ttl"), kept!, 60_000)).toBe(true);
      expect(await l.acquireSlot(key("ttl"), 2, 1_000)).toBeString();
      expect(await l.acquireSlot(key("ttl"), 2, 1_000)).toBeNull();
    });
  });
}
