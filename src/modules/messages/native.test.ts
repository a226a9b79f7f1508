/**
 * POST /v1/messages and /v1/messages/count_tokens passed through natively to a model of the
 * anthropic plugin (its `messages` capability), with the official `@anthropic-ai/sdk` against
 * reelay and the fake Anthropic API behind it: what the upstream receives (the client's body but
 * for `model`, its anthropic-version and anthropic-beta, cache_control, thinking blocks with their
 * signatures given back byte for byte), what the client gets (the upstream's answer and events,
 * `model` reelay's id, usage what was billed), the money (cache reads and writes at their own
 * prices: balance, usage row, ledger), a client that disconnects, every upstream failure as the
 * SDK's own error class or stop reason, routing over deployments, a fallback through the bridge,
 * and the bridge's billed cache counts on /v1/responses.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { fakeInputTokens, replyText } from "../../../test/fakes/anthropic-upstream.ts";
import { fakePromptTokens } from "../../../test/fakes/openai-upstream.ts";
import { claudeCost, eventually, FALLBACK_PRICES, NATIVE_ALIAS, startNativeMessagesServer, type NativeMessagesServer } from "../../../test/chat/native-messages-server.ts";
import { countTextTokens } from "../../text/tokens.ts";

const MAX_OUTPUT = 8192;
let t: NativeMessagesServer;
beforeAll(async () => { t = await startNativeMessagesServer({ maxOutputTokens: MAX_OUTPUT }); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.reset());

const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const weather: Anthropic.Tool = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
/** a signature as Anthropic's look (base64 with + / =), and characters a re-encoding would change */
const SIGNATURE = "EqQBCkYIBxgCKkB+/0aZ9m3Q==\u00e9\u2028\\\"sig\"";
const SYSTEM = "You are a terse assistant who counts in English words, one per token, and never explains anything.";
const user = (text: string): Anthropic.MessageParam => ({ role: "user", content: text });

describe("create: the client's request reaches Anthropic as sent", () => {
  test("body unchanged but for model; anthropic-version and anthropic-beta passed on; cache_control kept; cache reads and writes billed at their prices", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 5, cacheRead: 9, cacheWrite: 4 });
    const params = {
      model: "claude-native", max_tokens: 10,
      system: [{ type: "text" as const, text: SYSTEM, cache_control: { type: "ephemeral" as const } }],
      messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "Count for me, please.", cache_control: { type: "ephemeral" as const, ttl: "1h" as const } }] }],
      metadata: { user_id: "user-7" }, temperature: 0.3, stop_sequences: ["END"],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] }, // a beta field reelay does not know
    };
    const betas = ["prompt-caching-2024-07-31", "context-management-2025-06-27"];
    const { data: m, response } = await c.anthropic.beta.messages
      .create({ ...params, betas } as never, { headers: { "anthropic-version": "2024-10-22" } })
      .withResponse();

    const sent = t.fake.requests.at(-1)!;
    expect(sent.path).toBe("/v1/messages");
    expect(JSON.stringify(sent.body)).toBe(JSON.stringify({ ...params, model: "claude-up" })); // key order and every byte kept
    expect(sent.headers["anthropic-version"]).toBe("2024-10-22");
    expect(sent.headers["anthropic-beta"]).toBe(betas.join(","));
    expect(sent.headers["x-api-key"]).toBe(t.fake.apiKey); // reelay's upstream key, never the client's
    expect(t.openai.requests).toEqual([]); // nothing went through chat

    const prompt = fakeInputTokens(sent.body);
    const usage = { input_tokens: prompt - 13, cache_read_input_tokens: 9, cache_creation_input_tokens: 4, output_tokens: 5 };
    const msg = m as unknown as Anthropic.Message;
    expect(msg).toMatchObject({ type: "message", role: "assistant", model: "claude-native", content: [{ type: "text", text: replyText(5) }], stop_reason: "end_turn", stop_sequence: null, usage });
    expect(msg.id).toBe("msg_fake" + String(sent.id).padStart(6, "0")); // Anthropic's own message, passed through
    expect((msg.usage as any).service_tier).toBe("standard"); // the upstream's other usage fields kept

    const cost = claudeCost({ input: prompt - 13, cacheRead: 9, cacheWrite: 4, output: 5 });
    expect(await c.balance()).toBe(1_000_000 - cost);
    expect(await c.lastUsage()).toMatchObject({
      kind: "chat", route: "/v1/messages", model: "claude-native", prompt_tokens: prompt, cached_tokens: 9, cache_write_tokens: 4, completion_tokens: 5,
      cost, status: 200, token_source: "upstream", anomaly: null,
    });
    expect((await t.ledger(c.accountId)).map((l) => l.kind)).toEqual(["grant", "hold", "charge", "release"]);
    const requestId = response.headers.get("x-request-id");
    const line = await eventually(async () => t.logLines.find((l) => l.msg === "request" && l.requestId === requestId));
    expect(line).toMatchObject({ route: "/v1/messages", status: 200, model: "claude-native", promptTokens: prompt, completionTokens: 5, cost });
  });

  test("max_tokens clamped to the model's maximum (the hold's bound); an alias answered as asked (thinking signatures are bound to it), billed as the model's id", async () => {
    const c = await t.newClient(10_000_000);
    t.fake.behave({ tokens: 2 });
    const m = await c.anthropic.messages.create({ model: NATIVE_ALIAS, max_tokens: 20_000, messages: [user("Hi")] });
    expect(t.fake.requests.at(-1)!.body).toMatchObject({ model: "claude-up", max_tokens: MAX_OUTPUT });
    expect(m.model).toBe(NATIVE_ALIAS);
    expect(await c.lastUsage()).toMatchObject({ model: "claude-native", route: "/v1/messages" });
  });

  test("refusal: stop_reason refusal as Anthropic sent it, billed like any answer", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 3, stopReason: "refusal" });
    const m = await c.anthropic.messages.create({ model: "claude-native", max_tokens: 10, messages: [user("Something I must refuse.")] });
    expect(m.stop_reason).toBe("refusal");
    const streamed = await c.anthropic.messages.stream({ model: "claude-native", max_tokens: 10, messages: [user("Something I must refuse.")] }).finalMessage();
    expect(streamed.stop_reason).toBe("refusal");
    const prompt = fakeInputTokens(t.fake.requests.at(-1)!.body);
    expect(await c.balance()).toBe(1_000_000 - 2 * claudeCost({ input: prompt, output: 3 }));
  });
});

describe("streamed: Anthropic's events relayed as they arrive", () => {
  test("messages.stream() with finalMessage(): every event in order (pings kept), the thinking signature intact, usage billed with cache reads", async () => {
    const c = await t.newClient(1_000_000);
    const thinking = "The user wants four words; I will count them.";
    t.fake.behave({ thinking, signature: SIGNATURE, tokens: 4, cacheRead: 5, delayBetweenEventsMs: 30 });
    const stream = c.anthropic.messages.stream({ model: NATIVE_ALIAS, max_tokens: 20, system: SYSTEM, messages: [user("Count.")] });
    const types: string[] = [];
    let upstreamDoneAtFirstText: boolean | undefined;
    for await (const e of stream) {
      types.push(e.type === "content_block_delta" ? `delta:${e.delta.type}` : e.type);
      // relayed as it arrives: the first word reaches the client while Anthropic is still sending
      if (e.type === "content_block_delta" && e.delta.type === "text_delta" && upstreamDoneAtFirstText === undefined) upstreamDoneAtFirstText = t.fake.requests.at(-1)!.completed;
    }
    const final = await stream.finalMessage();
    expect(upstreamDoneAtFirstText).toBe(false);
    const squeeze = (xs: string[]) => xs.filter((x, i) => x !== xs[i - 1]);
    expect(squeeze(types)).toEqual([
      "message_start", "content_block_start", "delta:thinking_delta", "delta:signature_delta", "content_block_stop",
      "content_block_start", "delta:text_delta", "content_block_stop", "message_delta", "message_stop",
    ]);
    expect(final.content as unknown[]).toEqual([{ type: "thinking", thinking, signature: SIGNATURE }, { type: "text", text: replyText(4) }]);
    expect(final.model).toBe(NATIVE_ALIAS); // as asked: Claude Code gives thinking back only to the model it asked for

    const sent = t.fake.requests.at(-1)!;
    expect(sent.body).toMatchObject({ model: "claude-up", stream: true, system: SYSTEM });
    const prompt = fakeInputTokens(sent.body);
    const output = countTextTokens(thinking) + 4;
    expect(final.usage).toMatchObject({ input_tokens: prompt - 5, cache_read_input_tokens: 5, cache_creation_input_tokens: 0, output_tokens: output });
    const cost = claudeCost({ input: prompt - 5, cacheRead: 5, output });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/messages", model: "claude-native", prompt_tokens: prompt, cached_tokens: 5, completion_tokens: output, delivered_tokens: output, cost, disconnected: false });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost, 0]);
  });

  test("raw: the upstream's events byte for byte but for message_start's model and message_delta's usage; pings kept", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 3 });
    const res = await fetch(`${t.s.url}/v1/messages?beta=true`, {
      method: "POST", headers: { "x-api-key": c.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-native", max_tokens: 8, stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const events = [...(await res.text()).matchAll(/^event: (.+)\ndata: (.+)$/gm)].map((m) => ({ name: m[1]!, data: m[2]! }));
    expect(events.map((e) => e.name)).toEqual(["message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(JSON.parse(events[0]!.data).message).toMatchObject({ model: "claude-native", id: expect.stringMatching(/^msg_fake/) });
    expect(events[1]!.data).toBe('{"type":"ping"}');
    expect(events[3]!.data).toBe(JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: replyText(1) } }));
    expect(JSON.parse(events[7]!.data)).toMatchObject({ delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 } });
    expect(events[8]!.data).toBe('{"type":"message_stop"}');
  });

  test("thinking blocks with signatures (and redacted thinking) round-trip byte for byte on the next turn, with the tool call", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ thinking: "I should look the weather up.", signature: SIGNATURE, redactedThinking: "cmVkYWN0ZWQgdGhpbmtpbmc+/=", toolUse: [{ name: "get_weather", input: { city: "Paris" } }], text: "It is sunny in Paris." });
    const first = await c.anthropic.messages.stream({ model: "claude-native", max_tokens: 60, tools: [weather], messages: [user("Weather in Paris?")] }).finalMessage();
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use"]);
    expect(first.stop_reason).toBe("tool_use");
    const call = first.content.find((b) => b.type === "tool_use")!;

    const second = await c.anthropic.messages.create({
      model: "claude-native", max_tokens: 60, tools: [weather],
      messages: [user("Weather in Paris?"), { role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "18°C, sun" }] }],
    });
    const given = t.fake.requests.at(-1)!.body.messages[1].content;
    expect(JSON.stringify(given)).toBe(JSON.stringify(first.content));
    expect(given[0]).toEqual({ type: "thinking", thinking: "I should look the weather up.", signature: SIGNATURE });
    expect(given[1]).toEqual({ type: "redacted_thinking", data: "cmVkYWN0ZWQgdGhpbmtpbmc+/=" });
    expect(second.content.map((b) => b.type)).toEqual(["thinking", "redacted_thinking", "text"]);
    expect(second.stop_reason).toBe("end_turn");
  });

  test("a client that disconnects mid-stream: the upstream is aborted, the prompt (with its cache reads) and the delivered tokens are charged", async () => {
    const k = 3;
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 30, cacheRead: 4, delayBetweenEventsMs: 100 });
    const stream = await c.anthropic.messages.create({ model: "claude-native", max_tokens: 40, stream: true, system: SYSTEM, messages: [user("Count slowly.")] });
    let seen = 0;
    for await (const e of stream) if (e.type === "content_block_delta" && ++seen === k) break; // the SDK aborts the request
    await t.fake.waitForAbort(undefined, 5_000);
    const prompt = fakeInputTokens(t.fake.requests[0]!.body);
    const usage = await eventually(async () => ((await c.lastUsage())?.disconnected ? c.lastUsage() : null));
    const cost = claudeCost({ input: prompt - 4, cacheRead: 4, output: k });
    expect(usage).toMatchObject({ route: "/v1/messages", disconnected: true, delivered_tokens: k, completion_tokens: k, prompt_tokens: prompt, cached_tokens: 4, cost });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost, 0]);
  });
});

describe("count_tokens", () => {
  test("asked of Anthropic with the client's betas; nothing charged", async () => {
    const c = await t.newClient(1_000_000);
    const params = { model: "claude-native", system: SYSTEM, tools: [weather], messages: [user("What is the weather in Paris today?")] };
    const counted = await c.anthropic.beta.messages.countTokens({ ...params, betas: ["token-counting-2024-11-01"] });
    const sent = t.fake.requests.at(-1)!;
    expect(sent.path).toBe("/v1/messages/count_tokens");
    expect(sent.body).toEqual({ ...params, model: "claude-up" });
    expect(sent.headers["anthropic-beta"]).toBe("token-counting-2024-11-01");
    expect(counted.input_tokens).toBe(fakeInputTokens(sent.body));
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
    expect((await c.get("/v1/usage")).data).toEqual([]);
    t.fake.behave({ status: 529 });
    expect(await settled(c.anthropic.messages.countTokens(params)).catch((e) => e)).toBeInstanceOf(Anthropic.OverloadedError);
  });
});

describe("Anthropic's failures: the SDK's own error classes, only what was delivered charged", () => {
  const req = { model: "claude-native", max_tokens: 10, messages: [user("Hi there")] };
  const failure = (p: PromiseLike<unknown>) => settled(p).then(() => null, (e) => e);

  test("400, 401, 429 with retry-after, 529: before any output, a real status and nothing charged, streamed or not", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 400, errorMessage: "messages.0.content.0: unknown block type hologram" });
    const bad = await failure(c.anthropic.messages.create(req));
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect(bad.error).toEqual({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining("unknown block type hologram") } });

    t.fake.behave({ status: 401 }); // reelay's upstream key refused: the operator's problem, not the client's
    const auth = await failure(c.anthropic.messages.create(req));
    expect(auth).toBeInstanceOf(Anthropic.InternalServerError);
    expect([auth.status, auth.error.error.type]).toEqual([502, "api_error"]);

    t.fake.behave({ status: 429, retryAfter: 7 });
    const limited = await failure(c.anthropic.messages.create(req));
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect([limited.error.error.type, limited.headers.get("retry-after")]).toEqual(["rate_limit_error", "7"]);

    t.fake.behave({ status: 529 });
    const overloaded = await failure(c.anthropic.messages.create(req));
    expect(overloaded).toBeInstanceOf(Anthropic.OverloadedError);
    expect([overloaded.status, overloaded.error.error.type]).toEqual([529, "overloaded_error"]);
    const streamed = await failure(c.anthropic.messages.create({ ...req, stream: true }));
    expect(streamed).toBeInstanceOf(Anthropic.OverloadedError);

    t.fake.behave({ errorEventAfterDeltas: 0 }); // Anthropic's overloaded error event right after message_start: nothing reached the client
    const early = await failure(c.anthropic.messages.create({ ...req, stream: true }));
    expect(early).toBeInstanceOf(Anthropic.OverloadedError);

    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
    const rows = (await c.get("/v1/usage")).data as any[];
    // the rows keep reelay's own statuses (503 where Anthropic's clients are told 529)
    expect(rows.map((r) => [r.status, r.cost])).toEqual([[503, 0], [503, 0], [503, 0], [429, 0], [502, 0], [400, 0]]);
  });

  test("an error event after output began: the SDK raises it, the delivered tokens are charged", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 10, errorEventAfterDeltas: 2, errorEventType: "api_error" });
    const stream = c.anthropic.messages.stream(req);
    let text = "";
    stream.on("text", (d) => (text += d));
    const err = await stream.finalMessage().catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err.error).toMatchObject({ type: "error", error: { type: "api_error", message: expect.stringContaining("broke off") } });
    expect(text).toBe(replyText(2));
    const prompt = fakeInputTokens(t.fake.requests.at(-1)!.body);
    const cost = claudeCost({ input: prompt, output: 2 });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/messages", status: 200, completion_tokens: 2, delivered_tokens: 2, cost });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost, 0]);
  });
});

describe("routing and fallbacks", () => {
  test("the plugin's router: an overloaded deployment, the other serves; one usage row", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 529 }, { model: "claude-routed-up" });
    t.second.behave({ tokens: 3 });
    const m = await c.anthropic.messages.stream({ model: "claude-routed", max_tokens: 10, messages: [user("Hi")] }).finalMessage();
    expect([m.model, m.content[0]]).toEqual(["claude-routed", { type: "text", text: replyText(3) } as never]);
    expect(t.second.requests).toHaveLength(1);
    expect(t.fake.requests.length).toBeLessThanOrEqual(1);
    const prompt = fakeInputTokens(t.second.requests[0]!.body);
    expect(await c.lastUsage()).toMatchObject({ model: "claude-routed", cost: claudeCost({ input: prompt, output: 3 }) });
  });

  test("a fallback without the Messages capability serves through the bridge, at its own prices; streamed too", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 529 }, { model: "claude-fb-up" });
    t.openai.behave({ tokens: 3 });
    const { data: m, response } = await c.anthropic.messages.create({ model: "claude-falls-back", max_tokens: 10, system: SYSTEM, messages: [user("Hi")] }).withResponse();
    expect(m).toMatchObject({ model: "chat-fallback", content: [{ type: "text", text: replyText(3) }], stop_reason: "end_turn" });
    expect(m.id).toMatch(/^msg_\w{24}$/); // the bridge's message
    const chat = t.openai.requests.at(-1)!;
    expect(chat.body).toMatchObject({ model: "up-fallback", max_tokens: 10, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Hi" }] });
    const prompt = fakePromptTokens(chat.body.messages);
    const cost = claudeCost({ input: prompt, output: 3 }, FALLBACK_PRICES);
    expect(await c.lastUsage()).toMatchObject({ model: "chat-fallback", prompt_tokens: prompt, cost });
    const line = await eventually(async () => t.logLines.find((l) => l.msg === "request" && l.requestId === response.headers.get("x-request-id")));
    expect(line).toMatchObject({ model: "chat-fallback", requestedModel: "claude-falls-back" });

    const streamed = await c.anthropic.messages.stream({ model: "claude-falls-back", max_tokens: 10, system: SYSTEM, messages: [user("Hi")] }).finalMessage();
    expect(streamed).toMatchObject({ model: "chat-fallback", content: [{ type: "text", text: replyText(3) }], usage: { input_tokens: prompt, output_tokens: 3 } });
    expect(t.openai.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - 2 * cost, 0]);
  });

  test("a request the bridge cannot translate (a PDF document) keeps to the models that speak Messages", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 529 }, { model: "claude-fb-up" });
    const pdf: Anthropic.DocumentBlockParam = { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0xLjQK" } };
    const err = await settled(c.anthropic.messages.create({ model: "claude-falls-back", max_tokens: 10, messages: [{ role: "user", content: [pdf, { type: "text", text: "Summarise." }] }] })).catch((e) => e);
    expect(err).toBeInstanceOf(Anthropic.OverloadedError);
    expect(t.openai.requests).toEqual([]);
    expect(t.fake.requests.at(-1)!.body.messages[0].content[0]).toEqual(pdf);
  });
});

describe("the bridge's billed cache counts", () => {
  test("/v1/messages over a chat upstream: usage says the cache reads billed, as the usage row; a report beyond the prompt is billed as input and shown as 0", async () => {
    const c = await t.newClient(1_000_000);
    t.openai.behave({ tokens: 3, cachedTokens: 6 });
    const m = await c.anthropic.messages.stream({ model: "chat-fallback", max_tokens: 10, system: SYSTEM, messages: [user("Hi")] }).finalMessage();
    const prompt = fakePromptTokens(t.openai.requests.at(-1)!.body.messages);
    expect(m.usage).toMatchObject({ input_tokens: prompt - 6, cache_read_input_tokens: 6, cache_creation_input_tokens: 0, output_tokens: 3 });
    expect(await c.lastUsage()).toMatchObject({ prompt_tokens: prompt, cached_tokens: 6, cost: claudeCost({ input: prompt - 6, cacheRead: 6, output: 3 }, FALLBACK_PRICES) });

    t.openai.behave({ tokens: 3, cachedTokens: 10_000 }); // more cached than the whole prompt: not credible
    const hostile = await c.anthropic.messages.create({ model: "chat-fallback", max_tokens: 10, system: SYSTEM, messages: [user("Hi")] });
    expect(hostile.usage).toMatchObject({ input_tokens: prompt, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 3 });
    expect(await c.lastUsage()).toMatchObject({ prompt_tokens: prompt, cached_tokens: null, anomaly: expect.stringContaining("cache tokens") });
  });

  test("/v1/responses over a Claude model (through chat): cached_tokens and cache_write_tokens as billed and recorded", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 4, cacheRead: 7, cacheWrite: 3 });
    const openai = new OpenAI({ apiKey: c.key, baseURL: t.s.url + "/v1", maxRetries: 0 });
    const r = await openai.responses.create({ model: "claude-native", instructions: SYSTEM, input: "Count for me.", max_output_tokens: 16 });
    const prompt = fakeInputTokens(t.fake.requests.at(-1)!.body);
    expect(r.usage).toMatchObject({ input_tokens: prompt, input_tokens_details: { cached_tokens: 7, cache_write_tokens: 3 }, output_tokens: 4 });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", prompt_tokens: prompt, cached_tokens: 7, cache_write_tokens: 3, cost: claudeCost({ input: prompt - 10, cacheRead: 7, cacheWrite: 3, output: 4 }) });
  });
});
