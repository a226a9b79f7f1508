/**
 * Traces from the compiled dist/reelay: the OpenTelemetry SDK and its OTLP/protobuf exporter work
 * inside the single executable. A chat through the binary to a fake upstream carries the client's
 * trace on to the upstream, and the spans reach a receiver started here — at shutdown at the
 * latest (the batch delay is set far beyond the test: SIGTERM exports what is pending).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../support/otlp-receiver.ts";

const ADMIN = "tracing-binary-admin-token";
const TRACE = "0af7651916cd43dd8448eb211c80319c";
let dir: string;
let bin: string;
let fake: FakeOpenAI;
let receiver: OtlpReceiver;

beforeAll(async () => {
  const built = compiledBinary();
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-tracing-"));
  bin = join(dir, "reelay");
  copyFileSync(built, bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  fake = await startFakeOpenAI();
  receiver = await startOtlpReceiver();
}, 300_000);
afterAll(async () => {
  await fake.stop();
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("the binary exports a request's spans over OTLP and passes the client's trace to the upstream", async () => {
  const models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({ builtins: false, models: [{ id: "chat-a", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "up-a" }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 1_000_000 } }] }));
  const port = freePort();
  const env = {
    PATH: "/usr/bin:/bin", HOME: dir, TMPDIR: dir, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json",
    REELAY_DATA_DIR: join(dir, "data"), REELAY_MODELS_FILE: models, REELAY_PLUGINS_DIR: join(dir, "no-plugins"),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: "reelay-binary", OTEL_BSP_SCHEDULE_DELAY: "600000",
  };
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" });
  let out = "";
  void (async () => { for await (const c of proc.stdout) out += new TextDecoder().decode(c); })();
  try {
    await waitForOwnListener(proc, port, () => out, 120_000);
    const url = `http://127.0.0.1:${port}`;
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = (await (await fetch(`${url}/admin/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ name: "t", credits: 1_000_000 }) })).json()) as { id: string };
    const key = (await (await fetch(`${url}/admin/accounts/${account.id}/keys`, { method: "POST", headers: admin, body: JSON.stringify({ name: "k" }) })).json()) as { key: string };
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json", traceparent: `00-${TRACE}-b7ad6b7169203331-01` },
      body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "hello" }], max_tokens: 4 }),
    });
    expect(res.status).toBe(200);
    await res.json();
    expect(fake.requests.at(-1)!.headers["traceparent"]).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  const spans = receiver.spans.filter((s) => s.traceId === TRACE);
  const server = spans.find((s) => s.kind === 2)!;
  // when the span is missing, the binary's exit code and its shutdown and tracing lines say why
  const story = out.split("\n");
  expect({ server: server !== undefined, exitCode: proc.exitCode, spans: spans.map((s) => s.name), log: server ? [] : story }).toEqual({ server: true, exitCode: 0, spans: expect.anything(), log: [] });
  expect(server.parentSpanId).toBe("b7ad6b7169203331");
  expect(server.resource["service.name"]).toBe("reelay-binary");
  expect(server.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "chat-a", "gen_ai.response.model": "up-a", "http.response.status_code": 200 });
  expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(["reelay.charge", "upstream attempt 1", "reelay.settle"]));
  expect(receiver.contentTypes[0]).toBe("application/x-protobuf");
}, 300_000);
