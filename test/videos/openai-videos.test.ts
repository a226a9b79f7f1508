/**
 * OpenAI's Videos API through the official `openai` SDK (client.videos), on the preview model and
 * the scripted fakes: create (multipart with a file, {image_url}, JSON), polling as the SDK's
 * poller does, list pagination, the three downloads, delete of a running job, remix refused, a job
 * read through both APIs, per-size prices, and the sizes/seconds a model declares.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { decodeImage } from "../../src/media/index.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, PRICE_PER_SECOND, scriptedEnv } from "./support.ts";
import { blocksCheckedBy } from "../readme/doc-blocks.ts";
import { parseModelsFile } from "../../src/models-file.ts";
import { problemsWithPricing } from "../../src/plugin-sdk/index.ts";

let s: TestServer;
const PNG = Buffer.from(pngBase64(96, 64), "base64");
const SIZE_PRICES = { "480x832": 20_000, "720x1280": 50_000 };

beforeAll(async () => {
  const env = scriptedEnv([
    { id: "instant", options: { durationMs: 0 } },
    { id: "slow", options: { durationMs: 60_000, maxConcurrency: 100 } },
  ], false);
  // the preview renderer paced (minRenderMs) so its progress rises on any machine, and priced by size
  const file = JSON.parse(await Bun.file(env.REELAY_MODELS_FILE!).text());
  file.models.push({ id: "preview-motion", plugin: "preview-video", options: { minRenderMs: 1500 }, pricing: { perSecond: PRICE_PER_SECOND, perSecondBySize: SIZE_PRICES } });
  file.models.push({ id: "preview-narrow", plugin: "preview-video", sizes: ["1280x720"], seconds: [4, 8], pricing: { perSecond: PRICE_PER_SECOND } });
  await Bun.write(env.REELAY_MODELS_FILE!, JSON.stringify(file));
  s = await startTestServer({ ...env, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" });
});
afterAll(() => s?.close());

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${s.url}/v1`, maxRetries: 0 });

/** The SDK's poller (openai/lib/polling): retrieve, sleep what openai-poll-after-ms says (5 s without it), until final. */
async function pollLikeTheSdk(openai: OpenAI, id: string) {
  const seen: Array<{ status: string; progress: number; after: string | null }> = [];
  for (let i = 0; i < 200; i++) {
    const { data, response } = await openai.videos.retrieve(id).withResponse();
    const after = response.headers.get("openai-poll-after-ms");
    seen.push({ status: data.status, progress: data.progress, after });
    if (data.status === "completed" || data.status === "failed") return { video: data, seen };
    await Bun.sleep(after ? Number.parseInt(after) : 5000);
  }
  throw new Error(`video ${id} did not finish`);
}

describe("official openai SDK: client.videos", () => {
  test("create with an uploaded file → polled to completed (progress rising, poll-after header) → the three downloads decode", async () => {
    const c = await s.newClient({ credits: 5_000_000 });
    const openai = sdk(c.key);
    const created = await openai.videos.create({ model: "preview-motion", prompt: "slow zoom in", seconds: "4", size: "720x1280", input_reference: new File([PNG], "source.png", { type: "image/png" }) });
    expect(created).toMatchObject({ object: "video", status: "queued", model: "preview-motion", seconds: "4", size: "720x1280", progress: 0, error: null, remixed_from_video_id: null, completed_at: null });
    expect(created.id).toMatch(/^vid_/);
    // held at the 720x1280 price
    expect(await client(s.url, c.key).account()).toMatchObject({ held: 4 * SIZE_PRICES["720x1280"] });

    const { video, seen } = await pollLikeTheSdk(openai, created.id);
    expect(video).toMatchObject({ status: "completed", progress: 100, seconds: "4", size: "720x1280" });
    expect(video.completed_at).toBeGreaterThanOrEqual(video.created_at);
    expect(video.expires_at).toBeGreaterThan(Date.now() / 1000);
    const running = seen.filter((x) => x.status === "in_progress");
    expect(running.length).toBeGreaterThan(1);
    expect(running.every((x) => x.after === "500" && Number.isInteger(x.progress) && x.progress >= 0 && x.progress < 100)).toBe(true);
    expect(running.at(-1)!.progress).toBeGreaterThan(running[0]!.progress);
    expect(seen.at(-1)!.after).toBeNull();

    const mp4 = new Uint8Array(await (await openai.videos.downloadContent(created.id)).arrayBuffer());
    const probe = await ffprobe(mp4);
    const v = probe.streams.find((x: any) => x.codec_type === "video");
    expect([v.codec_name, v.width, v.height]).toEqual(["h264", 720, 1280]);
    expect(Math.abs(Number(probe.format.duration) - 4)).toBeLessThan(0.15);

    const thumbRes = await openai.videos.downloadContent(created.id, { variant: "thumbnail" });
    expect(thumbRes.headers.get("content-type")).toBe("image/jpeg");
    const thumb = await decodeImage(new Uint8Array(await thumbRes.arrayBuffer()));
    expect([thumb.width, thumb.height]).toEqual([720, 1280]);

    const sheet = await decodeImage(new Uint8Array(await (await openai.videos.downloadContent(created.id, { variant: "spritesheet" })).arrayBuffer()));
    // one tile per second (4): a 2 x 2 grid of quarter-size frames
    expect([sheet.width, sheet.height]).toEqual([2 * 180, 2 * 320]);

    // charged once, at the size's price, and the usage row says which price applied
    expect(await client(s.url, c.key).account()).toMatchObject({ balance: 5_000_000 - 4 * SIZE_PRICES["720x1280"], held: 0 });
    const usage = (await client(s.url, c.key).usage()).filter((u) => u.ref === created.id);
    expect(usage).toEqual([expect.objectContaining({ kind: "video", seconds: 4, cost: 4 * SIZE_PRICES["720x1280"], status: 200 })]);
    expect((usage[0] as any).price_basis).toBe("perSecondBySize[720x1280]=50000");
  }, 90_000);

  test("input_reference as {image_url} (a data URL: the SDK sends input_reference[image_url]) and JSON with seconds as an integer", async () => {
    const c = await s.newClient({ credits: 5_000_000 });
    const openai = sdk(c.key);
    const a = await openai.videos.create({ model: "instant", prompt: "a cat", size: "480x832" as any, input_reference: { image_url: `data:image/png;base64,${PNG.toString("base64")}` } });
    expect(a).toMatchObject({ status: "queued", seconds: "4", size: "480x832" });
    const res = await fetch(`${s.url}/v1/videos`, {
      method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "instant", prompt: "a dog", seconds: 2, size: "832x480", input_reference: { image_url: `data:image/png;base64,${PNG.toString("base64")}` } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ object: "video", seconds: "2", size: "832x480" });
    expect((await pollLikeTheSdk(openai, a.id)).video.status).toBe("completed");
  }, 30_000);

  test("a job made by either API is read by the other, same id", async () => {
    const c = await s.newClient({ credits: 5_000_000 });
    const openai = sdk(c.key);
    const old: any = await (await client(s.url, c.key).submit({ model: "instant", prompt: "first api", image: PNG.toString("base64"), seconds: 3 })).json();
    await client(s.url, c.key).waitFinal(old.id);
    expect(await openai.videos.retrieve(old.id)).toMatchObject({ id: old.id, object: "video", status: "completed", seconds: "3", size: "480x832", prompt: "first api" });
    const fresh = await openai.videos.create({ model: "instant", prompt: "second api", size: "624x624" as any, seconds: "2" as any, input_reference: new File([PNG], "a.png", { type: "image/png" }) });
    const polled = await client(s.url, c.key).waitFinal(fresh.id);
    expect(polled).toMatchObject({ id: fresh.id, object: "video.generation", status: "completed", seconds: 2, size: "624x624" });
    expect(polled.data[0].format).toBe("mp4");
    // the scripted fake's bytes are no real video: no frames were encoded here, so the thumbnail is the source image at the video's size, and there is no spritesheet
    // made when first asked for: four clients asking at once get the same JPEG
    const thumbs = await Promise.all(Array.from({ length: 4 }, async () => new Uint8Array(await (await openai.videos.downloadContent(fresh.id, { variant: "thumbnail" })).arrayBuffer())));
    for (const t of thumbs.slice(1)) expect(t).toEqual(thumbs[0]!);
    const thumb = await decodeImage(thumbs[0]!);
    expect([thumb.width, thumb.height]).toEqual([624, 624]);
    const err = await openai.videos.downloadContent(fresh.id, { variant: "spritesheet" }).then(() => null, (e) => e);
    expect(err).toMatchObject({ status: 404, code: "variant_not_available" });
  }, 30_000);

  test("videos.list auto-paginates every video of the account (both APIs'), newest first; order=asc reverses", async () => {
    const c = await s.newClient({ credits: 5_000_000 });
    const openai = sdk(c.key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await openai.videos.create({ model: "instant", prompt: `n${i}`, size: "480x832" as any, input_reference: { image_url: `data:image/png;base64,${PNG.toString("base64")}` } })).id);
    const seen: string[] = [];
    for await (const v of openai.videos.list({ limit: 2 })) seen.push(v.id);
    expect(seen).toEqual([...ids].reverse());
    const page = await openai.videos.list({ limit: 2, order: "asc" });
    expect(page.data.map((v) => v.id)).toEqual(ids.slice(0, 2));
    expect(page.has_more).toBe(true);
  }, 30_000);

  test("videos.delete of a running job cancels it: nothing charged, hold released; deleting again is fine", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const openai = sdk(c.key);
    const v = await openai.videos.create({ model: "slow", prompt: "x", seconds: "4", size: "480x832" as any, input_reference: new File([PNG], "a.png", { type: "image/png" }) });
    const end = Date.now() + 10_000;
    while ((await openai.videos.retrieve(v.id)).status !== "in_progress" && Date.now() < end) await Bun.sleep(50);
    expect(await client(s.url, c.key).account()).toMatchObject({ balance: 1_000_000, held: 4 * PRICE_PER_SECOND });
    expect(await openai.videos.delete(v.id)).toMatchObject({ id: v.id, object: "video.deleted", deleted: true });
    expect(await openai.videos.retrieve(v.id)).toMatchObject({ status: "failed", error: { code: "cancelled" } });
    expect(await client(s.url, c.key).account()).toMatchObject({ balance: 1_000_000, held: 0 });
    expect((await client(s.url, c.key).usage()).filter((u) => u.ref === v.id)).toEqual([expect.objectContaining({ cost: 0 })]);
    expect(await openai.videos.delete(v.id)).toMatchObject({ deleted: true });
  }, 30_000);

  test("delete of a completed video: its downloads are gone (410)", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const openai = sdk(c.key);
    const v = await openai.videos.create({ model: "instant", prompt: "x", size: "480x832" as any, input_reference: new File([PNG], "a.png", { type: "image/png" }) });
    await pollLikeTheSdk(openai, v.id);
    await openai.videos.delete(v.id);
    expect(await openai.videos.downloadContent(v.id).then(() => null, (e) => e)).toMatchObject({ status: 410, code: "video_expired" });
  }, 30_000);

  test("videos.remix on a model whose plugin does not declare remix: a clean 400", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const openai = sdk(c.key);
    const v = await openai.videos.create({ model: "instant", prompt: "x", size: "480x832" as any, input_reference: new File([PNG], "a.png", { type: "image/png" }) });
    const err = await openai.videos.remix(v.id, { prompt: "again" }).then(() => null, (e) => e);
    expect(err).toMatchObject({ status: 400, code: "remix_not_supported", param: "video_id" });
    expect(err.message).toContain("cannot remix");
  });
});

describe("sizes and seconds each model takes", () => {
  const post = (key: string, body: unknown) =>
    fetch(`${s.url}/v1/videos`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const image = { image_url: `data:image/png;base64,${PNG.toString("base64")}` };

  test("a size the model does not take: 400 naming the field and listing the valid sizes", async () => {
    const c = await s.newClient();
    const res = await post(c.key, { model: "instant", prompt: "x", size: "720x1280", input_reference: image });
    expect(res.status).toBe(400);
    const body: any = await res.json();
    expect(body.error).toMatchObject({ param: "size", code: "invalid_size", type: "invalid_request_error" });
    expect(body.error.message).toContain("480x832, 832x480, 624x624");
  });

  test("the models file narrows what the plugin declares: preview-narrow takes 1280x720 at 4 or 8 s only", async () => {
    const c = await s.newClient();
    const bad: any = await (await post(c.key, { model: "preview-narrow", prompt: "x", seconds: "12", size: "1280x720", input_reference: image })).json();
    expect(bad.error).toMatchObject({ param: "seconds", code: "invalid_seconds" });
    expect(bad.error.message).toContain("4, 8");
    const other: any = await (await post(c.key, { model: "preview-narrow", prompt: "x", seconds: "4", size: "720x1280", input_reference: image })).json();
    expect(other.error).toMatchObject({ param: "size" });
    expect(other.error.message).toContain("valid sizes: 1280x720");
    const models: any = await (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${c.key}` } })).json();
    expect(models.data.find((m: any) => m.id === "preview-narrow")).toMatchObject({ video: { sizes: ["1280x720"], seconds: [4, 8], remix: false } });
    expect(models.data.find((m: any) => m.id === "preview-motion").pricing).toEqual({ per_second: PRICE_PER_SECOND, per_second_by_size: SIZE_PRICES });
  });

  test("no image: 400 saying the model needs one; seconds that are not whole: 400", async () => {
    const c = await s.newClient();
    const none: any = await (await post(c.key, { model: "instant", prompt: "x" })).json();
    expect(none.error).toMatchObject({ param: "input_reference", code: "missing_image" });
    const frac: any = await (await post(c.key, { model: "instant", prompt: "x", seconds: "4.5", input_reference: image })).json();
    expect(frac.error).toMatchObject({ param: "seconds" });
    const fileId: any = await (await post(c.key, { model: "instant", prompt: "x", input_reference: { file_id: "file_1" } })).json();
    expect(fileId.error).toMatchObject({ param: "input_reference", code: "unsupported_parameter" });
  });

  test("per-size prices are exact: 480x832 at its own price, 832x480 (unpriced) at perSecond; balance and usage rows agree", async () => {
    const c = await s.newClient({ credits: 2_000_000 });
    const api = client(s.url, c.key);
    const a: any = await (await api.submit({ model: "preview-motion", prompt: "x", image: PNG.toString("base64"), seconds: 1, size: "480x832" })).json();
    const b: any = await (await api.submit({ model: "preview-motion", prompt: "x", image: PNG.toString("base64"), seconds: 2, size: "832x480" })).json();
    expect(await api.account()).toMatchObject({ held: 1 * SIZE_PRICES["480x832"] + 2 * PRICE_PER_SECOND });
    await api.waitFinal(a.id, 60_000);
    await api.waitFinal(b.id, 60_000);
    expect(await api.account()).toMatchObject({ balance: 2_000_000 - SIZE_PRICES["480x832"] - 2 * PRICE_PER_SECOND, held: 0 });
    const usage = (await api.usage()) as any[];
    expect(usage.find((u) => u.ref === a.id)).toMatchObject({ cost: SIZE_PRICES["480x832"], price_basis: "perSecondBySize[480x832]=20000" });
    expect(usage.find((u) => u.ref === b.id)).toMatchObject({ cost: 2 * PRICE_PER_SECOND, price_basis: `perSecond=${PRICE_PER_SECOND}` });
  }, 60_000);
});

describe("docs/video.md's examples", () => {
  const [sdkBlock, narrowBlock, priceBlock] = blocksCheckedBy("test/videos/openai-videos.test.ts");

  test("the SDK example is valid TypeScript calling create, then downloadContent with a variant", () => {
    expect(() => new Bun.Transpiler({ loader: "ts" }).transformSync(sdkBlock!.code)).not.toThrow();
    expect(sdkBlock!.code).toContain("openai.videos.create(");
    expect(sdkBlock!.code).toContain('variant: "thumbnail"');
  });

  test("the narrowing example is a models file entry with sizes and seconds; the price example passes the pricing check", () => {
    const file = parseModelsFile((require("yaml") as typeof import("yaml")).parse(narrowBlock!.code));
    expect(file.models[0]).toMatchObject({ plugin: "preview-video", sizes: ["1280x720"], seconds: [4, 8] });
    const pricing = (require("yaml") as typeof import("yaml")).parse(priceBlock!.code).pricing;
    expect(problemsWithPricing(pricing)).toEqual([]);
    expect(pricing.perSecondBySize["1280x720"]).toBe(100_000);
  });
});
