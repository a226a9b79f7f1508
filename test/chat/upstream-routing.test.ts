/**
 * Several upstream deployments per model (openai-compatible), as a client and an operator see them:
 * weights, failover, circuit breakers, Retry-After, maxConcurrent, no retry after a stream's first
 * byte, model fallbacks billed at the serving model's prices, and GET /admin/upstreams + /metrics.
 * Real server, real Postgres, fake upstreams on loopback ports, the official OpenAI SDK.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { Writable } from "node:stream";
import { refusedUrl, startTestServer, testConfig, type TestServer } from "../support/harness.ts";
import { createLogger } from "../../src/logger.ts";
import { buildModels } from "../../src/registry/build-models.ts";
import { eventually } from "./chat-server.ts";

/** $3 / $15 per million tokens; the fallback model costs $1 / $2 */
const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const CHEAP = { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 };
const TIMEOUTS = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 10_000 };
// the cooldown must outlast the 12 requests that open the circuit: at 600 ms a loaded CI box let a
// half-open probe through before the test had asserted "no more traffic"
const FAST_BREAKER = { consecutiveFailures: 3, cooldownMs: 2_500, minRequests: 1000 };

let a: FakeOpenAI, b: FakeOpenAI, c: FakeOpenAI, goneUrl: string;
let s: TestServer;
let openai: OpenAI;
let key: string;
let accountId: string;
const logLines: Array<Record<string, any>> = [];

beforeAll(async () => {
  [a, b, c] = await Promise.all([startFakeOpenAI(), startFakeOpenAI(), startFakeOpenAI()]);
  goneUrl = await refusedUrl(); // nothing listens there: connection refused
  const dir = mkdtempSync(join(tmpdir(), "reelay-routing-"));
  const file = join(dir, "models.json");
  const dep = (name: string, fake: FakeOpenAI | string, extra: Record<string, unknown> = {}) => ({ name, baseUrl: typeof fake === "string" ? fake : fake.url, ...extra });
  const model = (id: string, options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ id, plugin: "openai-compatible", options: { timeouts: TIMEOUTS, upstreamModel: `${id}-up`, ...options }, pricing: PRICING, maxOutputTokens: 8, ...extra });
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      model("weighted", { deployments: [dep("a", a, { weight: 1 }), dep("b", b, { weight: 3 })] }),
      model("breaker", { deployments: [dep("a", a), dep("b", b)], routing: { breaker: FAST_BREAKER } }),
      model("limited", { deployments: [dep("a", a), dep("b", b)], routing: { breaker: FAST_BREAKER } }),
      model("refused", { deployments: [dep("gone", goneUrl), dep("c", c)], capabilities: ["chat", "embeddings"] }),
      model("single-limited", { baseUrl: c.url }),
      model("keyfault", { deployments: [dep("a", a, { weight: 1000 }), dep("b", b)] }),
      model("dies", { deployments: [dep("a", a), dep("b", b)] }),
      model("bounded", { deployments: [dep("a", a, { maxConcurrent: 3 }), dep("b", b, { maxConcurrent: 2 })] }),
      model("primary", { deployments: [dep("a", a), dep("b", b)], routing: { breaker: FAST_BREAKER } }, { fallbacks: ["backup"] }),
      model("backup", { baseUrl: c.url }, { pricing: CHEAP }),
      model("cheap-first", { deployments: [dep("a", a)] }, { pricing: CHEAP, fallbacks: ["dear"] }),
      model("dear", { baseUrl: c.url }),
      model("emb-primary", { deployments: [dep("gone", goneUrl)], capabilities: ["embeddings"] }, { fallbacks: ["emb-backup"] }),
      model("emb-backup", { baseUrl: c.url, capabilities: ["embeddings"] }, { pricing: CHEAP }),
    ],
  }));
  const capture = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split("\n")) if (l) logLines.push(JSON.parse(l)); done(); } });
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "1000000", REELAY_RATE_TPM: "100000000" }, { logger: createLogger({ logLevel: "info", logPretty: false }, capture) });
  ({ key, accountId } = await s.newClient({ credits: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
});

afterAll(async () => {
  await s?.close();
  await Promise.all([a, b, c].map((f) => f?.stop()));
});

const ask = (model: string, content = "Count for me.") => openai.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 4 });
const sent = (fake: FakeOpenAI, model: string) => fake.requests.filter((r) => r.body?.model === `${model}-up`);
const upstreams = async (model: string) => {
  const res = (await (await s.admin("/admin/upstreams")).json()) as { data: Array<{ model: string; deployments: any[] }> };
  return Object.fromEntries(res.data.find((m) => m.model === model)!.deployments.map((d) => [d.name, d]));
};
const balance = async () => ((await (await s.admin(`/admin/accounts/${accountId}`)).json()) as { balance: number }).balance;

describe("routing", () => {
  test("1,000 requests follow the weights (1:3) within 5 %", async () => {
    for (let i = 0; i < 1000; i += 20) await Promise.all(Array.from({ length: 20 }, () => ask("weighted")));
    const [na, nb] = [sent(a, "weighted").length, sent(b, "weighted").length];
    expect(na + nb).toBe(1000);
    expect(Math.abs(nb / 1000 - 0.75)).toBeLessThan(0.05);
  });

  test("a deployment answering 503: traffic moves, its circuit opens, half-opens after the cooldown, and recovery brings it back", async () => {
    b.behave({ status: 503 }, { model: "breaker-up" });
    for (let i = 0; i < 12; i++) {
      const r = await ask("breaker");
      expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0); // every client got a clean answer
    }
    expect(sent(b, "breaker").length).toBe(3); // consecutiveFailures: 3, then no more traffic
    let view = await upstreams("breaker");
    expect(view.b).toMatchObject({ state: "open", opened: 1, errors: { http_503: 3 } });
    expect(view.a.state).toBe("closed");

    await Bun.sleep(2_600); // past the 2.5 s cooldown: one probe is let through
    expect((await upstreams("breaker")).b.state).toBe("half_open");
    // the probe fails (still 503): open again; the client is still served, by a
    for (let i = 0; i < 3 && sent(b, "breaker").length < 4; i++) await ask("breaker");
    expect(sent(b, "breaker").length).toBe(4);
    expect((await upstreams("breaker")).b).toMatchObject({ state: "open", opened: 2 });

    b.behave({}, { model: "breaker-up" }); // b recovers
    await Bun.sleep(2_600);
    for (let i = 0; i < 10; i++) await ask("breaker");
    view = await upstreams("breaker");
    expect(view.b.state).toBe("closed");
    expect(sent(b, "breaker").length).toBeGreaterThanOrEqual(4 + 5); // back in the rotation: about half of the 10
  });

  test("429 with Retry-After: 2 → no request to that deployment for 2 s, then it serves again", async () => {
    a.behave({ status: 429, retryAfter: 2 }, { model: "limited-up" });
    const first = await ask("limited"); // a (first in the rotation) answers 429; b serves
    expect(first.choices[0]!.message.content!.length).toBeGreaterThan(0);
    const limitedAt = sent(a, "limited")[0]!.receivedAt;
    a.behave({}, { model: "limited-up" });
    while (performance.now() - limitedAt < 2_600) {
      await ask("limited");
      await Bun.sleep(50);
    }
    const toA = sent(a, "limited").map((r) => r.receivedAt - limitedAt);
    expect(toA[0]).toBe(0);
    expect(toA.slice(1).every((ms) => ms >= 1_950)).toBe(true);
    expect(toA.length).toBeGreaterThan(1); // after the 2 s it serves again
    expect((await upstreams("limited")).a.errors).toEqual({ http_429: 1 });
  });

  test("a deployment whose own key or URL is refused (401, 404) → another serves; when every one refuses, the client gets the single-deployment answer (502) and pays nothing", async () => {
    const sentTo = (fake: FakeOpenAI) => sent(fake, "keyfault").length;
    const [a0, b0] = [sentTo(a), sentTo(b)];
    a.behave({ status: 401, errorMessage: "Incorrect API key provided" }, { model: "keyfault-up" });
    const r1 = await ask("keyfault");
    expect(r1.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect([sentTo(a) - a0, sentTo(b) - b0]).toEqual([1, 1]); // a (weight 1000) first, then b
    a.behave({ status: 404 }, { model: "keyfault-up" });
    const r2 = await ask("keyfault");
    expect(r2.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect((await upstreams("keyfault")).a.errors).toMatchObject({ http_401: 1, http_404: 1 });
    const before = await balance();
    b.behave({ status: 401 }, { model: "keyfault-up" });
    const err = await ask("keyfault").catch((e) => e);
    expect(err.status).toBe(502);
    expect(JSON.stringify(err.error)).not.toContain("Incorrect API key"); // the upstream's words about its key stay with the operator
    await s.deps.billing.sync();
    expect(await balance()).toBe(before);
    a.behave({}, { model: "keyfault-up" });
    b.behave({}, { model: "keyfault-up" });
  });

  test("an upstream 429 the client gets (one deployment, nowhere else to go) carries the upstream's Retry-After; nothing is charged", async () => {
    c.behave({ status: 429, retryAfter: 7, errorMessage: "slow down" }, { model: "single-limited-up" });
    const before = await balance();
    const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "single-limited", messages: [{ role: "user", content: "hi" }], max_tokens: 4 }) });
    expect([res.status, res.headers.get("retry-after")]).toEqual([429, "7"]);
    expect(((await res.json()) as any).error).toMatchObject({ type: "rate_limit_error", message: "slow down" });
    await s.deps.billing.sync();
    expect(await balance()).toBe(before);
    c.behave({}, { model: "single-limited-up" });
  });

  test("connection refused → retried on another deployment; the client sees one clean answer", async () => {
    const before = c.requests.length;
    for (let i = 0; i < 6; i++) {
      const r = await ask("refused");
      expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    }
    const emb = await openai.embeddings.create({ model: "refused", input: ["hello", "world"] });
    expect(emb.data.length).toBe(2);
    expect(emb.model).toBe("refused");
    expect(c.requests.length - before).toBe(7); // one upstream request per client request
    expect((await upstreams("refused")).gone.errors.connect).toBeGreaterThanOrEqual(1);
  });

  test("maxConcurrent is respected under 200 concurrent requests; the rest get 503 with Retry-After", async () => {
    a.reset();
    b.reset();
    a.behave({ delayHeadersMs: 150 }, { model: "bounded-up" });
    b.behave({ delayHeadersMs: 150 }, { model: "bounded-up" });
    const results = await Promise.all(Array.from({ length: 200 }, () =>
      fetch(s.url + "/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "bounded", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
      }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: (await r.json()) as any }))));
    expect(a.peakInFlight).toBeLessThanOrEqual(3);
    expect(b.peakInFlight).toBeLessThanOrEqual(2);
    const ok = results.filter((r) => r.status === 200);
    const busy = results.filter((r) => r.status === 503);
    expect(results.filter((r) => r.status !== 200 && r.status !== 503).map((r) => `${r.status} ${JSON.stringify(r.body).slice(0, 300)}`)).toEqual([]);
    expect(ok.length).toBeGreaterThanOrEqual(5);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.every((r) => Number(r.retryAfter) >= 1 && r.body.error.code === "no_upstream_available")).toBe(true);
    a.reset();
    b.reset();
  });
});

describe("streams", () => {
  test("an upstream that dies after the first byte is not retried: an error event, billed on what was delivered", async () => {
    a.behave({ dropAfterChunks: 2 }, { model: "dies-up" });
    b.behave({ dropAfterChunks: 2 }, { model: "dies-up" });
    const before = await balance();
    const stream = await openai.chat.completions.create({ model: "dies", messages: [{ role: "user", content: "Count." }], max_tokens: 8, stream: true });
    const words: string[] = [];
    const err = await (async () => {
      for await (const chunk of stream) words.push(chunk.choices[0]?.delta?.content ?? "");
    })().then(() => null, (e) => e);
    expect(err).not.toBeNull(); // the SDK raises the stream's error event
    expect(words.join("")).toBe(" one two");
    expect(sent(a, "dies").length + sent(b, "dies").length).toBe(1); // never retried
    // the usage row the client reads: 2 tokens delivered and billed, the prompt at the model's price; the balance moved by exactly that
    const row = await eventually(async () => {
      const usage = (await (await fetch(s.url + "/v1/usage?limit=1", { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] };
      return usage.data[0]?.model === "dies" ? usage.data[0] : null;
    });
    expect([row.completion_tokens, row.delivered_tokens, row.status]).toEqual([2, 2, 200]);
    expect(row.cost).toBe(row.prompt_tokens * 3 + 2 * 15);
    expect(before - (await balance())).toBe(row.cost);
  });
});

describe("fallbacks", () => {
  test("every deployment of a model failing → its fallback serves; the answer names it and the bill uses its prices exactly", async () => {
    a.behave({ status: 503 }, { model: "primary-up" });
    b.behave({ status: 502 }, { model: "primary-up" });
    const before = await balance();
    const r = await ask("primary", "Fall back, please.");
    expect(r.model).toBe("backup");
    expect(sent(c, "backup").length).toBeGreaterThanOrEqual(1);
    const usage = r.usage!;
    await s.deps.billing.sync();
    expect(before - (await balance())).toBe(usage.prompt_tokens * 1 + usage.completion_tokens * 2);

    const mid = await balance();
    const stream = await openai.chat.completions.create({ model: "primary", messages: [{ role: "user", content: "Stream it." }], max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    let model = "";
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      model ||= chunk.model;
      if (chunk.usage) streamed = chunk.usage;
    }
    expect(model).toBe("backup");
    // the stream is settled as it ends on the server, a moment after the client read [DONE]
    const after = await eventually(async () => {
      await s.deps.billing.sync();
      const now = await balance();
      return now !== mid ? now : null;
    });
    expect(mid - after).toBe(streamed!.prompt_tokens * 1 + streamed!.completion_tokens * 2);
    a.behave({}, { model: "primary-up" });
    b.behave({}, { model: "primary-up" });
  });
});

describe("fallbacks: holds and embeddings", () => {
  test("the hold covers the dearest candidate: credit enough for the model but not for its fallback → 402; without a fallback → 200", async () => {
    const { key: poorKey } = await s.newClient({ credits: 50 }); // cheap worst case ≈ 10×1 + 4×2; the fallback's ≈ 10×3 + 4×15
    const poor = new OpenAI({ apiKey: poorKey, baseURL: s.url + "/v1", maxRetries: 0 });
    const err = await poor.chat.completions.create({ model: "cheap-first", messages: [{ role: "user", content: "Count for me." }], max_tokens: 4 }).catch((e) => e);
    expect([err.status, err.code]).toEqual([402, "insufficient_quota"]);
    const ok = await poor.chat.completions.create({ model: "backup", messages: [{ role: "user", content: "Count for me." }], max_tokens: 4 });
    expect(ok.model).toBe("backup");
  });

  test("embeddings: a model whose deployments are all unreachable is served by its fallback, at the fallback's price", async () => {
    const before = await balance();
    const r = await openai.embeddings.create({ model: "emb-primary", input: ["hello there", "general kenobi"] });
    expect(r.model).toBe("emb-backup");
    expect(r.data.length).toBe(2);
    await s.deps.billing.sync();
    expect(before - (await balance())).toBe(r.usage.prompt_tokens * 1);
  });

  test("a fallback naming no model, or one of another kind, stops the boot with a message naming it", async () => {
    const boot = async (models: unknown[]) => {
      const file = join(mkdtempSync(join(tmpdir(), "reelay-fallbacks-")), "models.json");
      writeFileSync(file, JSON.stringify({ builtins: false, models }));
      const config = testConfig({ REELAY_MODELS_FILE: file });
      return buildModels(config, createLogger(config)).then(async (r) => (await r.close(), "booted"), (e: Error) => e.message);
    };
    const chat = (id: string, extra: Record<string, unknown> = {}) => ({ id, plugin: "openai-compatible", options: { baseUrl: c.url }, pricing: PRICING, ...extra });
    expect(await boot([chat("m", { fallbacks: ["nope"] })])).toContain('models[0].fallbacks: model "m": no model named "nope" to fall back to');
    expect(await boot([chat("m", { fallbacks: ["v"] }), { id: "v", plugin: "preview-video", pricing: { perSecond: 1 } }])).toContain('model "m" cannot fall back to "v": it serves video, not chat');
    expect(await boot([chat("m", { fallbacks: ["m"] })])).toContain('model "m" lists itself as a fallback');
    expect(await boot([{ id: "m", plugin: "openai-compatible", pricing: PRICING, options: { deployments: [{ baseUrl: c.url, apiKeyEnv: "NOT_SET_ANYWHERE_19" }] } }]))
      .toContain(`deployment "127.0.0.1:${c.port}": apiKeyEnv names the environment variable NOT_SET_ANYWHERE_19, which is not set`);
  });
});

describe("operator views", () => {
  test("a request's log line names the deployment that served it, the attempts, and the requested model when a fallback served", async () => {
    // request lines are written in batches every 10 ms: wait for the ones asserted below
    const requestLines = () => logLines.filter((l) => l.msg === "request" && l.route === "/v1/chat/completions");
    await eventually(async () => requestLines().some((l) => l.model === "backup" && l.requestedModel === "primary"));
    const lines = requestLines();
    expect(lines.some((l) => l.model === "refused" && l.deployment === "c" && l.attempts === 2)).toBe(true);
    expect(lines.some((l) => l.model === "weighted" && ["a", "b"].includes(l.deployment) && l.attempts === 1)).toBe(true);
    expect(lines.some((l) => l.model === "backup" && l.requestedModel === "primary" && l.deployment === `127.0.0.1:${c.port}`)).toBe(true);
    expect(JSON.stringify(logLines)).not.toContain(key); // never the key
  });

  test("/metrics has per-deployment requests, errors by kind, latency, in-flight and circuit state", async () => {
    const text = await (await s.admin("/metrics")).text();
    expect(text).toMatch(/reelay_upstream_deployment_requests_total\{model="weighted",deployment="b"\} \d+/);
    expect(text).toMatch(/reelay_upstream_deployment_errors_total\{model="refused",deployment="gone",kind="connect"\} [1-9]/);
    expect(text).toMatch(/reelay_upstream_deployment_latency_seconds\{model="weighted",deployment="a"\} [\d.e-]+/);
    // the latency histogram: cumulative buckets up to +Inf = count, and the sum
    const bucket = (le: string) => Number(text.match(new RegExp(`reelay_upstream_deployment_attempt_seconds_bucket\\{model="weighted",deployment="a",le="${le.replace("+", "\\+")}"\\} (\\d+)`))?.[1]);
    const count = Number(text.match(/reelay_upstream_deployment_attempt_seconds_count\{model="weighted",deployment="a"\} (\d+)/)?.[1]);
    expect(count).toBeGreaterThan(0);
    expect(bucket("+Inf")).toBe(count);
    expect(bucket("0.005")).toBeLessThanOrEqual(bucket("120"));
    expect(bucket("120")).toBe(count);
    expect(text).toMatch(/reelay_upstream_deployment_attempt_seconds_sum\{model="weighted",deployment="a"\} [\d.e-]+/);
    expect(text).toContain("# TYPE reelay_upstream_deployment_attempt_seconds histogram");
    expect(text).toContain('reelay_upstream_deployment_in_flight{model="weighted",deployment="a"} 0');
    expect(text).toContain('reelay_upstream_deployment_circuit_state{model="weighted",deployment="a",state="closed"} 1');
  });

  test("GET /admin/upstreams needs the admin token and lists each deployment's state, error rate, latency and in-flight", async () => {
    expect((await fetch(s.url + "/admin/upstreams", { headers: { authorization: `Bearer ${key}` } })).status).toBe(403);
    // the recent error rate covers the breaker's 10 s window: fill it now (the file's earlier
    // requests can be older than that on a loaded CI box, and an empty window reads null)
    await Promise.all(Array.from({ length: 20 }, () => ask("weighted")));
    const view = await upstreams("weighted");
    expect(view.b).toMatchObject({ weight: 3, state: "closed", in_flight: 0, max_concurrent: null, recent_error_rate: 0 });
    expect(view.b.latency_ms).toBeGreaterThan(0);
    expect((await upstreams("bounded")).a.max_concurrent).toBe(3);
  });
});
