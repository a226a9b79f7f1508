/**
 * A hostile (or broken) upstream reports absurd usage: it can neither drain an account, nor get a
 * 500, nor give output away. Non-credible numbers are billed on reelay's own count, capped to what
 * the request allowed, and the usage row says what happened (`anomaly`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { query } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { expectInvariants } from "./support.ts";

/** 3 micro-dollars per prompt token, 15 per completion token */
const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const cost = (prompt: number, completion: number) => prompt * 3 + completion * 15;
const messages = [{ role: "user", content: "Say three words." }];
const PROMPT = 3 + (3 + 1 + 4); // reelay's cookbook estimate (= the fake's count): reply priming + one message of "user" + 4 tokens

let fake: FakeOpenAI;
let s: TestServer;
let client: { key: string; accountId: string };
let spent = 0;

const dir = mkdtempSync(join(tmpdir(), "reelay-hostile-"));

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const file = join(dir, "models.json");
  const chat = (id: string, extra: Record<string, unknown>) => ({ id, plugin: "openai-compatible", options: { baseUrl: fake.url, timeouts: { totalMs: 5_000 } }, pricing: PRICING, ...extra });
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      chat("bounded", { maxOutputTokens: 8 }),
      chat("unbounded", {}),
      { ...chat("running", { maxOutputTokens: 8 }), options: { baseUrl: fake.url, continuousUsageStats: true, timeouts: { totalMs: 5_000 } } },
      { id: "emb", plugin: "openai-compatible", pricing: PRICING, options: { baseUrl: fake.url, capabilities: ["embeddings"], timeouts: { totalMs: 5_000 } } },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
  client = await s.newClient({ credits: 1_000_000 });
}, 60_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s?.close();
  await fake?.stop();
});

const post = (path: string, body: unknown) =>
  fetch(s.url + path, { method: "POST", headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
const lastUsage = async () => ((await (await fetch(s.url + "/v1/usage?limit=1", { headers: { authorization: `Bearer ${client.key}` } })).json()) as any).data[0];
const balance = async () => ((await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${client.key}` } })).json()) as any).balance as number;

/** Send one request with the upstream reporting `usageJson`; check what was billed. */
async function hostile(model: string, usageJson: string, body: Record<string, unknown>, want: { prompt: number; completion: number; anomaly: RegExp; source?: string }) {
  fake.behave({ tokens: 3, usageJson });
  const res = await post("/v1/chat/completions", { model, messages, ...body });
  const text = body.stream ? await res.text() : null;
  expect(res.status).toBe(200);
  const usage = await lastUsage();
  expect(usage).toMatchObject({ prompt_tokens: want.prompt, completion_tokens: want.completion, token_source: want.source ?? "local", cost: cost(want.prompt, want.completion), status: 200 });
  expect(usage.anomaly).toMatch(want.anomaly);
  spent += cost(want.prompt, want.completion);
  expect(await balance()).toBe(1_000_000 - spent);
  return { res, text };
}

describe("absurd usage from the upstream", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["1e9 completion tokens for a 3-token answer", `{"prompt_tokens":${PROMPT},"completion_tokens":1000000000,"total_tokens":1000000011}`, /completion_tokens: upstream reported 1000000000 > 8 allowed/],
    ["negative", `{"prompt_tokens":${PROMPT},"completion_tokens":-5,"total_tokens":9}`, /completion_tokens: upstream reported -5, not a count/],
    ["fractional", `{"prompt_tokens":${PROMPT},"completion_tokens":2.5,"total_tokens":16.5}`, /completion_tokens: upstream reported 2.5, not a count/],
    ["a string", `{"prompt_tokens":${PROMPT},"completion_tokens":"3","total_tokens":17}`, /completion_tokens: upstream reported "3", not a count/],
    ["1e400 (Infinity once parsed)", `{"prompt_tokens":${PROMPT},"completion_tokens":1e400,"total_tokens":1e400}`, /completion_tokens: upstream reported Infinity, not a count/],
  ];
  for (const [name, usageJson, anomaly] of cases) {
    test(`${name}: billed on reelay's count, the response says so, no 500`, async () => {
      const { res } = await hostile("bounded", usageJson, { max_tokens: 16 }, { prompt: PROMPT, completion: 3, anomaly });
      expect((await res.json() as any).usage).toEqual({ prompt_tokens: PROMPT, completion_tokens: 3, total_tokens: PROMPT + 3 });
    });
  }

  test("a prompt count far beyond the request: billed on reelay's estimate", async () => {
    await hostile("bounded", `{"prompt_tokens":1000000000,"completion_tokens":3,"total_tokens":1000000003}`, {}, { prompt: PROMPT, completion: 3, source: "upstream", anomaly: /prompt_tokens: upstream reported 1000000000 > 300 allowed/ });
  });

  test("a model with no output limit: 1e9 is still not credible", async () => {
    await hostile("unbounded", `{"prompt_tokens":${PROMPT},"completion_tokens":1000000000,"total_tokens":1000000014}`, {}, { prompt: PROMPT, completion: 3, anomaly: /> 10000000 allowed/ });
  });

  test("n choices allow n × max_tokens: a count within that is credible and billed as reported", async () => {
    fake.behave({ tokens: 3, usageJson: `{"prompt_tokens":${PROMPT},"completion_tokens":15,"total_tokens":29}` });
    const res = await post("/v1/chat/completions", { model: "bounded", messages, max_tokens: 8, n: 2 });
    expect(res.status).toBe(200);
    expect(await lastUsage()).toMatchObject({ completion_tokens: 15, token_source: "upstream", anomaly: null, cost: cost(PROMPT, 15) });
    spent += cost(PROMPT, 15);
  });

  test("streamed: an absurd final usage chunk is billed on the tokens delivered", async () => {
    const { text } = await hostile("bounded", `{"prompt_tokens":${PROMPT},"completion_tokens":1000000000,"total_tokens":1000000014}`, { stream: true, max_tokens: 16 }, { prompt: PROMPT, completion: 3, anomaly: /completion_tokens: upstream reported 1000000000 > 8 allowed/ });
    expect(text).toEndWith("data: [DONE]\n\n");
  });

  test("streamed with running usage, client gone after 2 chunks: absurd running counts are not billed", async () => {
    fake.behave({ tokens: 8, delayBetweenChunksMs: 150, usageJson: `{"prompt_tokens":${PROMPT},"completion_tokens":999999999,"total_tokens":1}` });
    const ctl = new AbortController();
    const res = await fetch(s.url + "/v1/chat/completions", {
      method: "POST", signal: ctl.signal, headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "running", messages, stream: true }),
    });
    const reader = res.body!.getReader();
    let got = "";
    while ((got.match(/data: \{/g) ?? []).length < 2) got += new TextDecoder().decode((await reader.read()).value);
    ctl.abort();
    let usage: any;
    for (let i = 0; i < 100 && usage?.disconnected !== true; i++) (await Bun.sleep(30), (usage = await lastUsage()));
    expect(usage).toMatchObject({ disconnected: true, prompt_tokens: PROMPT, token_source: "local" });
    expect(usage.completion_tokens).toBe(usage.delivered_tokens);
    expect(usage.completion_tokens).toBeLessThanOrEqual(3);
    expect(usage.anomaly).toMatch(/completion_tokens: upstream reported 999999999 > 8 allowed/);
    spent += usage.cost;
  });

  test("embeddings: an absurd prompt count is billed on reelay's count", async () => {
    fake.behave({ usageJson: `{"prompt_tokens":1000000000,"total_tokens":1000000000}` });
    const res = await post("/v1/embeddings", { model: "emb", input: "three small words" });
    expect(res.status).toBe(200);
    const usage = await lastUsage();
    expect(usage).toMatchObject({ kind: "embeddings", prompt_tokens: 3, token_source: "local", cost: 9 });
    expect(usage.anomaly).toMatch(/prompt_tokens: upstream reported 1000000000 > 76 allowed/);
    spent += 9;
  });

  test("after all of it: the account paid only for what was delivered; the ledger is exact", async () => {
    fake.behave({});
    expect(await balance()).toBe(1_000_000 - spent);
    expect(spent).toBeLessThan(5_000);
    const anomalies = await query<{ n: number }>(s.deps.database.db, sql`SELECT count(*)::int AS n FROM usage_records WHERE account_id = ${client.accountId} AND anomaly IS NOT NULL`);
    expect(anomalies[0]!.n).toBe(10);
    await s.deps.billing.sync();
    await expectInvariants(s.deps.database.db, [client.accountId]);
  });
});
