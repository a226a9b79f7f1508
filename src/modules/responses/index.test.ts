/**
 * POST /v1/responses with the official `openai` SDK (unchanged but for base URL and key) against
 * reelay serving pass-through chat models from the fake upstream: plain, streamed with the SDK's
 * stream helper, a function-calling round trip (by replaying output items and by
 * previous_response_id), text.format json_schema, max_output_tokens → incomplete, a client that
 * disconnects mid-stream, storage, refusals, and the money and limits of chat.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { fakePromptTokens, replyText } from "../../../test/fakes/openai-upstream.ts";
import { cost, eventually, MAX_OUTPUT, startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";

let t: BridgeServer;
beforeAll(async () => { t = await startBridgeServer(); }, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const last = () => t.fake.requests.at(-1)!;
/** the SDK's APIPromise as a plain Promise (bun's `rejects` needs one) */
const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const weatherTool = { type: "function" as const, name: "get_weather", description: "Weather in a city", strict: true, parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false } };

describe("responses.create", () => {
  test("plain: a response object, the upstream asked through chat completions, billed like chat", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 5 });
    const r = await c.openai.responses.create({ model: "chat-a", instructions: "Be brief.", input: "Count slowly.", max_output_tokens: 10 });
    const sent = last();
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.body.model).toBe("up-a");
    expect(sent.body.messages).toEqual([{ role: "system", content: "Be brief." }, { role: "user", content: "Count slowly." }]);
    expect(sent.body.max_tokens).toBe(10);
    const prompt = fakePromptTokens(sent.body.messages);
    expect(r).toMatchObject({ object: "response", status: "completed", model: "chat-a", incomplete_details: null, store: true, instructions: "Be brief.", max_output_tokens: 10 });
    expect(r.id).toMatch(/^resp_/);
    expect(r.output).toHaveLength(1);
    expect(r.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: replyText(5), annotations: [] }] });
    expect(r.output_text).toBe(replyText(5));
    expect(r.usage).toMatchObject({ input_tokens: prompt, output_tokens: 5, total_tokens: prompt + 5 });

    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 5), 0]);
    expect(await c.lastUsage()).toMatchObject({ kind: "chat", route: "/v1/responses", model: "chat-a", prompt_tokens: prompt, completion_tokens: 5, cost: cost(prompt, 5), status: 200 });
    expect((await t.ledger(c.accountId)).map((l) => l.kind)).toEqual(["grant", "hold", "charge", "release"]);
    // kept: the SDK reads it back as it was answered
    const { _request_id, ...answered } = r;
    expect(await c.openai.responses.retrieve(r.id)).toMatchObject(answered);
  });

  test("max_output_tokens reached → status incomplete, reason max_output_tokens; a larger one is clamped to the model's maximum", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 100 });
    const r = await c.openai.responses.create({ model: "chat-a", input: "Count.", max_output_tokens: 3 });
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(r.output[0]).toMatchObject({ type: "message", status: "incomplete" });
    expect(r.usage!.output_tokens).toBe(3);
    const big = await c.openai.responses.create({ model: "chat-a", input: "Count.", max_output_tokens: 100_000 });
    expect(last().body.max_tokens).toBe(MAX_OUTPUT);
    expect([big.status, big.usage!.output_tokens]).toEqual(["incomplete", MAX_OUTPUT]);
    t.fake.behave({ tokens: 5 });
    const unbounded = await c.openai.responses.create({ model: "chat-b", input: "Count." });
    expect(last().body.max_tokens).toBeUndefined(); // none sent when the client sent none, as for chat
    expect(unbounded.status).toBe("completed");
  });

  test("input items: messages with parts, developer role, images; vendor extras forwarded; Responses-only fields not", async () => {
    const c = await t.newClient();
    await c.openai.responses.create({
      model: "chat-a",
      input: [
        { role: "developer", content: "Answer in French." },
        { role: "user", content: [{ type: "input_text", text: "What is this?" }, { type: "input_image", image_url: "https://example.com/cat.png", detail: "low" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Un chat.", annotations: [] }] },
        { role: "user", content: "Sure?" },
      ] as OpenAI.Responses.ResponseInput,
      temperature: 0.2,
      top_p: 0.9,
      user: "u-1",
      metadata: { ticket: "42" },
      store: false,
      ...({ top_k: 5 } as {}), // a vendor extra (vLLM's top_k) goes through untouched
    });
    const body = last().body;
    expect(body.messages).toEqual([
      { role: "system", content: "Answer in French." },
      { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "https://example.com/cat.png", detail: "low" } }] },
      { role: "assistant", content: "Un chat." },
      { role: "user", content: "Sure?" },
    ]);
    expect(body).toMatchObject({ temperature: 0.2, top_p: 0.9, user: "u-1", top_k: 5 });
    for (const k of ["metadata", "store", "input", "instructions", "max_output_tokens", "text"]) expect(body[k]).toBeUndefined();
  });

  test("text.format json_schema is forwarded as response_format; responses.parse reads the JSON", async () => {
    const c = await t.newClient();
    t.fake.behave({ reply: '{"colour":"red"}' });
    const schema = { type: "object", properties: { colour: { type: "string" } }, required: ["colour"], additionalProperties: false };
    const r = await c.openai.responses.parse({
      model: "chat-a", input: "A colour?",
      text: { format: { type: "json_schema", name: "colour", schema, strict: true } },
    });
    expect(last().body.response_format).toEqual({ type: "json_schema", json_schema: { name: "colour", schema, strict: true } });
    expect(r.output_parsed).toEqual({ colour: "red" });
    expect(r.text!.format).toMatchObject({ type: "json_schema", name: "colour" });
    await c.openai.responses.create({ model: "chat-a", input: "JSON please", text: { format: { type: "json_object" } } });
    expect(last().body.response_format).toEqual({ type: "json_object" });
  });
});

describe("streamed", () => {
  test("the SDK's stream helper: typed events in order, deltas as they arrive, the final response with the billed usage", async () => {
    const c = await t.newClient(1_000_000);
    const stream = c.openai.responses.stream({ model: "chat-a", input: "Count slowly.", max_output_tokens: 4 });
    const types: string[] = [];
    let text = "";
    const seqs: number[] = [];
    for await (const e of stream) {
      types.push(e.type);
      seqs.push(e.sequence_number);
      if (e.type === "response.output_text.delta") text += e.delta;
    }
    const final = await stream.finalResponse();
    expect(types).toEqual([
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete",
    ]);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(text).toBe(replyText(4));
    const prompt = fakePromptTokens(last().body.messages);
    expect(final).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output_text: replyText(4), usage: { input_tokens: prompt, output_tokens: 4, total_tokens: prompt + 4 } });
    expect(last().body.stream).toBe(true);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 4), 0]);
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", delivered_tokens: 4, completion_tokens: 4, disconnected: false, cost: cost(prompt, 4) });
    // stored before response.incomplete went out
    expect((await c.openai.responses.retrieve(final.id)).output_text).toBe(replyText(4));
  });

  test("completed when the answer ends before the limit; raw events carry the SSE event names", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 3 });
    const res = await fetch(c.baseURL + "/responses", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat-a", input: "hi", stream: true }) });
    expect(res.headers.get("content-type")).toStartWith("text/event-stream");
    const text = await res.text();
    const names = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(names.at(-1)).toBe("response.completed");
    expect(names.filter((n) => n === "response.output_text.delta")).toHaveLength(3);
  });

  test("a client that disconnects mid-stream: upstream aborted at once, charged prompt + the tokens delivered", async () => {
    const k = 3;
    const c = await t.newClient(1_000_000);
    t.fake.behave({ delayBetweenChunksMs: 150 });
    const stream = await c.openai.responses.create({ model: "chat-a", input: "Count slowly.", max_output_tokens: 10, stream: true });
    let seen = 0;
    for await (const e of stream) {
      if (e.type === "response.output_text.delta") seen++;
      if (seen === k) break; // the SDK aborts the HTTP request
    }
    const abort = await t.fake.waitForAbort(undefined, 2_000);
    expect(abort.at - t.fake.requests[0]!.receivedAt).toBeLessThan(k * 150 + 300);
    const prompt = fakePromptTokens(t.fake.requests[0]!.body.messages);
    const usage = await eventually(async () => ((await c.lastUsage())?.disconnected ? c.lastUsage() : null));
    expect(usage).toMatchObject({ route: "/v1/responses", disconnected: true, delivered_tokens: k, completion_tokens: k, prompt_tokens: prompt, cost: cost(prompt, k) });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, k), 0]);
  });

  test("an upstream that breaks mid-stream: an error event, response.failed, only what was delivered is charged", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ errorEventAfterChunks: 2 });
    const stream = c.openai.responses.stream({ model: "chat-a", input: "Count.", max_output_tokens: 8 });
    let text = "";
    const err = await (async () => {
      try {
        for await (const e of stream) if (e.type === "response.output_text.delta") text += e.delta;
      } catch (e) {
        return e as InstanceType<typeof OpenAI.APIError>;
      }
    })();
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe(replyText(2));
    const prompt = fakePromptTokens(t.fake.requests[0]!.body.messages);
    expect(await c.lastUsage()).toMatchObject({ delivered_tokens: 2, cost: cost(prompt, 2) });
  });
});

describe("function calling", () => {
  test("round trip by replaying the output items, then by previous_response_id: the upstream sees tool_calls and the tool result", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
    const input: OpenAI.Responses.ResponseInput = [{ role: "user", content: "Weather in Paris?" }];
    const first = await c.openai.responses.create({ model: "chat-a", input, tools: [weatherTool], tool_choice: "auto", parallel_tool_calls: false });
    expect(last().body.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: weatherTool.parameters, strict: true } }]);
    expect(last().body).toMatchObject({ tool_choice: "auto", parallel_tool_calls: false });
    expect(first.status).toBe("completed");
    expect(first.output).toEqual([expect.objectContaining({ type: "function_call", call_id: "call_fake0", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" })]);
    const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;

    // 1. stateless: the client sends the whole conversation back
    const replay = await c.openai.responses.create({
      model: "chat-a", tools: [weatherTool], store: false,
      input: [...input, ...first.output, { type: "function_call_output", call_id: call.call_id, output: '{"sky":"sunny"}' }] as OpenAI.Responses.ResponseInput,
    });
    const expected = [
      { role: "user", content: "Weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: "call_fake0", content: '{"sky":"sunny"}' },
    ];
    expect(last().body.messages).toEqual(expected);
    expect(replay.output_text).toBe(replyText(16));
    expect(replay).toMatchObject({ store: false });

    // 2. stateful: only the tool result, continuing the stored response
    const next = await c.openai.responses.create({
      model: "chat-a", tools: [weatherTool], previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: '{"sky":"sunny"}' }],
    });
    expect(last().body.messages).toEqual(expected);
    expect(next.previous_response_id).toBe(first.id);
    // and a third turn continues the whole chain
    t.fake.behave({});
    await c.openai.responses.create({ model: "chat-a", previous_response_id: next.id, input: "Thanks!" });
    expect(last().body.messages).toEqual([...expected, { role: "assistant", content: replyText(16) }, { role: "user", content: "Thanks!" }]);
  });

  test("streamed tool call: argument deltas and the finished call in the final response", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] });
    const stream = c.openai.responses.stream({ model: "chat-a", input: "Weather in Paris?", tools: [weatherTool] });
    let args = "";
    const types: string[] = [];
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === "response.function_call_arguments.delta") args += e.delta;
    }
    expect(args).toBe('{"city":"Paris"}');
    expect(types.slice(0, 3)).toEqual(["response.created", "response.in_progress", "response.output_item.added"]);
    expect(types.slice(-3)).toEqual(["response.function_call_arguments.done", "response.output_item.done", "response.completed"]);
    const final = await stream.finalResponse();
    expect(final.output).toEqual([expect.objectContaining({ type: "function_call", call_id: "call_fake0", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" })]);
  });
});

describe("reasoning", () => {
  test("an upstream's reasoning_content becomes a reasoning item before the message (streamed as reasoning_text events), billed, and not sent back", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ reasoning: "Let me count.", tokens: 3 });
    const r = await c.openai.responses.create({ model: "chat-a", input: "Count.", max_output_tokens: 10 });
    expect(r.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(r.output[0]).toMatchObject({ summary: [], content: [{ type: "reasoning_text", text: "Let me count." }] });
    expect(r.output_text).toBe(replyText(3));
    const prompt = fakePromptTokens(last().body.messages);
    expect(r.usage!.output_tokens).toBeGreaterThan(3); // the reasoning tokens are output tokens, as on OpenAI
    expect(await c.lastUsage()).toMatchObject({ completion_tokens: r.usage!.output_tokens, cost: cost(prompt, r.usage!.output_tokens) });

    const stream = c.openai.responses.stream({ model: "chat-a", input: "Count.", max_output_tokens: 10 });
    let thought = "";
    for await (const e of stream) if (e.type === "response.reasoning_text.delta") thought += e.delta;
    const final = await stream.finalResponse();
    expect(thought).toBe("Let me count.");
    expect(final.output.map((o) => o.type)).toEqual(["reasoning", "message"]);
    expect(final.output_text).toBe(replyText(3));
    expect(final.usage!.output_tokens).toBe(r.usage!.output_tokens);

    await c.openai.responses.create({ model: "chat-a", previous_response_id: r.id, input: "Go on." });
    expect(last().body.messages).toEqual([{ role: "user", content: "Count." }, { role: "assistant", content: replyText(3) }, { role: "user", content: "Go on." }]);
  });
});

describe("stored responses", () => {
  test("store: false keeps nothing; another account cannot read, delete or continue a response; delete works", async () => {
    const a = await t.newClient();
    const b = await t.newClient();
    const unstored = await a.openai.responses.create({ model: "chat-a", input: "hi", store: false });
    expect(unstored).toMatchObject({ store: false });
    await expect(settled(a.openai.responses.retrieve(unstored.id))).rejects.toMatchObject({ status: 404, code: "response_not_found" });

    const r = await a.openai.responses.create({ model: "chat-a", input: "hi" });
    await expect(settled(b.openai.responses.retrieve(r.id))).rejects.toMatchObject({ status: 404 });
    await expect(settled(b.openai.responses.delete(r.id))).rejects.toMatchObject({ status: 404 });
    await expect(settled(b.openai.responses.create({ model: "chat-a", input: "more", previous_response_id: r.id }))).rejects.toMatchObject({ status: 400, code: "previous_response_not_found", param: "previous_response_id" });
    await expect(settled(b.openai.responses.create({ model: "chat-a", input: [{ type: "item_reference", id: r.output[0]!.id! }] }))).rejects.toMatchObject({ status: 400, code: "item_not_found", param: "input[0].id" });

    // item_reference to one's own stored output item: the item is sent as the assistant message it was
    await a.openai.responses.create({ model: "chat-a", input: [{ role: "user", content: "hi" }, { type: "item_reference", id: r.output[0]!.id! }, { role: "user", content: "again" }] });
    expect(last().body.messages).toEqual([{ role: "user", content: "hi" }, { role: "assistant", content: replyText(16) }, { role: "user", content: "again" }]);

    const items = await a.openai.responses.inputItems.list(r.id);
    expect(items.data).toEqual([expect.objectContaining({ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] })]);

    await a.openai.responses.delete(r.id);
    await expect(settled(a.openai.responses.retrieve(r.id))).rejects.toMatchObject({ status: 404 });
    await expect(settled(a.openai.responses.create({ model: "chat-a", input: "more", previous_response_id: r.id }))).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
  });
});

describe("refusals, money and limits", () => {
  test("what a chat model cannot do is a 400 naming the field, before anything is held", async () => {
    const c = await t.newClient();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ tools: [{ type: "web_search" }], tool_choice: { type: "web_search_preview" } }, "tool_choice"],
      [{ background: true }, "background"],
      [{ truncation: "auto" }, "truncation"],
      [{ conversation: "conv_1" }, "conversation"],
      [{ input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] }, "input[0].content[0]"],
      [{ input: [{ type: "web_search_call", id: "ws_1" }] }, "input[0].type"],
      [{ input: [{ role: "robot", content: "hi" }] }, "input[0].role"],
      [{ text: { format: { type: "json_schema", schema: {} } } }, "text.format.name"],
      [{ input: [] }, "input"],
    ];
    for (const [extra, param] of cases) {
      const res = await fetch(c.baseURL + "/responses", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat-a", input: "hi", ...extra }) });
      const body = (await res.json()) as any;
      expect({ param, status: res.status, got: body.error?.param }).toEqual({ param, status: 400, got: param });
    }
    expect(t.fake.requests).toHaveLength(0);
    expect((await c.get("/v1/account")).held).toBe(0);
  });

  test("402 when the worst case cannot be held; 429 over the key's token budget; the key's scope applies", async () => {
    const poor = await t.newClient(10);
    await expect(settled(poor.openai.responses.create({ model: "chat-a", input: "hi", max_output_tokens: 8 }))).rejects.toMatchObject({ status: 402, code: "insufficient_quota" });
    const limited = await t.newClient(10_000_000, { limits: { tokens_per_minute: 40 } });
    await limited.openai.responses.create({ model: "chat-a", input: "hi", max_output_tokens: 30 });
    await expect(settled(limited.openai.responses.create({ model: "chat-a", input: "hi", max_output_tokens: 30 }))).rejects.toMatchObject({ status: 429, code: "tokens_rate_limit_exceeded" });
    const embedOnly = await t.newClient(10_000_000, { scopes: ["embeddings"] });
    await expect(settled(embedOnly.openai.responses.create({ model: "chat-a", input: "hi" }))).rejects.toMatchObject({ status: 403, code: "insufficient_scope" });
    expect(t.fake.requests).toHaveLength(1);
  });

  test("upstream failures keep chat's statuses and cost nothing", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ status: 500 });
    await expect(settled(c.openai.responses.create({ model: "chat-a", input: "hi" }))).rejects.toMatchObject({ status: 502, code: "upstream_error" });
    t.fake.behave({ status: 400, errorMessage: "bad tool schema", errorCode: "invalid_value" });
    await expect(settled(c.openai.responses.create({ model: "chat-a", input: "hi" }))).rejects.toMatchObject({ status: 400, code: "invalid_value" });
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
  });
});
