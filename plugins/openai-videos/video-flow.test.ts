/** openai-videos through the whole video flow: reelay reselling an OpenAI-style upstream's video model. */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeOpenAIVideos } from "../../test/fakes/openai-videos.ts";
import { client, pngBase64 } from "../../test/videos/support.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";

const PRICE = 100_000;
const KEY = "sk-flow-upstream-0123456789";
process.env.REELAY_TEST_VIDEOS_KEY = KEY;
const IMAGE = pngBase64(64, 48);
const upstream = await startFakeOpenAIVideos({ apiKey: KEY, queueMs: 100, runMs: 300 });

let s: TestServer;
beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), "reelay-openai-videos-flow-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    { id: "sora-resold", plugin: "openai-videos", pricing: { perSecond: PRICE }, options: { baseUrl: upstream.url, apiKeyEnv: "REELAY_TEST_VIDEOS_KEY", upstreamModel: "sora-2", pollIntervalMs: 100, sizes: ["832x480", "720x1280"], seconds: [2, 4] } },
  ] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" });
});
afterAll(async () => {
  await s?.close();
  await upstream.stop();
});
beforeEach(() => upstream.reset());

async function submit(api: ReturnType<typeof client>) {
  const res = await api.submit({ model: "sora-resold", prompt: "a city at night, rain", image: IMAGE, seconds: 2, size: "832x480" });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe("an OpenAI-style upstream, end to end", () => {
  test("progress from the upstream's percentage, then its MP4 at the requested size; exactly the seconds charged", async () => {
    upstream.behave({ runMs: 1_500 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api);
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
    expect((await ffprobe(Buffer.from(job.data[0].b64_json, "base64"))).streams[0]).toMatchObject({ width: 832, height: 480, nb_read_frames: "16" });
    expect(upstream.calls.find((x) => x.kind === "create")!.fields).toMatchObject({ model: "sora-2", seconds: "2", size: "832x480" });
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
  }, 60_000);

  test("an OpenAI-style failed video: the job fails with the upstream's code and message, nothing charged", async () => {
    upstream.behave({ fail: { code: "moderation_blocked", message: "Your request was blocked by our moderation system." } });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(await submit(api));
    expect(done).toMatchObject({ status: "failed", error: { code: "moderation_blocked", message: "Your request was blocked by our moderation system." } });
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("cancel deletes the upstream video, nothing charged", async () => {
    upstream.behave({ runMs: 60_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const id = await submit(api);
    for (let i = 0; i < 200 && upstream.count("get") === 0; i++) await Bun.sleep(25);
    expect((await api.cancel(id)).status).toBe(200);
    expect([...upstream.videos.values()][0]!.deleted).toBe(true);
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);
});
