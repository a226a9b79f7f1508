/**
 * Video jobs on the S3 blob store (s3rver, started here on port 0): results and stills land in the
 * bucket and /content serves them with ranges (or a presigned redirect); retention deletes the
 * objects; an outage while a job renders delays the job but loses nothing and charges once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { startS3Emulator, type S3Emulator } from "../support/s3-emulator.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import { client, pngBase64, PRICE_PER_SECOND, scriptedEnv } from "./support.ts";

let s3: S3Emulator;
let s: TestServer;
const PNG = Buffer.from(pngBase64(64, 48), "base64");

beforeAll(async () => {
  s3 = await startS3Emulator();
  const env = scriptedEnv([{ id: "instant", options: { durationMs: 0 } }], false);
  const file = JSON.parse(await Bun.file(env.REELAY_MODELS_FILE!).text());
  file.models.push({ id: "preview-motion", plugin: "preview-video", options: { minRenderMs: 3000 }, pricing: { perSecond: PRICE_PER_SECOND } });
  await Bun.write(env.REELAY_MODELS_FILE!, JSON.stringify(file));
  s = await startTestServer({ ...env, ...s3.env, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000", REELAY_VIDEO_RETENTION_SECONDS: "4" });
});
afterAll(async () => {
  await s?.close();
  await s3?.close();
});

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${s.url}/v1`, maxRetries: 0 });

describe("video jobs on the S3 blob store", () => {
  test("the MP4, thumbnail, spritesheet and source image are objects in the bucket; /content serves ranges from it; retention deletes them", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const openai = sdk(c.key);
    const v = await openai.videos.create({ model: "preview-motion", prompt: "pan left", seconds: "2" as any, size: "480x832" as any, input_reference: new File([PNG], "a.png", { type: "image/png" }) });
    await client(s.url, c.key).waitFinal(v.id, 60_000);
    expect((await s3.keys()).filter((k) => k.startsWith(`videos/${v.id}/`))).toEqual(["source", "spritesheet.jpg", "thumbnail.jpg", "video.mp4"].map((f) => `videos/${v.id}/${f}`));

    const whole = new Uint8Array(await (await openai.videos.downloadContent(v.id)).arrayBuffer());
    const v0 = (await ffprobe(whole)).streams.find((x: any) => x.codec_type === "video");
    expect([v0.width, v0.height]).toEqual([480, 832]);
    const ranged = await fetch(`${s.url}/v1/videos/${v.id}/content`, { headers: { authorization: `Bearer ${c.key}`, range: "bytes=100-1099" } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 100-1099/${whole.byteLength}`);
    expect(new Uint8Array(await ranged.arrayBuffer())).toEqual(whole.subarray(100, 1100));
    const tail = await fetch(`${s.url}/v1/videos/generations/${v.id}/content`, { headers: { authorization: `Bearer ${c.key}`, range: "bytes=-10" } });
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(whole.subarray(whole.byteLength - 10));

    // retention: 4 s, then the sweep (every 5 s) deletes the objects
    const end = Date.now() + 20_000;
    while ((await s3.keys()).some((k) => k.startsWith(`videos/${v.id}/`)) && Date.now() < end) await Bun.sleep(250);
    expect((await s3.keys()).filter((k) => k.startsWith(`videos/${v.id}/`))).toEqual([]);
    expect((await fetch(`${s.url}/v1/videos/${v.id}/content`, { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(410);
  }, 60_000);

  test("the store goes down while a job renders: the job completes once it is back, its result intact, charged once", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit({ model: "preview-motion", prompt: "zoom", image: PNG.toString("base64"), seconds: 2, size: "480x832" })).json();
    expect(sub.status).toBe("queued");
    // the render is paced to 3 s: stop the store while it runs, bring it back a few seconds after the render ends
    const end = Date.now() + 10_000;
    while ((((await (await api.get(sub.id)).json()) as any).status !== "processing") && Date.now() < end) await Bun.sleep(50);
    await s3.stop();
    await Bun.sleep(5_000);
    const during: any = await (await api.get(sub.id)).json();
    expect(during.status).toBe("processing");
    await s3.start();
    const done = await api.waitFinal(sub.id, 45_000);
    expect(done.status).toBe("completed");
    const mp4 = new Uint8Array(Buffer.from(done.data[0].b64_json, "base64"));
    const v = (await ffprobe(mp4)).streams.find((x: any) => x.codec_type === "video");
    expect([v.codec_name, v.width, v.height]).toEqual(["h264", 480, 832]);
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE_PER_SECOND, held: 0 });
    expect((await api.usage()).filter((u) => u.ref === sub.id)).toEqual([expect.objectContaining({ cost: 2 * PRICE_PER_SECOND, status: 200 })]);
  }, 90_000);

  test("a submit while the store is down: 503 storage_unavailable, nothing held", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    await s3.stop();
    try {
      const res = await api.submit({ model: "instant", prompt: "x", image: PNG.toString("base64") });
      expect(res.status).toBe(503);
      expect(((await res.json()) as any).error).toMatchObject({ code: "storage_unavailable", type: "service_unavailable" });
      expect(res.headers.get("retry-after")).toBe("5");
    } finally {
      await s3.start();
    }
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 30_000);
});

describe("presigned redirects", () => {
  test("with REELAY_S3_PRESIGN_SECONDS, /content answers 302 to a URL the store serves (ranges included) without reelay's key", async () => {
    const p = await startTestServer({ ...scriptedEnv([{ id: "instant", options: { durationMs: 0 } }]), ...s3.env, REELAY_S3_PRESIGN_SECONDS: "60", REELAY_SCHEDULER_POLL_MS: "50" });
    try {
      const c = await p.newClient({ credits: 1_000_000 });
      const api = client(p.url, c.key);
      const sub: any = await (await api.submit({ model: "instant", prompt: "x", image: PNG.toString("base64") })).json();
      await api.waitFinal(sub.id);
      const res = await fetch(`${p.url}/v1/videos/${sub.id}/content`, { headers: { authorization: `Bearer ${c.key}` }, redirect: "manual" });
      expect(res.status).toBe(302);
      const location = res.headers.get("location")!;
      expect(location.startsWith(s3.endpoint)).toBe(true);
      const direct = await fetch(location, { headers: { range: "bytes=0-7" } });
      expect(direct.status).toBe(206);
      expect(new Uint8Array(await direct.arrayBuffer())).toEqual(Uint8Array.of(0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70));
    } finally {
      await p.close();
    }
  }, 30_000);
});
