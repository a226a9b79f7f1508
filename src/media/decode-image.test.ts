import { describe, expect, test } from "bun:test";
import { encode as encodePng } from "fast-png";
import { decodeImage, ImageDecodeError, sniffImageType } from "./decode-image.ts";
import { ffmpegImage, type GeneratedFormat } from "./ffmpeg-image.test-helper.ts";

const fixture = (name: string) => Bun.file(new URL(`./fixtures/${name}`, import.meta.url)).bytes();

/** median over pixels of the largest RGB channel difference */
function medianPixelDiff(a: Uint8Array, b: Uint8Array): number {
  const d: number[] = [];
  for (let i = 0; i < a.length; i += 4) {
    d.push(Math.max(Math.abs(a[i]! - b[i]!), Math.abs(a[i + 1]! - b[i + 1]!), Math.abs(a[i + 2]! - b[i + 2]!)));
  }
  return d.sort((x, y) => x - y)[d.length >> 1]!;
}

/** mean absolute difference over the RGB channels */
function meanAbsDiff(a: Uint8Array, b: Uint8Array): number {
  let sum = 0, n = 0;
  for (let i = 0; i < a.length; i += 4) {
    for (let c = 0; c < 3; c++) { sum += Math.abs(a[i + c]! - b[i + c]!); n++; }
  }
  return sum / n;
}

async function expectDecodeError(bytes: Uint8Array, code: string) {
  const err = await decodeImage(bytes).then(() => null, (e) => e);
  expect(err).toBeInstanceOf(ImageDecodeError);
  expect(err.code).toBe(code);
}

describe("decodeImage", () => {
  const exact: Array<[string, string, string]> = [
    ["rgb.png", "image/png", "rgb.rgba"],
    ["rgba.png", "image/png", "rgb.rgba"],
    ["palette.png", "image/png", "palette.png.rgba"],
    ["lossless.webp", "image/webp", "rgb.rgba"],
  ];
  for (const [name, mime, reference] of exact) {
    test(`${name} decodes to ffmpeg's pixels exactly`, async () => {
      const bytes = await fixture(name);
      expect(sniffImageType(bytes)).toBe(mime as never);
      const ref = await fixture(reference);
      const img = await decodeImage(bytes);
      expect([img.width, img.height]).toEqual([64, 48]);
      expect(img.rgba.length).toBe(64 * 48 * 4);
      expect(Buffer.from(img.rgba).equals(Buffer.from(ref))).toBe(true);
    });
  }

  for (const name of ["photo.jpg", "lossy.webp"]) {
    test(`${name} (lossy) decodes close to ffmpeg's pixels`, async () => {
      const bytes = await fixture(name);
      const img = await decodeImage(bytes);
      expect([img.width, img.height]).toEqual([64, 48]);
      expect(img.rgba[3]).toBe(255);
      // decoders differ in IDCT rounding and chroma upsampling (libwebp's "fancy" upsampling vs
      // ffmpeg's nearest), which shows at the colour edges of this test card: compare the median
      expect(medianPixelDiff(img.rgba, await fixture(`${name}.rgba`))).toBeLessThanOrEqual(4);
      // and far from a wrong image (all grey), so the tolerance above means something
      expect(meanAbsDiff(new Uint8Array(img.rgba.length).fill(128), img.rgba)).toBeGreaterThan(30);
    });
  }

  test("sniffs JPEG and rejects unknown formats", async () => {
    expect(sniffImageType(await fixture("photo.jpg"))).toBe("image/jpeg");
    expect(sniffImageType(new TextEncoder().encode("GIF89a......"))).toBeNull();
    expect(sniffImageType(new Uint8Array())).toBeNull();
  });

  test("grey, grey+alpha, 16-bit and 1-bit PNGs widen to RGBA", async () => {
    const grey = await decodeImage(encodePng({ width: 2, height: 1, data: new Uint8Array([10, 200]), channels: 1, depth: 8 }));
    expect([...grey.rgba]).toEqual([10, 10, 10, 255, 200, 200, 200, 255]);
    const ga = await decodeImage(encodePng({ width: 1, height: 1, data: new Uint8Array([50, 7]), channels: 2, depth: 8 }));
    expect([...ga.rgba]).toEqual([50, 50, 50, 7]);
    const deep = await decodeImage(encodePng({ width: 1, height: 1, data: new Uint16Array([0x1234, 0xff00, 0x0100]), channels: 3, depth: 16 }));
    expect([...deep.rgba]).toEqual([0x12, 0xff, 0x01, 255]);
    // 1-bit, 10 pixels wide: 1 0 1 1 0 0 0 0 | 1 1 (padded)
    const bits = await decodeImage(encodePng({ width: 10, height: 1, data: new Uint8Array([0b10110000, 0b11000000]), channels: 1, depth: 1 }));
    expect([...bits.rgba].filter((_, i) => i % 4 === 0)).toEqual([255, 0, 255, 255, 0, 0, 0, 0, 255, 255]);
  });

  test("undecodable bytes throw ImageDecodeError", async () => {
    await expectDecodeError(new TextEncoder().encode("definitely not an image"), "unsupported_format");
    const png = await fixture("rgb.png");
    await expectDecodeError(png.slice(0, 60), "corrupt"); // header fine, data cut off
    const jpg = await fixture("photo.jpg");
    await expectDecodeError(jpg.slice(0, 400), "corrupt");
    const webp = await fixture("lossy.webp");
    const broken = webp.slice();
    broken.fill(0x55, 40); // valid header, garbage bitstream
    await expectDecodeError(broken, "corrupt");
    await expectDecodeError(webp.slice(0, 20), "corrupt");
  });

  test("refuses a decompression bomb from its header, before decoding", async () => {
    const png = (await fixture("rgb.png")).slice();
    const v = new DataView(png.buffer);
    v.setUint32(16, 20_000); // IHDR width
    v.setUint32(20, 20_000); // IHDR height: 400 MP
    const started = performance.now();
    await expectDecodeError(png, "too_large");
    expect(performance.now() - started).toBeLessThan(50);

    const webp = (await fixture("lossy.webp")).slice();
    webp[26] = 0xff; webp[27] = 0x3f; webp[28] = 0xff; webp[29] = 0x3f; // 16383 x 16383
    await expectDecodeError(webp, "too_large");

    const jpg = (await fixture("photo.jpg")).slice();
    const sof = jpg.findIndex((b, i) => b === 0xff && jpg[i + 1] === 0xc0);
    new DataView(jpg.buffer).setUint16(sof + 5, 30_000);
    new DataView(jpg.buffer).setUint16(sof + 7, 30_000);
    await expectDecodeError(jpg, "too_large");
  });

  test("the pixel limit is configurable", async () => {
    const bytes = await fixture("rgb.png");
    await expect(decodeImage(bytes, { maxPixels: 64 * 48 - 1 })).rejects.toBeInstanceOf(ImageDecodeError);
    expect((await decodeImage(bytes, { maxPixels: 64 * 48 })).width).toBe(64);
  });

  describe("camera-sized images inside the 4096x4096 source limit decode", () => {
    const limit = 4096 * 4096;
    const cases: Array<[number, number, GeneratedFormat]> = [
      [4096, 4096, "jpeg-444"],
      [4096, 4096, "jpeg-420"],
      [4032, 3024, "jpeg-420"], // a 12 MP phone photo
      [3000, 2250, "jpeg-420"],
      [4096, 4096, "png"],
      [4096, 4096, "webp"],
    ];
    for (const [w, h, format] of cases) {
      test(`${w}x${h} ${format}`, async () => {
        const img = await decodeImage(await ffmpegImage(w, h, format), { maxPixels: limit });
        expect({ width: img.width, height: img.height, bytes: img.rgba.length }).toEqual({ width: w, height: h, bytes: w * h * 4 });
        // testsrc2 is not flat: the top-left and the centre differ
        const centre = ((h >> 1) * w + (w >> 1)) * 4;
        expect([img.rgba[centre], img.rgba[centre + 1], img.rgba[centre + 2]]).not.toEqual([img.rgba[0], img.rgba[1], img.rgba[2]]);
      }, 30_000);
    }

    test("one row beyond the limit: too_large, and the message names the limit", async () => {
      const err = await decodeImage(await ffmpegImage(4096, 4097, "jpeg-444"), { maxPixels: limit }).then(() => null, (e) => e);
      expect(err).toBeInstanceOf(ImageDecodeError);
      expect(err.code).toBe("too_large");
      expect(err.message).toBe("image is 4096x4097 (16781312 pixels); the limit is 16777216 pixels (4096x4096)");
    });
  });
});
