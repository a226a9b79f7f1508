import { afterAll, beforeAll, expect, test } from "bun:test";
import { startS3Emulator, type S3Emulator } from "../../test/support/s3-emulator.ts";
import { testConfig } from "../../test/support/harness.ts";
import { blobStoreCases } from "./common-cases.test-helper.ts";
import { s3BlobStore } from "./s3-store.ts";
import type { BlobStore } from "./index.ts";

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
