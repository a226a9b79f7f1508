/**
 * A batch's trace: the request that created it (the client's traceparent continued) and, in the
 * same trace, one span per line — a child of the creating request's span with a link to it, as a
 * video job's run — carrying the batch, the line, the billed tokens and charge, with the
 * pipeline's own spans under it (the charge, the upstream attempt, the settlement). The upstream
 * request carries the attempt's traceparent; the batch's webhook joins the trace too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { chatLine, startBatchServer, uploadBatchFile, waitForBatch, type BatchServer } from "../batches/batch-server.ts";

const TRACE = "7a0b1c2d3e4f5061728394a5b6c7d8e9";
const CLIENT_SPAN = "1f2e3d4c5b6a7988";
let otlp: OtlpReceiver;
let hooks: Receiver;
let b: BatchServer;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  hooks = startReceiver();
  b = await startBatchServer({
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "50",
    REELAY_SECRET_KEY: "batch-traces-secret-key-0123456789abcdef", REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_WEBHOOK_POLL_MS: "100",
  });
}, 60_000);

afterAll(async () => {
  await b?.close();
  await hooks?.stop();
  await otlp?.stop();
});

test("each line is a span in the creating request's trace, with the charge, attempt and settlement under it", async () => {
  const c = await b.newClient();
  const hook = await fetch(`${b.s.url}/v1/webhooks`, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ url: `${hooks.url}/batch`, events: ["batch.completed"] }) });
  expect(hook.status).toBe(201);
  const file = await uploadBatchFile(c.openai, [chatLine(1), chatLine(2)]);
  const res = await fetch(`${b.s.url}/v1/batches`, {
    method: "POST",
    headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json", traceparent: `00-${TRACE}-${CLIENT_SPAN}-01` },
    body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
  });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  expect((await waitForBatch(c.openai, id)).status).toBe("completed");

  const create = await otlp.waitFor((all) => all.find((x) => x.traceId === TRACE && x.kind === 2));
  expect(create.parentSpanId).toBe(CLIENT_SPAN);
  expect(create.attributes).toMatchObject({ "http.route": "/v1/batches", "http.response.status_code": 200 });

  const lines = await otlp.waitFor((all) => {
    const found = all.filter((x) => x.traceId === TRACE && x.attributes["reelay.batch.id"] === id);
    return found.length === 2 && found;
  });
  expect(lines.map((x) => x.attributes["reelay.batch.custom_id"]).sort()).toEqual(["req-1", "req-2"]);
  for (const line of lines) {
    expect(line.parentSpanId).toBe(create.spanId);
    expect(line.links).toEqual([{ traceId: TRACE, spanId: create.spanId, attributes: { "reelay.link": "submitted_by" } }]);
    expect(line.kind).toBe(1);
    expect(line.name).toBe("chat chat-a");
    expect(line.attributes).toMatchObject({
      "reelay.batch.outcome": "completed", "reelay.route": "batch", "reelay.account.id": c.accountId,
      "gen_ai.operation.name": "chat", "gen_ai.request.model": "chat-a", "gen_ai.response.model": "up-a",
    });
    expect(line.attributes["reelay.batch.line"]).toBe(Number(String(line.attributes["reelay.batch.custom_id"]).slice(4)));
    expect(line.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(line.attributes["reelay.charge.micros"]).toBeGreaterThan(0);
    const under = await otlp.waitFor((all) => {
      const kids = all.filter((x) => x.traceId === TRACE && x.parentSpanId === line.spanId);
      return kids.some((x) => x.name === "reelay.settle") && kids;
    });
    expect(under.map((x) => x.name).sort()).toEqual(["reelay.charge", "reelay.settle", "upstream attempt 1"]);
    // the upstream got the attempt's context
    const attempt = under.find((x) => x.name === "upstream attempt 1")!;
    const sent = b.fake.requests.filter((r) => r.headers.traceparent === `00-${TRACE}-${attempt.spanId}-01`);
    expect(sent.length).toBe(1);
  }

  // the batch's webhook is delivered in the same trace, its POST naming its span
  await hooks.waitFor((r) => r.length > 0);
  const delivery = await otlp.waitFor((all) => all.find((x) => x.traceId === TRACE && x.name === "webhook.deliver"));
  expect(delivery.parentSpanId).toBe(create.spanId);
  expect(hooks.requests[0]!.headers.traceparent).toBe(`00-${TRACE}-${delivery.spanId}-01`);
}, 60_000);
