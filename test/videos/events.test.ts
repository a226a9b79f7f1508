/**
 * GET /v1/videos/generations/{id}/events against the real Postgres: a preview job's stream goes
 * queued → processing (progress rising) → completed and ends; final states close at once; the
 * stream works on an instance that is not running the job; shutdown ends open streams.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { createTestDatabase, dropDatabase, startTestServer, type TestServer } from "../support/harness.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { client, pngBase64, scriptedEnv } from "./support.ts";

const IMG = pngBase64(96, 64);
let s: TestServer;

beforeAll(async () => {
  const env = scriptedEnv([
    { id: "slow", options: { durationMs: 60_000, maxConcurrency: 50 } },
    { id: "broken", options: { fail: { code: "nsfw_rejected", message: "refused" } } },
    { id: "instant", options: { durationMs: 0 } },
  ]);
  // the preview renderer with one slot: a second job provably waits in `queued` while the first
  // renders; each render paced to take 3 s, so the host's polls (every 500 ms) see progress rise
  // several times whatever this machine's speed (unpaced, a fast machine rendered 6 s in < 1 s)
  const file = JSON.parse(readFileSync(env.REELAY_MODELS_FILE!, "utf8"));
  file.models.push({ id: "preview-one", plugin: "preview-video", options: { maxConcurrency: 1, minRenderMs: 3_000 }, pricing: { perSecond: 30_000 } });
  writeFileSync(env.REELAY_MODELS_FILE!, JSON.stringify(file));
  s = await startTestServer({ ...env, REELAY_SCHEDULER_POLL_MS: "50" });
});
afterAll(() => s?.close());

interface Stream {
  events: EventSourceMessage[];
  retry: number | null;
  /** resolves when the server ends the stream */
  ended: Promise<void>;
  status: number;
  headers: Headers;
  close(): void;
}

async function openStream(url: string, key: string, id: string): Promise<Stream> {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/videos/generations/${id}/events`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
  const events: EventSourceMessage[] = [];
  let retry: number | null = null;
  const parser = createParser({ onEvent: (e) => events.push(e), onRetry: (ms) => (retry = ms) });
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // aborted by close()
    }
  })();
  return { events, get retry() { return retry; }, ended, status: res.status, headers: res.headers, close: () => controller.abort() } as Stream;
}

const data = (e: EventSourceMessage) => JSON.parse(e.data);

describe("progress stream", () => {
  test("a preview job: queued → processing with rising progress → completed, then the stream ends", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const blocker = ((await (await api.submit({ model: "preview-one", prompt: "pan left", image: IMG, seconds: 3 })).json()) as any).id;
    const sub = await api.submit({ model: "preview-one", prompt: "slow zoom in", image: IMG, seconds: 6, size: "832x480" });
    const id = ((await sub.json()) as any).id;
    const stream = await openStream(s.url, c.key, id);
    expect(((await (await api.get(blocker)).json()) as any).status).not.toBe("completed"); // so `id` was still queued when the stream opened
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    await stream.ended; // the server closes it after the final event
    expect(stream.retry).toBe(2000);

    const types = stream.events.map((e) => e.event);
    expect(types[0]).toBe("video.generation.queued");
    expect(types.at(-1)).toBe("video.generation.completed");
    const processing = stream.events.filter((e) => e.event === "video.generation.processing").map(data);
    const progress = processing.map((p) => p.progress).filter((p) => typeof p === "number");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    expect(progress.every((p) => p >= 0 && p <= 1)).toBe(true);
    // in order, each state once it was left: queued before processing before completed
    expect(types.indexOf("video.generation.queued")).toBeLessThan(types.indexOf("video.generation.processing"));
    expect(stream.events.map((e) => Number(e.id))).toEqual(stream.events.map((_, i) => i + 1));

    const final = data(stream.events.at(-1)!);
    expect(final).toMatchObject({ id, object: "video.generation", status: "completed", model: "preview-one", seconds: 6, size: "832x480" });
    expect(final.data).toBeUndefined(); // no video in the stream
    expect(final.urls).toEqual({ poll: `${s.url}/v1/videos/generations/${id}`, events: `${s.url}/v1/videos/generations/${id}/events`, content: `${s.url}/v1/videos/generations/${id}/content` });
    expect(final.expires_at).toBeGreaterThan(Date.now() / 1000);
    // the content link serves the finished MP4
    const mp4 = await fetch(final.urls.content, { headers: { authorization: `Bearer ${c.key}` } });
    expect(mp4.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await mp4.arrayBuffer()).subarray(4, 8).toString()).toBe("ftyp");
  }, 90_000);

  test("a job already final gets one event and the end; failed and cancelled are told apart", async () => {
    const c = await s.newClient();
    const api = client(s.url, c.key);
    const done = ((await (await api.submit({ model: "instant", prompt: "p", image: IMG })).json()) as any).id;
    await api.waitFinal(done);
    const one = await openStream(s.url, c.key, done);
    await one.ended;
    expect(one.events.map((e) => e.event)).toEqual(["video.generation.completed"]);

    const broken = ((await (await api.submit({ model: "broken", prompt: "p", image: IMG })).json()) as any).id;
    await api.waitFinal(broken);
    const failed = await openStream(s.url, c.key, broken);
    await failed.ended;
    expect(failed.events.map((e) => e.event)).toEqual(["video.generation.failed"]);
    expect(data(failed.events[0]!).error).toEqual({ code: "nsfw_rejected", message: "refused" });

    const slow = ((await (await api.submit({ model: "slow", prompt: "p", image: IMG })).json()) as any).id;
    const live = await openStream(s.url, c.key, slow);
    for (let i = 0; i < 100 && !live.events.some((e) => e.event === "video.generation.processing"); i++) await Bun.sleep(50);
    expect((await api.cancel(slow)).status).toBe(200);
    await live.ended;
    expect(live.events.at(-1)!.event).toBe("video.generation.cancelled");
    expect(data(live.events.at(-1)!).error.code).toBe("cancelled");
  }, 30_000);

  test("404 for another account's job or an unknown one; 410 after retention; 401 without a key", async () => {
    const owner = await s.newClient();
    const other = await s.newClient();
    const id = ((await (await client(s.url, owner.key).submit({ model: "slow", prompt: "p", image: IMG })).json()) as any).id;
    for (const [key, job] of [[other.key, id], [owner.key, "vid_nope"]] as const) {
      const res = await fetch(`${s.url}/v1/videos/generations/${job}/events`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error.code).toBe("video_not_found");
    }
    expect((await fetch(`${s.url}/v1/videos/generations/${id}/events`)).status).toBe(401);
    await client(s.url, owner.key).cancel(id);

    const short = await startTestServer({ ...scriptedEnv([{ id: "instant", options: { durationMs: 0 } }]), REELAY_SCHEDULER_POLL_MS: "50", REELAY_VIDEO_RETENTION_SECONDS: "1" });
    try {
      const c = await short.newClient();
      const api = client(short.url, c.key);
      const job = ((await (await api.submit({ model: "instant", prompt: "p", image: IMG })).json()) as any).id;
      await api.waitFinal(job);
      await Bun.sleep(1200);
      const res = await fetch(`${short.url}/v1/videos/generations/${job}/events`, { headers: { authorization: `Bearer ${c.key}` } });
      expect(res.status).toBe(410);
      expect(((await res.json()) as any).error.code).toBe("video_expired");
    } finally {
      await short.close();
    }
  }, 30_000);

  test("shutdown ends open streams at once instead of waiting out the grace period", async () => {
    const srv = await startTestServer({ ...scriptedEnv([{ id: "slow", options: { durationMs: 60_000 } }]), REELAY_SCHEDULER_POLL_MS: "50", REELAY_SHUTDOWN_GRACE_MS: "20000" });
    const c = await srv.newClient();
    const id = ((await (await client(srv.url, c.key).submit({ model: "slow", prompt: "p", image: IMG })).json()) as any).id;
    const stream = await openStream(srv.url, c.key, id);
    for (let i = 0; i < 100 && stream.events.length === 0; i++) await Bun.sleep(20);
    expect(stream.events.length).toBeGreaterThan(0);
    const t0 = Date.now();
    await srv.close();
    await stream.ended;
    expect(Date.now() - t0).toBeLessThan(15_000); // the grace period is 20 s
  }, 40_000);
});

describe("across instances", () => {
  let databaseUrl: string;
  const children: ChildServer[] = [];
  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill9()));
    if (databaseUrl) await dropDatabase(databaseUrl);
  });

  test("a stream on instance B follows a job that instance A runs (LISTEN/NOTIFY through Postgres)", async () => {
    databaseUrl = await createTestDatabase();
    const models = scriptedEnv([{ id: "remote", options: { durationMs: 2_000, pollIntervalMs: 100 } }]);
    const a = await spawnServer({ ...models, DATABASE_URL: databaseUrl, REELAY_SCHEDULER_POLL_MS: "50" });
    children.push(a);
    // B's scheduler looks at the queue once at start, then once a minute: the job is A's
    const b = await spawnServer({ ...models, DATABASE_URL: databaseUrl, REELAY_SCHEDULER_POLL_MS: "60000" });
    children.push(b);
    const c = await newClientOn(a);
    const id = ((await (await client(a.url, c.key).submit({ model: "remote", prompt: "p", image: IMG, seconds: 1 })).json()) as any).id;
    const stream = await openStream(b.url, c.key, id);
    await stream.ended;
    const types = stream.events.map((e) => e.event);
    expect(types.at(-1)).toBe("video.generation.completed");
    const progress = stream.events.filter((e) => e.event === "video.generation.processing").map((e) => data(e).progress).filter((p) => typeof p === "number");
    expect(progress.length).toBeGreaterThanOrEqual(3); // 5% steps over 2 s, seen from B
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    expect(data(stream.events.at(-1)!).urls.poll).toBe(`${a.url}/v1/videos/generations/${id}`); // links point where the job was submitted
  }, 60_000);
});
