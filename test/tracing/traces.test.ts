/**
 * OpenTelemetry traces as an operator's collector receives them: the real server exports with
 * the OpenTelemetry SDK to an OTLP/HTTP receiver started here, which decodes what arrives
 * (protobuf by default, OTLP/JSON when configured). A client's W3C traceparent continues through
 * reelay to the upstream, which sees the same trace id.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { refusedUrl, startTestServer, type TestServer } from "../support/harness.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.ts";

const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const TIMEOUTS = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 10_000 };
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
/** two spans' timestamps compare only to within 1 ms: the SDK anchors each span's clock on Date.now() at its start */
const SPAN_CLOCK_SLACK_NS = 1_000_000n;

let fake: FakeOpenAI;
let goneUrl: string;
let modelsFile: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  goneUrl = await refusedUrl(); // nothing listens there: connection refused, another deployment serves
  const dir = mkdtempSync(join(tmpdir(), "reelay-traces-"));
  modelsFile = join(dir, "models.json");
  writeFileSync(modelsFile, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-a", plugin: "openai-compatible", options: { timeouts: TIMEOUTS, baseUrl: fake.url, upstreamModel: "up-a" }, pricing: PRICING, maxOutputTokens: 8 },
      {
        id: "chat-routed", plugin: "openai-compatible", pricing: PRICING, maxOutputTokens: 8,
        options: { timeouts: TIMEOUTS, upstreamModel: "up-routed", deployments: [{ name: "gone", baseUrl: goneUrl, weight: 1000 }, { name: "good", baseUrl: fake.url, weight: 1 }] },
      },
    ],
  }));
});

afterAll(async () => {
  await fake.stop();
});

const byTrace = (spans: ReceivedSpan[], traceId: string) => spans.filter((s) => s.traceId === traceId);
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);

describe("traces over OTLP/protobuf", () => {
  let receiver: OtlpReceiver;
  let s: TestServer;
  let client: { key: string; keyId: string; accountId: string };
  let openai: OpenAI;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    s = await startTestServer({
      REELAY_MODELS_FILE: modelsFile, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=s%20ecret",
      OTEL_SERVICE_NAME: "reelay-under-test", OTEL_BSP_SCHEDULE_DELAY: "50",
    });
    client = await s.newClient({ credits: 10_000_000 });
    openai = new OpenAI({ apiKey: client.key, baseURL: s.url + "/v1", maxRetries: 0 });
  });

  afterAll(async () => {
    await s.close();
    await receiver.stop();
  });

  test("a chat completion: a server span continuing the client's trace, GenAI attributes, child spans for the charge, the attempts and the settlement; the upstream sees the same trace", async () => {
    fake.reset();
    const completion = await openai.chat.completions.create(
      { model: "chat-routed", messages: [{ role: "user", content: "a secret prompt" }], max_tokens: 5 },
      { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } },
    );
    expect(completion.model).toBe("chat-routed");

    const server = await receiver.waitFor((all) => byTrace(all, CLIENT_TRACE).find((x) => x.kind === 2 && x.attributes["gen_ai.operation.name"] === "chat"));
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.name).toBe("chat chat-routed");
    expect(server.resource["service.name"]).toBe("reelay-under-test");
    const a = server.attributes;
    expect(a["gen_ai.provider.name"]).toBe("openai-compatible");
    expect(a["gen_ai.request.model"]).toBe("chat-routed");
    expect(a["gen_ai.response.model"]).toBe("up-routed");
    expect(a["gen_ai.usage.input_tokens"]).toBe(completion.usage!.prompt_tokens);
    expect(a["gen_ai.usage.output_tokens"]).toBe(completion.usage!.completion_tokens);
    expect(a["gen_ai.response.finish_reasons"]).toEqual(completion.choices.map((c) => c.finish_reason));
    expect(a["server.address"]).toBe("127.0.0.1");
    expect(a["reelay.account.id"]).toBe(client.accountId);
    expect(a["reelay.key.id"]).toBe(client.keyId);
    expect(a["reelay.charge.micros"]).toBe(completion.usage!.prompt_tokens * 3 + completion.usage!.completion_tokens * 15);
    expect(a["reelay.deployment"]).toBe("good");
    expect(a["reelay.route"]).toBe("/v1/chat/completions");
    expect(a["http.response.status_code"]).toBe(200);
    // never the key, the prompt or the answer (REELAY_TRACE_CONTENT is off)
    const everything = JSON.stringify(receiver.spans.map((x) => [x.attributes, x.name]));
    expect(everything).not.toContain(client.key);
    expect(everything).not.toContain("a secret prompt");
    expect(a["gen_ai.input.messages"]).toBeUndefined();

    const spans = await receiver.waitFor((all) => {
      const kids = childrenOf(all, server);
      return kids.some((k) => k.name === "reelay.settle") && kids;
    });
    const charge = spans.find((k) => k.name === "reelay.charge")!;
    expect(charge.attributes["reelay.hold.micros"]).toBeGreaterThanOrEqual(a["reelay.charge.micros"] as number);
    const settle = spans.find((k) => k.name === "reelay.settle")!;
    expect(settle.attributes["reelay.charge.micros"]).toBe(a["reelay.charge.micros"]);
    const attempts = spans.filter((k) => k.name.startsWith("upstream attempt")).sort((x, y) => Number(x.attributes["reelay.attempt"]) - Number(y.attributes["reelay.attempt"]));
    expect(attempts.length).toBe(a["reelay.attempts"] as number);
    const served = attempts.at(-1)!;
    expect(served.kind).toBe(3);
    expect(served.attributes["reelay.deployment"]).toBe("good");
    expect(served.attributes["server.port"]).toBe(fake.port);
    expect(served.status.code).not.toBe(2);
    for (const failed of attempts.slice(0, -1)) {
      expect(failed.attributes["reelay.deployment"]).toBe("gone");
      expect(failed.status.code).toBe(2);
    }
    // the upstream continues the same trace, under the attempt that reached it
    const seen = fake.requests.at(-1)!.headers["traceparent"]!;
    expect(seen).toBe(`00-${CLIENT_TRACE}-${served.spanId}-01`);
    expect(receiver.headers.at(-1)!["x-collector-token"]).toBe("s ecret");
    expect(receiver.contentTypes.every((t) => t === "application/x-protobuf")).toBe(true);
  });

  test("a stream: the span ends after the settlement, with what the stream said and what was billed", async () => {
    fake.reset();
    const stream = await openai.chat.completions.create({ model: "chat-a", messages: [{ role: "user", content: "stream please" }], max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    const finish: string[] = [];
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) if (c.finish_reason) finish.push(c.finish_reason);
    }
    const traceId = fake.requests.at(-1)!.headers["traceparent"]!.split("-")[1]!;
    // no traceparent from the client: reelay's span is the root of a new trace
    const server = await receiver.waitFor((all) => byTrace(all, traceId).find((x) => x.kind === 2));
    expect(server.parentSpanId).toBe("");
    expect(server.attributes["gen_ai.response.model"]).toBe("up-a");
    expect(server.attributes["gen_ai.response.finish_reasons"]).toEqual(finish);
    expect(server.attributes["gen_ai.usage.output_tokens"]).toBe(usage!.completion_tokens);
    expect(server.attributes["reelay.charge.micros"]).toBe(usage!.prompt_tokens * 3 + usage!.completion_tokens * 15);
    const settle = await receiver.waitFor((all) => childrenOf(all, server).find((k) => k.name === "reelay.settle"));
    // the order of ends: the charge on the server span was set at the settlement, and the SDK drops
    // attributes set after a span ended (asserted above); the timestamps agree only to within the
    // SDK's clock: each span anchors its times on Date.now() at its start, whole milliseconds
    expect(server.endNs + SPAN_CLOCK_SLACK_NS).toBeGreaterThanOrEqual(settle.endNs);
    // the upstream request's parent is the attempt that made it, a child of the request's span
    const parentId = fake.requests.at(-1)!.headers["traceparent"]!.split("-")[2];
    const attempt = await receiver.waitFor((all) => all.find((x) => x.spanId === parentId));
    expect(attempt.name).toBe("upstream attempt 1");
    expect(attempt.parentSpanId).toBe(server.spanId);
    // a stream's attempt lasts until its last event
    expect(attempt.endNs).toBeLessThanOrEqual(server.endNs + SPAN_CLOCK_SLACK_NS);
  });

  test("a refused request (402) is a span too, its charge span failed; a client's unsampled trace stays unsampled", async () => {
    const poor = await s.newClient({ credits: 1 });
    const res = await fetch(s.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${poor.key}`, "content-type": "application/json", traceparent: `00-${"a".repeat(32)}-${CLIENT_SPAN}-01` },
      body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).error.code).toBe("insufficient_quota");
    const server = await receiver.waitFor((all) => byTrace(all, "a".repeat(32)).find((x) => x.kind === 2));
    expect(server.attributes["http.response.status_code"]).toBe(402);
    const charge = await receiver.waitFor((all) => childrenOf(all, server).find((k) => k.name === "reelay.charge"));
    expect(charge.status.code).toBe(2);

    fake.reset();
    const unsampled = await fetch(s.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${client.key}`, "content-type": "application/json", traceparent: `00-${"b".repeat(32)}-${CLIENT_SPAN}-00` },
      body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(unsampled.status).toBe(200);
    await unsampled.json();
    // the decision travels on: the upstream is told the trace is not sampled, and nothing is exported
    expect(fake.requests.at(-1)!.headers["traceparent"]).toMatch(new RegExp(`^00-${"b".repeat(32)}-[0-9a-f]{16}-00$`));
    await Bun.sleep(300);
    expect(byTrace(receiver.spans, "b".repeat(32))).toEqual([]);
  });
});

describe("traces over OTLP/JSON, prompts and answers recorded on opt-in", () => {
  let receiver: OtlpReceiver;
  let s: TestServer;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    s = await startTestServer({
      REELAY_MODELS_FILE: modelsFile, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url + "/v1/traces", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50", REELAY_TRACE_CONTENT: "true",
    }, { pglite: true });
  });

  afterAll(async () => {
    await s.close();
    await receiver.stop();
  });

  test("gen_ai.input.messages and gen_ai.output.messages carry the conversation", async () => {
    const { key } = await s.newClient();
    const openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: "chat-a", messages: [{ role: "user", content: "an opted-in prompt" }] });
    const server = await receiver.waitFor((all) => all.find((x) => x.kind === 2 && x.attributes["gen_ai.request.model"] === "chat-a"));
    expect(server.resource["service.name"]).toBe("reelay");
    expect(JSON.parse(server.attributes["gen_ai.input.messages"] as string)).toEqual([{ role: "user", content: "an opted-in prompt" }]);
    expect(server.attributes["gen_ai.output.messages"]).toContain(completion.choices[0]!.message.content!);
    expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
  });
});
