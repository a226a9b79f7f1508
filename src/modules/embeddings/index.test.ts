/**
 * POST /v1/embeddings through the real server (real Postgres, real USE-lite weights and inference),
 * with the official openai SDK as the client, plus pass-through models against a fake upstream.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { fakeEmbedding, startFakeOpenAI, type FakeOpenAI } from "../../../test/fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";

// An odd price so that rounding up is visible: 1.234567 USD per million tokens.
const LOCAL_PRICE = 1_234_567;
const PT_PRICE = 130_000;
const UPSTREAM_MODEL = "text-embedding-3-small";

let s: TestServer;
let fake: FakeOpenAI;
let client: OpenAI;
let clientKey: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "reelay-emb-"));
  const modelsFile = join(dir, "models.json");
  writeFileSync(modelsFile, JSON.stringify({
    builtins: false,
    models: [
      { id: "use-lite", plugin: "local-embeddings", pricing: { inputPerMillion: LOCAL_PRICE } },
      { id: "pt-embed", plugin: "openai-compatible", pricing: { inputPerMillion: PT_PRICE },
        options: { baseUrl: fake.url, upstreamModel: UPSTREAM_MODEL, capabilities: ["embeddings"], timeouts: { totalMs: 1500 } } },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: modelsFile });
  const c = await s.newClient({ credits: 50_000_000 });
  clientKey = c.key;
  client = sdk(c.key);
}, 120_000);

afterAll(async () => {
  await s?.close();
  await fake?.stop();
});

afterEach(() => fake.reset());

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${s.url}/v1`, maxRetries: 0 });

const cosine = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { dot += a[i]! * b[i]!; na += a[i]! ** 2; nb += b[i]! ** 2; }
  return dot / Math.sqrt(na * nb);
};

async function account(key = clientKey) {
  const res = await fetch(`${s.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
  return (await res.json()) as { balance: number; held: number; available: number };
}

async function usageRows(key = clientKey) {
  const res = await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
  return ((await res.json()) as { data: Array<Record<string, any>> }).data;
}

/** raw POST, for bodies the SDK's types would refuse */
async function post(body: unknown, key = clientKey) {
  const res = await fetch(`${s.url}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function expectEnvelope(r: { status: number; body: any }, status: number, param: string | null, code?: string) {
  expect(r.status).toBe(status);
  expect(Object.keys(r.body)).toEqual(["error"]);
  expect(typeof r.body.error.message).toBe("string");
  expect(typeof r.body.error.type).toBe("string");
  expect(r.body.error.param).toBe(param);
  if (code) expect(r.body.error.code).toBe(code);
}

describe("local model (use-lite)", () => {
  test("SDK default (base64) and explicit float decode to the same numbers", async () => {
    const input = ["How old are you?", "The quick brown fox jumps over the lazy dog."];
    const b64 = await client.embeddings.create({ model: "use-lite", input });
    const flt = await client.embeddings.create({ model: "use-lite", input, encoding_format: "float" });
    expect(b64.object).toBe("list");
    expect(b64.model).toBe("use-lite");
    expect(b64.data.map((d) => [d.object, d.index])).toEqual([["embedding", 0], ["embedding", 1]]);
    for (const i of [0, 1]) {
      const a = b64.data[i]!.embedding, b = flt.data[i]!.embedding;
      expect(a.length).toBe(512);
      expect(b.length).toBe(512);
      for (let k = 0; k < 512; k++) expect(Math.abs(a[k]! - b[k]!)).toBeLessThanOrEqual(1e-6);
    }
    // on the wire: base64 of 512 little-endian float32 = 2048 bytes
    const raw = await post({ model: "use-lite", input: "How old are you?", encoding_format: "base64" });
    expect(typeof raw.body.data[0].embedding).toBe("string");
    expect(Buffer.from(raw.body.data[0].embedding, "base64").length).toBe(2048);
  });

  test("same text gives the same vector across requests, alone or in a batch; vectors are unit length", async () => {
    const text = "A deterministic sentence about embeddings.";
    const one = await client.embeddings.create({ model: "use-lite", input: text, encoding_format: "float" });
    const batch = await client.embeddings.create({ model: "use-lite", input: ["something else entirely", text], encoding_format: "float" });
    const again = await client.embeddings.create({ model: "use-lite", input: text, encoding_format: "float" });
    expect(again.data[0]!.embedding).toEqual(one.data[0]!.embedding);
    const inBatch = batch.data[1]!.embedding;
    for (let k = 0; k < 512; k++) expect(Math.abs(inBatch[k]! - one.data[0]!.embedding[k]!)).toBeLessThan(1e-5);
    for (const d of [...one.data, ...batch.data]) {
      const norm = Math.sqrt(d.embedding.reduce((n, x) => n + x * x, 0));
      expect(Math.abs(norm - 1)).toBeLessThan(1e-3);
    }
  });

  test("semantically close pairs score higher than unrelated ones (7 fixed triples)", async () => {
    const triples: Array<[string, string, string]> = [
      ["How old are you?", "What is your age?", "The weather is sunny today."],
      ["I love dogs.", "Puppies are my favourite animals.", "The stock market fell sharply yesterday."],
      ["Where is the train station?", "How do I get to the railway station?", "I enjoy baking chocolate cake."],
      ["The food was delicious.", "The meal tasted great.", "My laptop battery died."],
      ["He is playing the guitar.", "A man is performing music on a guitar.", "Parliament passed a new tax law."],
      ["It is raining heavily outside.", "There is a storm with lots of rain.", "She bought a new pair of shoes."],
      ["How can I reset my password?", "I forgot my password, how do I change it?", "Elephants live in Africa and Asia."],
    ];
    const res = await client.embeddings.create({ model: "use-lite", input: triples.flat() });
    expect(res.data.length).toBe(21);
    const v = res.data.map((d) => d.embedding);
    for (let i = 0; i < triples.length; i++) {
      const [a, close, far] = [v[3 * i]!, v[3 * i + 1]!, v[3 * i + 2]!];
      const near = cosine(a, close), distant = cosine(a, far);
      expect({ triple: triples[i]![0], better: near > distant + 0.1 }).toEqual({ triple: triples[i]![0], better: true });
    }
  });

  test("usage = the model tokenizer's count; ledger charge = ceil(tokens × price / 1e6); usage row matches", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const input = ["Billing is on input tokens only.", "Every change is a ledger row, and the ledger sums to the balance."];
    const counted = await s.deps.registry.get("use-lite")!.instance.embeddings!.countTokens!(input);
    const tokens = counted[0]! + counted[1]!;
    const before = await account(c.key);
    const res = await sdk(c.key).embeddings.create({ model: "use-lite", input });
    expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    const cost = Math.ceil((tokens * LOCAL_PRICE) / 1_000_000);
    expect(cost).toBeGreaterThan(0);
    const after = await account(c.key);
    expect(before.balance - after.balance).toBe(cost);
    expect(after.held).toBe(0);
    const rows = await usageRows(c.key);
    expect(rows.length).toBe(1);
    expect(rows[0]).toMatchObject({ kind: "embeddings", model: "use-lite", prompt_tokens: tokens, cost, status: 200, token_source: "local" });
  });

  test("limits and bad inputs answer 400 envelopes naming the field", async () => {
    const before = await account();
    expectEnvelope(await post({ model: "use-lite", input: Array.from({ length: 2049 }, () => "a") }), 400, "input", "too_many_inputs");
    // OpenAI's limits, in tokens: 8,192 per input, 300,000 per request
    const long = await post({ model: "use-lite", input: ["fine", Array.from({ length: 9_000 }, (_, i) => `w${i}`).join(" ")] });
    expectEnvelope(long, 400, "input", "input_too_long");
    expect(long.body.error.message).toBe("'input[1]' is longer than this model's limit of 8192 tokens per input.");
    const total = await post({ model: "use-lite", input: Array.from({ length: 2_048 }, () => "word ".repeat(150)) });
    expectEnvelope(total, 400, "input", "input_too_long");
    expect(total.body.error.message).toMatch(/limit of 300000 tokens per request \(all inputs together\)/);
    expectEnvelope(await post({ model: "use-lite", input: [] }), 400, "input", "invalid_input");
    expectEnvelope(await post({ model: "use-lite", input: "" }), 400, "input", "invalid_input");
    expectEnvelope(await post({ model: "use-lite", input: ["ok", ""] }), 400, "input", "invalid_input");
    expectEnvelope(await post({ model: "use-lite", input: 5 }), 400, "input");
    expectEnvelope(await post({ model: "use-lite", input: ["a", 1] }), 400, "input");
    expectEnvelope(await post({ model: "use-lite", input: { text: "a" } }), 400, "input");
    expectEnvelope(await post({ model: "use-lite" }), 400, "input");
    expectEnvelope(await post({ input: "a" }), 400, "model");
    expectEnvelope(await post({ model: 7, input: "a" }), 400, "model");
    expectEnvelope(await post({ model: "use-lite", input: [[1, 2, 3]] }), 400, "input", "invalid_input");
    expectEnvelope(await post({ model: "use-lite", input: "a", dimensions: 256 }), 400, "dimensions", "unsupported_parameter");
    expectEnvelope(await post({ model: "use-lite", input: "a", encoding_format: "int8" }), 400, "encoding_format");
    expectEnvelope(await post({ model: "use-lite", input: "a", user: 42 }), 400, "user");
    expectEnvelope(await post("{not json"), 400, null, "invalid_json");
    const err = await client.embeddings.create({ model: "use-lite", input: "a", dimensions: 8 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.param).toBe("dimensions");
    expect(await account()).toEqual(before); // nothing held, nothing charged
  });

  test("a big request is processed batch by batch: one-sentence requests sent meanwhile keep being answered while it runs", async () => {
    const big = Array.from({ length: 512 }, (_, i) => `Sentence ${i} of a long document about rivers, budgets and bicycles.`);
    const started = performance.now();
    let bigDone = 0;
    const bigCall = post({ model: "use-lite", input: big, encoding_format: "base64" }).then((r) => ((bigDone = performance.now()), r));
    const answered: number[] = [];
    while (!bigDone) {
      const small = await post({ model: "use-lite", input: "Just one sentence." });
      expect(small.status).toBe(200);
      if (!bigDone) answered.push(performance.now());
    }
    const r = await bigCall;
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBe(512);
    // Fair batching serves them round by round, all along; first-come-first-served would hold every
    // one sent after the big request until its last batch (a gap of most of its duration).
    const gaps = answered.slice(1).map((t, i) => t - answered[i]!);
    expect(answered.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...gaps, bigDone - answered.at(-1)!)).toBeLessThan(0.4 * (bigDone - started));
  }, 180_000);

  test("user is accepted", async () => {
    const res = await client.embeddings.create({ model: "use-lite", input: "hello", user: "end-user-7" });
    expect(res.data[0]!.embedding.length).toBe(512);
  });

  test("402 insufficient_quota when the account cannot afford it; nothing charged", async () => {
    const c = await s.newClient({ credits: 10 });
    const err = await sdk(c.key).embeddings.create({ model: "use-lite", input: "a fairly long sentence ".repeat(40) }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(402);
    expect(err.code).toBe("insufficient_quota");
    expect(await account(c.key)).toMatchObject({ balance: 10, held: 0 });
    expect(await usageRows(c.key)).toEqual([]);
  });

  test("unknown model, or one the key may not use → 404 model_not_found", async () => {
    const err = await client.embeddings.create({ model: "no-such-model", input: "a" }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    expect(err.param).toBe("model");
    const c = await s.newClient({ models: ["pt-embed"] });
    const denied = await post({ model: "use-lite", input: "a" }, c.key);
    expectEnvelope(denied, 404, "model", "model_not_found");
  });

  test("missing key → 401 envelope", async () => {
    const res = await fetch(`${s.url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "use-lite", input: "a" }) });
    expectEnvelope({ status: res.status, body: await res.json() }, 401, null, "invalid_api_key");
  });
});

describe("pass-through model (openai-compatible)", () => {
  test("body forwarded unchanged except model; float passes through", async () => {
    const body = { model: "pt-embed", input: ["alpha", "beta"], encoding_format: "float", dimensions: 4, user: "u-1", some_vendor_flag: { keep: [1, "x"] } };
    const r = await post(body);
    expect(r.status).toBe(200);
    expect(fake.requests.length).toBe(1);
    expect(fake.requests[0]!.path).toBe("/v1/embeddings");
    expect(fake.requests[0]!.body).toEqual({ ...body, model: UPSTREAM_MODEL });
    expect(r.body.model).toBe("pt-embed");
    expect(r.body.data[1].embedding).toEqual(Array.from(fakeEmbedding(`${UPSTREAM_MODEL}\u0000beta`, 4)));
    expect(r.body.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
  });

  test("base64 passes through and the SDK decodes it; billing on the upstream's usage", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const res = await sdk(c.key).embeddings.create({ model: "pt-embed", input: "gamma delta epsilon" });
    expect(fake.requests[0]!.body.encoding_format).toBe("base64");
    const expected = Array.from(fakeEmbedding(`${UPSTREAM_MODEL}\u0000gamma delta epsilon`, 8));
    expect(res.data[0]!.embedding).toEqual(expected);
    const tokens = res.usage.prompt_tokens;
    expect(tokens).toBeGreaterThan(0);
    const cost = Math.ceil((tokens * PT_PRICE) / 1_000_000);
    expect(1_000_000 - (await account(c.key)).balance).toBe(cost);
    expect((await usageRows(c.key))[0]).toMatchObject({ kind: "embeddings", model: "pt-embed", prompt_tokens: tokens, cost, status: 200 });
  });

  test("LangChain-sized batches pass: 512 inputs of 1,000 characters (was refused over 200,000 characters), and 2,048 inputs", async () => {
    const chunk = (i: number) => `Chunk ${i}: ` + "The river carried the old library's books downstream. ".repeat(18).slice(0, 990);
    const r = await post({ model: "pt-embed", input: Array.from({ length: 512 }, (_, i) => chunk(i)), encoding_format: "float" });
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBe(512);
    expect(fake.requests[0]!.body.input.length).toBe(512);
    const many = await post({ model: "pt-embed", input: Array.from({ length: 2_048 }, (_, i) => `item ${i}`), encoding_format: "float" });
    expect(many.status).toBe(200);
    expect(many.body.data.length).toBe(2_048);
    expectEnvelope(await post({ model: "pt-embed", input: Array.from({ length: 2_049 }, () => "a") }), 400, "input", "too_many_inputs");
    expectEnvelope(await post({ model: "pt-embed", input: Array.from({ length: 400 }, () => "tok ".repeat(800)) }), 400, "input", "input_too_long");
    expect(fake.requests.length).toBe(2); // refused requests never reach the upstream
  });

  test("token-id arrays are forwarded unchanged", async () => {
    const r = await post({ model: "pt-embed", input: [[1, 2, 3], [4, 5]], encoding_format: "float" });
    expect(r.status).toBe(200);
    expect(fake.requests[0]!.body.input).toEqual([[1, 2, 3], [4, 5]]);
    expect(r.body.data.length).toBe(2);
    expect(r.body.usage.prompt_tokens).toBe(5);
  });

  test("upstream failures map to envelopes (400 → 400, 401 → 502, 500 → 502, hang → 504); hold released", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const cases: Array<[Parameters<FakeOpenAI["behave"]>[0], number, string | null]> = [
      [{ status: 400, errorMessage: "bad input upstream", errorCode: "bad_input" }, 400, "bad_input"],
      [{ status: 401 }, 502, "upstream_auth_failed"],
      [{ status: 503 }, 502, "upstream_error"],
      [{ hang: true }, 504, "upstream_timeout"],
    ];
    for (const [behaviour, status, code] of cases) {
      fake.behave(behaviour);
      const r = await post({ model: "pt-embed", input: "x" }, c.key);
      expectEnvelope(r, status, null, code ?? undefined);
    }
    expect(await account(c.key)).toMatchObject({ balance: 1_000_000, held: 0 });
    const rows = await usageRows(c.key);
    expect(rows.map((r) => [r.status, r.cost])).toEqual([[504, 0], [502, 0], [502, 0], [400, 0]]);
  });

  test("client going away mid-call: upstream request aborted, hold released, usage row marked disconnected", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    fake.behave({ hang: true });
    const ac = new AbortController();
    const pending = fetch(`${s.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "pt-embed", input: "never answered" }),
      signal: ac.signal,
    }).catch((e) => e);
    while (fake.requests.length === 0) await Bun.sleep(10);
    expect((await account(c.key)).held).toBeGreaterThan(0);
    ac.abort();
    await pending;
    await fake.waitForAbort(fake.requests[0]!.id, 1000);
    let rows: Array<Record<string, any>> = [];
    for (let i = 0; i < 50 && rows.length === 0; i++) { await Bun.sleep(20); rows = await usageRows(c.key); }
    expect(rows[0]).toMatchObject({ status: 499, cost: 0, disconnected: true });
    expect(await account(c.key)).toMatchObject({ balance: 1_000_000, held: 0 });
  });

  test("dimensions is allowed for a model that supports it", async () => {
    const res = await client.embeddings.create({ model: "pt-embed", input: "zeta", dimensions: 16 });
    expect(res.data[0]!.embedding.length).toBe(16);
  });
});
