/**
 * Worker: the thumbnail of a video made elsewhere, from the job's source image (video-stills.ts).
 * Protocol: {id, source: ArrayBuffer, width, height} → {id, jpeg: ArrayBuffer | null} (null: the
 * source does not decode, so there is no thumbnail), or {id, error} when making it failed otherwise.
 * A check, {id, source, check: maxPixels} → {id, refused: null | {code, message}}: whether a
 * submitted image decodes (decode-image.ts's ImageDecodeError when not), the pixels thrown away.
 */
import { decodeImage, ImageDecodeError } from "./decode-image.ts";
import { jpegOf, stillFromImage } from "./video-stills.ts";

declare const self: Worker;

self.onmessage = async (e: MessageEvent) => {
  const { id, source, width, height, check } = e.data as { id: number; source: ArrayBuffer; width: number; height: number; check?: number };
  if (check !== undefined) {
    try {
      await decodeImage(new Uint8Array(source), { maxPixels: check });
      return postMessage({ id, refused: null });
    } catch (err) {
      if (err instanceof ImageDecodeError) return postMessage({ id, refused: { code: err.code, message: err.message } });
      return postMessage({ id, error: (err as Error)?.message ?? String(err) });
    }
  }
  try {
    const image = await decodeImage(new Uint8Array(source)).catch(() => null);
    if (!image) return postMessage({ id, jpeg: null });
    const jpeg = jpegOf(stillFromImage(image, width, height), width, height);
    postMessage({ id, jpeg: jpeg.buffer }, [jpeg.buffer as ArrayBuffer]);
  } catch (err) {
    postMessage({ id, error: (err as Error)?.message ?? String(err) });
  }
};
