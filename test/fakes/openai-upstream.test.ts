import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createParser } from "eventsource-parser";
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import o200k_base from "js-tiktoken/ranks/o200k_base";
import OpenAI from "openai";
import { REPLY_WORDS, fakeEmbedding, replyText, startFakeOpenAI } from "./openai-upstream.ts";

const fake = await startFakeOpenAI({ models: ["fake-model", "other"] });
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const messages = [{ role: "user", content: "Say something." }];

async function sse(res: Response): Promise<string[]> {
  const out: string[] = [];
  const parser = createParser({ onEvent: (e) => out.push(e.data) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body!) parser.feed(decoder.decode(chunk, { stream: true }));
  return out;
}

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(fake.url + path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

describe("fake OpenAI upstream", () => {
  test("each reply word is exactly one token in cl100k_base and o200k_base, alone and joined", () => {
    for (const ranks of [cl100k_base, o200k_base]) {
      const enc = new Tiktoken(ranks);
      for (const w of REPLY_WORDS) expect(enc.encode(w).length).toBe(1);
      for (const n of [1, 7, 16, 40]) expect(enc.encode(replyText(n)).length).toBe(n);
    }
  });

  test("JSON completion: N = min(max_tokens, configured), deterministic usage", async () => {
    const res = await post("/chat/completions", { model: "fake-model", messages, max_tokens: 5 });
    const body = (await res.json()) as any;
    expect(body.choices[0].message.content).toBe(replyText(5));
    expect(body.choices[0].finish_reason).toBe("length");
    // 3 + (3 + "user" 1 + "Say something." 3) = 10
    expect(body.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(fake.requests[0]!.body).toEqual({ model: "fake-model", messages, max_tokens: 5 });
    expect(fake.requests[0]!.completed).toBe(true);
  });

  test("works with the official OpenAI SDK, streamed with a usage chunk", async () => {
    const client = new OpenAI({ baseURL: fake.url, apiKey: "sk-test", maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: "fake-model", messages: messages as any, stream: true, stream_options: { include_usage: true }, max_tokens: 100 });
    let text = "";
    let usage: any;
    for await (const c of stream) { text += c.choices[0]?.delta?.content ?? ""; if (c.usage) usage = c.usage; }
    expect(text).toBe(replyText(16));
    expect(usage.completion_tokens).toBe(16);
    expect(fake.requests[0]!.headers.authorization).toBe("Bearer sk-test");
  });

  test("stream: one token per chunk, finish chunk, usage chunk, [DONE]", async () => {
    const events = await sse(await post("/chat/completions", { model: "fake-model", messages, stream: true, max_tokens: 3, stream_options: { include_usage: true } }));
    expect(events.length).toBe(3 + 1 + 1 + 1);
    expect(events.at(-1)).toBe("[DONE]");
    const json = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(json.slice(0, 3).map((c) => c.choices[0].delta.content)).toEqual([" one", " two", " three"]);
    expect(json[0].usage).toBeNull();
    expect(json[3].choices[0].finish_reason).toBe("length");
    expect(json[4]).toMatchObject({ choices: [], usage: { completion_tokens: 3 } });
  });

  test("stream: continuous usage like vLLM, or none when omitUsage", async () => {
    const events = await sse(await post("/chat/completions", { model: "fake-model", messages, stream: true, max_tokens: 3, stream_options: { include_usage: true, continuous_usage_stats: true } }));
    expect(JSON.parse(events[1]!).usage.completion_tokens).toBe(2);
    fake.behave({ omitUsage: true });
    const bare = await sse(await post("/chat/completions", { model: "fake-model", messages, stream: true, max_tokens: 3, stream_options: { include_usage: true } }));
    expect(bare.length).toBe(5);
    expect(bare.some((e) => e.includes("usage"))).toBe(false);
  });

  test("errors: status with OpenAI body, per model and per header", async () => {
    fake.behave({ status: 429, errorMessage: "slow down" }, { model: "other" });
    const a = await post("/chat/completions", { model: "other", messages });
    expect(a.status).toBe(429);
    expect(((await a.json()) as any).error.message).toBe("slow down");
    expect((await post("/chat/completions", { model: "fake-model", messages })).status).toBe(200);
    const b = await post("/chat/completions", { model: "fake-model", messages }, { "x-fake-behaviour": JSON.stringify({ status: 503 }) });
    expect(b.status).toBe(503);
    expect(((await b.json()) as any).error.type).toBe("server_error");
  });

  test("stream faults: garbage line, truncation, drop", async () => {
    fake.behave({ garbageAfterChunks: 1 });
    expect((await sse(await post("/chat/completions", { model: "m", messages, stream: true, max_tokens: 2 })))[1]).toBe("this is not json");
    fake.behave({ truncateAfterChunks: 2 });
    const t = await sse(await post("/chat/completions", { model: "m", messages, stream: true }));
    expect(t.length).toBe(2);
    fake.behave({ dropAfterChunks: 1 });
    const res = await post("/chat/completions", { model: "m", messages, stream: true });
    const err = await sse(res).catch((e) => e);
    expect(err.code).toBe("ECONNRESET");
  });

  test("records the client abort promptly", async () => {
    fake.behave({ delayBetweenChunksMs: 50 });
    const ac = new AbortController();
    const res = await fetch(fake.url + "/chat/completions", { method: "POST", signal: ac.signal, body: JSON.stringify({ model: "m", messages, stream: true }) });
    const reader = res.body!.getReader();
    await reader.read();
    const t = performance.now();
    ac.abort();
    await reader.read().catch(() => {});
    const abort = await fake.waitForAbort();
    expect(abort.at - t).toBeLessThan(100);
    expect(fake.requests[0]!.aborted).toBe(true);
    expect(fake.requests[0]!.completed).toBe(false);
  });

  test("stream headers are sent before a delayed first chunk", async () => {
    fake.behave({ delayFirstChunkMs: 300 });
    const t = performance.now();
    const res = await post("/chat/completions", { model: "m", messages, stream: true, max_tokens: 1 });
    expect(performance.now() - t).toBeLessThan(150);
    expect((await sse(res)).at(-1)).toBe("[DONE]");
    expect(performance.now() - t).toBeGreaterThanOrEqual(290);
  });

  test("hang: never answers until the client aborts", async () => {
    fake.behave({ hang: true });
    const err = await fetch(fake.url + "/chat/completions", { method: "POST", body: JSON.stringify({ model: "m", messages }), signal: AbortSignal.timeout(100) }).catch((e) => e);
    expect(err.name).toBe("TimeoutError");
    await fake.waitForAbort(fake.requests[0]!.id);
  });

  test("embeddings: deterministic float and base64", async () => {
    const f: any = await (await post("/embeddings", { model: "e", input: ["a b", "c"] })).json();
    expect(f.data[0].embedding).toEqual(Array.from(fakeEmbedding("e\u0000a b", 8)));
    expect(f.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const b: any = await (await post("/embeddings", { model: "e", input: "a b", encoding_format: "base64", dimensions: 4 })).json();
    const bytes = Buffer.from(b.data[0].embedding, "base64");
    expect(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 4))).toEqual(Array.from(fakeEmbedding("e\u0000a b", 4)));
  });

  test("models list", async () => {
    const body: any = await (await fetch(fake.url + "/models")).json();
    expect(body.data.map((m: any) => m.id)).toEqual(["fake-model", "other"]);
  });
});
