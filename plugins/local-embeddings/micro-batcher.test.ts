import { describe, expect, test } from "bun:test";
import { MicroBatcher, type MicroBatcherOptions } from "./micro-batcher.ts";

/** a runner that records each batch and answers "x" → "x!" after `ms` */
function recorder(ms = 5) {
  const batches: string[][] = [];
  const run = async (items: string[]) => {
    batches.push(items);
    await Bun.sleep(ms);
    return items.map((x) => x + "!");
  };
  return { batches, run };
}
const options = (over: Partial<MicroBatcherOptions> = {}): MicroBatcherOptions => ({
  windowMs: 2, maxBatchSize: 4, maxBatchTokens: 1_000, maxQueuedTokens: 1_000, parallel: 1, buckets: [16, 32, 64, 128],
  overloaded: (queued) => new Error(`overloaded at ${queued}`), ...over,
});

describe("MicroBatcher", () => {
  test("each caller gets its own results in its own order", async () => {
    const r = recorder();
    const b = new MicroBatcher(r.run, options());
    const [x, y] = await Promise.all([b.submit(["a", "b", "c"], [1, 1, 1]), b.submit(["d", "e"], [1, 1])]);
    expect(x).toEqual(["a!", "b!", "c!"]);
    expect(y).toEqual(["d!", "e!"]);
    expect(r.batches.flat().sort()).toEqual(["a", "b", "c", "d", "e"]);
  });

  test("fair: a single sentence arriving behind a 20-item request goes into the next batch, not after all of it", async () => {
    const r = recorder(10);
    const b = new MicroBatcher(r.run, options());
    const big = b.submit(Array.from({ length: 20 }, (_, i) => `big${i}`), Array(20).fill(5));
    await Bun.sleep(3); // the first batch is running
    const small = b.submit(["small"], [5]);
    await small;
    const at = r.batches.findIndex((batch) => batch.includes("small"));
    expect(at).toBe(1);
    expect((await big).length).toBe(20);
    expect(r.batches.length).toBe(6); // 21 items in batches of at most 4
  });

  test("a batch holds one length bucket and at most maxBatchTokens padded tokens", async () => {
    const r = recorder();
    const b = new MicroBatcher(r.run, options({ maxBatchSize: 8, maxBatchTokens: 200, windowMs: 5 }));
    await Promise.all([
      b.submit(["s1", "s2", "s3"], [5, 6, 7]),
      b.submit(["l1", "l2", "l3", "l4"], [100, 110, 120, 128]),
      b.submit(["m1"], [20]),
    ]);
    for (const batch of r.batches) {
      const kinds = new Set(batch.map((x) => x[0]));
      expect(kinds.size).toBe(1);
      if (batch[0]!.startsWith("l")) expect(batch.length).toBe(1); // 2 × 110 > 200
    }
    expect(r.batches.map((x) => x.length).reduce((a, c) => a + c, 0)).toBe(8);
  });

  test("past maxQueuedTokens a new request is refused at once; one alone in an empty queue is always taken", async () => {
    const r = recorder(30);
    const b = new MicroBatcher(r.run, options({ maxQueuedTokens: 50, maxBatchSize: 1 }));
    const huge = b.submit(["h1", "h2", "h3"], [40, 40, 40]); // 120 > 50, but the queue was empty
    await Bun.sleep(5);
    await expect(b.submit(["late"], [10])).rejects.toThrow(/overloaded at 80/);
    expect(await huge).toEqual(["h1!", "h2!", "h3!"]);
    expect(await b.submit(["after"], [10])).toEqual(["after!"]);
  });

  test("an aborted caller is rejected with its reason and its waiting items never run", async () => {
    const r = recorder(20);
    const b = new MicroBatcher(r.run, options({ maxBatchSize: 1 }));
    const first = b.submit(["keep"], [1]);
    const c = new AbortController();
    const dropped = b.submit(["drop1", "drop2"], [1, 1], c.signal);
    await Bun.sleep(5);
    c.abort(new Error("client went away"));
    await expect(dropped).rejects.toThrow("client went away");
    expect(await first).toEqual(["keep!"]);
    expect(await b.submit(["next"], [1])).toEqual(["next!"]);
    expect(r.batches.flat()).not.toContain("drop2");
  });

  test("parallel runners: two batches at once, never more", async () => {
    let running = 0, most = 0;
    const b = new MicroBatcher(async (items: string[]) => {
      most = Math.max(most, ++running);
      await Bun.sleep(15);
      running--;
      return items;
    }, options({ parallel: 2, maxBatchSize: 2 }));
    await Promise.all(Array.from({ length: 10 }, (_, i) => b.submit([`x${i}`], [1])));
    expect(most).toBe(2);
  });
});
