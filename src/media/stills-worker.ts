/**
 * Worker: the thumbnail of a video made elsewhere, from the job's source image (video-stills.ts).
 * Protocol: {id, source: ArrayBuffer, width, height} → {id, jpeg: ArrayBuffer | null} (null: the
 * source does not decode, so there is no thumbnail), or {id, error} when making it failed otherwise.
 */
import { decodeImage } from "./decode-image.ts";
import { jpegOf, stillFromImage } from "./video-stills.ts";

declare const self: Worker;

self.onmessage = async (e: MessageEvent) => {
  const { id, source, width, height } = e.data as { id: number; source: ArrayBuffer; width: number; height: number };
  try {
    const image = await decodeImage(new Uint8Array(source)).catch(() => null);
    if (!image) return postMessage({ id, jpeg: null });
    const jpeg = jpegOf(stillFromImage(image, width, height), width, height);
    postMessage({ id, jpeg: jpeg.buffer }, [jpeg.buffer as ArrayBuffer]);
  } catch (err) {
    postMessage({ id, error: (err as Error)?.message ?? String(err) });
  }
};
