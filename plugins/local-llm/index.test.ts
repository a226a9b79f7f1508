/**
 * The plugin on real weights (the embedded stories260K, and a copy given a chat template) with real
 * llama.cpp inference: answers, usage in the model's own tokens, seeds, stop sequences, streaming,
 * the chat template, parallel sequences, the bounded queue and aborts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, JinjaTemplateChatWrapper, LlamaLogLevel, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { checkOptions, PluginError, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type PluginContext } from "@reelay/plugin-sdk";
import { testCall, testPluginContext as sdkContext, type TestContextOverrides } from "@reelay/plugin-sdk/testing";
import { embeddedModelPath } from "./embedded-model.ts";
import { withStringMetadata } from "./gguf-metadata.ts";
import plugin from "./index.ts";
import { TokenText } from "./token-text.ts";

const STORY: ChatCompletionRequest["messages"] = [{ role: "user", content: "Once upon a time" }];
const signal = () => new AbortController().signal;
/** options checked and defaults filled in, as the host does */
const testPluginContext = (options: Record<string, unknown>, over: TestContextOverrides = {}) => sdkContext(options, { plugin, ...over });
const body = (b: Record<string, unknown>) => ({ model: "m", messages: STORY, ...b }) as ChatCompletionRequest;
const text = (r: { completion: any }) => r.completion.choices[0].message.content as string;

let llama: Llama;
let reference: LlamaModel; // node-llama-cpp used directly: the oracle for token counts
let instance: ModelInstance;
const ctx = testPluginContext({ contextSize: 512, parallel: 4, threads: 1 });
const scratch = mkdtempSync(join(tmpdir(), "reelay-llm-"));

beforeAll(async () => {
  llama = await getLlama({ gpu: false, build: "never", skipDownload: true, logLevel: LlamaLogLevel.error, logger: () => {} });
  reference = await llama.loadModel({ modelPath: embeddedModelPath });
  instance = await loaded(ctx);
});
afterAll(async () => {
  await instance.close?.();
  await reference.dispose();
  rmSync(scratch, { recursive: true, force: true });
});

/** create + load, as the host does before the first request (src/registry/model-loader.ts) */
async function loaded(context: PluginContext): Promise<ModelInstance> {
  const m = await plugin.create(context);
  await m.load?.({ signal: signal() });
  return m;
}

const complete = (b: Record<string, unknown>, s = signal()) => instance.chat!.complete(body(b), testCall({ signal: s }));
async function streamed(b: Record<string, unknown>) {
  const events: ChatStreamEvent[] = [];
  for await (const e of await instance.chat!.stream!(body({ stream: true, ...b }), testCall())) events.push(e);
  return events;
}

describe("answers on the embedded stories260K", () => {
  test("a completion in OpenAI's shape; usage in the model's tokens; max_tokens ends it with 'length'", async () => {
    const r = await complete({ max_tokens: 12, temperature: 0 });
    const promptTokens = 1 + reference.tokenize("Once upon a time").length; // BOS + the text (plain format)
    expect(r.completion).toMatchObject({ object: "chat.completion", model: "test-model", choices: [{ index: 0, message: { role: "assistant" }, finish_reason: "length" }] });
    expect(r.completion.id).toMatch(/^chatcmpl-/);
    expect(r.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 12, total_tokens: promptTokens + 12 });
    expect(r.completion.usage as unknown).toEqual(r.usage);
    // greedy decoding reproduces what node-llama-cpp generates directly, token for token
    const seq = (await reference.createContext({ contextSize: 512, threads: 1 })).getSequence();
    const direct: Token[] = [];
    for await (const t of seq.evaluate([reference.tokens.bos!, ...reference.tokenize("Once upon a time")], { temperature: 0 })) if (direct.push(t) >= 12) break;
    expect(text(r)).toBe(reference.detokenize(direct));
    await seq.context.dispose();
  });

  test("the same seed gives the same text; another seed another text", async () => {
    const a = await complete({ max_tokens: 40, seed: 1234 });
    const b = await complete({ max_tokens: 40, seed: 1234 });
    const c = await complete({ max_tokens: 40, seed: 4321 });
    expect(text(a)).toBe(text(b));
    expect(text(c)).not.toBe(text(a));
  });

  test("a stop sequence cuts the answer before it, with finish_reason 'stop' and fewer tokens", async () => {
    const full = await complete({ max_tokens: 60, temperature: 0 });
    const words = text(full).split(" ").filter((w) => /^[a-z]{3,}$/.test(w));
    const stopWord = words[3]!; // a word that greedy decoding surely writes
    const cut = await complete({ max_tokens: 60, temperature: 0, stop: [stopWord, "never-written"] });
    expect(text(cut)).toBe(text(full).slice(0, text(full).indexOf(stopWord)));
    expect(cut.completion.choices[0].finish_reason).toBe("stop");
    expect(cut.usage!.completion_tokens).toBeLessThan(60);
    const streamedText = (await streamed({ max_tokens: 60, temperature: 0, stop: [stopWord] })).map((e) => e.json?.choices?.[0]?.delta?.content ?? "").join("");
    expect(streamedText).toBe(text(cut));
  });

  test("streamed: a role chunk, content deltas, the finish chunk, a usage chunk, [DONE]; same text as non-streamed", async () => {
    const events = await streamed({ max_tokens: 30, seed: 99 });
    const whole = await complete({ max_tokens: 30, seed: 99 });
    expect(events.at(-1)).toEqual({ data: "[DONE]" });
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    expect(chunks.map((c) => c.object)).toEqual(chunks.map(() => "chat.completion.chunk"));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    const finish = chunks.at(-2);
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: "length" });
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: whole.usage });
    const deltas = chunks.slice(1, -2);
    expect(deltas.every((c) => c.choices[0].finish_reason === null && typeof c.choices[0].delta.content === "string")).toBe(true);
    expect(deltas.map((c) => c.choices[0].delta.content).join("")).toBe(text(whole));
    // running usage on every chunk: what the host bills a disconnected stream on
    const running = deltas.map((c) => c.usage.completion_tokens);
    expect(running).toEqual([...running].sort((x, y) => x - y));
    expect(running.at(-1)).toBeLessThanOrEqual(30);
  });

  test("no max_tokens: the answer stops at the model's maxOutputTokens", async () => {
    const capped = await loaded(testPluginContext({ contextSize: 512, parallel: 1, threads: 1 }, { model: { pricing: {}, maxOutputTokens: 7 } }));
    try {
      const r = await capped.chat!.complete(body({ messages: STORY, temperature: 0 }), testCall({ signal: signal() }));
      expect(r.usage!.completion_tokens).toBe(7);
      expect(r.completion.choices[0].finish_reason).toBe("length");
    } finally {
      await capped.close?.();
    }
  });

  test("a prompt longer than the context is a 400 context_length_exceeded", async () => {
    const err = await complete({ messages: [{ role: "user", content: "Once upon a time ".repeat(200) }] }).catch((e) => e);
    expect(err).toBeInstanceOf(PluginError);
    expect(err).toMatchObject({ kind: "invalid_request", code: "context_length_exceeded", param: "messages" });
    expect(err.message).toContain("512 tokens");
  });

  test("tokens that end inside a UTF-8 character are held until it is complete", () => {
    const tokens = reference.tokenize(" Tom saw a 🐶 and said héllo");
    const decoder = new TokenText(reference, [reference.tokens.bos!]);
    const pieces = tokens.map((t) => decoder.push(t));
    pieces.push(decoder.flush());
    expect(pieces.join("")).toBe(reference.detokenize(tokens, false, [reference.tokens.bos!]));
    expect(pieces.join("")).toContain("🐶");
    expect(pieces.some((p) => p.includes("\uFFFD"))).toBe(false);
    expect(pieces.filter((p) => p === "").length).toBeGreaterThanOrEqual(3); // 🐶 is 4 byte tokens in a 512-token vocabulary
  });
});

describe("concurrency", () => {
  test("four requests decode in parallel on four sequences", async () => {
    const answers = await Promise.all([1, 2, 3, 4].map((seed) => complete({ max_tokens: 50, seed })));
    for (const a of answers) expect(a.usage!.completion_tokens).toBeGreaterThan(0);
    expect(new Set(answers.map(text)).size).toBe(4);
  });

  test("beyond parallel + maxQueue a request is refused at once as overloaded, with a Retry-After", async () => {
    const small = await loaded(testPluginContext({ contextSize: 512, parallel: 1, maxQueue: 1, threads: 1 }));
    try {
      // a stream holds its sequence while its consumer does not read (pull-based decoding)
      const holder = (await small.chat!.stream!(body({ messages: STORY, max_tokens: 200 }), testCall({ signal: signal() })))[Symbol.asyncIterator]();
      await holder.next();
      const queued = small.chat!.complete(body({ messages: STORY, max_tokens: 5, temperature: 0 }), testCall({ signal: signal() }));
      const refused = await small.chat!.complete(body({ messages: STORY, max_tokens: 5 }), testCall({ signal: signal() })).catch((e) => e);
      expect(refused).toBeInstanceOf(PluginError);
      expect(refused).toMatchObject({ kind: "overloaded", code: "model_overloaded" });
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      await holder.return!();
      expect((await queued).usage!.completion_tokens).toBe(5); // the queued one ran once the sequence was free
    } finally {
      await small.close?.();
    }
  });

  test("an aborted stream stops decoding at once and frees its sequence; an aborted waiter leaves the queue", async () => {
    const local = testPluginContext({ contextSize: 512, parallel: 1, maxQueue: 1, threads: 1 });
    local.logs.length = 0;
    const small = await loaded(local);
    try {
      const client = new AbortController();
      const events = (await small.chat!.stream!(body({ messages: STORY, max_tokens: 400, temperature: 0 }), testCall({ signal: client.signal })))[Symbol.asyncIterator]();
      for (let i = 0; i < 10; i++) await events.next();
      const waiter = new AbortController();
      const waiting = small.chat!.complete(body({ messages: STORY, max_tokens: 5 }), testCall({ signal: waiter.signal })).catch((e) => e);
      waiter.abort(new Error("client went away"));
      expect(await waiting).toEqual(new Error("client went away"));
      client.abort(new Error("client went away"));
      await events.return!(); // what the host does when the client disconnects
      const stopped = local.logs.find((l) => l.msg === "generation stopped: the request was aborted")!;
      expect(stopped.fields!.completionTokens).toBeLessThan(20);
      expect(stopped.fields!.tokensAfterAbort).toBeLessThanOrEqual(1);
      // the sequence is free again: a new request runs at once instead of queueing behind 390 tokens
      expect((await small.chat!.complete(body({ messages: STORY, max_tokens: 3 }), testCall({ signal: signal() }))).usage!.completion_tokens).toBe(3);
    } finally {
      await small.close?.();
    }
  });
});

describe("a GGUF with a chat template", () => {
  // no ChatML look-alike: node-llama-cpp renders this one with its Jinja engine, not a built-in wrapper
  const TEMPLATE =
    "{{ bos_token }}{% for message in messages %}{{ message['role'] | upper }}: {{ message['content'] }}\n{% endfor %}" +
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}";
  let path: string;
  beforeAll(async () => {
    const stories = new Uint8Array(await Bun.file(embeddedModelPath).arrayBuffer());
    path = join(scratch, "stories-templated.gguf");
    writeFileSync(path, withStringMetadata(stories, "tokenizer.chat_template", TEMPLATE));
  });

  test("the GGUF's template renders the prompt: same prompt tokens and greedy answer as node-llama-cpp with that template", async () => {
    const local = testPluginContext({ modelPath: path, contextSize: 512, parallel: 1, threads: 1 });
    const templated = await loaded(local);
    try {
      expect(local.logs.find((l) => l.msg === "local model loaded")!.fields).toMatchObject({ promptFormat: "template", chatWrapper: "JinjaTemplate", modelPath: path });
      const r = await templated.chat!.complete(body({ messages: [{ role: "system", content: "Tell a story." }, { role: "user", content: "Once upon a time" }], max_tokens: 16, temperature: 0 }), testCall({ signal: signal() }));

      const model = await llama.loadModel({ modelPath: path });
      const wrapper = new JinjaTemplateChatWrapper({ template: model.fileInfo.metadata.tokenizer.chat_template!, tokenizer: model.tokenizer });
      const { contextText } = wrapper.generateContextState({
        chatHistory: [{ type: "system", text: "Tell a story." }, { type: "user", text: "Once upon a time" }, { type: "model", response: [] }],
      });
      const prompt = contextText.tokenize(model.tokenizer);
      expect(model.detokenize(prompt, true)).toContain("USER: Once upon a time");
      expect(r.usage!.prompt_tokens).toBe(prompt.length);
      const context = await model.createContext({ contextSize: 512, threads: 1 });
      const direct: Token[] = [];
      for await (const t of context.getSequence().evaluate(prompt, { temperature: 0 })) if (direct.push(t) >= 16) break;
      expect(text(r)).toBe(model.detokenize(direct, false, prompt));
      await context.dispose();
      await model.dispose();
    } finally {
      await templated.close?.();
    }
  });

  test("promptFormat 'template' on a GGUF without one makes the model fail to load", async () => {
    // create stays cheap (options only); the missing template shows when the model loads
    const m = await plugin.create(testPluginContext({ promptFormat: "template", threads: 1 }));
    await expect(m.load!({ signal: signal() })).rejects.toThrow("the GGUF has no chat template");
  });
});

describe("options", () => {
  test("each problem names the option", () => {
    expect(checkOptions(plugin.options!, {}).problems).toEqual([]);
    const { problems } = checkOptions(plugin.options!, { modelPath: "", parallel: 0, maxQueue: -1, threads: 1.5, contextSize: 10, promptFormat: "chatml", gpu: true });
    expect(problems.map((p) => p.option)).toEqual(["gpu", "modelPath", "contextSize", "parallel", "maxQueue", "threads", "promptFormat"].sort((a, b) => problems.findIndex((p) => p.option === a) - problems.findIndex((p) => p.option === b)));
    expect(problems.find((p) => p.option === "promptFormat")!.message).toBe('must be one of "auto", "template", "plain" (got "chatml")');
    expect(plugin.validateOptions!({ modelPath: "/nonexistent/model.gguf", parallel: 1, maxQueue: 0, promptFormat: "auto" })).toEqual(['option "modelPath": no file at /nonexistent/model.gguf']);
  });

  test("a file that is not a GGUF fails to load with llama.cpp's reason", async () => {
    const bogus = join(scratch, "not-a-model.gguf");
    writeFileSync(bogus, "this is not a model");
    const m = await plugin.create(testPluginContext({ modelPath: bogus, threads: 1 }));
    await expect(m.load!({ signal: signal() })).rejects.toThrow();
    await m.close?.();
  });
});
