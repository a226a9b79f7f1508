/**
 * /content relays a large S3 object at its client's pace: the store is read only as fast as the
 * client takes the bytes (no read-ahead of the whole object into memory), and a client that hangs up
 * closes the store's connection. The store here is a small S3 endpoint of the test's own (GET, whole
 * or ranged, the one call getForResponse makes; HEAD, counted to show it is not asked) that counts what it has sent and honours its
 * socket's backpressure, which s3rver does not let a test see.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { eventually } from "../../test/chat/chat-server.ts";
import { s3BlobStore } from "./s3-store.ts";
import type { BlobStore } from "./index.ts";

const SIZE = 96 * 1024 * 1024;
const CHUNK = new Uint8Array(64 * 1024).fill(5);
let fake: Server;
let store: BlobStore;
let relay: ReturnType<typeof Bun.serve>;
const gets: Array<{ sent: number; closed: boolean; finished: boolean }> = [];
let heads = 0;

async function send(res: ServerResponse, start: number, end: number, stat: { sent: number; finished: boolean }) {
  for (let at = start; at <= end && !res.destroyed; at += CHUNK.byteLength) {
    const piece = CHUNK.subarray(0, Math.min(CHUNK.byteLength, end + 1 - at));
    stat.sent += piece.byteLength;
    if (!res.write(piece)) {
      await new Promise<void>((r) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          r();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  stat.finished = true;
  res.end();
}

beforeAll(async () => {
  fake = createServer((req, res) => {
    const common = { "content-type": "video/mp4", etag: '"abc"', "last-modified": new Date(0).toUTCString(), "accept-ranges": "bytes" };
    if (req.method === "HEAD") {
      heads++;
      res.writeHead(200, { ...common, "content-length": String(SIZE) });
      return res.end();
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    const start = m ? Number(m[1]) : 0;
    const end = m ? Math.min(Number(m[2]), SIZE - 1) : SIZE - 1;
    const stat = { sent: 0, closed: false, finished: false };
    gets.push(stat);
    res.on("close", () => (stat.closed = true));
    res.writeHead(m ? 206 : 200, { ...common, "content-length": String(end - start + 1), ...(m ? { "content-range": `bytes ${start}-${end}/${SIZE}` } : {}) });
    void send(res, start, end, stat);
  });
  await new Promise<void>((r) => fake.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  store = s3BlobStore({ bucket: "b", endpoint, region: "us-east-1", accessKeyId: "k", secretAccessKey: "s", sessionToken: null, virtualHostedStyle: false });
  relay = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async () => new Response(await store.getForResponse!("video.mp4")) });
});
afterAll(() => {
  relay?.stop(true);
  fake?.close();
});

test("a client that stops reading holds the store back: less than 40 MB of a 96 MB object is read ahead; then all of it arrives", async () => {
  const [getsBefore, headsBefore] = [gets.length, heads];
  const res = await fetch(relay.url);
  expect(res.status).toBe(200);
  // one GET answers the download, with no HEAD before it (the caller knows the size)
  expect({ gets: gets.length - getsBefore, heads: heads - headsBefore }).toEqual({ gets: 1, heads: 0 });
  const reader = res.body!.getReader();
  let got = 0;
  while (got < 1024 * 1024) got += (await reader.read()).value!.byteLength;
  await Bun.sleep(1500); // the client reads nothing: the store may send only what the buffers on the way hold
  const stat = gets.at(-1)!;
  expect(stat.sent).toBeLessThan(40 * 1024 * 1024); // ~14 MB here: the sockets' buffers on the way
  for (let r = await reader.read(); !r.done; r = await reader.read()) got += r.value.byteLength;
  expect({ got, sent: stat.sent, finished: stat.finished }).toEqual({ got: SIZE, sent: SIZE, finished: true });
}, 60_000);

test("a client that hangs up mid-download closes the store's connection", async () => {
  const ac = new AbortController();
  const res = await fetch(relay.url, { signal: ac.signal });
  await res.body!.getReader().read();
  const stat = gets.at(-1)!;
  ac.abort();
  await eventually(async () => stat.closed, 10_000);
  expect(stat.finished && stat.sent === SIZE).toBe(false);
}, 30_000);
