/**
 * The source image of a submit, whichever API sent it: inline (base64 or a data URL), a URL
 * (downloaded once, here, through the SSRF guard) or uploaded bytes (multipart). The image is
 * fully decoded once so an undecodable upload is a 400 at submit instead of a failed job later;
 * only the original bytes are stored. `param` is the field the client used, for its errors.
 */
import { badRequest, tooLarge } from "../../errors.ts";
import { decodeImage, describePixelLimit, ImageDecodeError, sniffImageType, type ImageMime } from "../../media/index.ts";
import { readImageSize } from "../../media/image-header.ts";
import { safeFetchBytes, SafeFetchError } from "../../net/safe-fetch.ts";

/** 4096 x 4096: 64 MB of RGBA while validating; sources larger than that are not video material */
export const MAX_SOURCE_PIXELS = 4096 * 4096;
const FETCH_TIMEOUT_MS = 10_000;

export interface SourceImage {
  bytes: Uint8Array;
  mime: ImageMime;
}

export interface ImageInputLimits {
  maxImageBytes: number;
  /**
   * Decode an image of more than INLINE_DECODE_PIXELS off the thread that serves requests (the
   * stills workers: thumbnails.ts); throws ImageDecodeError. Without it, every image is decoded here.
   */
  decodeOffLoop?: (bytes: Uint8Array, maxPixels: number) => Promise<void>;
}

/** The limits of a submit's image on this server: its byte limit, and the stills workers for large decodes. */
export const imageLimits = (deps: { config: { maxImageBytes: number }; thumbnails: { checkImage: NonNullable<ImageInputLimits["decodeOffLoop"]> } }): ImageInputLimits => ({
  maxImageBytes: deps.config.maxImageBytes,
  decodeOffLoop: deps.thumbnails.checkImage,
});

/**
 * Images up to this size are decoded on the request's thread (a 64x48 PNG: ~0.5 ms, about what a
 * worker's round trip costs); larger ones on a worker. Measured here (fast-png, after warm-up):
 * 256x256 ~6 ms, 480x832 ~35 ms, 1280x720 ~70 ms of CPU — on the event loop, every other request
 * and every job completion would wait behind it.
 */
export const INLINE_DECODE_PIXELS = 128 * 128;

/** POST /v1/videos/generations: `image` (base64 or data URL) XOR `image_url`. */
export async function readSourceImage(body: { image?: string; image_url?: string }, limits: ImageInputLimits): Promise<SourceImage> {
  const hasImage = body.image !== undefined && body.image !== "";
  const hasUrl = body.image_url !== undefined && body.image_url !== "";
  if (hasImage && hasUrl) throw badRequest("Give exactly one of 'image' and 'image_url', not both.", "image_url");
  if (!hasImage && !hasUrl) throw badRequest("A source image is required: send 'image' (base64 or data URL) or 'image_url'.", "image", "missing_image");
  if (hasImage) return imageFromInline(body.image!, limits, "image");
  return imageFromUrl(body.image_url!, limits, "image_url");
}

/** base64 or a data URL */
export function imageFromInline(raw: string, limits: ImageInputLimits, param: string): Promise<SourceImage> {
  return validated(decodeInline(raw, limits.maxImageBytes, param), param, limits);
}

/** an http(s) URL, downloaded once through the SSRF guard */
export async function imageFromUrl(url: string, limits: ImageInputLimits, param: string): Promise<SourceImage> {
  return validated(await download(url, limits.maxImageBytes, param), param, limits);
}

/** bytes the client uploaded (a multipart file) */
export function imageFromBytes(bytes: Uint8Array, limits: ImageInputLimits, param: string): Promise<SourceImage> {
  if (bytes.byteLength > limits.maxImageBytes) throw tooLarge(`'${param}' is ${bytes.byteLength} bytes; the limit is ${limits.maxImageBytes}.`, param);
  return validated(bytes, param, limits);
}

function decodeInline(raw: string, maxBytes: number, param: string): Uint8Array {
  let b64 = raw.trim();
  const dataUrl = /^data:([\w.+/-]*)((?:;[\w=.+-]+)*);base64,/i.exec(b64);
  if (dataUrl) b64 = b64.slice(dataUrl[0].length);
  else if (b64.startsWith("data:")) throw badRequest(`'${param}' data URLs must be base64-encoded (data:image/png;base64,...).`, param, "invalid_image");
  b64 = b64.replace(/\s+/g, "");
  // base64 is 4/3 the size: refuse before allocating the decoded buffer
  if (Math.floor((b64.length * 3) / 4) > maxBytes + 2) throw tooLarge(`'${param}' is larger than the limit of ${maxBytes} bytes.`, param);
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64) || b64.length % 4 === 1) throw badRequest(`'${param}' is not valid base64.`, param, "invalid_image");
  const bytes = new Uint8Array(Buffer.from(b64, b64.includes("-") || b64.includes("_") ? "base64url" : "base64"));
  if (bytes.length > maxBytes) throw tooLarge(`'${param}' is ${bytes.length} bytes; the limit is ${maxBytes}.`, param);
  return bytes;
}

async function download(url: string, maxBytes: number, param: string): Promise<Uint8Array> {
  try {
    const { bytes } = await safeFetchBytes(url, { maxBytes, timeoutMs: FETCH_TIMEOUT_MS });
    return bytes;
  } catch (e) {
    if (!(e instanceof SafeFetchError)) throw e;
    if (e.code === "too_large") throw tooLarge(`'${param}' points to more than ${maxBytes} bytes.`, param);
    if (e.code === "invalid_url") throw badRequest(`'${param}' is not allowed: ${e.message}.`, param, "invalid_image_url");
    if (e.code === "blocked_address") throw badRequest(`'${param}' is not allowed: ${e.message}.`, param, "blocked_image_url");
    throw badRequest(`'${param}' could not be downloaded: ${e.message}.`, param, "image_url_unreachable");
  }
}

async function validated(bytes: Uint8Array, param: string, limits: ImageInputLimits): Promise<SourceImage> {
  const mime = sniffImageType(bytes);
  if (!mime) throw badRequest(`'${param}' is not a PNG, JPEG or WebP image.`, param, "invalid_image");
  const size = readImageSize(bytes, mime);
  if (!size) throw badRequest(`'${param}' is not a readable ${mime} image (header truncated or malformed).`, param, "invalid_image");
  if (size.width * size.height > MAX_SOURCE_PIXELS) throw tooLarge(`'${param}' is ${size.width}x${size.height} (${size.width * size.height} pixels); the limit is ${describePixelLimit(MAX_SOURCE_PIXELS)}.`, param);
  try {
    if (limits.decodeOffLoop && size.width * size.height > INLINE_DECODE_PIXELS) await limits.decodeOffLoop(bytes, MAX_SOURCE_PIXELS);
    else await decodeImage(bytes, { maxPixels: MAX_SOURCE_PIXELS });
  } catch (e) {
    if (!(e instanceof ImageDecodeError)) throw e;
    if (e.code === "too_large") throw tooLarge(`'${param}': ${e.message}.`, param);
    throw badRequest(`'${param}' could not be decoded: ${e.message}.`, param, "invalid_image");
  }
  return { bytes, mime };
}
