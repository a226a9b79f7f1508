/**
 * GET /v1/videos/generations/{id}/content against the real Postgres: the same bytes as the polling
 * answer's base64, byte ranges (also across the 1 MiB read slices), ETag / If-None-Match /
 * If-Range, and 404 / 409 / 410 as polling answers them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "./support.ts";

const IMG = pngBase64();
const BIG = 3 * 1024 * 1024 + 12_345; // bigger than one TOAST-sized read
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    ...scriptedEnv([
      { id: "big", options: { durationMs: 0, mp4Bytes: BIG } },
      { id: "small", options: { durationMs: 0, mp4Bytes: 1000 } },
      { id: "slow", options: { durationMs: 60_000, maxConcurrency: 50 } },
      { id: "broken", options: { fail: { code: "nsfw_rejected", message: "refused" } } },
    ]),
    REELAY_SCHEDULER_POLL_MS: "50",
  });
});
afterAll(() => s?.close());

async function completedJob(key: string, model: string) {
  const api = client(s.url, key);
  const id = ((await (await api.submit({ model, prompt: "p", image: IMG, seconds: 1 })).json()) as any).id as string;
  const done = await api.waitFinal(id);
  expect(done.status).toBe("completed");
  return { id, bytes: new Uint8Array(Buffer.from(done.data[0].b64_json, "base64")) };
}

const get = (key: string, id: string, headers: Record<string, string> = {}, method = "GET") =>
  fetch(`${s.url}/v1/videos/generations/${id}/content`, { method, headers: { authorization: `Bearer ${key}`, ...headers } });

const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

describe("download", () => {
  test("the whole MP4: the polling answer's bytes, with length, type, ETag and range support advertised", async () => {
    const c = await s.newClient();
    const { id, bytes } = await completedJob(c.key, "big");
    expect(bytes.byteLength).toBe(BIG);
    const res = await get(c.key, id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("video/mp4");
    expect(res.headers.get("content-length")).toBe(String(BIG));
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(res.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    expect(res.headers.get("content-disposition")).toBe(`inline; filename="${id}.mp4"`);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    expect(Buffer.from(await bytesOf(res)).equals(Buffer.from(bytes))).toBe(true);
  }, 30_000);

  test("byte ranges return exactly the requested bytes, from any offset", async () => {
    const c = await s.newClient();
    const { id, bytes } = await completedJob(c.key, "big");
    const MiB = 1024 * 1024;
    const cases: Array<[string, number, number]> = [
      ["bytes=0-99", 0, 99],
      ["bytes=100-", 100, BIG - 1],
      ["bytes=-500", BIG - 500, BIG - 1],
      [`bytes=${MiB - 10}-${MiB + 9}`, MiB - 10, MiB + 9], // around the 1 MiB mark
      [`bytes=${MiB - 1}-${3 * MiB + 1}`, MiB - 1, 3 * MiB + 1], // most of the file
      [`bytes=${BIG - 1}-${BIG + 1000}`, BIG - 1, BIG - 1], // end past the file: clipped
      ["bytes=0-0", 0, 0],
    ];
    for (const [range, start, end] of cases) {
      const res = await get(c.key, id, { range });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${BIG}`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      const got = await bytesOf(res);
      expect(Buffer.from(got).equals(Buffer.from(bytes.subarray(start, end + 1)))).toBe(true);
    }
  }, 30_000);

  test("unsatisfiable → 416 with Content-Range; malformed or multiple ranges → the whole file", async () => {
    const c = await s.newClient();
    const { id } = await completedJob(c.key, "small");
    for (const range of ["bytes=1000-", "bytes=5000-6000", "bytes=-0"]) {
      const res = await get(c.key, id, { range });
      expect(res.status).toBe(416);
      expect(res.headers.get("content-range")).toBe("bytes */1000");
      expect(((await res.json()) as any).error).toMatchObject({ code: "range_not_satisfiable", type: "invalid_request_error" });
    }
    for (const range of ["bytes=abc", "items=0-5", "bytes=0-5,10-20", "bytes=9-3"]) {
      const res = await get(c.key, id, { range });
      expect(res.status).toBe(200);
      expect((await bytesOf(res)).byteLength).toBe(1000);
    }
  });

  test("If-None-Match → 304; If-Range with another ETag → the whole file; with ours → the range", async () => {
    const c = await s.newClient();
    const { id } = await completedJob(c.key, "small");
    const etag = (await get(c.key, id)).headers.get("etag")!;
    const again = await get(c.key, id, { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.headers.get("etag")).toBe(etag);
    expect((await get(c.key, id, { range: "bytes=0-9", "if-range": '"stale"' })).status).toBe(200);
    expect((await get(c.key, id, { range: "bytes=0-9", "if-range": etag })).status).toBe(206);
    // another job's video has another ETag
    const other = await completedJob(c.key, "small");
    expect((await get(c.key, other.id)).headers.get("etag")).not.toBe(etag);
  }, 20_000);

  test("HEAD answers the headers without the body", async () => {
    const c = await s.newClient();
    const { id } = await completedJob(c.key, "small");
    const res = await get(c.key, id, {}, "HEAD");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe("1000");
    expect(res.headers.get("content-type")).toBe("video/mp4");
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });
});

describe("errors as polling answers them", () => {
  test("another account's job and an unknown id → 404; no key → 401", async () => {
    const owner = await s.newClient();
    const other = await s.newClient();
    const { id } = await completedJob(owner.key, "small");
    for (const res of [await get(other.key, id), await get(owner.key, "vid_doesnotexist")]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe("video_not_found");
    }
    expect((await fetch(`${s.url}/v1/videos/generations/${id}/content`)).status).toBe(401);
  });

  test("not completed yet → 409 video_not_ready; failed → 409 video_failed", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const slow = ((await (await api.submit({ model: "slow", prompt: "p", image: IMG })).json()) as any).id;
    const res = await get(c.key, slow);
    expect(res.status).toBe(409);
    expect(((await res.json()) as any).error.code).toBe("video_not_ready");
    const broken = ((await (await api.submit({ model: "broken", prompt: "p", image: IMG })).json()) as any).id;
    await api.waitFinal(broken);
    const failed = await get(c.key, broken);
    expect(failed.status).toBe(409);
    expect(((await failed.json()) as any).error.code).toBe("video_failed");
    await api.cancel(slow);
  }, 20_000);

  test("after retention → 410 video_expired, like polling", async () => {
    const short = await startTestServer({ ...scriptedEnv([{ id: "small", options: { durationMs: 0, mp4Bytes: 1000 } }]), REELAY_SCHEDULER_POLL_MS: "50", REELAY_VIDEO_RETENTION_SECONDS: "1" });
    try {
      const c = await short.newClient();
      const api = client(short.url, c.key);
      const id = ((await (await api.submit({ model: "small", prompt: "p", image: IMG })).json()) as any).id;
      await api.waitFinal(id);
      await Bun.sleep(1200);
      const res = await fetch(`${short.url}/v1/videos/generations/${id}/content`, { headers: { authorization: `Bearer ${c.key}` } });
      expect(res.status).toBe(410);
      expect(((await res.json()) as any).error.code).toBe("video_expired");
      expect((await api.get(id)).status).toBe(410);
    } finally {
      await short.close();
    }
  }, 30_000);
});
