/**
 * The source image of a submit: `image` (base64 or data URL) XOR `image_url` (downloaded once,
 * here, through the SSRF guard). The image is fully decoded once so an undecodable upload is a 400
 * at submit instead of a failed job later; only the original bytes are stored.
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
}

export async function readSourceImage(body: { image?: string; image_url?: string }, limits: ImageInputLimits): Promise<SourceImage> {
  const hasImage = body.image !== undefined && body.image !== "";
  const hasUrl = body.image_url !== undefined && body.image_url !== "";
  if (hasImage && hasUrl) throw badRequest("Give exactly one of 'image' and 'image_url', not both.", "image_url");
  if (!hasImage && !hasUrl) throw badRequest("A source image is required: send 'image' (base64 or data URL) or 'image_url'.", "image", "missing_image");
  if (hasImage) return validated(decodeInline(body.image!, limits.maxImageBytes), "image");
  return validated(await download(body.image_url!, limits.maxImageBytes), "image_url");
}

function decodeInline(raw: string, maxBytes: number): Uint8Array {
  let b64 = raw.trim();
  const dataUrl = /^data:([\w.+/-]*)((?:;[\w=.+-]+)*);base64,/i.exec(b64);
  if (dataUrl) b64 = b64.slice(dataUrl[0].length);
  else if (b64.startsWith("data:")) throw badRequest("'image' data URLs must be base64-encoded (data:image/png;base64,...).", "image", "invalid_image");
  b64 = b64.replace(/\s+/g, "");
  // base64 is 4/3 the size: refuse before allocating the decoded buffer
  if (Math.floor((b64.length * 3) / 4) > maxBytes + 2) throw tooLarge(`'image' is larger than the limit of ${maxBytes} bytes.`, "image");
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(b64) || b64.length % 4 === 1) throw badRequest("'image' is not valid base64.", "image", "invalid_image");
  const bytes = new Uint8Array(Buffer.from(b64, b64.includes("-") || b64.includes("_") ? "base64url" : "base64"));
  if (bytes.length > maxBytes) throw tooLarge(`'image' is ${bytes.length} bytes; the limit is ${maxBytes}.`, "image");
  return bytes;
}

async function download(url: string, maxBytes: number): Promise<Uint8Array> {
  try {
    const { bytes } = await safeFetchBytes(url, { maxBytes, timeoutMs: FETCH_TIMEOUT_MS });
    return bytes;
  } catch (e) {
    if (!(e instanceof SafeFetchError)) throw e;
    if (e.code === "too_large") throw tooLarge(`'image_url' points to more than ${maxBytes} bytes.`, "image_url");
    if (e.code === "invalid_url") throw badRequest(`'image_url' is not allowed: ${e.message}.`, "image_url", "invalid_image_url");
    if (e.code === "blocked_address") throw badRequest(`'image_url' is not allowed: ${e.message}.`, "image_url", "blocked_image_url");
    throw badRequest(`'image_url' could not be downloaded: ${e.message}.`, "image_url", "image_url_unreachable");
  }
}

async function validated(bytes: Uint8Array, param: "image" | "image_url"): Promise<SourceImage> {
  const mime = sniffImageType(bytes);
  if (!mime) throw badRequest(`'${param}' is not a PNG, JPEG or WebP image.`, param, "invalid_image");
  const size = readImageSize(bytes, mime);
  if (!size) throw badRequest(`'${param}' is not a readable ${mime} image (header truncated or malformed).`, param, "invalid_image");
  if (size.width * size.height > MAX_SOURCE_PIXELS) throw tooLarge(`'${param}' is ${size.width}x${size.height} (${size.width * size.height} pixels); the limit is ${describePixelLimit(MAX_SOURCE_PIXELS)}.`, param);
  try {
    await decodeImage(bytes, { maxPixels: MAX_SOURCE_PIXELS });
  } catch (e) {
    if (!(e instanceof ImageDecodeError)) throw e;
    if (e.code === "too_large") throw tooLarge(`'${param}': ${e.message}.`, param);
    throw badRequest(`'${param}' could not be decoded: ${e.message}.`, param, "invalid_image");
  }
  return { bytes, mime };
}

