/**
 * The thumbnail of a video made elsewhere (a GPU backend's MP4): the job's source image cropped and
 * scaled to the video's size (media/video-stills.ts), made on the stills pool's worker threads the
 * first time a client asks for it (`/content?variant=thumbnail`), then kept in the blob store beside
 * the video until retention deletes them together.
 *
 * Why on request and not when the job completes: one costs ~40 ms of CPU (decode, scale, jpeg-js at
 * 480x832), and 1,000 jobs finishing within seconds would each wait behind the thumbnails of the
 * others (bench/video-backends.ts: p50 60 s from upstream completion to `completed` when they were
 * made on the event loop at completion; a worker pool alone still queued them for tens of seconds).
 * Few clients download the thumbnail of every video; the one that asks waits for one thumbnail.
 * Requests for the same job's thumbnail at once share one making of it.
 */
import { readAll, type BlobInfo, type BlobStore } from "../../blob-store/index.ts";
import { StillsPool } from "../../media/stills-pool.ts";
import { sourceKey, stillKey } from "./blob-keys.ts";

export interface ThumbnailJob {
  id: string;
  width: number;
  height: number;
}

export interface Thumbnails {
  /**
   * The stored thumbnail's size and type, and whether this call made it; null when there is none to
   * make (the source image is gone, or does not decode). Throws the store's errors.
   */
  ensure(store: BlobStore, job: ThumbnailJob): Promise<{ info: BlobInfo; made: boolean } | null>;
  /** whether a submitted image decodes, checked on the same workers (image-input.ts); throws ImageDecodeError */
  checkImage(bytes: Uint8Array, maxPixels: number): Promise<void>;
  /** ends the workers (shutdown) */
  close(): void;
}

export function createThumbnails(pool: StillsPool = new StillsPool()): Thumbnails {
  const making = new Map<string, Promise<{ info: BlobInfo; made: boolean } | null>>();
  const make = async (store: BlobStore, job: ThumbnailJob) => {
    const source = await readAll(store, sourceKey(job.id));
    if (!source) return null;
    const jpeg = await pool.thumbnailFromImage(source, job.width, job.height);
    if (!jpeg) return null;
    await store.put(stillKey(job.id, "thumbnail"), jpeg, { contentType: "image/jpeg" });
    return { info: { size: jpeg.byteLength, contentType: "image/jpeg" }, made: true };
  };
  return {
    async ensure(store, job) {
      const info = await store.head(stillKey(job.id, "thumbnail"));
      if (info) return { info, made: false };
      const key = `${store.name}/${job.id}`;
      let pending = making.get(key);
      if (!pending) {
        pending = make(store, job).finally(() => making.delete(key));
        making.set(key, pending);
      }
      return pending;
    },
    checkImage: (bytes, maxPixels) => pool.checkImage(bytes, maxPixels),
    close: () => pool.close(),
  };
}
