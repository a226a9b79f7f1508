/**
 * Every provider preset through reelay, as a client sees it: one model per preset (`provider:
 * <name>`, only `baseUrl` pointed at the provider's fake, test/fakes/openai-presets.ts, whose
 * path is the provider's own), the official OpenAI SDK as the client, real Postgres. Per preset: a
 * chat carrying the fields the provider refuses (not sent: the fake would answer 400 / 422) with
 * reasoning back as `reasoning_content` and cache hits billed exactly, a stream with usage, a tool
 * call, and a 429 with the provider's retry hint. Then the models file of
 * docs/providers/presets.md as written, with deployments, a breaker and a fallback, and the docs'
 * table against the presets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { parse } from "yaml";
import { startFakeOpenAI, type FakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { startFakeProvider, WIRES, type FakeProvider, type ProviderName } from "../../test/fakes/openai-presets.ts";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";
import { checkOptions } from "@reelay/plugin-sdk";
import plugin from "./index.ts";
import { PRESET_NAMES, PRESETS, type Preset } from "./presets.ts";

const ROOT = join(import.meta.dir, "../..");
const PRICE = { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000, cachedInputPerMillion: 100_000 };
/** a value the OpenAI SDK sends for each field some provider refuses */
const SAMPLE: Record<string, unknown> = {
  logprobs: true, top_logprobs: 2, logit_bias: { "50256": -100 }, user: "u-1", store: false, metadata: { team: "a" }, service_tier: "auto",
  prompt_cache_key: "k-1", safety_identifier: "s-1", presence_penalty: 0.1, frequency_penalty: 0.1, stop: ["never said"], seed: 7,
  max_completion_tokens: 32, parallel_tool_calls: true,
};
const TOOL_FIELDS = ["tools", "tool_choice", "parallel_tool_calls"];

let inner: FakeOpenAI;
const fakes = {} as Record<ProviderName, FakeProvider>;
let docModels: any[];
let s: TestServer;
let openai: OpenAI;
let key: string;
const dir = mkdtempSync(join(tmpdir(), "reelay-presets-"));

beforeAll(async () => {
  inner = await startFakeOpenAI();
  for (const name of PRESET_NAMES) fakes[name] = await startFakeProvider(name, { inner });
  for (const name of PRESET_NAMES) {
    const env = (PRESETS[name] as Preset).apiKeyEnv;
    if (env) process.env[env] = fakes[name].apiKey; // each preset's own variable, not named in the options
  }
  const models: any[] = PRESET_NAMES.map((name) => ({ id: `m-${name}`, plugin: "openai-compatible", options: { provider: name, baseUrl: fakes[name].url, upstreamModel: `up-${name}` }, pricing: PRICE, maxOutputTokens: 64 }));
  models.push({ id: "m-azure-versioned", plugin: "openai-compatible", options: { provider: "azure-openai", baseUrl: fakes["azure-openai"].url, upstreamModel: "gpt-4o-deploy", apiVersion: "2024-10-21" }, pricing: PRICE, maxOutputTokens: 64 });
  // the docs' models file, as written; only where it points changes (each provider's fake)
  const page = readFileSync(join(ROOT, "docs/providers/presets.md"), "utf8");
  docModels = parse(/<!-- readme-test: checked by plugins\/openai-compatible\/presets.test.ts -->\n```yaml\n([\s\S]*?)```/.exec(page)![1]!).models;
  for (const m of docModels) {
    if (m.options.deployments) for (const d of m.options.deployments) d.baseUrl = fakes[d.provider as ProviderName].url;
    else m.options.baseUrl = fakes[m.options.provider as ProviderName].url;
    m.options.routing = { breaker: { consecutiveFailures: 2, cooldownMs: 60_000 } };
  }
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [...models, ...docModels] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "100000", REELAY_RATE_TPM: "100000000" });
  ({ key } = await s.newClient({ credits: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await Promise.all(Object.values(fakes).map((f) => f.stop()));
  await inner?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
const balance = async () => (await get("/v1/account")).balance as number;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: "You are terse." }, { role: "user", content: "Count for me." }];
const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const cost = (u: any) => Math.ceil(((u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0)) * PRICE.inputPerMillion + (u.prompt_tokens_details?.cached_tokens ?? 0) * PRICE.cachedInputPerMillion + u.completion_tokens * PRICE.outputPerMillion) / 1_000_000);
const error = async (p: Promise<unknown>) => {
  const err = (await p.then(() => null, (e) => e)) as InstanceType<typeof OpenAI.APIError>;
  return { status: err?.status, retryAfter: err?.headers?.get("retry-after") ?? null, message: err?.message };
};

describe.each([...PRESET_NAMES, "azure-versioned"] as const)("%s", (which) => {
  const name: ProviderName = which === "azure-versioned" ? "azure-openai" : which;
  const model = `m-${which}`;
  const fake = () => fakes[name];
  const wire = WIRES[name] as (typeof WIRES)[ProviderName];
  const last = () => fake().requests.at(-1)!;

  test("chat: the provider's URL and auth; the fields it refuses are not sent; reasoning as reasoning_content; cache hits billed exactly", async () => {
    fake().reset();
    fake().behave({ reasoning: "Counting in English.", reply: " one two three", cachedTokens: 4 });
    const refused = Object.fromEntries((wire.refuses ?? []).filter((f) => !TOOL_FIELDS.includes(f)).map((f) => [f, SAMPLE[f]]));
    const history: any[] = [
      { role: "user", content: "Hi", name: "alice" },
      { role: "assistant", content: "Hello", reasoning_content: "Greet back." },
      ...messages,
    ];
    const before = await balance();
    const r = await openai.chat.completions.create({ model, messages: history, max_tokens: 16, ...refused } as any);
    const m = r.choices[0]!.message as any;
    expect([m.content, m.reasoning_content, m.reasoning]).toEqual([" one two three", "Counting in English.", undefined]);
    expect(r.usage!.prompt_tokens_details?.cached_tokens).toBe(4);
    expect(before - (await balance())).toBe(cost(r.usage));

    const sent = last();
    if (which === "azure-versioned") expect([sent.path, sent.query]).toEqual(["/openai/deployments/gpt-4o-deploy/chat/completions", { "api-version": "2024-10-21" }]);
    else expect(sent.path).toBe(`${new URL(fake().url).pathname.replace(/\/$/, "")}${name === "azure-openai" ? "/openai/v1" : ""}/chat/completions`);
    const preset = PRESETS[name] as Preset;
    if (preset.baseUrl) expect(new URL(fake().url).pathname).toBe(new URL(preset.baseUrl).pathname); // the fake's path is the provider's
    if (wire.auth === "bearer") expect(sent.headers.authorization).toBe(`Bearer ${fake().apiKey}`);
    if (wire.auth === "api-key") expect([sent.headers["api-key"], "authorization" in sent.headers]).toEqual([fake().apiKey, false]);
    if (wire.auth === "none") expect(sent.headers.authorization).toBeUndefined();
    for (const f of Object.keys(refused)) expect(sent.body).not.toHaveProperty(f);
    for (const f of wire.refusesMessageFields ?? []) expect(sent.body.messages.some((x: any) => f in x)).toBe(false);
    for (const [from, to] of Object.entries(preset.renameParams ?? {})) if (from in refused) expect(sent.body[to]).toEqual(from === "max_completion_tokens" ? 16 : refused[from]);
    expect(sent.body.max_tokens).toBe(16);
    for (const [h, v] of Object.entries(preset.headers ?? {})) expect(sent.headers[h.toLowerCase()]).toBe(v);
  });

  test("stream: reasoning and text as they come, the usage chunk last, billed exactly", async () => {
    fake().reset();
    fake().behave({ reasoning: "Think.", reply: " one two", cachedTokens: 2 });
    const before = await balance();
    const stream = await openai.chat.completions.create({ model, messages, max_tokens: 16, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let reasoning = "";
    let usage: any;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? "";
      reasoning += (c.choices[0]?.delta as any)?.reasoning_content ?? "";
      if (c.usage) {
        expect(c.choices).toEqual([]);
        usage = c.usage;
      }
    }
    expect([text, reasoning]).toEqual([" one two", "Think."]);
    expect(usage).toMatchObject({ completion_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } });
    expect(before - (await balance())).toBe(cost(usage));
    // stream_options only where the provider takes it
    expect("stream_options" in last().body).toBe(!(wire as { refusesStreamOptions?: boolean }).refusesStreamOptions && wire.streamUsage === "asked");
  });

  test(name === "perplexity" ? "tools: Perplexity has none — left out, the answer is text; forcing one is a 400" : "tools: a tool call, streamed and not", async () => {
    fake().reset();
    fake().behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
    if (wire.refuses?.includes("tools")) {
      const r = await openai.chat.completions.create({ model, messages, tools, max_tokens: 32 });
      expect([r.choices[0]!.finish_reason, typeof r.choices[0]!.message.content, "tools" in last().body]).toEqual(["stop", "string", false]);
      expect(await error(openai.chat.completions.create({ model, messages, tools, tool_choice: "required", max_tokens: 8 }))).toMatchObject({ status: 400 });
      return;
    }
    const r = await openai.chat.completions.create({ model, messages, tools, max_tokens: 32 });
    const call = r.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([r.choices[0]!.finish_reason, call.function.name, JSON.parse(call.function.arguments)]).toEqual(["tool_calls", "get_weather", { city: "Paris" }]);
    let args = "";
    for await (const c of await openai.chat.completions.create({ model, messages, tools, max_tokens: 32, stream: true })) args += c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? "";
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
  });

  test("429 in the provider's shape: 429 to the client with its retry hint, nothing charged", async () => {
    fake().reset();
    fake().behave({ status: 429, retryAfter: 3, errorMessage: `slow down (${name})` });
    const before = await balance();
    expect(await error(openai.chat.completions.create({ model, messages, max_tokens: 4 }))).toMatchObject({ status: 429, retryAfter: "3", message: expect.stringContaining(`slow down (${name})`) });
    expect(await balance()).toBe(before);
  });
});

describe("docs/providers/presets.md", () => {
  test("its models file boots as written: each model answers through its provider", async () => {
    for (const f of Object.values(fakes)) f.reset();
    for (const m of docModels) {
      const r = await openai.chat.completions.create({ model: m.id, messages, max_tokens: 4 });
      expect(r.model).toBe(m.id);
    }
    expect(fakes.groq.requests.at(-1)!.body.model).toBe("llama-3.3-70b-versatile");
    expect(fakes["azure-openai"].requests.map((r) => r.path)).toEqual(["/openai/v1/chat/completions", "/openai/deployments/gpt-4o-mini/chat/completions"]);
    expect(fakes.openrouter.requests.at(-1)!.headers).toMatchObject({ "http-referer": "https://example.com", "x-title": "Example App" });
  });

  test("deployments of three providers: a failing one is skipped and its breaker opens; all failing, the fallback answers at its prices", async () => {
    for (const f of Object.values(fakes)) f.reset();
    fakes.vllm.behave({ status: 503 });
    for (let i = 0; i < 4; i++) expect((await openai.chat.completions.create({ model: "llama-3.1-8b", messages, max_tokens: 4 })).model).toBe("llama-3.1-8b");
    const upstreams = await (await s.admin("/admin/upstreams")).json() as any;
    const deployments = upstreams.data.find((m: any) => m.model === "llama-3.1-8b").deployments;
    expect(deployments.find((d: any) => d.name === "gpu-box").state).toBe("open");
    expect(fakes.vllm.requests.length).toBe(2); // the breaker opened after two failures: no third try

    fakes.together.behave({ status: 500 });
    fakes.fireworks.behave({ status: 429 });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "llama-3.1-8b", messages, max_tokens: 4 });
    expect(r.model).toBe("llama-3.3-70b");
    const groq = docModels.find((m) => m.id === "llama-3.3-70b").pricing;
    expect(before - (await balance())).toBe(Math.ceil((r.usage!.prompt_tokens * groq.inputPerMillion + r.usage!.completion_tokens * groq.outputPerMillion) / 1_000_000));
  });

  test("the overriding example's options pass the plugin's checks", () => {
    const page = readFileSync(join(ROOT, "docs/providers/presets.md"), "utf8");
    const block = /\(the options pass the plugin's checks\) -->\n```yaml\n([\s\S]*?)```/.exec(page)![1]!;
    for (const m of parse(block).models) {
      const checked = checkOptions(plugin.options!, m.options);
      expect([m.id, checked.problems, plugin.validateOptions!(checked.options as never)]).toEqual([m.id, [], []]);
    }
  });

  test("the presets table lists every preset with its base URL and key variable", () => {
    const page = readFileSync(join(ROOT, "docs/providers/presets.md"), "utf8");
    const table = /<!-- presets-table[^>]*-->\n([\s\S]*?)<!-- \/presets-table -->/.exec(page)![1]!;
    const rows = new Map(table.split("\n").filter((l) => l.startsWith("| `")).map((l) => [/^\| `([^`]+)`/.exec(l)![1]!, l]));
    expect([...rows.keys()]).toEqual(PRESET_NAMES);
    for (const name of PRESET_NAMES) {
      const p = PRESETS[name] as Preset;
      const row = rows.get(name)!;
      if (p.baseUrl) expect(row).toContain(`\`${p.baseUrl}\``);
      expect(row).toContain(p.apiKeyEnv ? `\`${p.apiKeyEnv}\`` : "| none |");
      for (const f of [...(p.dropParams ?? []), ...Object.keys(p.renameParams ?? {}), ...(p.dropMessageFields ?? [])]) expect(row).toContain(`\`${f}\``);
      if (p.reasoningField === "reasoning") expect(row).toContain("`reasoning` → `reasoning_content`");
    }
  });
});
