import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, PRICE_PER_SECOND, scriptedEnv } from "./support.ts";

let s: TestServer;
let hits = 0;
let target: ReturnType<typeof Bun.serve>;
const IMG = pngBase64();

beforeAll(async () => {
  // a local server that would happily serve an image (or redirect to one): it must never be reached
  target = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      hits++;
      if (new URL(req.url).pathname === "/redirect") return Response.redirect(`http://127.0.0.1:${target.port}/a.png`, 302);
      return new Response(Buffer.from(IMG, "base64"), { headers: { "content-type": "image/png" } });
    },
  });
  s = await startTestServer({ ...scriptedEnv([{ id: "instant" }]), REELAY_VIDEO_RETENTION_SECONDS: "1", REELAY_SCHEDULER_POLL_MS: "50" });
});
afterAll(async () => {
  target?.stop(true);
  await s?.close();
});

describe("image_url SSRF guard", () => {
  const probes = () => [
    `http://127.0.0.1:${target.port}/a.png`,
    `http://localhost:${target.port}/a.png`,
    `http://vm:${target.port}/a.png`,
    `http://[::1]:${target.port}/a.png`,
    `http://2130706433:${target.port}/a.png`,
    `http://0x7f.1:${target.port}/a.png`,
    "http://10.0.0.1/a.png",
    "http://192.168.1.1/a.png",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00::1]/a.png",
    "http://metadata.google.internal/computeMetadata/v1/",
    // the redirector is itself on loopback, so it is refused on the first hop (nothing fetched)
    `http://127.0.0.1:${target.port}/redirect`,
    `file:///etc/passwd`,
  ];
  test("every private, loopback, link-local or metadata target → 400 param image_url, nothing fetched, nothing held", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    for (const url of probes()) {
      const res = await api.submit({ model: "instant", prompt: "x", image_url: url });
      const body: any = await res.json();
      expect({ url, status: res.status, param: body.error?.param }).toEqual({ url, status: 400, param: "image_url" });
    }
    expect(hits).toBe(0);
    expect(await api.account()).toMatchObject({ held: 0, balance: 1_000_000 });
    expect(((await (await api.list()).json()) as any).data).toHaveLength(0);
  }, 30_000);
});

describe("retention", () => {
  test("a completed result is served until expires_at, then 410 video_expired; the sweeper deletes its objects from the blob store", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const sub: any = await (await api.submit({ model: "instant", prompt: "x", image: IMG, seconds: 2 })).json();
    const done = await api.waitFinal(sub.id);
    expect(done.status).toBe("completed");
    expect(done.data[0].b64_json.length).toBeGreaterThan(0);
    await Bun.sleep(1_300);
    const res = await api.get(sub.id);
    expect(res.status).toBe(410);
    expect(((await res.json()) as any).error.code).toBe("video_expired");
    // charged once, and expiry does not refund or charge again
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE_PER_SECOND, held: 0 });

    const sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
    try {
      let row: any;
      for (let i = 0; i < 80; i++) {
        [row] = await sql`SELECT status, blob_store IS NULL AS gone, (SELECT count(*)::int FROM blobs WHERE key LIKE ${`videos/${sub.id}/%`}) AS objects FROM video_jobs WHERE id = ${sub.id}`;
        if (row.status === "expired" && row.gone) break;
        await Bun.sleep(100);
      }
      expect(row).toEqual({ status: "expired", gone: true, objects: 0 });
    } finally {
      await sql.end();
    }
    expect((await api.get(sub.id)).status).toBe(410);
  }, 30_000);
});
