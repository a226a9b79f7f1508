/**
 * A finished video goes into the blob store before the job may complete: the MP4, its thumbnail
 * and (for videos the host encoded) its spritesheet (media/video-stills.ts says where the stills
 * come from). An upload that fails is tried again here, with the bytes still in memory, for about
 * half a minute (STORE_ATTEMPTS); only then does the job go back to the queue with its handle kept,
 * so the next attempt polls the provider again (a remote result URL is fetched again; the preview
 * renderer, whose result was handed over, renders the same bytes again). Either way the result is
 * not lost and nothing is charged until it is stored.
 */
import { readAll, type BlobStore } from "../../../blob-store/index.ts";
import { decodeImage } from "../../../media/index.ts";
import { jpegOf, spritesheetOf, stillFromImage, stillsOf } from "../../../media/video-stills.ts";
import { sourceKey, stillKey, videoKey, type StillVariant } from "../blob-keys.ts";

/** 0.5 + 1 + 2 + 4 + 8 + 15 s between 7 attempts: a store that is back within ~30 s loses nothing */
export const STORE_ATTEMPTS = 7;
const STORE_BACKOFF_CAP_MS = 15_000;

export interface StoredResult {
  size: number;
  variants: StillVariant[];
}

export interface ResultJob {
  id: string;
  width: number;
  height: number;
}

/** Stills of the video: from its frames when the host encoded it, else the source image made the video's size. */
async function stillsFor(store: BlobStore, job: ResultJob, mp4: Uint8Array): Promise<Array<{ variant: StillVariant; jpeg: Uint8Array }>> {
  const stills = stillsOf(mp4);
  if (stills) {
    const sheet = spritesheetOf(stills);
    return [
      { variant: "thumbnail", jpeg: jpegOf(stills.first, stills.width, stills.height) },
      { variant: "spritesheet", jpeg: jpegOf(sheet.rgba, sheet.width, sheet.height) },
    ];
  }
  const source = await readAll(store, sourceKey(job.id));
  if (!source) return [];
  const image = await decodeImage(source).catch(() => null);
  return image ? [{ variant: "thumbnail", jpeg: jpegOf(stillFromImage(image, job.width, job.height), job.width, job.height) }] : [];
}

/** Store the result once (throws the store's error; the caller retries). */
export async function storeResult(store: BlobStore, job: ResultJob, mp4: Uint8Array): Promise<StoredResult> {
  const stills = await stillsFor(store, job, mp4);
  await store.put(videoKey(job.id), mp4, { contentType: "video/mp4" });
  for (const s of stills) await store.put(stillKey(job.id, s.variant), s.jpeg, { contentType: "image/jpeg" });
  return { size: mp4.byteLength, variants: stills.map((s) => s.variant) };
}

export const storeBackoffMs = (attempt: number) => Math.min(STORE_BACKOFF_CAP_MS, 500 * 2 ** (attempt - 1));
