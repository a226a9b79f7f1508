import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { fakePromptTokens, replyText } from "../fakes/openai-upstream.ts";
import { cost, MAX_OUTPUT, startChatTestServer, type ChatTestServer } from "./chat-server.ts";

let t: ChatTestServer;
beforeAll(async () => { t = await startChatTestServer(); });
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const messages = [{ role: "system" as const, content: "Be brief." }, { role: "user" as const, content: "Count for me, please." }];
const prompt = fakePromptTokens(messages);

async function raw(key: string, body: unknown) {
  const res = await fetch(t.s.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

async function apiError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await p.then(() => undefined, (e) => e);
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err;
}

describe("POST /v1/chat/completions (non-streamed)", () => {
  test("returns the completion under reelay's model id; charges exactly the reported usage", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 5 }); // the reply stops at 5 of the 8 tokens held
    const completion = await c.openai.chat.completions.create({ model: "chat-a", messages, max_tokens: 8 });
    expect(completion.model).toBe("chat-a");
    expect(completion.choices[0]!.message.content).toBe(replyText(5));
    expect(completion.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 });
    expect(t.fake.requests[0]!.body.model).toBe("up-a");

    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - cost(prompt, 5), 0]);
    const ledger = await t.ledger(c.accountId);
    expect(ledger.map((r) => r.kind)).toEqual(["grant", "hold", "charge", "release"]);
    expect(ledger[1]!.held_change).toBe(cost(prompt, 8)); // hold: estimated prompt (= the fake's count) + 8 output tokens
    expect(ledger[2]!.amount).toBe(-cost(prompt, 5));
    expect(ledger[3]!.held_change).toBe(-cost(0, 3));

    const usage = (await c.get("/v1/usage")).data[0];
    expect(usage).toMatchObject({ kind: "chat", model: "chat-a", prompt_tokens: prompt, completion_tokens: 5, reported_tokens: 5, token_source: "upstream", cost: cost(prompt, 5), status: 200, disconnected: false });
  });

  test("tools, response_format and unknown vendor parameters reach the upstream unchanged", async () => {
    const c = await t.newClient();
    const body = {
      model: "chat-a", messages, max_tokens: 3, seed: 7, logprobs: true,
      tools: [{ type: "function", function: { name: "lookup", description: "d", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } } }],
      tool_choice: "auto", response_format: { type: "json_object" },
      vendor_extra: { top_k: 5, repetition_penalty: 1.1, nested: [1, "x", null] },
    };
    const res = await raw(c.key, body);
    expect(res.status).toBe(200);
    expect(t.fake.requests[0]!.body).toEqual({ ...body, model: "up-a" });
  });

  test("max_tokens and max_completion_tokens are clamped to the model maximum; absent ones are not added", async () => {
    const c = await t.newClient();
    await c.openai.chat.completions.create({ model: "chat-a", messages, max_tokens: 1000, max_completion_tokens: 999 });
    expect(t.fake.requests[0]!.body.max_tokens).toBe(MAX_OUTPUT);
    expect(t.fake.requests[0]!.body.max_completion_tokens).toBe(MAX_OUTPUT);
    await c.openai.chat.completions.create({ model: "chat-a", messages, max_tokens: 2 });
    expect(t.fake.requests[1]!.body.max_tokens).toBe(2);
    const completion = await c.openai.chat.completions.create({ model: "chat-a", messages });
    expect("max_tokens" in t.fake.requests[2]!.body).toBe(false);
    // the fake's default reply is 16 tokens, over the model's 8 the request was allowed: the
    // upstream ignored the limit; billed (and shown) 8, recorded as an upstream anomaly (issue 13.10)
    expect(completion.usage!.completion_tokens).toBe(MAX_OUTPUT);
    const acct = await c.get("/v1/account");
    expect(acct.held).toBe(0);
    expect((await c.get("/v1/usage")).data[0]).toMatchObject({ completion_tokens: MAX_OUTPUT, anomaly: "completion_tokens: upstream reported 16 > 8 allowed; counted locally; completion_tokens: counted 16 > 8 allowed; capped" });
  });

  test("missing usage → billed by reelay's tokenizer, recorded as local", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ omitUsage: true });
    const completion = await c.openai.chat.completions.create({ model: "chat-a", messages, max_tokens: 4 });
    expect(completion.usage).toBeUndefined();
    const usage = (await c.get("/v1/usage")).data[0];
    expect(usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: 4, reported_tokens: null, token_source: "local", cost: cost(prompt, 4) });
    expect((await c.get("/v1/account")).balance).toBe(1_000_000 - cost(prompt, 4));
  });

  test("402 when the worst case is not affordable; nothing held or charged", async () => {
    const c = await t.newClient(cost(prompt, MAX_OUTPUT) - 1);
    const err = await apiError(c.openai.chat.completions.create({ model: "chat-a", messages }));
    expect(err.status).toBe(402);
    expect((err.error as any).code).toBe("insufficient_quota");
    expect(t.fake.requests.length).toBe(0);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([cost(prompt, MAX_OUTPUT) - 1, 0]);
  });
});

describe("upstream failures", () => {
  async function failing(model: string, expectStatus: number) {
    const c = await t.newClient(1_000_000);
    const err = await apiError(c.openai.chat.completions.create({ model, messages, max_tokens: 3 }));
    expect(err.status).toBe(expectStatus);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
    const usage = (await c.get("/v1/usage")).data[0];
    expect(usage).toMatchObject({ cost: 0, status: expectStatus });
    expect((await t.ledger(c.accountId)).map((r) => r.kind)).toEqual(["grant", "hold", "release"]);
    return { err, usage };
  }

  test("upstream 400 → 400 with the upstream's message; hold released", async () => {
    t.fake.behave({ status: 400, errorMessage: "This model's maximum context length is 4096 tokens", errorCode: "context_length_exceeded" });
    const { err } = await failing("chat-a", 400);
    expect(err.message).toContain("maximum context length is 4096");
    expect((err.error as any).code).toBe("context_length_exceeded");
  });

  test("upstream 401 → 502 saying it is reelay's credential, not the client's key", async () => {
    t.fake.behave({ status: 401, errorMessage: "Incorrect API key provided" });
    const { err } = await failing("chat-a", 502);
    expect(err.message).toContain("not a problem with your API key");
  });

  test("upstream 500 → 502 upstream_error", async () => {
    t.fake.behave({ status: 500, errorMessage: "CUDA out of memory" });
    const { err, usage } = await failing("chat-a", 502);
    expect((err.error as any).type).toBe("upstream_error");
    expect(usage.status).toBe(502);
  });

  test("connection refused → 502", async () => {
    const { err } = await failing("chat-refused", 502);
    expect((err.error as any).code).toBe("upstream_unavailable");
  });

  test("streamed first-byte timeout → 504 before any output", async () => {
    t.fake.behave({ delayFirstChunkMs: 2_000 });
    const c = await t.newClient(1_000_000);
    const err = await apiError(c.openai.chat.completions.create({ model: "chat-a", messages, stream: true }));
    expect(err.status).toBe(504);
    expect((err.error as any).type).toBe("timeout_error");
    await t.fake.waitForAbort();
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000, 0]);
  });

  test("streamed upstream 5xx → 502 status, not a broken stream", async () => {
    t.fake.behave({ status: 503 });
    const c = await t.newClient(1_000_000);
    const res = await raw(c.key, { model: "chat-a", messages, stream: true });
    expect(res.status).toBe(502);
    expect(res.body.error.type).toBe("upstream_error");
  });
});

describe("validation", () => {
  test("bad bodies are 400 with the offending param, never 500; nothing reaches the upstream", async () => {
    const c = await t.newClient();
    const cases: Array<[unknown, string | null]> = [
      [{ model: "chat-a" }, "messages"],
      [{ model: "chat-a", messages: "hi" }, "messages"],
      [{ model: "chat-a", messages: [] }, "messages"],
      [{ model: "chat-a", messages: [1] }, "messages[0]"],
      [{ model: "chat-a", messages, stream: "yes" }, "stream"],
      [{ model: "chat-a", messages, max_tokens: 0 }, "max_tokens"],
      [{ model: "chat-a", messages, max_tokens: 2.5 }, "max_tokens"],
      [{ model: "chat-a", messages, stream_options: "x" }, "stream_options"],
      [{ messages }, "model"],
    ];
    for (const [body, param] of cases) {
      const res = await raw(c.key, body);
      expect([res.status, res.body.error?.param, res.body.error?.type]).toEqual([400, param, "invalid_request_error"]);
    }
    const bad = await raw(c.key, "{not json");
    expect(bad.status).toBe(400);
    expect(t.fake.requests.length).toBe(0);
  });

  test("unknown model → 404 model_not_found; a key limited to other models gets the same", async () => {
    const c = await t.newClient(1_000_000, { models: ["chat-running"] });
    for (const model of ["no-such-model", "chat-a"]) {
      const err = await apiError(c.openai.chat.completions.create({ model, messages }));
      expect([err.status, (err.error as any).code, (err.error as any).param]).toEqual([404, "model_not_found", "model"]);
    }
  });

  test("missing key → 401 envelope", async () => {
    const res = await fetch(t.s.url + "/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chat-a", messages }) });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("invalid_api_key");
  });
});
