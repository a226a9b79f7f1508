/**
 * A video job's trace from submit to completion: the submitting request's span (the client's
 * traceparent continued), the scheduler's run of the job as a span in the same trace linked to
 * the submit (the traceparent lives on the job row, so whichever instance runs it continues it),
 * the provider submit and the completion under it, and the webhook delivery likewise. The webhook
 * POST and a GPU worker's /run and /status requests carry the W3C traceparent of their span, so a
 * receiver or worker that traces joins the same trace.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { startFakeGpuWorker } from "../fakes/gpu-worker.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TRACE = "5b8efff798038103d269b633813fc60c";
const CLIENT_SPAN = "eee19b7ec3c1b174";
let otlp: OtlpReceiver;
let hooks: Receiver;
let s: TestServer;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  hooks = startReceiver();
  s = await startTestServer({
    ...scriptedEnv([{ id: "fast", options: { durationMs: 50 } }]), REELAY_SCHEDULER_POLL_MS: "50", REELAY_SECRET_KEY: "video-traces-secret-key-0123456789abcdef",
    REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_WEBHOOK_POLL_MS: "100", OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "50",
  });
});

afterAll(async () => {
  await s.close();
  await hooks.stop();
  await otlp.stop();
});

test("submit → scheduler run (provider submit, completion) → webhook delivery, in one trace, linked to the submitting request", async () => {
  const { key } = await s.newClient();
  const c = client(s.url, key);
  // a job's own webhook_url is signed with the account's secret
  expect((await fetch(`${s.url}/v1/webhooks/secret`, { method: "POST", headers: { authorization: `Bearer ${key}` } })).status).toBeLessThan(300);
  const res = await c.submit({ model: "fast", prompt: "a lighthouse", image: pngBase64(), seconds: 1, webhook_url: `${hooks.url}/job` }, { traceparent: `00-${TRACE}-${CLIENT_SPAN}-01` });
  const body = (await res.json()) as { id: string };
  expect({ status: res.status, body }).toMatchObject({ status: 202 });
  const { id } = body;
  expect((await c.waitFinal(id)).status).toBe("completed");
  await hooks.waitFor((r) => r.length > 0);

  const submit = await otlp.waitFor((all) => all.find((x) => x.traceId === TRACE && x.kind === 2));
  expect(submit.parentSpanId).toBe(CLIENT_SPAN);
  expect(submit.attributes).toMatchObject({ "http.route": "/v1/videos/generations", "reelay.job.id": id, "http.response.status_code": 202 });

  const run = await otlp.waitFor((all) => all.find((x) => x.traceId === TRACE && x.name === "video.job.run" && x.attributes["reelay.job.outcome"] === "completed"));
  expect(run.parentSpanId).toBe(submit.spanId);
  expect(run.links).toEqual([{ traceId: TRACE, spanId: submit.spanId, attributes: { "reelay.link": "submitted_by" } }]);
  expect(run.attributes).toMatchObject({ "reelay.job.id": id, "gen_ai.request.model": "fast", "gen_ai.provider.name": "scripted-video" });
  expect(run.attributes["reelay.job.polls"]).toBeGreaterThanOrEqual(1);
  // the steps of every run of the job sit under a run span of this trace
  const runs = new Set(otlp.spans.filter((x) => x.traceId === TRACE && x.name === "video.job.run").map((x) => x.spanId));
  const steps = await otlp.waitFor((all) => {
    const st = all.filter((x) => x.traceId === TRACE && runs.has(x.parentSpanId));
    return st.some((x) => x.name === "video.complete") && st;
  });
  expect(steps.map((x) => x.name)).toEqual(expect.arrayContaining(["video.provider.submit", "video.complete"]));
  expect(steps.find((x) => x.name === "video.complete")!.parentSpanId).toBe(run.spanId);

  const delivery = await otlp.waitFor((all) => all.find((x) => x.traceId === TRACE && x.name === "webhook.deliver"));
  expect(delivery.parentSpanId).toBe(submit.spanId);
  expect(delivery.links[0]!.spanId).toBe(submit.spanId);
  expect(delivery.attributes).toMatchObject({ "reelay.webhook.outcome": "delivered", "http.response.status_code": 200, "server.address": "127.0.0.1", "reelay.webhook.attempt": 1 });
  expect(delivery.status.code).not.toBe(2);
  // the POST itself carried the delivery span's context
  expect(hooks.requests[0]!.headers.traceparent).toBe(`00-${TRACE}-${delivery.spanId}-01`);
});

test("a GPU worker's /run carries the submit attempt's traceparent, its /status the job run's", async () => {
  const worker = await startFakeGpuWorker({ queueMs: 50, runMs: 100, maxRenderSeconds: 1 });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-gpu-trace-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    { id: "gpu", plugin: "remote-gpu-video", options: { baseUrl: worker.url, allowPrivateNetwork: true, pollIntervalMs: 50, inputMapping: { image: "image:dataUrl", seconds: "seconds" } }, pricing: { perSecond: 30_000 } },
  ] }));
  const gpu = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_BSP_SCHEDULE_DELAY: "50" });
  try {
    const trace = "6c9f0a1b2c3d4e5f60718293a4b5c6d7";
    const { key } = await gpu.newClient();
    const c = client(gpu.url, key);
    const res = await c.submit({ model: "gpu", prompt: "a harbour at dusk", image: pngBase64(), seconds: 1 }, { traceparent: `00-${trace}-${CLIENT_SPAN}-01` });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    expect((await c.waitFinal(id)).status).toBe("completed");

    const run = await otlp.waitFor((all) => all.find((x) => x.traceId === trace && x.name === "video.job.run" && x.attributes["reelay.job.outcome"] === "completed"));
    const submit = await otlp.waitFor((all) => all.find((x) => x.traceId === trace && x.name === "video.provider.submit"));
    const attempt = await otlp.waitFor((all) => all.find((x) => x.traceId === trace && x.kind === 3 && x.parentSpanId === submit.spanId));
    expect(attempt.name).toBe("upstream attempt 1");
    expect(attempt.attributes).toMatchObject({ "server.address": "127.0.0.1" });
    const runs = worker.calls.filter((x) => x.kind === "run");
    const polls = worker.calls.filter((x) => x.kind === "status");
    expect(runs.map((x) => x.traceparent)).toEqual([`00-${trace}-${attempt.spanId}-01`]);
    expect(polls.length).toBeGreaterThanOrEqual(1);
    // each poll names the run of the job that made it (one run here, unless a retry took another)
    const runSpans = new Set(otlp.spans.filter((x) => x.traceId === trace && x.name === "video.job.run").map((x) => `00-${trace}-${x.spanId}-01`));
    expect(runSpans.has(`00-${trace}-${run.spanId}-01`)).toBe(true);
    for (const p of polls) expect(runSpans.has(p.traceparent!)).toBe(true);
  } finally {
    await gpu.close();
    await worker.stop();
  }
});
