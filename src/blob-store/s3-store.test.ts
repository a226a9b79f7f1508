import { afterAll, beforeAll, expect, test } from "bun:test";
import { startS3Emulator, type S3Emulator } from "../../test/support/s3-emulator.ts";
import { testConfig } from "../../test/support/harness.ts";
import { blobStoreCases } from "./common-cases.test-helper.ts";
import { s3BlobStore } from "./s3-store.ts";
import { BlobStoreError, type BlobStore } from "./index.ts";

let s3: S3Emulator;
let store: BlobStore;

beforeAll(async () => {
  s3 = await startS3Emulator();
  store = s3BlobStore(testConfig(s3.env).blobStore.s3!);
});
afterAll(() => s3?.close());

blobStoreCases("s3 (s3rver)", { store: () => store, outage: { down: () => s3.stop(), up: () => s3.start() } });

test("s3: a presigned GET serves the object, ranges included, to a client without credentials", async () => {
  await store.put("presigned/a.mp4", new Uint8Array(5000).fill(9), { contentType: "video/mp4" });
  const url = store.presignGet!("presigned/a.mp4", { expiresInSeconds: 60 });
  const res = await fetch(url, { headers: { range: "bytes=10-19" } });
  expect(res.status).toBe(206);
  expect(res.headers.get("content-range")).toBe("bytes 10-19/5000");
  expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(10).fill(9));
});

test("s3: getForResponse, the body /content sends, arrives byte-exact through Bun.serve (whole, ranges, concurrent); missing → null; store down → BlobStoreError", async () => {
  const data = new Uint8Array(6 * 1024 * 1024 + 11);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 10)) & 0xff;
  await store.put("response/big.bin", data, { contentType: "application/octet-stream" });
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.get("range") ?? "");
      const body = await store.getForResponse!("response/big.bin", range ? { start: Number(range[1]), end: Number(range[2]) } : undefined);
      return new Response(body);
    },
  });
  try {
    const get = async (range?: string) => new Uint8Array(await (await fetch(server.url, { headers: range ? { range } : {} })).arrayBuffer());
    const whole = await Promise.all(Array.from({ length: 4 }, () => get()));
    for (const w of whole) expect(w).toEqual(data);
    expect(await get("bytes=1000-1999")).toEqual(data.subarray(1000, 2000));
    expect(await get(`bytes=${data.length - 5}-${data.length + 100}`)).toEqual(data.subarray(data.length - 5));
  } finally {
    server.stop(true);
  }
  expect(await store.getForResponse!("response/nothing")).toBeNull();
  await s3.stop();
  try {
    expect(await store.getForResponse!("response/big.bin").then(() => null, (e) => e)).toBeInstanceOf(BlobStoreError);
  } finally {
    await s3.start();
  }
}, 60_000);
