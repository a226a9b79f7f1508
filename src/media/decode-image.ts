/**
 * PNG, JPEG and WebP to 8-bit RGBA. Libraries do the decoding (fast-png, jpeg-js, libwebp as wasm);
 * this module sniffs the type, refuses oversized images from the header before decoding, and turns
 * every failure into one typed error.
 */
import { decode as decodePng, convertIndexedToRgb } from "fast-png";
import jpeg from "jpeg-js";
import { readImageSize, sniffImageType, type ImageMime } from "./image-header.ts";
import { decodeWebpRgba } from "./webp-wasm.ts";

export { sniffImageType, type ImageMime };

/** 40 MP is 160 MB of RGBA: larger than any sane video source, small enough to survive a few at once. */
export const MAX_IMAGE_PIXELS = 40_000_000;

export type ImageDecodeErrorCode = "unsupported_format" | "too_large" | "corrupt";

export class ImageDecodeError extends Error {
  readonly code: ImageDecodeErrorCode;
  constructor(code: ImageDecodeErrorCode, message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "ImageDecodeError";
    this.code = code;
  }
}

export interface DecodedImage {
  width: number;
  height: number;
  /** width × height × 4 bytes, row-major, non-premultiplied */
  rgba: Uint8Array;
}

export interface DecodeImageOptions {
  maxPixels?: number;
}

export async function decodeImage(bytes: Uint8Array, opts: DecodeImageOptions = {}): Promise<DecodedImage> {
  const maxPixels = opts.maxPixels ?? MAX_IMAGE_PIXELS;
  const mime = sniffImageType(bytes);
  if (!mime) throw new ImageDecodeError("unsupported_format", "image is not PNG, JPEG or WebP");
  const size = readImageSize(bytes, mime);
  if (!size) throw new ImageDecodeError("corrupt", `${mime} header is truncated or malformed`);
  checkSize(size.width, size.height, maxPixels);

  let image: DecodedImage | null;
  try {
    if (mime === "image/png") image = pngToRgba(bytes);
    else if (mime === "image/jpeg") image = jpegToRgba(bytes, maxPixels);
    else image = await decodeWebpRgba(bytes);
  } catch (err) {
    if (err instanceof ImageDecodeError) throw err;
    // a decoder's own memory/resolution guard is a size refusal, not corruption
    if (/max(MemoryUsageInMB|ResolutionInMP)/.test(String((err as Error)?.message))) {
      throw new ImageDecodeError("too_large", `image is ${size.width}x${size.height}; it needs more decoder memory than the limit of ${describePixelLimit(maxPixels)} allows`, { cause: err });
    }
    throw new ImageDecodeError("corrupt", `${mime} could not be decoded`, { cause: err });
  }
  if (!image) throw new ImageDecodeError("corrupt", `${mime} could not be decoded`);
  // the decoder's idea of the size is the one that counts (a lying header must not slip through)
  checkSize(image.width, image.height, maxPixels);
  return image;
}

function checkSize(width: number, height: number, maxPixels: number): void {
  if (width < 1 || height < 1) throw new ImageDecodeError("corrupt", `image has no pixels (${width}x${height})`);
  if (width * height > maxPixels) {
    throw new ImageDecodeError("too_large", `image is ${width}x${height} (${width * height} pixels); the limit is ${describePixelLimit(maxPixels)}`);
  }
}

/** "16777216 pixels (4096x4096)" for a square limit, "40000000 pixels" otherwise */
export function describePixelLimit(maxPixels: number): string {
  const side = Math.sqrt(maxPixels);
  return Number.isInteger(side) ? `${maxPixels} pixels (${side}x${side})` : `${maxPixels} pixels`;
}

/**
 * jpeg-js counts what it allocates against `maxMemoryUsageInMB`: per pixel and component 4 bytes of
 * Int32 DCT blocks, 1 of output lines and 1 of the joined planes, then 4 of RGBA. Measured: 22.1
 * bytes/px for a 4096x4096 4:4:4 JPEG, 14.5 for a 4032x3024 4:2:0 phone photo; CMYK is 28, and MCU
 * padding adds a little. 32 bytes/px covers every JPEG inside the pixel limit (the old 8 bytes/px
 * refused ordinary phone photos as "could not be decoded").
 */
const JPEG_DECODER_BYTES_PER_PIXEL = 32;

function jpegToRgba(bytes: Uint8Array, maxPixels: number): DecodedImage {
  const out = jpeg.decode(bytes, {
    useTArray: true,
    formatAsRGBA: true,
    maxResolutionInMP: maxPixels / 1_000_000,
    maxMemoryUsageInMB: Math.ceil((maxPixels * JPEG_DECODER_BYTES_PER_PIXEL) / (1024 * 1024)),
  });
  return { width: out.width, height: out.height, rgba: out.data as Uint8Array };
}

function pngToRgba(bytes: Uint8Array): DecodedImage {
  const png = decodePng(bytes);
  const { width, height } = png;
  const n = width * height;
  if (png.palette) return widen(width, height, convertIndexedToRgb(png), png.palette[0]?.length ?? 3, 0);
  if (png.depth < 8) return unpackLowBitGrey(width, height, png.data, png.depth);
  return widen(width, height, png.data, png.channels, png.depth === 16 ? 8 : 0);
}

/** 1/2/3/4 channels of 8- or 16-bit samples (16-bit keeps its high byte) to RGBA8 */
function widen(width: number, height: number, data: ArrayLike<number>, channels: number, shift: number): DecodedImage {
  const n = width * height;
  if (channels === 4 && shift === 0 && data instanceof Uint8Array) return { width, height, rgba: data };
  const rgba = new Uint8Array(n * 4);
  for (let p = 0, s = 0, o = 0; p < n; p++, s += channels, o += 4) {
    if (channels >= 3) {
      rgba[o] = data[s]! >> shift;
      rgba[o + 1] = data[s + 1]! >> shift;
      rgba[o + 2] = data[s + 2]! >> shift;
      rgba[o + 3] = channels === 4 ? data[s + 3]! >> shift : 255;
    } else {
      rgba[o] = rgba[o + 1] = rgba[o + 2] = data[s]! >> shift;
      rgba[o + 3] = channels === 2 ? data[s + 1]! >> shift : 255;
    }
  }
  return { width, height, rgba };
}

/** greyscale at 1, 2 or 4 bits comes back packed, rows padded to whole bytes */
function unpackLowBitGrey(width: number, height: number, data: ArrayLike<number>, depth: number): DecodedImage {
  const stride = Math.ceil((width * depth) / 8);
  const mask = (1 << depth) - 1;
  const scale = 255 / mask;
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const bit = x * depth;
      const v = ((data[y * stride + (bit >> 3)]! >> (8 - depth - (bit & 7))) & mask) * scale;
      const o = (y * width + x) * 4;
      rgba[o] = rgba[o + 1] = rgba[o + 2] = v;
      rgba[o + 3] = 255;
    }
  }
  return { width, height, rgba };
}
