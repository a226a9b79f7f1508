/**
 * POST /v1/plugin-hooks/{model}/{token}: refusals in the envelope, and a genuine hook waking a job
 * that another instance runs (the wake-up crosses over NOTIFY reelay_video_wake).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, dropDatabase, freePort, startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { startFakeReplicate } from "../../../test/fakes/replicate.ts";
import { client, pngBase64 } from "../../../test/videos/support.ts";

const KEY = "r8_hooks_token_0123456789";
process.env.REELAY_TEST_HOOKS_TOKEN = KEY;
const replicate = await startFakeReplicate({ apiKey: KEY, startMs: 50, runMs: 1_500 });
const servers: TestServer[] = [];
let databaseUrl: string | undefined;
afterAll(async () => {
  for (const s of servers) await s.close();
  await replicate.stop();
  if (databaseUrl) await dropDatabase(databaseUrl);
});

function modelsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "reelay-hooks-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    // polled every 10 minutes: only the webhook, crossing to the instance that runs the job, can finish it
    { id: "acme/wan-i2v", plugin: "replicate", allowPrivateNetwork: true, pricing: { perSecond: 10_000 }, options: { model: "wan-video/wan-2.2-i2v-fast", baseUrl: replicate.url, apiKeyEnv: "REELAY_TEST_HOOKS_TOKEN", webhookPollIntervalMs: 600_000 } },
    { id: "no-hooks", plugin: "preview-video", pricing: { perSecond: 10_000 }, options: {} },
  ] }));
  return file;
}

test("a hook for an unknown model, or one whose plugin takes none, is a 404 in the envelope", async () => {
  const s = await startTestServer({ REELAY_MODELS_FILE: modelsFile() });
  servers.push(s);
  for (const path of ["/v1/plugin-hooks/nope/t1", "/v1/plugin-hooks/no-hooks/t1"]) {
    const res = await fetch(s.url + path, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error).toMatchObject({ type: "not_found_error", code: "hook_not_found", param: "model" });
  }
  const bad = await fetch(`${s.url}/v1/plugin-hooks/no-hooks/${"x".repeat(200)}`, { method: "POST", body: "{}" });
  expect(bad.status).toBe(400);
});

test("Replicate's callback reaches instance B while instance A runs the job: A is woken and completes it", async () => {
  databaseUrl = await createTestDatabase();
  const [portA, portB] = [freePort(), freePort()];
  const env = { DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile(), REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" };
  // A hands Replicate B's address: the callback lands on the instance that does not run the job
  const a = await startTestServer({ ...env, PORT: String(portA), REELAY_PUBLIC_URL: `http://127.0.0.1:${portB}` });
  servers.push(a);
  const c = await a.newClient({ credits: 1_000_000 });
  const res = await client(a.url, c.key).submit({ model: "acme/wan-i2v", prompt: "a heron", image: pngBase64(), seconds: 1 });
  const { id } = (await res.json()) as { id: string };
  for (let i = 0; i < 100 && ((await (await client(a.url, c.key).get(id)).json()) as any).status !== "processing"; i++) await Bun.sleep(50);
  const b = await startTestServer({ ...env, PORT: String(portB) });
  servers.push(b);
  const done = await client(b.url, c.key).waitFinal(id, 30_000);
  expect(done.status).toBe("completed");
  const [p] = [...replicate.predictions.values()];
  expect(p!.webhook).toBe(`http://127.0.0.1:${portB}/v1/plugin-hooks/acme%2Fwan-i2v/api.replicate.com`.replace("api.replicate.com", `127.0.0.1:${new URL(replicate.url).port}`));
  expect(p!.webhookDeliveries).toEqual([{ event: "completed", status: 200 }]);
}, 60_000);
