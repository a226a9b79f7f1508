/** fal through the whole video flow: what a client sees of progress, results, the app's errors, cancels and private result URLs. */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeFal } from "../../test/fakes/fal.ts";
import { client, pngBase64 } from "../../test/videos/support.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";

const PRICE = 70_000;
const KEY = "fal-flow-key:0123456789abcdef";
process.env.REELAY_TEST_FAL_KEY = KEY;
const IMAGE = pngBase64(64, 48);
const fal = await startFakeFal({ apiKey: KEY, queueMs: 100, runMs: 300 });

let s: TestServer;
beforeAll(async () => {
  const model = (id: string, extra: Record<string, unknown>) => ({
    id, plugin: "fal", pricing: { perSecond: PRICE }, ...extra,
    options: { app: "fal-ai/kling-video/v2.1/standard/image-to-video", baseUrl: fal.url, apiKeyEnv: "REELAY_TEST_FAL_KEY", pollIntervalMs: 100, inputMapping: { size: "width,height", seconds: "duration" } },
  });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-fal-flow-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [model("kling", { allowPrivateNetwork: true }), model("kling-no-private", {})] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" });
});
afterAll(async () => {
  await s?.close();
  await fal.stop();
});
beforeEach(() => fal.reset());

async function submit(api: ReturnType<typeof client>, model: string) {
  const res = await api.submit({ model, prompt: "a red panda eats bamboo", image: IMAGE, seconds: 2, size: "624x624" });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe("fal, end to end", () => {
  test("queued, then progress, then the result video at the requested size; exactly the seconds charged", async () => {
    fal.behave({ queueMs: 300, runMs: 1_500, urlStyle: "elsewhere" });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "kling");
    const seen = new Set<string>();
    const progress: number[] = [];
    let job: any;
    for (let i = 0; i < 400; i++) {
      job = await (await api.get(id)).json();
      seen.add(job.status);
      if (typeof job.progress === "number") progress.push(job.progress);
      if (job.status === "completed" || job.status === "failed") break;
      await Bun.sleep(25);
    }
    expect(job.status).toBe("completed");
    expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
    expect((await ffprobe(Buffer.from(job.data[0].b64_json, "base64"))).streams[0]).toMatchObject({ width: 624, height: 624, nb_read_frames: "16" });
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
  }, 60_000);

  test("the app's error payload: the job fails with its message, nothing charged", async () => {
    fal.behave({ outcome: "validation_error" });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(await submit(api, "kling"));
    expect(done).toMatchObject({ status: "failed", error: { code: "image_load_error", message: "Unsupported image: the face detector found no face" } });
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("cancel reaches fal (PUT cancel_url), nothing charged", async () => {
    fal.behave({ runMs: 60_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api, "kling");
    for (let i = 0; i < 200 && fal.count("status") === 0; i++) await Bun.sleep(25);
    expect((await api.cancel(id)).status).toBe(200);
    expect([...fal.requests.values()][0]!.cancelled).toBe(true);
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("a result URL on a private address is refused unless the model allows it", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(await submit(api, "kling-no-private"));
    expect(done).toMatchObject({ status: "failed", error: { code: "output_url_blocked" } });
    expect(fal.count("file")).toBe(0);
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);
});
