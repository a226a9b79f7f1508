import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { client, pngBase64, PRICE_PER_SECOND, scriptedEnv } from "../../../test/videos/support.ts";
import { fakeMp4 } from "../../../test/plugins/scripted-video.ts";
import { ffmpegImage, type GeneratedFormat } from "../../media/ffmpeg-image.test-helper.ts";
import { ffprobe } from "../../media/ffprobe.test-helper.ts";
import { INLINE_DECODE_PIXELS } from "./image-input.ts";

let s: TestServer;
const IMG = pngBase64();

beforeAll(async () => {
  s = await startTestServer({
    ...scriptedEnv([
      { id: "instant", options: { durationMs: 0 } },
      { id: "slow", options: { durationMs: 60_000, maxConcurrency: 100 } },
      { id: "broken", options: { fail: { code: "nsfw_rejected", message: "the provider refused the content" } } },
      { id: "flaky", options: { failRetryableTimes: 2 } },
      { id: "flaky-forever", options: { failRetryableTimes: 100 } },
      { id: "submit-flaky", options: { submitErrorTimes: 2 } },
      { id: "losing", options: { lostTimes: 1 } },
    ], true),
    REELAY_SCHEDULER_POLL_MS: "50",
    REELAY_SCHEDULER_LEASE_MS: "3000",
  });
});
afterAll(() => s?.close());

describe("preview model, end to end", () => {
  test("submit → 202 queued → completed with a real H.264 MP4 of the requested size and length", async () => {
    const c = await s.newClient({ credits: 5_000_000 });
    const api = client(s.url, c.key);
    const res = await api.submit({ model: "preview-motion", prompt: "slow zoom in", image: `data:image/png;base64,${IMG}`, seconds: 2, size: "832x480", seed: 7 });
    expect(res.status).toBe(202);
    const sub: any = await res.json();
    expect(sub).toMatchObject({ object: "video.generation", status: "queued", model: "preview-motion", seconds: 2 });
    expect(sub.id).toMatch(/^vid_/);
    expect(typeof sub.created_at).toBe("number");
    expect(await api.account()).toMatchObject({ balance: 5_000_000, held: 2 * PRICE_PER_SECOND });

    const done = await api.waitFinal(sub.id, 50_000);
    expect(done.status).toBe("completed");
    expect(done.seconds).toBe(2);
    expect(done.data[0].format).toBe("mp4");
    expect(done.expires_at).toBeGreaterThan(Date.now() / 1000 + 60);
    const mp4 = new Uint8Array(Buffer.from(done.data[0].b64_json, "base64"));
    const probe = await ffprobe(mp4);
    const v = probe.streams.find((x: any) => x.codec_type === "video");
    expect(v.codec_name).toBe("h264");
    expect(v.pix_fmt).toBe("yuv420p");
    expect([v.width, v.height]).toEqual([832, 480]);
    expect(Math.abs(Number(probe.format.duration) - 2)).toBeLessThan(0.15);

    expect(await api.account()).toMatchObject({ balance: 5_000_000 - 2 * PRICE_PER_SECOND, held: 0 });
    const usage = (await api.usage()).filter((u) => u.ref === sub.id);
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ kind: "video", seconds: 2, cost: 2 * PRICE_PER_SECOND, status: 200 });
  }, 60_000);
});

describe("submit validation", () => {
  const base = { model: "instant", prompt: "a cat", image: IMG };
  const cases: Array<[string, Record<string, unknown>, number, string | null]> = [
    ["missing prompt", { prompt: undefined }, 400, "prompt"],
    ["empty prompt", { prompt: "" }, 400, "prompt"],
    ["prompt not a string", { prompt: 5 }, 400, "prompt"],
    ["prompt too long", { prompt: "x".repeat(4001) }, 400, "prompt"],
    ["missing model", { model: undefined }, 400, "model"],
    ["model not a string", { model: 3 }, 400, "model"],
    ["unknown model", { model: "nope" }, 404, "model"],
    ["seconds 0", { seconds: 0 }, 400, "seconds"],
    ["seconds 11", { seconds: 11 }, 400, "seconds"],
    ["seconds fractional", { seconds: 2.5 }, 400, "seconds"],
    ["seconds string", { seconds: "5" }, 400, "seconds"],
    ["unknown size", { size: "1920x1080" }, 400, "size"],
    ["size not a string", { size: 480 }, 400, "size"],
    ["seed fractional", { seed: 1.5 }, 400, "seed"],
    ["seed negative", { seed: -1 }, 400, "seed"],
    ["seed string", { seed: "42" }, 400, "seed"],
    ["steps 0", { steps: 0 }, 400, "steps"],
    ["steps too many", { steps: 101 }, 400, "steps"],
    ["negative_prompt not a string", { negative_prompt: 1 }, 400, "negative_prompt"],
    ["no image at all", { image: undefined }, 400, "image"],
    ["both image and image_url", { image_url: "https://example.com/a.png" }, 400, "image_url"],
    ["image not base64", { image: "not base64 !!!" }, 400, "image"],
    ["image base64 of text", { image: Buffer.from("hello, this is not an image").toString("base64") }, 400, "image"],
    ["image truncated PNG", { image: Buffer.from(Buffer.from(IMG, "base64").subarray(0, 60)).toString("base64") }, 400, "image"],
    ["image not a string", { image: 12 }, 400, "image"],
    ["image_url not a string", { image: undefined, image_url: 5 }, 400, "image_url"],
    ["image_url ftp", { image: undefined, image_url: "ftp://example.com/a.png" }, 400, "image_url"],
    ["image_url garbage", { image: undefined, image_url: "not a url" }, 400, "image_url"],
  ];
  for (const [name, patch, status, param] of cases) {
    test(`${name} → ${status} param ${param}`, async () => {
      const c = await s.newClient({ credits: 1_000_000 });
      const api = client(s.url, c.key);
      const res = await api.submit({ ...base, ...patch });
      const body: any = await res.json();
      expect(res.status).toBe(status);
      expect(body.error.param).toBe(param);
      expect(typeof body.error.message).toBe("string");
      expect(body.error.type).toBe(status === 404 ? "not_found_error" : "invalid_request_error");
      // nothing held, no job
      expect(await api.account()).toMatchObject({ held: 0, balance: 1_000_000 });
      expect(((await (await api.list()).json()) as any).data).toHaveLength(0);
    });
  }

  test("an image larger than INLINE_DECODE_PIXELS is decoded on a stills worker: a truncated 640x480 PNG is a 400 invalid_image with nothing held, the whole one is accepted", async () => {
    const whole = Buffer.from(pngBase64(640, 480), "base64");
    expect(640 * 480).toBeGreaterThan(INLINE_DECODE_PIXELS);
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const cut = await api.submit({ ...base, image: whole.subarray(0, Math.floor(whole.length * 0.6)).toString("base64") });
    const body: any = await cut.json();
    expect(cut.status).toBe(400);
    expect(body.error).toMatchObject({ param: "image", code: "invalid_image", type: "invalid_request_error" });
    expect(body.error.message).toContain("could not be decoded");
    expect(await api.account()).toMatchObject({ held: 0, balance: 1_000_000 });
    const ok = await api.submit({ ...base, image: whole.toString("base64") });
    expect(ok.status).toBe(202);
  });

  test("the missing-image message says a source image is required", async () => {
    const c = await s.newClient();
    const body: any = await (await client(s.url, c.key).submit({ model: "instant", prompt: "x" })).json();
    expect(body.error.message).toMatch(/source image is required/i);
  });

  test("malformed JSON → 400 envelope", async () => {
    const c = await s.newClient();
    const res = await client(s.url, c.key).submit("{not json");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.type).toBe("invalid_request_error");
  });

  test("an image over REELAY_MAX_IMAGE_BYTES → 413 param image", async () => {
    const c = await s.newClient();
    const big = Buffer.alloc(s.deps.config.maxImageBytes + 10, 1).toString("base64");
    const res = await client(s.url, c.key).submit({ ...base, image: big });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.param).toBe("image");
  });

  test("an image whose header claims too many pixels → 413 param image", async () => {
    const c = await s.newClient();
    const png = Buffer.from(IMG, "base64");
    png.writeUInt32BE(20_000, 16); // IHDR width
    png.writeUInt32BE(20_000, 20); // IHDR height
    const res = await client(s.url, c.key).submit({ ...base, image: png.toString("base64") });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.param).toBe("image");
  });

  test("photos inside the 4096x4096 limit are accepted (12 MP phone JPEG, 4096x4096 JPEG/PNG/WebP); one row more → 413 naming the limit", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const inside: Array<[number, number, GeneratedFormat]> = [[4032, 3024, "jpeg-420"], [4096, 4096, "jpeg-444"], [4096, 4096, "png"], [4096, 4096, "webp"]];
    for (const [w, h, format] of inside) {
      const res = await api.submit({ ...base, image: Buffer.from(await ffmpegImage(w, h, format)).toString("base64") });
      expect({ image: `${w}x${h} ${format}`, status: res.status }).toEqual({ image: `${w}x${h} ${format}`, status: 202 });
    }
    const res = await api.submit({ ...base, image: Buffer.from(await ffmpegImage(4097, 4096, "jpeg-444")).toString("base64") });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error).toMatchObject({ param: "image", message: "'image' is 4097x4096 (16781312 pixels); the limit is 16777216 pixels (4096x4096)." });
  }, 60_000);

  test("defaults: seconds 5, size 480x832, a random seed that is stored", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit(base)).json();
    expect(sub.seconds).toBe(5);
    const job: any = await (await api.get(sub.id)).json();
    expect(job.size).toBe("480x832");
    expect(Number.isInteger(job.seed)).toBe(true);
    const sub2: any = await (await api.submit({ ...base, seed: 1234, size: "624x624", seconds: 1, steps: 30, negative_prompt: "blur" })).json();
    expect(((await (await api.get(sub2.id)).json()) as any)).toMatchObject({ seed: 1234, size: "624x624", seconds: 1 });
  });
});

describe("billing", () => {
  test("hold at submit, exact charge on completion, usage row", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit({ model: "slow", prompt: "x", image: IMG, seconds: 4 })).json();
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 4 * PRICE_PER_SECOND, available: 1_000_000 - 4 * PRICE_PER_SECOND });
    const sub2: any = await (await api.submit({ model: "instant", prompt: "x", image: IMG, seconds: 3 })).json();
    const done = await api.waitFinal(sub2.id);
    expect(done.status).toBe("completed");
    expect(Buffer.from(done.data[0].b64_json, "base64").equals(Buffer.from(fakeMp4(sub2.id)))).toBe(true);
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 3 * PRICE_PER_SECOND, held: 4 * PRICE_PER_SECOND });
    // the slow one is processing with progress
    let p: any;
    for (let i = 0; i < 100; i++) {
      p = await (await api.get(sub.id)).json();
      if (p.status === "processing") break;
      await Bun.sleep(50);
    }
    expect(p.status).toBe("processing");
    expect(p.data).toBeUndefined();
  });

  test("a failing plugin: job failed with the provider's code, hold released, nothing charged", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit({ model: "broken", prompt: "x", image: IMG, seconds: 5 })).json();
    const done = await api.waitFinal(sub.id);
    expect(done.status).toBe("failed");
    expect(done.error).toEqual({ code: "nsfw_rejected", message: "the provider refused the content" });
    expect(done.data).toBeUndefined();
    expect(await api.account()).toEqual(expect.objectContaining({ balance: 1_000_000, held: 0, available: 1_000_000 }));
    const usage = (await api.usage()).filter((u) => u.ref === sub.id);
    expect(usage).toHaveLength(1);
    expect(usage[0]!.cost).toBe(0);
  });

  test("retryable failures are retried with backoff, then the job completes and is charged once", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const a: any = await (await api.submit({ model: "flaky", prompt: "x", image: IMG, seconds: 1 })).json();
    const b: any = await (await api.submit({ model: "submit-flaky", prompt: "x", image: IMG, seconds: 1 })).json();
    expect((await api.waitFinal(a.id)).status).toBe("completed");
    expect((await api.waitFinal(b.id)).status).toBe("completed");
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE_PER_SECOND, held: 0 });
  }, 20_000);

  test("retryable failures that never stop: the job fails after bounded retries, nothing charged", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const a: any = await (await api.submit({ model: "flaky-forever", prompt: "x", image: IMG, seconds: 1 })).json();
    const done = await api.waitFinal(a.id, 40_000);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("upstream_error");
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 50_000);

  test("a lost handle is submitted again and completes, charged once", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const a: any = await (await api.submit({ model: "losing", prompt: "x", image: IMG, seconds: 2 })).json();
    expect((await api.waitFinal(a.id)).status).toBe("completed");
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE_PER_SECOND, held: 0 });
  });

  test("not enough credits → 402 and no job", async () => {
    const c = await s.newClient({ credits: 4 * PRICE_PER_SECOND });
    const api = client(s.url, c.key);
    const res = await api.submit({ model: "instant", prompt: "x", image: IMG, seconds: 5 });
    expect(res.status).toBe(402);
    expect(((await res.json()) as any).error.code).toBe("insufficient_quota");
    expect(((await (await api.list()).json()) as any).data).toHaveLength(0);
    expect(await api.account()).toMatchObject({ balance: 4 * PRICE_PER_SECOND, held: 0 });
  });
});

describe("idempotency", () => {
  test("same key + same body → same job, one hold; different body → 409", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const body = { model: "slow", prompt: "x", image: IMG, seconds: 2 };
    const r1 = await api.submit(body, { "idempotency-key": "k-1" });
    expect(r1.status).toBe(202);
    const j1: any = await r1.json();
    const r2 = await api.submit(body, { "idempotency-key": "k-1" });
    expect(r2.status).toBe(200);
    expect(((await r2.json()) as any).id).toBe(j1.id);
    expect((await api.account()).held).toBe(2 * PRICE_PER_SECOND);
    const r3 = await api.submit({ ...body, prompt: "y" }, { "idempotency-key": "k-1" });
    expect(r3.status).toBe(409);
    expect(((await r3.json()) as any).error.type).toBe("conflict_error");
  });

  test("concurrent submits with one key create one job and one hold", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const body = { model: "slow", prompt: "race", image: IMG, seconds: 3 };
    const replies = await Promise.all(Array.from({ length: 8 }, () => api.submit(body, { "idempotency-key": "race-1" })));
    const ids = new Set(await Promise.all(replies.map(async (r) => ((await r.json()) as any).id)));
    expect(ids.size).toBe(1);
    expect(replies.filter((r) => r.status === 202)).toHaveLength(1);
    expect((await api.account()).held).toBe(3 * PRICE_PER_SECOND);
  });
});

describe("access, limits, cancel", () => {
  test("another account's job and unknown ids → 404", async () => {
    const a = await s.newClient();
    const b = await s.newClient();
    const sub: any = await (await client(s.url, a.key).submit({ model: "instant", prompt: "x", image: IMG })).json();
    for (const id of [sub.id, "vid_doesnotexist"]) {
      const res = await client(s.url, b.key).get(id);
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.type).toBe("not_found_error");
    }
    expect((await client(s.url, b.key).cancel(sub.id)).status).toBe(404);
    expect(((await (await client(s.url, b.key).list()).json()) as any).data).toHaveLength(0);
  });

  test("concurrent video jobs per key: over the limit → 429 with Retry-After, DB-counted", async () => {
    const c = await s.newClient({ credits: 10_000_000, limits: { concurrent_video_jobs: 2 } });
    const api = client(s.url, c.key);
    const body = { model: "slow", prompt: "x", image: IMG, seconds: 1 };
    const replies = await Promise.all([api.submit(body), api.submit(body), api.submit(body)]);
    expect(replies.map((r) => r.status).sort()).toEqual([202, 202, 429]);
    const limited = replies.find((r) => r.status === 429)!;
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(((await limited.json()) as any).error.type).toBe("rate_limit_error");
    expect((await api.account()).held).toBe(2 * PRICE_PER_SECOND);
    // a finished (cancelled) job frees a slot
    const first: any = await replies.find((r) => r.status === 202)!.json();
    expect((await api.cancel(first.id)).status).toBe(200);
    expect((await api.submit(body)).status).toBe(202);
  });

  test("cancel: job failed with code cancelled, hold released; cancelling again is idempotent; finished jobs → 409", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit({ model: "slow", prompt: "x", image: IMG, seconds: 3 })).json();
    for (let i = 0; i < 100 && ((await (await api.get(sub.id)).json()) as any).status !== "processing"; i++) await Bun.sleep(30);
    const res = await api.cancel(sub.id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any)).toMatchObject({ status: "failed", error: { code: "cancelled" } });
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
    expect((await api.cancel(sub.id)).status).toBe(200);
    const done: any = await (await api.submit({ model: "instant", prompt: "x", image: IMG, seconds: 1 })).json();
    await api.waitFinal(done.id);
    expect((await api.cancel(done.id)).status).toBe(409);
    expect((await api.account()).balance).toBe(1_000_000 - PRICE_PER_SECOND);
  }, 20_000);

  test("list: own jobs, newest first, paginated", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(((await (await api.submit({ model: "instant", prompt: `x${i}`, image: IMG })).json()) as any).id);
    const p1: any = await (await api.list("?limit=2")).json();
    expect(p1.data.map((j: any) => j.id)).toEqual([ids[2], ids[1]]);
    expect(p1.has_more).toBe(true);
    const p2: any = await (await api.list(`?limit=2&after=${p1.last_id}`)).json();
    expect(p2.data.map((j: any) => j.id)).toEqual([ids[0]]);
    expect(p2.has_more).toBe(false);
  });
});
