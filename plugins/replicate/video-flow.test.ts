/**
 * replicate through the whole video flow, with webhooks: Replicate (the fake) calls reelay's hook
 * route at REELAY_PUBLIC_URL, signed with the account's secret; what a client sees of results,
 * failures, cancels, forged deliveries and result URLs on private addresses.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeReplicate } from "../../test/fakes/replicate.ts";
import { client, pngBase64 } from "../../test/videos/support.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";

const PRICE = 50_000;
const KEY = "r8_flow_token_0123456789abcdef";
const KEY_B = "r8_flow_token_second_account_01";
process.env.REELAY_TEST_REPLICATE_TOKEN = KEY;
process.env.REELAY_TEST_REPLICATE_TOKEN_B = KEY_B;
const IMAGE = pngBase64(64, 48);
const replicate = await startFakeReplicate({ apiKey: KEY, startMs: 50, runMs: 400 });
const second = await startFakeReplicate({ apiKey: KEY_B, startMs: 50, runMs: 400 });

let s: TestServer;
beforeAll(async () => {
  const model = (id: string, options: Record<string, unknown>, extra: Record<string, unknown> = { allowPrivateNetwork: true }) => ({
    id, plugin: "replicate", ...extra, pricing: { perSecond: PRICE },
    options: { model: "wan-video/wan-2.2-i2v-fast", baseUrl: replicate.url, apiKeyEnv: "REELAY_TEST_REPLICATE_TOKEN", inputMapping: { size: "width,height" }, ...options },
  });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-replicate-flow-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    // webhooks on, polled every 10 minutes: only a genuine callback finishes its jobs within a test
    model("wan-hook", { webhookPollIntervalMs: 600_000 }),
    model("wan-poll", { webhooks: false, pollIntervalMs: 100 }),
    model("wan-no-private", { webhooks: false, pollIntervalMs: 100 }, {}),
    model("wan-pair", { baseUrl: undefined, apiKeyEnv: undefined, webhooks: false, pollIntervalMs: 100, deployments: [
      { name: "acct-a", baseUrl: replicate.url, apiKeyEnv: "REELAY_TEST_REPLICATE_TOKEN" },
      { name: "acct-b", baseUrl: second.url, apiKeyEnv: "REELAY_TEST_REPLICATE_TOKEN_B" },
    ] }),
  ] }));
  const port = freePort();
  s = await startTestServer({ PORT: String(port), REELAY_PUBLIC_URL: `http://127.0.0.1:${port}`, REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" });
});
afterAll(async () => {
  await s?.close();
  await replicate.stop();
  await second.stop();
});
beforeEach(() => {
  replicate.reset();
  second.reset();
});

async function submit(api: ReturnType<typeof client>, model: string, seconds = 2) {
  const res = await api.submit({ model, prompt: "a heron takes off", image: IMAGE, seconds, size: "832x480" });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe("Replicate, end to end", () => {
  test("polled: progress, then the output (downloaded from the result URL) at the requested size; exactly the seconds charged", async () => {
    replicate.behave({ runMs: 1_500 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "wan-poll");
    const progress: number[] = [];
    let job: any;
    for (let i = 0; i < 400; i++) {
      job = await (await api.get(id)).json();
      if (typeof job.progress === "number") progress.push(job.progress);
      if (job.status === "completed" || job.status === "failed") break;
      await Bun.sleep(25);
    }
    expect(job.status).toBe("completed");
    expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
    const probe = await ffprobe(Buffer.from(job.data[0].b64_json, "base64"));
    expect(probe.streams[0]).toMatchObject({ width: 832, height: 480, nb_read_frames: String(2 * 8) });
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
    expect(replicate.count("create")).toBe(1);
  }, 60_000);

  test("webhook: Replicate's signed callback reaches reelay's hook route and finishes a job polled every 10 minutes", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "wan-hook");
    const done = await api.waitFinal(id, 30_000);
    expect(done.status).toBe("completed");
    const [p] = [...replicate.predictions.values()];
    expect(p!.webhook).toBe(`${s.url}/v1/plugin-hooks/wan-hook/127.0.0.1:${new URL(replicate.url).port}`);
    expect(p!.webhookDeliveries).toEqual([{ event: "completed", status: 200 }]);
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
  }, 60_000);

  test("a callback with a bad signature is refused (401) and ignored: the job stays running until a genuine one arrives", async () => {
    replicate.behave({ badSignature: true });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "wan-hook");
    const [p] = await (async () => {
      for (let i = 0; i < 200; i++) {
        const list = [...replicate.predictions.values()];
        if (list[0]?.webhookDeliveries.length) return list;
        await Bun.sleep(50);
      }
      throw new Error("no delivery");
    })();
    expect(p!.webhookDeliveries).toEqual([{ event: "completed", status: 401 }]);
    // a forged request straight to the route: refused with the envelope, nothing happens
    const forged = await fetch(p!.webhook!, { method: "POST", headers: { "content-type": "application/json", "webhook-id": "msg_x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,Zm9yZ2Vk" }, body: JSON.stringify({ id: p!.id, status: "failed", error: "forged" }) });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as any).error).toMatchObject({ type: "authentication_error", code: "invalid_hook_signature" });
    await Bun.sleep(300);
    expect(((await (await api.get(id)).json()) as any).status).toBe("processing");
    replicate.behave({});
    p!.behaviour = {};
    await replicate.redeliver(p!.id);
    expect((await api.waitFinal(id, 30_000)).status).toBe("completed");
  }, 60_000);

  test("failed on Replicate: the job fails with its error, nothing charged", async () => {
    replicate.behave({ outcome: "failed", error: "CUDA error: an illegal memory access was encountered" });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(await submit(api, "wan-hook"), 30_000);
    expect(done).toMatchObject({ status: "failed", error: { code: "replicate_failed", message: "CUDA error: an illegal memory access was encountered" } });
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("cancel: the prediction is cancelled on Replicate, nothing charged", async () => {
    replicate.behave({ runMs: 60_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "wan-poll");
    for (let i = 0; i < 200 && replicate.predictions.size === 0; i++) await Bun.sleep(50);
    await Bun.sleep(200); // the handle is saved right after the create answers
    expect((await api.cancel(id)).status).toBe(200);
    const [p] = [...replicate.predictions.values()];
    expect(replicate.calls.filter((x) => x.kind === "cancel").map((x) => x.id)).toEqual([p!.id]);
    expect(p!.status).toBe("canceled");
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("a result URL on a private address is refused unless the model allows it: the job fails, nothing charged", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(await submit(api, "wan-no-private"), 30_000);
    expect(done).toMatchObject({ status: "failed", error: { code: "output_url_blocked" } });
    expect(done.error.message).toContain("the operator may set allowPrivateNetwork on this model");
    expect(replicate.count("file")).toBe(0);
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("two accounts: an account answering 503 hands the job to the other; each job followed where it was created", async () => {
    replicate.failNext("create", 1, 503);
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const ids = [await submit(api, "wan-pair", 1), await submit(api, "wan-pair", 1), await submit(api, "wan-pair", 1)];
    const finals = await Promise.all(ids.map((id) => api.waitFinal(id, 30_000)));
    expect(finals.every((f) => f.status === "completed")).toBe(true);
    expect(replicate.predictions.size + second.predictions.size).toBe(3);
    for (const [fake, key] of [[replicate, KEY], [second, KEY_B]] as const) {
      for (const call of fake.calls.filter((x) => x.kind === "get")) expect(fake.predictions.has(call.id!) && call.auth === `Bearer ${key}`).toBe(true);
    }
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 3 * PRICE, held: 0 });
  }, 60_000);
});
