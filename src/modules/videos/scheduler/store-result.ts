/**
 * A finished video goes into the blob store before the job may complete: the MP4 and, for videos
 * the host encoded, the thumbnail and spritesheet its encoder made (media/video-stills.ts). A
 * video made elsewhere gets its thumbnail (the source image at the video's size) when a client
 * first asks for it (../thumbnails.ts): making it costs ~40 ms of CPU, and 1,000 jobs finishing
 * together must not wait for 1,000 thumbnails that few clients download.
 *
 * An upload that fails is tried again here, with the bytes still in memory, for about half a
 * minute (STORE_ATTEMPTS); only then does the job go back to the queue with its handle kept, so the
 * next attempt polls the provider again (a remote result URL is fetched again; the preview renderer,
 * whose result was handed over, renders the same bytes again). Either way the result is not lost
 * and nothing is charged until it is stored.
 */
import type { BlobStore } from "../../../blob-store/index.ts";
import { stillsOf } from "../../../media/video-stills.ts";
import { stillKey, videoKey, type StillVariant } from "../blob-keys.ts";

/** 0.5 + 1 + 2 + 4 + 8 + 15 s between 7 attempts: a store that is back within ~30 s loses nothing */
export const STORE_ATTEMPTS = 7;
const STORE_BACKOFF_CAP_MS = 15_000;

export interface StoredResult {
  size: number;
  variants: StillVariant[];
}

export interface ResultJob {
  id: string;
  /** the source image's type; null for a job that has none */
  imageMime: string | null;
}

/** Store the result once (throws the store's error; the caller retries). */
export async function storeResult(store: BlobStore, job: ResultJob, mp4: Uint8Array): Promise<StoredResult> {
  await store.put(videoKey(job.id), mp4, { contentType: "video/mp4" });
  const stills = stillsOf(mp4);
  if (!stills) return { size: mp4.byteLength, variants: job.imageMime ? ["thumbnail"] : [] };
  await store.put(stillKey(job.id, "thumbnail"), stills.thumbnail, { contentType: "image/jpeg" });
  if (stills.spritesheet) await store.put(stillKey(job.id, "spritesheet"), stills.spritesheet, { contentType: "image/jpeg" });
  return { size: mp4.byteLength, variants: stills.spritesheet ? ["thumbnail", "spritesheet"] : ["thumbnail"] };
}

export const storeBackoffMs = (attempt: number) => Math.min(STORE_BACKOFF_CAP_MS, 500 * 2 ** (attempt - 1));
