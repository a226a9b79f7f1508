/**
 * Chat on the local-llm plugin through the whole server (Postgres, billing, the OpenAI SDK) with
 * real weights and real llama.cpp inference: exact usage in the model's own tokens and the money
 * that follows it, streams, disconnects, parallel requests and the queue bound.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import { getLlama, LlamaLogLevel, type LlamaModel } from "node-llama-cpp";
import OpenAI from "openai";
import { embeddedModelPath } from "../../plugins/local-llm/embedded-model.ts";
import { createLogger } from "../../src/logger.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { eventually } from "./chat-server.ts";

/** $3 / $15 per million tokens: a prompt token costs 3 micro-dollars, a completion token 15 */
const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const cost = (prompt: number, completion: number) => prompt * 3 + completion * 15;
const STORY = [{ role: "user" as const, content: "Once upon a time" }];

let s: TestServer;
const dir = mkdtempSync(join(tmpdir(), "reelay-local-llm-"));
let reference: LlamaModel;
let promptTokens: number;
const logLines: any[] = [];

beforeAll(async () => {
  const file = join(dir, "models.json");
  const model = (id: string, options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ id, plugin: "local-llm", options: { threads: 1, ...options }, pricing: PRICING, ...extra });
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      model("story", { contextSize: 512, parallel: 4, maxQueue: 8 }, { maxOutputTokens: 64 }),
      // one sequence, no queue, a long context: one long answer occupies the model
      model("story-single", { contextSize: 2048, parallel: 1, maxQueue: 0 }),
      // four sequences and long answers: four streams can be seen decoding side by side
      model("story-wide", { contextSize: 2048, parallel: 4, maxQueue: 4 }),
    ],
  }));
  const logger = createLogger({ logLevel: "info", logPretty: false }, { write: (line: string) => void logLines.push(JSON.parse(line)) } as unknown as NodeJS.WritableStream);
  s = await startTestServer({ REELAY_MODELS_FILE: file }, { logger });
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, logLevel: LlamaLogLevel.error, logger: () => {} });
  reference = await llama.loadModel({ modelPath: embeddedModelPath });
  promptTokens = 1 + reference.tokenize("Once upon a time").length; // BOS + the text: the plain format of a model without a chat template
}, 60_000);
afterAll(async () => {
  await s.close();
  await reference.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function client(credits = 1_000_000) {
  const { key, accountId } = await s.newClient({ credits });
  const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
  return { key, accountId, get, openai: new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 }) };
}
const lastUsage = async (c: { get(p: string): Promise<any> }) => (await c.get("/v1/usage")).data[0];
async function ledgerKinds(accountId: string) {
  const rows = ((await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=100`)).json()) as { data: any[] }).data.reverse();
  return rows.map((r) => r.kind);
}

describe("local chat through reelay", () => {
  test("non-streamed via the OpenAI SDK: usage in the model's tokens, charged exactly once", async () => {
    const c = await client();
    const r = await c.openai.chat.completions.create({ model: "story", messages: STORY, max_tokens: 20, temperature: 0 });
    expect(r.model).toBe("story");
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]!.finish_reason).toBe("length");
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(10);
    expect(r.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 20, total_tokens: promptTokens + 20 });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(promptTokens, 20), 0]);
    expect(await lastUsage(c)).toMatchObject({ prompt_tokens: promptTokens, completion_tokens: 20, token_source: "local", cost: cost(promptTokens, 20), status: 200 });
    expect(await ledgerKinds(c.accountId)).toEqual(["grant", "hold", "charge", "release"]);
  });

  test("max_tokens is clamped to the model's maxOutputTokens (64)", async () => {
    const c = await client();
    const r = await c.openai.chat.completions.create({ model: "story", messages: STORY, max_tokens: 5000, temperature: 0 });
    expect(r.usage!.completion_tokens).toBe(64);
    expect(r.choices[0]!.finish_reason).toBe("length");
  });

  test("streamed via the OpenAI SDK: the same text as non-streamed for the same seed, a usage chunk, billed on it", async () => {
    const c = await client();
    const whole = await c.openai.chat.completions.create({ model: "story", messages: STORY, max_tokens: 40, seed: 2024 });
    const stream = await c.openai.chat.completions.create({ model: "story", messages: STORY, max_tokens: 40, seed: 2024, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    let role: string | undefined;
    for await (const chunk of stream) {
      expect(chunk.model).toBe("story");
      role ??= chunk.choices[0]?.delta?.role;
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(role).toBe("assistant");
    expect(text).toBe(whole.choices[0]!.message.content!);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    expect(usage).toEqual(whole.usage!);
    const acct = await c.get("/v1/account");
    expect(acct.balance).toBe(1_000_000 - 2 * cost(whole.usage!.prompt_tokens, whole.usage!.completion_tokens));
  });

  test("a stream without include_usage carries no usage; it ends with [DONE]", async () => {
    const c = await client();
    const res = await fetch(s.url + "/v1/chat/completions", {
      method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "story", messages: STORY, max_tokens: 10, temperature: 0, stream: true }),
    });
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const events: string[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e.data) });
    for await (const chunk of res.body!) parser.feed(new TextDecoder().decode(chunk));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks.some((j) => "usage" in j)).toBe(false);
    expect(chunks.every((j) => j.choices.length === 1)).toBe(true);
    expect(chunks.at(-1).choices[0].finish_reason).toBe("length");
    expect((await lastUsage(c)).completion_tokens).toBe(10);
  });

  test("four streams decode side by side (their token timelines interleave), each billed on its own usage", async () => {
    const c = await client(10_000_000);
    // every content chunk of the four streams, in the order the client received them
    const timeline: number[] = [];
    const answers = await Promise.all([11, 12, 13, 14].map(async (seed, i) => {
      const stream = await c.openai.chat.completions.create({ model: "story-wide", messages: STORY, max_tokens: 400, seed, stream: true, stream_options: { include_usage: true } });
      let text = "";
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta?.content;
        if (piece) {
          timeline.push(i);
          text += piece;
        }
        if (chunk.usage) usage = chunk.usage;
      }
      return { text, usage: usage! };
    }));
    const first = [0, 1, 2, 3].map((i) => timeline.indexOf(i));
    const last = [0, 1, 2, 3].map((i) => timeline.lastIndexOf(i));
    // every stream had its first token before any stream had its last: one sequence at a time
    // (requests decoded one after the other) would give each stream's tokens as one block
    expect(Math.max(...first)).toBeLessThan(Math.min(...last));
    // and while each stream was being decoded, every other one produced tokens too (beyond its first)
    for (const a of [0, 1, 2, 3]) {
      const during = timeline.slice(first[a]! + 1, last[a]!);
      for (const b of [0, 1, 2, 3]) if (b !== a) expect(during.filter((x, k) => x === b && first[a]! + 1 + k !== first[b]).length).toBeGreaterThan(0);
    }
    expect(new Set(answers.map((a) => a.text)).size).toBe(4);
    const total = answers.reduce((sum, a) => sum + cost(a.usage.prompt_tokens, a.usage.completion_tokens), 0);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([10_000_000 - total, 0]);
  });

  test("null is 'not given' for every optional field OpenAI's spec marks nullable", async () => {
    const c = await client();
    // the nullable fields of the openai SDK's ChatCompletionCreateParams
    const nulls = Object.fromEntries([
      "audio", "frequency_penalty", "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "prediction",
      "presence_penalty", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort", "safety_identifier", "seed", "service_tier", "stop",
      "store", "stream", "stream_options", "temperature", "top_logprobs", "top_p", "verbosity",
    ].map((k) => [k, null]));
    const call = (body: Record<string, unknown>) => fetch(s.url + "/v1/chat/completions", {
      method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "story", messages: STORY, ...nulls, ...body }),
    });
    const whole = await call({});
    const answer = (await whole.json()) as any;
    expect([whole.status, answer.error]).toEqual([200, undefined]);
    expect(answer.object).toBe("chat.completion");
    expect(answer.usage.completion_tokens).toBe(64); // no max_tokens: the model's maxOutputTokens
    const streamed = await call({ stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toStartWith("text/event-stream");
    expect((await streamed.text()).trimEnd()).toEndWith("data: [DONE]");
    const acct = await c.get("/v1/account");
    expect(acct.held).toBe(0);
    expect(acct.balance).toBe(1_000_000 - cost(promptTokens, 64) * 2);
  });

  test("unsupported parameters are a 400 in the OpenAI envelope naming the parameter", async () => {
    const c = await client();
    const err = await c.openai.chat.completions
      .create({ model: "story", messages: STORY, tools: [{ type: "function", function: { name: "get_weather", parameters: {} } }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ type: "invalid_request_error", param: "tools", code: "unsupported_parameter" });
    expect((await c.get("/v1/account")).balance).toBe(1_000_000);
  });
});

describe("disconnects and capacity (one sequence, no queue)", () => {
  test("a client that disconnects stops decoding at once and pays only for the tokens delivered; the model is free again", async () => {
    const c = await client();
    const reader = new AbortController();
    const res = await fetch(s.url + "/v1/chat/completions", {
      method: "POST", signal: reader.signal, headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "story-single", messages: STORY, max_tokens: 2000, temperature: 0, stream: true }),
    });
    let content = 0;
    const parser = createParser({ onEvent: (e) => void (e.data !== "[DONE]" && JSON.parse(e.data).choices[0]?.delta?.content && content++) });
    const body = res.body!.getReader();
    while (content < 10) parser.feed(new TextDecoder().decode((await body.read()).value));

    // while it generates, the model has no room: one sequence, no queue → 503 with Retry-After, nothing charged
    const other = await client();
    const busy = await fetch(s.url + "/v1/chat/completions", {
      method: "POST", headers: { authorization: `Bearer ${other.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "story-single", messages: STORY, max_tokens: 5 }),
    });
    expect(busy.status).toBe(503);
    expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await busy.json()).toMatchObject({ error: { type: "service_unavailable", code: "model_overloaded" } });
    expect((await other.get("/v1/account")).balance).toBe(1_000_000);

    reader.abort();
    const usage = await eventually(async () => (await lastUsage(c)) ?? null);
    expect(usage).toMatchObject({ disconnected: true, status: 200, token_source: "local", prompt_tokens: promptTokens });
    expect(usage.completion_tokens).toBeGreaterThanOrEqual(10);
    expect(usage.completion_tokens).toBeLessThan(2000);
    expect(usage.cost).toBe(cost(promptTokens, usage.completion_tokens));
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - usage.cost, 0]);
    expect(await ledgerKinds(c.accountId)).toEqual(["grant", "hold", "charge", "release"]);

    const stopped = await eventually(async () => logLines.find((l) => l.msg === "generation stopped: the request was aborted" && l.model === "story-single"));
    // decoding follows delivery: at most the token being decoded when the client left was not delivered
    expect(stopped.completionTokens - usage.completion_tokens).toBeLessThanOrEqual(1);
    expect(stopped.tokensAfterAbort).toBeLessThanOrEqual(1);

    const after = await other.openai.chat.completions.create({ model: "story-single", messages: STORY, max_tokens: 5 });
    expect(after.usage!.completion_tokens).toBe(5);
  });
});
