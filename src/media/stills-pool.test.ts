import { afterAll, expect, test } from "bun:test";
import { encode as encodePng } from "fast-png";
import { ImageDecodeError } from "./decode-image.ts";
import { StillsPool } from "./stills-pool.ts";

const pool = new StillsPool(1);
afterAll(() => pool.close());

function png(width: number, height: number): Uint8Array {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37) % 251;
  return encodePng({ width, height, data, channels: 3, depth: 8 });
}

const refusal = (p: Promise<unknown>) => p.then(() => null, (e) => e);

test("checkImage decodes on a worker: a whole image passes, a truncated one is refused as corrupt, one over the pixel limit as too_large — decodeImage's errors", async () => {
  const whole = png(640, 480);
  expect(await refusal(pool.checkImage(whole, 4096 * 4096))).toBeNull();

  const cut = await refusal(pool.checkImage(whole.slice(0, Math.floor(whole.length * 0.6)), 4096 * 4096));
  expect(cut).toBeInstanceOf(ImageDecodeError);
  expect((cut as ImageDecodeError).code).toBe("corrupt");

  const big = await refusal(pool.checkImage(whole, 100_000));
  expect(big).toBeInstanceOf(ImageDecodeError);
  expect((big as ImageDecodeError).code).toBe("too_large");
  expect((big as Error).message).toContain("640x480");

  const text = await refusal(pool.checkImage(new TextEncoder().encode("not an image at all"), 4096 * 4096));
  expect((text as ImageDecodeError).code).toBe("unsupported_format");
});

test("the caller keeps its bytes (the worker gets a copy), and checks and thumbnails share the workers in order", async () => {
  const whole = png(640, 480);
  const [a, thumb, b] = await Promise.all([
    refusal(pool.checkImage(whole, 4096 * 4096)),
    pool.thumbnailFromImage(whole, 320, 240),
    refusal(pool.checkImage(whole.slice(0, 100), 4096 * 4096)),
  ]);
  expect(a).toBeNull();
  expect(thumb).not.toBeNull();
  expect([thumb![0], thumb![1]]).toEqual([0xff, 0xd8]); // a JPEG
  expect((b as ImageDecodeError).code).toBe("corrupt");
  expect(whole.byteLength).toBeGreaterThan(1000); // not detached by the transfer
  expect(await refusal(pool.checkImage(whole, 4096 * 4096))).toBeNull();
});

test("a closed pool refuses at once", async () => {
  const p = new StillsPool(1);
  p.close();
  expect(((await refusal(p.checkImage(png(8, 8), 100))) as Error).message).toContain("shut down");
});
