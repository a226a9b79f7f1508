import { describe, expect, test } from "bun:test";
import { ApiError } from "../errors.ts";
import { ModelLoader, waitingInstance, type LoaderOptions } from "./model-loader.ts";

const quiet = { info: () => {}, error: () => {} };
const opts = (over: Partial<LoaderOptions> = {}): LoaderOptions => ({ waitMs: 5_000, retryAfterMs: 1_000, idleUnloadMs: 0, log: quiet, ...over });
const deferred = () => {
  let resolve!: () => void, reject!: (e: Error) => void;
  const promise = new Promise<void>((a, b) => ((resolve = a), (reject = b)));
  return { promise, resolve, reject };
};

describe("ModelLoader", () => {
  test("concurrent waiters share one load; a model without load() is ready at once", async () => {
    let calls = 0;
    const d = deferred();
    const loader = new ModelLoader("m", { load: () => (calls++, d.promise) }, opts());
    expect(loader.status().state).toBe("unloaded");
    const waits = [loader.ready(), loader.ready(), loader.ready()];
    expect(loader.status().state).toBe("loading");
    d.resolve();
    await Promise.all(waits);
    expect(calls).toBe(1);
    expect(loader.status()).toMatchObject({ state: "ready", load_ms: expect.any(Number) });
    expect(new ModelLoader("n", {}, opts()).status().state).toBe("ready");
  });

  test("after a failure, requests inside retryAfterMs are refused without a new load; the next one after it loads again", async () => {
    let calls = 0;
    const loader = new ModelLoader("m", {
      load: async () => {
        if (++calls === 1) throw new Error("disk hiccup");
      },
    }, opts({ retryAfterMs: 150 }));
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
    const loader = new ModelLoader("m", { load: () => d.promise }, opts());
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
    const loader = new ModelLoader("m", instance, opts());
    const guarded = waitingInstance(instance as any, loader);
    expect(guarded.embeddings!.maxInputs).toBe(7);
    expect(guarded.embeddings!.countTokens!(["abc"])).toEqual([3]);
    const call = guarded.embeddings!.embed({ body: { model: "m", input: [] }, inputs: [] }, { signal: new AbortController().signal, requestId: "r" });
    await Bun.sleep(20);
    expect(order).toEqual([]);
    d.resolve();
    await call;
    expect(order).toEqual(["loaded", "embed"]);
  });

  test("idle unload: not while a call is in flight; after the idle time it unloads, and the next call loads again", async () => {
    const events: string[] = [];
    const instance = {
      embeddings: {
        supportsDimensions: false,
        embed: async (_req: unknown, o: { signal: AbortSignal; ms?: number }) => {
          await Bun.sleep((o as { ms?: number }).ms ?? 0);
          return { data: [], usage: { prompt_tokens: 0, total_tokens: 0 } };
        },
      },
      load: async () => void events.push("load"),
      unload: async () => void events.push("unload"),
    };
    const loader = new ModelLoader("m", instance, opts({ idleUnloadMs: 100 }));
    const guarded = waitingInstance(instance as any, loader);
    const call = (ms = 0) => guarded.embeddings!.embed({ body: { model: "m", input: [] }, inputs: [] }, { signal: new AbortController().signal, requestId: "r", ms } as any);
    await call(250); // in flight past the idle time: no unload under it
    expect(events).toEqual(["load"]);
    await Bun.sleep(60);
    expect(loader.status().state).toBe("ready"); // 60 ms idle < 100 ms
    await Bun.sleep(1_100); // the re-armed timer fires 1 s later at the earliest
    expect(events).toEqual(["load", "unload"]);
    expect(loader.status().state).toBe("unloaded");
    await call();
    expect(events).toEqual(["load", "unload", "load"]);
    expect(loader.status().state).toBe("ready");
    loader.close();
  });

  test("a stream counts as in flight until it is consumed", async () => {
    const events: string[] = [];
    const instance = {
      chat: {
        complete: async () => ({ completion: {} }),
        stream: async () => (async function* () {
          yield { data: "a" };
          await Bun.sleep(300);
          yield { data: "[DONE]" };
        })(),
      },
      load: async () => void events.push("load"),
      unload: () => void events.push("unload"),
    };
    const loader = new ModelLoader("m", instance, opts({ idleUnloadMs: 100 }));
    const guarded = waitingInstance(instance as any, loader);
    const seen: string[] = [];
    for await (const e of await guarded.chat!.stream({ model: "m", messages: [] }, { signal: new AbortController().signal, requestId: "r" })) seen.push(e.data);
    expect(seen).toEqual(["a", "[DONE]"]);
    expect(events).toEqual(["load"]); // 300 ms of streaming > 100 ms idle time, but it was in flight
    loader.close();
  });
});
