/**
 * CPU of tracing one chat request, the OpenTelemetry part alone (bench/chat-proxy.ts measures it
 * in the whole server): the spans a non-streamed chat makes (server, charge, one attempt with its
 * outgoing traceparent, settle), exported to a local receiver. `bun bench/lib/tracing-cost.ts [n]`
 * (OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the JSON exporter instead of protobuf)
 */
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { createOtelTracing } from "../../src/ops/tracing/otel-tracing.ts";
import { noRequestLog } from "../../src/ops/hooks.ts";

const n = Number(process.argv[2] ?? 20_000);
// the receiver (which decodes every batch) runs in its own process: only the exporting side is measured here
const recv = Bun.spawn(["bun", "-e", `import { startOtlpReceiver } from ${JSON.stringify(import.meta.dir + "/../../test/support/otlp-receiver.ts")}; const r = await startOtlpReceiver(); console.log(r.url); process.stdin.on("data", () => { console.log(r.spans.length); });`], { stdin: "pipe", stdout: "pipe" });
const lines = recv.stdout.pipeThrough(new TextDecoderStream()).getReader();
const nextLine = async () => (await lines.read()).value!.trim();
const receiver = { url: await nextLine() };
const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "always_on", OTEL_BSP_SCHEDULE_DELAY: "200", REELAY_LOG_LEVEL: "error", ...(process.env.OTEL_EXPORTER_OTLP_PROTOCOL ? { OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL } : {}) });
const tracing = createOtelTracing(config.tracing!, createLogger(config), "bench");
const log = tracing.wrap(noRequestLog);
const models = { get: () => undefined };

function oneRequest(i: number) {
  const request = new Request("http://x/v1/chat/completions", { method: "POST", headers: { traceparent: `00-${(i + 1).toString(16).padStart(32, "0")}-00f067aa0ba902b7-01` } });
  log.begin(request);
  log.note(request, { accountId: "acct_1", keyPrefix: "sk-abc", keyId: "key_1" });
  const t = tracing.of(request)!;
  t.rename("chat bench-chat");
  t.set({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai-compatible", "gen_ai.request.model": "bench-chat", "reelay.route": "/v1/chat/completions" });
  const charge = t.child("reelay.charge", { "reelay.hold.micros": 1234 });
  charge.end();
  const release = t.hold();
  const attempt = t.upstream.attempt({ deployment: "default", attempt: 1 });
  t.upstream.outgoing("http://127.0.0.1:9999/v1/chat/completions");
  attempt.end();
  log.note(request, { deployment: "default", attempts: 1 });
  t.set({ "gen_ai.response.model": "bench-upstream", "gen_ai.finish_reasons": ["stop"] });
  const settle = t.child("reelay.settle");
  settle.set({ "reelay.charge.micros": 99, "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5 });
  settle.end();
  log.note(request, { promptTokens: 10, completionTokens: 5, cost: 99 });
  release();
  log.end(request, { requestId: "req_x", method: "POST", route: "/v1/chat/completions", path: "/v1/chat/completions", status: 200 }, models);
}

for (let i = 0; i < 2_000; i++) oneRequest(i); // warm-up
await Bun.sleep(500);
const cpu0 = process.cpuUsage();
for (let i = 0; i < n; i++) {
  oneRequest(i);
  if (i % 20 === 19) await Bun.sleep(1); // requests arrive over time: the batch processor exports between them
}
await tracing.close();
const cpu = process.cpuUsage(cpu0);
recv.stdin.write("count\n");
recv.stdin.flush();
const received = Number(await nextLine());
recv.kill();
// the same loop without the tracing (the Request objects the server makes anyway, the pauses)
const off = process.cpuUsage();
for (let i = 0; i < n; i++) {
  new Request("http://x/v1/chat/completions", { method: "POST", headers: { traceparent: `00-${(i + 1).toString(16).padStart(32, "0")}-00f067aa0ba902b7-01` } });
  if (i % 20 === 19) await Bun.sleep(1);
}
const idle = process.cpuUsage(off);
console.log(JSON.stringify({ requests: n, spansReceived: received, cpuUsPerRequest: (cpu.user + cpu.system - idle.user - idle.system) / n }));
