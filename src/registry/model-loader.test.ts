import { describe, expect, test } from "bun:test";
import { ApiError } from "../errors.ts";
import { ModelLoader, waitingInstance } from "./model-loader.ts";

const quiet = { info: () => {}, error: () => {} };
const deferred = () => {
  let resolve!: () => void, reject!: (e: Error) => void;
  const promise = new Promise<void>((a, b) => ((resolve = a), (reject = b)));
  return { promise, resolve, reject };
};

describe("ModelLoader", () => {
  test("concurrent waiters share one load; a model without load() is ready at once", async () => {
    let calls = 0;
    const d = deferred();
    const loader = new ModelLoader("m", () => (calls++, d.promise), { waitMs: 5_000, retryAfterMs: 1_000, log: quiet });
    expect(loader.status().state).toBe("unloaded");
    const waits = [loader.ready(), loader.ready(), loader.ready()];
    expect(loader.status().state).toBe("loading");
    d.resolve();
    await Promise.all(waits);
    expect(calls).toBe(1);
    expect(loader.status()).toMatchObject({ state: "ready", load_ms: expect.any(Number) });
    expect(new ModelLoader("n", undefined, { waitMs: 1, retryAfterMs: 1, log: quiet }).status().state).toBe("ready");
  });

  test("after a failure, requests inside retryAfterMs are refused without a new load; the next one after it loads again", async () => {
    let calls = 0;
    const loader = new ModelLoader("m", async () => {
      if (++calls === 1) throw new Error("disk hiccup");
    }, { waitMs: 5_000, retryAfterMs: 150, log: quiet });
    const first = await loader.ready().catch((e) => e);
    expect(first).toBeInstanceOf(ApiError);
    expect(first.code).toBe("model_unavailable");
    expect(loader.status()).toMatchObject({ state: "failed", error: "disk hiccup" });
    expect(((await loader.ready().catch((e) => e)) as ApiError).code).toBe("model_unavailable");
    expect(calls).toBe(1);
    await Bun.sleep(160);
    await loader.ready();
    expect(calls).toBe(2);
    expect(loader.status().state).toBe("ready");
  });

  test("a caller that goes away stops waiting with its own reason; the load carries on", async () => {
    const d = deferred();
    const loader = new ModelLoader("m", () => d.promise, { waitMs: 5_000, retryAfterMs: 1_000, log: quiet });
    const gone = new AbortController();
    const waiting = loader.ready(gone.signal).catch((e) => e);
    gone.abort(new Error("client closed"));
    expect(((await waiting) as Error).message).toBe("client closed");
    d.resolve();
    await loader.ready();
    expect(loader.status().state).toBe("ready");
  });

  test("waitingInstance: capability calls wait for the load, other members read through", async () => {
    const d = deferred();
    const order: string[] = [];
    const instance = {
      embeddings: {
        supportsDimensions: false,
        maxInputs: 7,
        countTokens: (xs: string[]) => xs.map((x) => x.length),
        embed: async () => (order.push("embed"), { data: [], usage: { prompt_tokens: 0, total_tokens: 0 } }),
      },
      load: () => d.promise.then(() => void order.push("loaded")),
    };
    const loader = new ModelLoader("m", instance.load, { waitMs: 5_000, retryAfterMs: 1_000, log: quiet });
    const guarded = waitingInstance(instance, loader);
    expect(guarded.embeddings!.maxInputs).toBe(7);
    expect(guarded.embeddings!.countTokens!(["abc"])).toEqual([3]);
    const call = guarded.embeddings!.embed({ body: {}, inputs: [] }, { signal: new AbortController().signal });
    await Bun.sleep(20);
    expect(order).toEqual([]);
    d.resolve();
    await call;
    expect(order).toEqual(["loaded", "embed"]);
  });
});
