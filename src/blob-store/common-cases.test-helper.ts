/**
 * The one behaviour every blob store has (Hono's common.case.test.ts pattern): each store's test
 * file runs these cases against its own store, so the video module can rely on any of them alike.
 */
import { describe, expect, test } from "bun:test";
import { BlobStoreError, readAll, type BlobStore } from "./index.ts";

export interface StoreUnderTest {
  store: () => BlobStore;
  /** make the store unreachable and bring it back (omitted: the store cannot be taken down here) */
  outage?: { down(): Promise<void>; up(): Promise<void> };
}

const bytes = (n: number, seed = 1) => {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) out[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
  return out;
};

async function collect(stream: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; chunks: number }> {
  const parts: Uint8Array[] = [];
  for await (const c of stream) parts.push(c);
  return { bytes: new Uint8Array(await new Blob(parts).arrayBuffer()), chunks: parts.length };
}

export function blobStoreCases(name: string, t: StoreUnderTest) {
  describe(`blob store: ${name}`, () => {
    const key = (k: string) => `test/${crypto.randomUUID()}/${k}`;

    test("put bytes, then head and get them back whole", async () => {
      const k = key("a.mp4");
      const data = bytes(300_000);
      await t.store().put(k, data, { contentType: "video/mp4" });
      expect(await t.store().head(k)).toEqual({ size: 300_000, contentType: "video/mp4" });
      expect(await readAll(t.store(), k)).toEqual(data);
    });

    test("ranges: the middle, the last byte, an end past the object", async () => {
      const k = key("r.bin");
      const data = bytes(3 * 1024 * 1024 + 17, 7);
      await t.store().put(k, data, { contentType: "application/octet-stream" });
      const read = async (start: number, end: number) => (await collect((await t.store().get(k, { start, end }))!)).bytes;
      expect(await read(1000, 1999)).toEqual(data.subarray(1000, 2000));
      expect(await read(data.length - 1, data.length - 1)).toEqual(data.subarray(data.length - 1));
      expect(await read(2_000_000, 10_000_000)).toEqual(data.subarray(2_000_000));
    });

    test("a large object is read as a stream of several chunks, not one buffer", async () => {
      const k = key("big.bin");
      const data = bytes(6 * 1024 * 1024 + 3, 3);
      await t.store().put(k, data, { contentType: "application/octet-stream" });
      const { bytes: back, chunks } = await collect((await t.store().get(k))!);
      expect(back.byteLength).toBe(data.byteLength);
      expect(back).toEqual(data);
      expect(chunks).toBeGreaterThan(1);
    });

    test("put from a stream (several parts) stores every byte", async () => {
      const k = key("streamed.bin");
      const data = bytes(11 * 1024 * 1024 + 5, 11);
      let at = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          if (at >= data.length) return c.close();
          const n = Math.min(700_000, data.length - at);
          c.enqueue(data.slice(at, at + n));
          at += n;
        },
      });
      await t.store().put(k, stream, { contentType: "video/mp4" });
      expect(await t.store().head(k)).toEqual({ size: data.length, contentType: "video/mp4" });
      expect(await readAll(t.store(), k)).toEqual(data);
    });

    test("a put replaces the object", async () => {
      const k = key("x.jpg");
      await t.store().put(k, bytes(10), { contentType: "image/jpeg" });
      await t.store().put(k, bytes(20, 5), { contentType: "image/webp" });
      expect(await t.store().head(k)).toEqual({ size: 20, contentType: "image/webp" });
      expect(await readAll(t.store(), k)).toEqual(bytes(20, 5));
    });

    test("missing objects: head and get answer null; delete of a missing key is fine", async () => {
      const k = key("nothing");
      expect(await t.store().head(k)).toBeNull();
      expect(await t.store().get(k)).toBeNull();
      await t.store().delete([k]);
    });

    test("delete removes every named object and only those", async () => {
      const [a, b, c] = [key("a"), key("b"), key("c")];
      for (const k of [a, b, c]) await t.store().put(k, bytes(100), { contentType: "application/octet-stream" });
      await t.store().delete([a, b]);
      expect(await t.store().head(a)).toBeNull();
      expect(await t.store().head(b)).toBeNull();
      expect(await t.store().head(c)).toEqual({ size: 100, contentType: "application/octet-stream" });
    });

    if (t.outage) {
      const outage = t.outage;
      test("an unreachable store is a BlobStoreError for put, head and get; it works again once back", async () => {
        const k = key("outage.bin");
        await t.store().put(k, bytes(1000), { contentType: "application/octet-stream" });
        await outage.down();
        try {
          for (const op of [() => t.store().put(key("o"), bytes(10), { contentType: "application/octet-stream" }), () => t.store().head(k), () => t.store().get(k)]) {
            const err = await op().then(() => null, (e) => e);
            expect(err).toBeInstanceOf(BlobStoreError);
          }
        } finally {
          await outage.up();
        }
        expect(await readAll(t.store(), k)).toEqual(bytes(1000));
      });
    }
  });
}
