/**
 * Legacy POST /v1/completions over chat models, with the official `openai` SDK and LangChain's
 * `OpenAI` text model (both unchanged but for base URL and key) against the fake upstream: text and
 * chunk shapes, prompt arrays, max_tokens default and clamp, refusals, a client that disconnects
 * mid-stream, and the money.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { OpenAI as LangChainOpenAI } from "@langchain/openai";
import { fakePromptTokens, replyText } from "../../../test/fakes/openai-upstream.ts";
import { cost, eventually, MAX_OUTPUT, startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";

let t: BridgeServer;
beforeAll(async () => { t = await startBridgeServer(); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const promptOf = (text: string) => fakePromptTokens([{ role: "user", content: text }]);

describe("openai SDK completions.create", () => {
  test("the legacy shape; the prompt goes to the chat model as one user message; max_tokens 16 by default; billed like chat", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 100 });
    const r = await c.openai.completions.create({ model: "chat-a", prompt: "Once upon a time" });
    const sent = t.fake.requests[0]!;
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body).toMatchObject({ model: "up-a", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 16 });
    expect(r).toMatchObject({ object: "text_completion", model: "chat-a", choices: [{ text: replyText(16), index: 0, logprobs: null, finish_reason: "length" }] });
    expect(r.id).toMatch(/^cmpl-/);
    const prompt = promptOf("Once upon a time");
    expect(r.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 16, total_tokens: prompt + 16 });
    expect(await c.lastUsage()).toMatchObject({ kind: "chat", route: "/v1/completions", prompt_tokens: prompt, completion_tokens: 16, cost: cost(prompt, 16) });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 16), 0]);
  });

  test("max_tokens clamped to the model's maximum; stop, temperature and extras forwarded; n choices", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 3 });
    const r = await c.openai.completions.create({ model: "chat-a", prompt: "Count", max_tokens: 10_000, stop: ["\n"], temperature: 0.5, seed: 7, n: 1 });
    expect(t.fake.requests[0]!.body).toMatchObject({ max_tokens: MAX_OUTPUT, stop: ["\n"], temperature: 0.5, seed: 7, n: 1 });
    expect(r.choices[0]).toMatchObject({ text: replyText(3), finish_reason: "stop" });
  });

  test("a prompt array: one chat call per prompt, one choice each (index = prompt × n + choice), usage summed, one usage row each", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 2 });
    const prompts = ["Once upon a time", "The end", "Hello"];
    const r = await c.openai.completions.create({ model: "chat-a", prompt: prompts, max_tokens: 5 });
    expect(t.fake.requests.map((q) => q.body.messages[0].content).sort()).toEqual([...prompts].sort());
    expect(r.choices.map((ch) => [ch.index, ch.text])).toEqual([[0, replyText(2)], [1, replyText(2)], [2, replyText(2)]]);
    const promptTokens = prompts.reduce((n, p) => n + promptOf(p), 0);
    expect(r.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 6, total_tokens: promptTokens + 6 });
    const rows = (await c.get("/v1/usage")).data;
    expect(rows).toHaveLength(3);
    expect(rows.every((u: any) => u.route === "/v1/completions")).toBe(true);
    expect(rows.map((u: any) => u.ref.replace(/^req_\w+/, "")).sort()).toEqual(["", ".1", ".2"]);
    expect((await c.get("/v1/account")).balance).toBe(1_000_000 - prompts.reduce((n, p) => n + cost(promptOf(p), 2), 0));
  });

  test("a prompt array where one call fails: that error, and nothing charged for any prompt", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 2, failWhen: { lastMessageIncludes: "break", status: 500 } });
    const err = await settled(c.openai.completions.create({ model: "chat-a", prompt: ["fine", "break here"], max_tokens: 5 })).then(() => null, (e) => e);
    expect([err?.status, err?.code]).toEqual([502, "upstream_error"]);
    expect(t.fake.requests.map((q) => q.completed)).toEqual([true, true]); // the first prompt was answered upstream
    const rows = (await c.get("/v1/usage")).data;
    expect(rows.map((u: any) => [u.cost, u.error_code ?? u.status]).sort()).toEqual([[0, 502], [0, 502]]);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
  });

  test("streamed: text_completion chunks, a usage chunk when asked, [DONE]", async () => {
    const c = await t.newClient(1_000_000);
    const stream = await c.openai.completions.create({ model: "chat-a", prompt: "Count", max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: any;
    const finish: Array<string | null> = [];
    for await (const chunk of stream) {
      expect(chunk.object).toBe("text_completion");
      if (chunk.usage) usage = chunk.usage;
      for (const ch of chunk.choices) {
        text += ch.text;
        finish.push(ch.finish_reason);
      }
    }
    const prompt = promptOf("Count");
    expect(text).toBe(replyText(4));
    expect(finish.at(-1)).toBe("length");
    expect(usage).toEqual({ prompt_tokens: prompt, completion_tokens: 4, total_tokens: prompt + 4 });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/completions", delivered_tokens: 4, cost: cost(prompt, 4) });
  });

  test("a client that disconnects mid-stream: upstream aborted, charged prompt + delivered tokens", async () => {
    const k = 2;
    const c = await t.newClient(1_000_000);
    t.fake.behave({ delayBetweenChunksMs: 150 });
    const stream = await c.openai.completions.create({ model: "chat-a", prompt: "Count", max_tokens: 10, stream: true });
    let seen = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text) seen++;
      if (seen === k) break;
    }
    await t.fake.waitForAbort(undefined, 2_000);
    const usage = await eventually(async () => ((await c.lastUsage())?.disconnected ? c.lastUsage() : null));
    expect(usage).toMatchObject({ route: "/v1/completions", disconnected: true, delivered_tokens: k, cost: cost(promptOf("Count"), k) });
    expect((await c.get("/v1/account")).balance).toBe(1_000_000 - cost(promptOf("Count"), k));
  });

  test("what a chat model cannot do is a 400 naming the field", async () => {
    const c = await t.newClient();
    for (const [extra, param] of [
      [{ suffix: "the end" }, "suffix"], [{ echo: true }, "echo"], [{ logprobs: 2 }, "logprobs"], [{ best_of: 3 }, "best_of"],
      [{ prompt: [1, 2, 3] }, "prompt[0]"], [{ prompt: ["a", "b"], stream: true }, "prompt"],
    ] as const) {
      const err = await settled(c.openai.completions.create({ model: "chat-a", prompt: "hi", ...(extra as object) } as never)).then(() => null, (e) => e);
      expect({ param, status: err?.status, got: err?.param }).toEqual({ param, status: 400, got: param });
    }
    expect(t.fake.requests).toHaveLength(0);
  });
});

describe("LangChain OpenAI text model (legacy /v1/completions)", () => {
  const llm = (key: string, baseURL: string, opts: Record<string, unknown> = {}) =>
    new LangChainOpenAI({ model: "chat-a", apiKey: key, configuration: { baseURL }, maxRetries: 0, ...opts });

  test("invoke and generate (a batch of prompts in one request)", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 3 });
    expect(await llm(c.key, c.baseURL, { maxTokens: 8 }).invoke("Once upon a time")).toBe(replyText(3));
    expect(t.fake.requests[0]!.body).toMatchObject({ messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 8 });
    const out = await llm(c.key, c.baseURL).generate(["One", "Two"]);
    expect(out.generations.map((g) => g[0]!.text)).toEqual([replyText(3), replyText(3)]);
    expect(out.llmOutput?.tokenUsage).toMatchObject({ completionTokens: 6, promptTokens: promptOf("One") + promptOf("Two") });
    const rows = (await c.get("/v1/usage")).data;
    expect(rows.map((u: any) => u.route)).toEqual(["/v1/completions", "/v1/completions", "/v1/completions"]);
  });

  test("stream", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 5 });
    const pieces: string[] = [];
    for await (const piece of await llm(c.key, c.baseURL, { maxTokens: 8 }).stream("Count")) pieces.push(piece);
    expect(pieces.join("")).toBe(replyText(5));
    expect(pieces.filter(Boolean).length).toBe(5);
  });
});
