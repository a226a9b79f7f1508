/** What every blob store is (index.ts says why there is one). */
export type BlobStoreName = "postgres" | "s3";

export interface BlobInfo {
  size: number;
  contentType: string;
}

/** byte offsets, both inclusive (as in an HTTP Range) */
export interface ByteSpan {
  start: number;
  end: number;
}

export interface BlobStore {
  readonly name: BlobStoreName;
  /** store `data` under `key` (replacing what was there); a stream is consumed to its end */
  put(key: string, data: Uint8Array | ReadableStream<Uint8Array>, opts: { contentType: string }): Promise<void>;
  /** size and type, or null when there is no such object */
  head(key: string): Promise<BlobInfo | null>;
  /** the object's bytes (or `span` of them) as a stream read as it is consumed; null when there is no such object */
  get(key: string, span?: ByteSpan): Promise<ReadableStream<Uint8Array> | null>;
  /**
   * Like get(), for the body of an HTTP response only: a stream Bun.serve sends on as it is (S3:
   * the GET's own body, which Bun pipes natively to the client at the client's pace, with no chunk
   * passing through JavaScript). Stores without it are served with get().
   */
  getForResponse?(key: string, span?: ByteSpan): Promise<ReadableStream<Uint8Array> | null>;
  /** delete these objects; a missing one is not an error */
  delete(keys: readonly string[]): Promise<void>;
  /** a URL anyone holding it may GET the object from until it expires (stores that can sign URLs) */
  presignGet?(key: string, opts: { expiresInSeconds: number; contentType?: string; contentDisposition?: string }): string;
}

export class BlobStoreError extends Error {
  constructor(readonly store: BlobStoreName, message: string, opts: { cause?: unknown } = {}) {
    super(`blob store ${store}: ${message}`, { cause: opts.cause });
    this.name = "BlobStoreError";
  }
}

export const isBlobStoreError = (e: unknown): e is BlobStoreError => e instanceof BlobStoreError;

