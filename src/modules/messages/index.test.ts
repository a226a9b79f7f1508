/**
 * POST /v1/messages and /v1/messages/count_tokens with the official `@anthropic-ai/sdk` (unchanged
 * but for base URL and key) against reelay serving pass-through chat models from the fake OpenAI
 * upstream: what the upstream is sent, what the client gets (content blocks, stop reasons, usage as
 * billed), streamed with the SDK's own accumulator, a tool round trip, images, thinking, aliases,
 * a client that disconnects, an upstream that fails mid-stream, every error status as the SDK's own
 * error class, and the money of each (balance, held, ledger, usage rows).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { fakePromptTokens, replyText } from "../../../test/fakes/openai-upstream.ts";
import { ALIASES, cost, eventually, MAX_OUTPUT, startMessagesServer, type MessagesServer } from "../../../test/chat/messages-server.ts";

let t: MessagesServer;
/** pings after 1 s of quiet (10 s by default), so a test can see one */
const PING_MS = 1_000;
beforeAll(async () => { t = await startMessagesServer({ REELAY_MAX_BODY_BYTES: String(2 * 1024 * 1024), REELAY_STREAM_PING_MS: String(PING_MS) }); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const last = () => t.fake.requests.at(-1)!;
const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const weather: Anthropic.Tool = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

describe("messages.create", () => {
  test("plain: the upstream is asked through chat completions; a message billed like chat", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 5 });
    const m = await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 10, system: "Be brief.", messages: [{ role: "user", content: "Count slowly." }],
      metadata: { user_id: "user-7" }, ...({ temperature: 0.5, top_p: 0.9, top_k: 40 } as {}), // sampling fields the SDK no longer types, still sent by older clients
    });
    const sent = last();
    expect([sent.path, sent.body.model]).toEqual(["/v1/chat/completions", "up-a"]);
    expect(sent.body.messages).toEqual([{ role: "system", content: "Be brief." }, { role: "user", content: "Count slowly." }]);
    expect(sent.body).toMatchObject({ max_tokens: 10, temperature: 0.5, top_p: 0.9, top_k: 40, user: "user-7" });
    for (const k of ["system", "metadata", "stop_sequences", "thinking", "tool_choice"]) expect(sent.body[k]).toBeUndefined();
    const prompt = fakePromptTokens(sent.body.messages);
    expect(m).toMatchObject({
      type: "message", role: "assistant", model: "chat-a", content: [{ type: "text", text: replyText(5) }], stop_reason: "end_turn", stop_sequence: null,
      usage: { input_tokens: prompt, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    });
    expect(m.id).toMatch(/^msg_\w{24}$/);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 5), 0]);
    expect(await c.lastUsage()).toMatchObject({ kind: "chat", route: "/v1/messages", model: "chat-a", prompt_tokens: prompt, completion_tokens: 5, cost: cost(prompt, 5), status: 200 });
    expect((await t.ledger(c.accountId)).map((l) => l.kind)).toEqual(["grant", "hold", "charge", "release"]);
  });

  test("system blocks with cache_control, content blocks, images (base64 and URL), a mid-conversation system turn, consecutive user turns; max_tokens clamped → stop_reason max_tokens", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 100 });
    const m = await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 1_000,
      system: [{ type: "text", text: "You are terse." }, { type: "text", text: "Answer in French.", cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: [
          { type: "text", text: "What are these?" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.png" }, cache_control: { type: "ephemeral" } },
        ] },
        { role: "assistant", content: [{ type: "thinking", thinking: "Two images.", signature: "sig" }, { type: "text", text: "Deux chats." }] },
        { role: "system" as "user", content: "Keep it short." }, // Claude Code's mid-conversation system beta: joins the system prompt
        { role: "user", content: [{ type: "text", text: "Sure?" }, { type: "text", text: "Really?" }] },
        { role: "user", content: "Certain?" }, // consecutive turns of one role are one turn, as Anthropic combines them
      ],
    });
    expect(last().body.messages).toEqual([
      { role: "system", content: "You are terse.\nAnswer in French.\n\nKeep it short." },
      { role: "user", content: [
        { type: "text", text: "What are these?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
        { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
      ] },
      { role: "assistant", content: "Deux chats." },
      { role: "user", content: "Sure?\nReally?\nCertain?" },
    ]);
    expect(last().body.max_tokens).toBe(MAX_OUTPUT);
    expect([m.stop_reason, m.usage.output_tokens]).toEqual(["max_tokens", MAX_OUTPUT]);
  });

  test("a tool round trip: tools → function tools, the call as tool_use with parsed input, the result back as a tool message", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }], reply: "Sunny in Paris." });
    const first = await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 50, tools: [weather], tool_choice: { type: "any", disable_parallel_tool_use: true },
      messages: [{ role: "user", content: "Weather in Paris?" }],
    });
    expect(last().body).toMatchObject({
      tools: [{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weather.input_schema } }],
      tool_choice: "required", parallel_tool_calls: false,
    });
    expect(first.stop_reason).toBe("tool_use");
    expect(first.content as unknown[]).toEqual([{ type: "tool_use", id: "call_fake0", name: "get_weather", input: { city: "Paris" } }]);
    const firstPrompt = fakePromptTokens(last().body.messages);
    const firstOut = first.usage.output_tokens;

    const second = await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 50, tools: [weather], tool_choice: { type: "tool", name: "get_weather" },
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: first.content },
        { role: "user", content: [
          { type: "tool_result", tool_use_id: "call_fake0", content: [{ type: "text", text: "18°C, sun" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] },
          { type: "text", text: "Summarise." },
        ] },
      ],
    });
    expect(last().body.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
    expect(last().body.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_fake0", content: "18°C, sun" },
      { role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }, { type: "text", text: "Summarise." }] },
    ]);
    expect([second.stop_reason, second.content as unknown]).toEqual(["end_turn", [{ type: "text", text: "Sunny in Paris." }]]);
    const secondPrompt = fakePromptTokens(last().body.messages);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(firstPrompt, firstOut) - cost(secondPrompt, second.usage.output_tokens), 0]);
  });

  test("tool_result as a string with is_error; tool_choice auto and none", async () => {
    const c = await t.newClient();
    t.fake.behave({ reply: "Sorry." });
    const call = { type: "tool_use" as const, id: "toolu_1", name: "get_weather", input: { city: "Atlantis" } };
    await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 20, tools: [weather], tool_choice: { type: "auto" },
      messages: [{ role: "user", content: "Weather in Atlantis?" }, { role: "assistant", content: [{ type: "text", text: "Let me check." }, call] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "no such city", is_error: true }] }],
    });
    expect(last().body.messages.slice(1)).toEqual([
      { role: "assistant", content: "Let me check.", tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Atlantis"}' } }] },
      { role: "tool", tool_call_id: "toolu_1", content: "Error: no such city" },
    ]);
    expect(last().body.tool_choice).toBe("auto");
    await c.anthropic.messages.create({ model: "chat-a", max_tokens: 20, tools: [weather], tool_choice: { type: "none" }, messages: [{ role: "user", content: "Hi" }] });
    expect(last().body.tool_choice).toBe("none");
  });

  test("Anthropic's server tools are left out and named in x-reelay-omitted-tools and the request log; forcing one is a 400", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 2 });
    const { data, response } = await c.anthropic.messages.create({
      model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "News?" }],
      tools: [weather, { type: "web_search_20250305", name: "web_search", max_uses: 3 }, { type: "bash_20250124", name: "bash" }],
    }).withResponse();
    expect(last().body.tools.map((x: any) => x.function.name)).toEqual(["get_weather"]);
    expect(response.headers.get("x-reelay-omitted-tools")).toBe("web_search, bash");
    expect(data.stop_reason).toBe("end_turn");
    const requestId = response.headers.get("x-request-id");
    const line = await eventually(async () => t.logLines.find((l) => l.msg === "request" && l.requestId === requestId));
    expect(line).toMatchObject({ route: "/v1/messages", status: 200, omittedTools: ["web_search", "bash"] });

    const before = (await c.get("/v1/account")).balance;
    const forced = await settled(c.anthropic.messages.create({
      model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "News?" }], tools: [{ type: "web_search_20250305", name: "web_search" }], tool_choice: { type: "tool", name: "web_search" },
    })).catch((e) => e);
    expect(forced).toBeInstanceOf(Anthropic.BadRequestError);
    expect(forced.error).toEqual({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("forces the tool 'web_search'") } });
    const any = await settled(c.anthropic.messages.create({ model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "News?" }], tools: [{ type: "web_search_20250305", name: "web_search" }], tool_choice: { type: "any" } })).catch((e) => e);
    expect(any).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await c.get("/v1/account")).balance).toBe(before);
  });

  test("thinking: the upstream's reasoning (reasoning_content or reasoning) → a thinking block; enabled → reasoning_effort, adaptive → none", async () => {
    const c = await t.newClient();
    t.fake.behave({ reasoning: "Two plus two.", reply: "4" });
    const m = await c.anthropic.messages.create({ model: "chat-a", max_tokens: 30, thinking: { type: "enabled", budget_tokens: 2048 }, messages: [{ role: "user", content: "2+2?" }] });
    expect(last().body.reasoning_effort).toBe("low");
    expect(m.content as unknown[]).toEqual([{ type: "thinking", thinking: "Two plus two.", signature: "" }, { type: "text", text: "4" }]);
    await c.anthropic.messages.create({ model: "chat-a", max_tokens: 30, thinking: { type: "enabled", budget_tokens: 20_000 }, messages: [{ role: "user", content: "2+2?" }] });
    expect(last().body.reasoning_effort).toBe("high");
    await c.anthropic.messages.create({ model: "chat-a", max_tokens: 30, thinking: { type: "enabled", budget_tokens: 20_000 }, output_config: { effort: "medium" }, messages: [{ role: "user", content: "2+2?" }] });
    expect(last().body.reasoning_effort).toBe("medium");
    // Claude Code's default: adaptive thinking, an effort, context management (a beta field) — accepted, nothing of it sent
    t.fake.behave({ reasoning: "Sum.", reasoningField: "reasoning", reply: "4" });
    const adaptive = await c.anthropic.beta.messages.create({
      model: "chat-a", max_tokens: 30, thinking: { type: "adaptive" } as never, output_config: { effort: "high" },
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] }, messages: [{ role: "user", content: "2+2?" }],
    } as never, { headers: { "anthropic-beta": "context-management-2025-06-27,effort-2025-11-24" } });
    for (const k of ["reasoning_effort", "context_management", "output_config", "thinking"]) expect(last().body[k]).toBeUndefined();
    expect((adaptive as Anthropic.Message).content[0]).toEqual({ type: "thinking", thinking: "Sum.", signature: "" });
    expect(last().path).toBe("/v1/chat/completions");
  });

  test("stop_sequences → stop; a stop on one of them is stop_reason stop_sequence", async () => {
    const c = await t.newClient();
    t.fake.behave({ reply: "one two. three four" });
    const m = await c.anthropic.messages.create({ model: "chat-a", max_tokens: 30, stop_sequences: [".", "END"], messages: [{ role: "user", content: "Count" }] });
    expect(last().body.stop).toEqual([".", "END"]);
    expect([m.stop_reason, m.stop_sequence, m.content as unknown]).toEqual(["stop_sequence", ".", [{ type: "text", text: "one two" }]]);
  });

  test("cached prompt tokens: input_tokens net of cache reads, the two summing to the prompt billed", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 3, cachedTokens: 6 });
    const m = await c.anthropic.messages.create({ model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "A long shared prefix and a question." }] });
    const prompt = fakePromptTokens(last().body.messages);
    expect(m.usage).toMatchObject({ input_tokens: prompt - 6, cache_read_input_tokens: 6, cache_creation_input_tokens: 0, output_tokens: 3 });
    expect((await c.lastUsage()).prompt_tokens).toBe(prompt);
    const stream = c.anthropic.messages.stream({ model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "A long shared prefix and a question." }] });
    expect((await stream.finalMessage()).usage).toMatchObject({ input_tokens: prompt - 6, cache_read_input_tokens: 6, output_tokens: 3 });
    expect((await c.get("/v1/account")).balance).toBe(1_000_000 - 2 * cost(prompt, 3));
  });

  test("aliases: asked by an alias, served and billed as the model's id; listed by id only", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 2 });
    const m = await c.anthropic.messages.create({ model: ALIASES[0]!, max_tokens: 5, messages: [{ role: "user", content: "Hi" }] });
    expect([m.model, last().body.model]).toEqual(["chat-a", "up-a"]);
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/messages", model: "chat-a" });
    const chat = await fetch(`${t.s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: ALIASES[1], messages: [{ role: "user", content: "Hi" }] }) });
    expect([chat.status, ((await chat.json()) as any).model]).toEqual([200, "chat-a"]);
    const listed = [];
    for await (const model of c.anthropic.models.list()) listed.push(model);
    expect(listed.map((x) => x.id)).toEqual(["chat-a", "chat-b", "chat-one-at-a-time"]);
    expect(listed[0]).toMatchObject({ type: "model", display_name: "chat-a" });
    expect(Date.parse(listed[0]!.created_at)).toBeGreaterThan(0);
    expect(await c.anthropic.models.retrieve(ALIASES[1]!)).toMatchObject({ type: "model", id: "chat-a" });
    // without anthropic-version: OpenAI's list, ids only
    expect(((await c.get("/v1/models")).data as any[]).map((x) => x.id)).toEqual(["chat-a", "chat-b", "chat-one-at-a-time"]);
    const head = await fetch(`${t.s.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200); // Claude Code's first request
  });
});

describe("streamed", () => {
  test("messages.stream(): Anthropic's events in order, the same message as non-streamed, usage as billed", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ reasoning: "Counting.", reply: " one two three" });
    const whole = await c.anthropic.messages.create({ model: "chat-a", max_tokens: 20, messages: [{ role: "user", content: "Count." }] });
    const stream = c.anthropic.messages.stream({ model: "chat-a", max_tokens: 20, messages: [{ role: "user", content: "Count." }] });
    const types: string[] = [];
    let text = "";
    for await (const e of stream) {
      types.push(e.type === "content_block_delta" ? `delta:${e.delta.type}` : e.type);
      if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
    }
    const final = await stream.finalMessage();
    const squeeze = (xs: string[]) => xs.filter((x, i) => x !== xs[i - 1]);
    expect(squeeze(types)).toEqual([
      "message_start", "content_block_start", "delta:thinking_delta", "delta:signature_delta", "content_block_stop",
      "content_block_start", "delta:text_delta", "content_block_stop", "message_delta", "message_stop",
    ]);
    expect(text).toBe(" one two three");
    // the same message but for its id (the SDK's helper adds its own `parsed_output` fields)
    const plain = (m: object) => JSON.parse(JSON.stringify(m, (k, v) => (k === "id" || k === "parsed_output" ? undefined : v)));
    expect(plain(final)).toEqual(plain(whole));
    const prompt = fakePromptTokens(last().body.messages);
    expect(last().body.stream_options).toEqual({ include_usage: true });
    expect(final.usage).toMatchObject({ input_tokens: prompt, output_tokens: whole.usage.output_tokens });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/messages", completion_tokens: whole.usage.output_tokens, cost: cost(prompt, whole.usage.output_tokens), disconnected: false });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - 2 * cost(prompt, whole.usage.output_tokens), 0]);
  });

  test("raw events: message_start first and once, ping, contiguous indices, message_delta then message_stop last", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 3 });
    const res = await fetch(`${t.s.url}/v1/messages?beta=true`, {
      method: "POST", headers: { "x-api-key": c.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-a", max_tokens: 8, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const all = [...(await res.text()).matchAll(/^event: (.+)\ndata: (.+)$/gm)].map((m) => ({ name: m[1], data: JSON.parse(m[2]!) }));
    expect(all.every((e) => e.name === e.data.type)).toBe(true);
    expect(all.slice(0, 2).map((e) => e.name)).toEqual(["message_start", "ping"]); // as Anthropic starts its streams
    const events = all.filter((e, i) => i < 2 || e.name !== "ping"); // (a loaded machine may add keep-alive pings)
    expect(events.map((e) => e.name)).toEqual(["message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(events[0]!.data.message).toMatchObject({ model: "chat-a", role: "assistant", content: [], stop_reason: null });
    expect(events.filter((e) => "index" in e.data).every((e) => e.data.index === 0)).toBe(true);
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } });
  });

  test("a quiet upstream: ping events keep the stream alive (the SDK skips them), never after message_stop", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 2, delayBetweenChunksMs: PING_MS * 1.7 });
    const res = await fetch(`${t.s.url}/v1/messages`, {
      method: "POST", headers: { "x-api-key": c.key, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-a", max_tokens: 5, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    const names = [...(await res.text()).matchAll(/^event: (.+)$/gm)].map((m) => (m[1] === "content_block_delta" ? "delta" : m[1]!));
    const between = names.slice(names.indexOf("delta") + 1, names.lastIndexOf("delta"));
    expect(between).toContain("ping");
    expect(names.at(-1)).toBe("message_stop");
    expect(names.filter((n) => n === "message_start")).toHaveLength(1);
  });

  test("a streamed tool call: input_json_delta fragments accumulate into the parsed input", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' }, { name: "get_weather", arguments: '{"city":"Lyon"}' }] });
    const stream = c.anthropic.messages.stream({ model: "chat-a", max_tokens: 50, tools: [weather], messages: [{ role: "user", content: "Weather in Paris and Lyon?" }] });
    const fragments: string[] = [];
    stream.on("inputJson", (partial) => fragments.push(partial));
    const final = await stream.finalMessage();
    expect(final.content as unknown[]).toEqual([
      { type: "tool_use", id: "call_fake0", name: "get_weather", input: { city: "Paris", unit: "celsius" } },
      { type: "tool_use", id: "call_fake1", name: "get_weather", input: { city: "Lyon" } },
    ]);
    expect(fragments.length).toBeGreaterThanOrEqual(4); // streamed in pieces, not at the end
    expect(final.stop_reason).toBe("tool_use");
  });

  test("a client that disconnects mid-stream: the upstream is aborted, the prompt and the delivered tokens are charged, nothing held", async () => {
    const k = 3;
    const c = await t.newClient(1_000_000);
    t.fake.behave({ delayBetweenChunksMs: 100 });
    const stream = await c.anthropic.messages.create({ model: "chat-a", max_tokens: 40, stream: true, messages: [{ role: "user", content: "Count slowly." }] });
    let seen = 0;
    for await (const e of stream) if (e.type === "content_block_delta" && ++seen === k) break; // the SDK aborts the request
    await t.fake.waitForAbort(undefined, 5_000);
    const prompt = fakePromptTokens(t.fake.requests[0]!.body.messages);
    const usage = await eventually(async () => ((await c.lastUsage())?.disconnected ? c.lastUsage() : null));
    expect(usage).toMatchObject({ route: "/v1/messages", disconnected: true, delivered_tokens: k, completion_tokens: k, prompt_tokens: prompt, cost: cost(prompt, k) });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, k), 0]);
  });

  test("an upstream that fails mid-stream: an error event the SDK raises, only what was delivered charged", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ errorEventAfterChunks: 2 });
    const stream = c.anthropic.messages.stream({ model: "chat-a", max_tokens: 10, messages: [{ role: "user", content: "Count." }] });
    let text = "";
    stream.on("text", (d) => (text += d));
    const err = await stream.finalMessage().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.error).toMatchObject({ type: "error", error: { type: "api_error", message: expect.stringContaining("The model's upstream response broke off") } });
    expect(text).toBe(replyText(2));
    const prompt = fakePromptTokens(last().body.messages);
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/messages", completion_tokens: 2, cost: cost(prompt, 2) });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 2), 0]);
  });
});

describe("count_tokens", () => {
  test("reelay's own count: the prompt estimate the message's credit hold then uses; nothing charged", async () => {
    const c = await t.newClient(1_000_000);
    const params = { model: ALIASES[0]!, system: "Be brief.", tools: [weather], messages: [{ role: "user" as const, content: "What is the weather in Paris today?" }] };
    const counted = await c.anthropic.messages.countTokens(params);
    expect(counted.input_tokens).toBeGreaterThan(20); // the tool's schema counts
    expect((await c.get("/v1/account")).balance).toBe(1_000_000);
    t.fake.behave({ tokens: 1 });
    await c.anthropic.messages.create({ ...params, max_tokens: 5 });
    const hold = (await t.ledger(c.accountId)).find((l) => l.kind === "hold")!;
    expect(hold.reason).toContain(`hold for ${counted.input_tokens} prompt`);
    const unknown = await settled(c.anthropic.messages.countTokens({ ...params, model: "no-such-model" })).catch((e) => e);
    expect(unknown).toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe("errors: Anthropic's envelope and statuses, the SDK's own classes, nothing charged", () => {
  const req = (model = "chat-a") => ({ model, max_tokens: 5, messages: [{ role: "user" as const, content: "Hi" }] });

  test("400 invalid_request_error, 401 authentication_error, 402 plainly worded, 403 permission_error, 404 not_found_error", async () => {
    const c = await t.newClient(1_000_000);
    const bad = await settled(c.anthropic.messages.create({ ...req(), max_tokens: 0 })).catch((e) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.error).toEqual({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("max_tokens") } });
    const auth = await settled(new Anthropic({ apiKey: "rl-not-a-key", baseURL: t.s.url, maxRetries: 0 }).messages.create(req())).catch((e) => e);
    expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(auth.error.error.type).toBe("authentication_error");
    const poor = await t.newClient(1);
    const broke = await settled(poor.anthropic.messages.create(req())).catch((e) => e);
    expect(broke).toBeInstanceOf(Anthropic.PaymentRequiredError);
    expect([broke.status, broke.error.error.type]).toEqual([402, "billing_error"]);
    expect(broke.error.error.message).toStartWith("Insufficient credits: this request needs $");
    const embeddingsOnly = await t.newClient(1_000_000, { scopes: ["embeddings"] });
    const scope = await settled(embeddingsOnly.anthropic.messages.create(req())).catch((e) => e);
    expect(scope).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(scope.error.error).toMatchObject({ type: "permission_error", message: expect.stringContaining("'chat' scope") });
    const missing = await settled(c.anthropic.messages.create(req("gpt-nope"))).catch((e) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error.error.type).toBe("not_found_error");
    const route = await fetch(`${t.s.url}/v1/messages/batches`, { headers: { "x-api-key": c.key } });
    expect([route.status, await route.json()]).toEqual([404, { type: "error", error: { type: "not_found_error", message: expect.stringContaining("Unknown route") } }]);
    for (const x of [c, poor, embeddingsOnly]) expect((await x.get("/v1/account")).held).toBe(0);
    expect((await c.get("/v1/account")).balance).toBe(1_000_000);
  });

  test("429 rate_limit_error with retry-after; 502 api_error from a failing upstream; 529 overloaded_error where reelay has no capacity", async () => {
    const limited = await t.newClient(1_000_000, { limits: { requests_per_minute: 1 } });
    await limited.anthropic.messages.create(req());
    const limit = await settled(limited.anthropic.messages.create(req())).catch((e) => e);
    expect(limit).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limit.error.error.type).toBe("rate_limit_error");
    expect(Number(limit.headers.get("retry-after"))).toBeGreaterThan(0);

    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 500 });
    const upstream = await settled(c.anthropic.messages.create(req())).catch((e) => e);
    expect(upstream).toBeInstanceOf(Anthropic.InternalServerError);
    expect([upstream.status, upstream.error.error.type]).toEqual([502, "api_error"]);
    const streamed = await settled(c.anthropic.messages.create({ ...req(), stream: true })).catch((e) => e);
    expect([streamed.status, streamed.error.error.type]).toEqual([502, "api_error"]); // before any output: a real status

    t.fake.behave({ hang: true }, { model: "chat-one-at-a-time" });
    const gone = new AbortController();
    const stuck = fetch(`${t.s.url}/v1/messages`, { method: "POST", signal: gone.signal, headers: { "x-api-key": c.key, "content-type": "application/json" }, body: JSON.stringify(req("chat-one-at-a-time")) }).catch(() => null);
    await eventually(async () => t.fake.inFlight > 0);
    const busy = await settled(c.anthropic.messages.create(req("chat-one-at-a-time"))).catch((e) => e);
    expect(busy).toBeInstanceOf(Anthropic.OverloadedError);
    expect([busy.status, busy.error.error.type]).toEqual([529, "overloaded_error"]);
    gone.abort(); // the waiting request is given up: its hold goes back
    await stuck;
    await t.fake.waitForAbort(undefined, 5_000);
    await eventually(async () => (await c.get("/v1/account")).held === 0);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
  });
});

describe("bad input: an Anthropic-shaped 4xx naming the problem, never a 500, nothing charged", () => {
  test("malformed requests, bodies and keys", async () => {
    const c = await t.newClient(1_000_000);
    const ok = { model: "chat-a", max_tokens: 5, messages: [{ role: "user", content: "Hi" }] };
    const call = { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } };
    const deep = (n: number): unknown => (n === 0 ? "x" : { a: deep(n - 1) });
    const cases: Array<[string, { body?: string; headers?: Record<string, string> }, number, string]> = [
      ["missing max_tokens", { body: JSON.stringify({ ...ok, max_tokens: undefined }) }, 400, "max_tokens"],
      ["max_tokens as a string", { body: JSON.stringify({ ...ok, max_tokens: "5" }) }, 400, "max_tokens"],
      ["empty messages", { body: JSON.stringify({ ...ok, messages: [] }) }, 400, "messages"],
      ["a tool role", { body: JSON.stringify({ ...ok, messages: [{ role: "tool", content: "x" }] }) }, 400, "messages[0].role"],
      ["no role", { body: JSON.stringify({ ...ok, messages: [{ content: "x" }] }) }, 400, "messages[0].role"],
      ["content a number", { body: JSON.stringify({ ...ok, messages: [{ role: "user", content: 5 }] }) }, 400, "messages[0].content"],
      ["only thinking", { body: JSON.stringify({ ...ok, messages: [{ role: "assistant", content: [{ type: "thinking", thinking: "hm", signature: "s" }] }] }) }, 400, "nothing to send"],
      ["tool_result with no tool_use", { body: JSON.stringify({ ...ok, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_9", content: "x" }] }] }) }, 400, "unexpected tool_use_id 'toolu_9'"],
      ["tool_result for another turn's call", {
        body: JSON.stringify({ ...ok, messages: [{ role: "user", content: "w?" }, { role: "assistant", content: [call] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "x" }] }] }),
      }, 400, "messages[2].content[0].tool_use_id"],
      ["an unknown block", { body: JSON.stringify({ ...ok, messages: [{ role: "user", content: [{ type: "hologram" }] }] }) }, 400, "'hologram'"],
      ["a bad image", { body: JSON.stringify({ ...ok, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/tiff", data: "AA" } }] }] }) }, 400, "media_type"],
      ["a tool without a schema", { body: JSON.stringify({ ...ok, tools: [{ name: "f" }] }) }, 400, "tools[0].input_schema"],
      ["tool_choice naming no tool", { body: JSON.stringify({ ...ok, tools: [weather], tool_choice: { type: "tool", name: "g" } }) }, 400, "no tool named 'g'"],
      ["thinking without a budget", { body: JSON.stringify({ ...ok, thinking: { type: "enabled" } }) }, 400, "budget_tokens"],
      ["an unknown effort", { body: JSON.stringify({ ...ok, output_config: { effort: "extreme" } }) }, 400, "output_config.effort"],
      ["temperature above 1", { body: JSON.stringify({ ...ok, temperature: 1.5 }) }, 400, "temperature"],
      ["not JSON", { body: "{model: chat-a" }, 400, "JSON"],
      ["nested too deep", { body: JSON.stringify({ ...ok, metadata: deep(200) }) }, 400, "nested"],
      ["a body too large", { body: JSON.stringify({ ...ok, messages: [{ role: "user", content: "x".repeat(3 * 1024 * 1024) }] }) }, 413, "limit"],
      ["no key", { headers: { "x-api-key": "" } }, 401, "API key"],
      ["a wrong x-api-key", { headers: { "x-api-key": "rl-wrong" } }, 401, "Invalid API key"],
      ["Basic auth", { headers: { "x-api-key": "", authorization: "Basic dXNlcjpwYXNz" } }, 401, "Bearer"],
    ];
    const problems: string[] = [];
    for (const [name, r, status, text] of cases) {
      const headers: Record<string, string> = { "x-api-key": c.key, "anthropic-version": "2023-06-01", "content-type": "application/json", ...r.headers };
      if (headers["x-api-key"] === "") delete headers["x-api-key"];
      const res = await fetch(`${t.s.url}/v1/messages`, { method: "POST", headers, body: r.body ?? JSON.stringify(ok) });
      const body = await res.text();
      let json: any = null;
      try { json = JSON.parse(body); } catch {}
      const shaped = json?.type === "error" && typeof json.error?.type === "string" && typeof json.error?.message === "string" && Object.keys(json).join() === "type,error";
      if (res.status !== status || !shaped || !json.error.message.includes(text)) problems.push(`${name}: ${res.status} ${body.slice(0, 300)}`);
    }
    expect(problems).toEqual([]);
    expect(t.fake.requests).toEqual([]);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
    expect((await t.ledger(c.accountId)).map((l) => l.kind)).toEqual(["grant"]);
  });
});
