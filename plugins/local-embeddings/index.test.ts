import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checkOptions, PluginError, type EmbeddingsCapability, type ModelInstance, type PluginContext } from "@reelay/plugin-sdk";
import { testCall } from "../../test/support/plugin-context.ts";
import plugin from "./index.ts";

function testContext(options: Record<string, unknown> = {}): PluginContext {
  const quiet = () => {};
  return {
    modelId: "use-lite",
    options,
    model: { pricing: { inputPerMillion: 20_000 } },
    logger: { debug: quiet, info: quiet, warn: quiet, error: quiet },
    env: () => undefined,
    fetch: () => Promise.reject(new Error("no network in local-embeddings tests")),
    safeFetchBytes: () => Promise.reject(new Error("no network in local-embeddings tests")),
    host: {
      decodeImage: () => Promise.reject(new Error("unused")),
      encodeMp4: () => Promise.reject(new Error("unused")),
      countTokens: (text: string) => text.length,
    },
  } as unknown as PluginContext; // fetch lacks typeof fetch's extra members (preconnect)
}

const signal = () => new AbortController().signal;
const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);

let instance: ModelInstance;
let emb: EmbeddingsCapability;
const embedOne = async (text: string) => (await emb.embed({ body: { model: "use-lite", input: [] }, inputs: [text] }, testCall())).data[0]!.embedding as Float32Array;

beforeAll(async () => {
  instance = await plugin.create(testContext({ batchWindowMs: 5, maxBatchSize: 64 }));
  await instance.load!(testCall());
  emb = instance.embeddings!;
});
afterAll(() => instance?.close?.());

describe("local-embeddings", () => {
  test("declares use-lite and rejects bad options", () => {
    expect(plugin.models?.map((m) => m.id)).toEqual(["use-lite"]);
    expect(checkOptions(plugin.options!, {}).problems).toEqual([]);
    expect(checkOptions(plugin.options!, { backend: "gpu", maxBatchSize: 0, batchWindowMs: "3" }).problems.map((p) => p.option)).toEqual(["backend", "batchWindowMs", "maxBatchSize"]);
    expect(emb.supportsDimensions).toBe(false);
  });

  test("the same text gives an identical 512-d unit vector", async () => {
    const a = await embedOne("Embeddings are deterministic.");
    const b = await embedOne("Embeddings are deterministic.");
    expect(a).toBeInstanceOf(Float32Array);
    expect(a.length).toBe(512);
    expect(Array.from(a)).toEqual(Array.from(b));
    for (const text of ["a", "Hello world", "x".repeat(2000), "日本語のテキスト 😀"]) {
      expect(Math.abs(Math.sqrt(cosine(await embedOne(text), await embedOne(text))) - 1)).toBeLessThan(1e-4);
    }
  });

  const triples: Array<[string, string, string]> = [
    ["How old are you?", "What is your age?", "The weather is sunny today."],
    ["I love my dog.", "My puppy means everything to me.", "The stock market fell sharply."],
    ["Where is the train station?", "How do I get to the railway station?", "She baked a chocolate cake."],
    ["The movie was fantastic.", "I really enjoyed that film.", "Please close the window."],
    ["How do I reset my password?", "I forgot my password, how can I change it?", "Bananas are rich in potassium."],
    ["The car would not start this morning.", "My automobile broke down today.", "He plays the violin beautifully."],
    ["It is raining heavily outside.", "There is a downpour out there.", "The report is due on Friday."],
  ];
  test.each(triples)("%p is closer to its paraphrase than to an unrelated sentence", async (anchor, paraphrase, unrelated) => {
    const { data } = await emb.embed({ body: { model: "use-lite", input: [] }, inputs: [anchor, paraphrase, unrelated] }, testCall());
    const [a, p, u] = data.map((d) => d.embedding as Float32Array);
    expect(cosine(a!, p!)).toBeGreaterThan(cosine(a!, u!));
  });

  test("50 concurrent single-sentence calls give the vectors of one batched call", async () => {
    const sentences = Array.from({ length: 50 }, (_, i) => `Sentence number ${i} talks about ${["cats", "ships", "rain", "code", "tea"][i % 5]}.`);
    const batched = await emb.embed({ body: { model: "use-lite", input: [] }, inputs: sentences }, testCall());
    const single = await Promise.all(sentences.map((s) => embedOne(s)));
    expect(batched.data.map((d) => d.index)).toEqual(sentences.map((_, i) => i));
    single.forEach((v, i) => {
      const w = batched.data[i]!.embedding as Float32Array;
      for (let k = 0; k < 512; k++) expect(Math.abs(v[k]! - w[k]!)).toBeLessThan(1e-5);
    });
  });

  test("an aborted caller is rejected and the others still get their vectors", async () => {
    const aborted = new AbortController();
    const first = emb.embed({ body: { model: "use-lite", input: [] }, inputs: ["Kept sentence one."] }, testCall());
    const dropped = emb.embed({ body: { model: "use-lite", input: [] }, inputs: ["Dropped sentence."] }, testCall({ signal: aborted.signal }));
    const second = emb.embed({ body: { model: "use-lite", input: [] }, inputs: ["Kept sentence two."] }, testCall());
    aborted.abort(new Error("client went away"));
    await expect(dropped).rejects.toThrow("client went away");
    expect((await first).data[0]!.embedding).toEqual(await embedOne("Kept sentence one."));
    expect((await second).data).toHaveLength(1);
  });

  test("token counts are deterministic, positive, and what usage reports", async () => {
    const inputs = ["How old are you?", "The quick brown fox jumps over the lazy dog.", " ", "ünïcödé 😀"];
    const counts = await emb.countTokens!(inputs);
    expect(await emb.countTokens!(inputs)).toEqual(counts);
    for (const c of counts) expect(c).toBeGreaterThan(0);
    expect(counts[0]).toBe(5); // ids 728 446 31 19 54, as the official USE tokenizer gives
    const { usage } = await emb.embed({ body: { model: "use-lite", input: [] }, inputs }, testCall());
    const sum = counts.reduce((a, b) => a + b, 0);
    expect(usage).toEqual({ prompt_tokens: sum, total_tokens: sum });
  });

  test("an empty string is an invalid request naming input", async () => {
    expect(await emb.countTokens!([""])).toEqual([0]);
    const err = await emb.embed({ body: { model: "use-lite", input: [] }, inputs: ["fine", ""] }, testCall()).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err.kind).toBe("invalid_request");
    expect(err.param).toBe("input");
  });
});
