/**
 * A file's bytes in the blob store, as parts of at most FILE_PART_BYTES: an upload or a batch's
 * output is written one part at a time and read back one part at a time, so a 200 MB file costs
 * one part of memory, whichever store holds it (the Postgres store takes an object in one
 * statement; S3 takes it in one PUT).
 */
import type { BlobStore } from "../../blob-store/index.ts";

/** 4 MiB: ~50 parts for a 200 MB upload; small enough to hold one per upload in flight */
export const FILE_PART_BYTES = 4 * 1024 * 1024;

export const partKey = (fileId: string, n: number) => `files/${fileId}/${String(n).padStart(6, "0")}`;

/** a writer past its first part records itself at least this often while bytes arrive (the sweeper takes rows idle for UPLOAD_IDLE_MS) */
export const PART_LOG_MS = 60_000;

/**
 * Records the writer's part count (where a kill -9 would leave parts): called with the count a
 * part makes *before* that part is put — so the record always covers every part that may exist
 * — and, past the first part, at least every PART_LOG_MS while bytes arrive. Throws to stop the write.
 */
export type PartLog = (parts: number) => Promise<void>;

/** Collects bytes into parts and puts each full one; `finish` puts the last. */
export class PartWriter {
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  private loggedAt = 0;
  bytes = 0;
  parts = 0;

  constructor(private readonly store: BlobStore, private readonly fileId: string, private readonly contentType = "application/octet-stream", private readonly log?: PartLog) {}

  async write(chunk: Uint8Array): Promise<void> {
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    this.bytes += chunk.byteLength;
    if (this.buffered >= FILE_PART_BYTES) await this.flush();
    else if (this.log && this.parts > 0 && Date.now() - this.loggedAt >= PART_LOG_MS) await this.record(this.parts);
  }

  async finish(): Promise<{ bytes: number; parts: number }> {
    if (this.buffered > 0) await this.flush();
    return { bytes: this.bytes, parts: this.parts };
  }

  /** Delete what was put so far (an upload refused half-way), and the part whose put may have failed half-way. */
  async abandon(): Promise<void> {
    await deleteParts(this.store, this.fileId, this.parts + 1);
  }

  private async flush() {
    const part = new Uint8Array(this.buffered);
    let at = 0;
    for (const c of this.chunks) {
      part.set(c, at);
      at += c.byteLength;
    }
    this.chunks = [];
    this.buffered = 0;
    if (this.log) await this.record(this.parts + 1);
    await this.store.put(partKey(this.fileId, this.parts), part, { contentType: this.contentType });
    this.parts++;
  }

  private async record(parts: number) {
    await this.log!(parts);
    this.loggedAt = Date.now();
  }
}

/** The file's bytes, one part read at a time as the stream is consumed. */
export function readParts(store: BlobStore, fileId: string, parts: number): ReadableStream<Uint8Array> {
  let n = 0;
  let current: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> } | null = null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (!current) {
          if (n >= parts) return controller.close();
          const s = await store.get(partKey(fileId, n++));
          if (!s) return controller.error(new Error(`file ${fileId}: part ${n - 1} is missing`));
          current = s.getReader();
        }
        const { done, value } = await current.read();
        if (!done && value) return controller.enqueue(value);
        current = null;
      }
    },
    async cancel() {
      await current?.cancel();
    },
  }, { highWaterMark: 0 });
}

export async function deleteParts(store: BlobStore, fileId: string, parts: number): Promise<void> {
  const keys = Array.from({ length: parts }, (_, i) => partKey(fileId, i));
  for (let i = 0; i < keys.length; i += 100) await store.delete(keys.slice(i, i + 100));
}

/** Lines of a file (UTF-8, `\n` or `\r\n`), read part by part; `at` is the 0-based line number. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<{ at: number; text: string }> {
  const decoder = new TextDecoder();
  let rest = "";
  let at = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    rest += decoder.decode(chunk, { stream: true });
    // scan with an index and cut once per chunk: slicing `rest` per line copied it per line (quadratic in a 4 MB part)
    let from = 0;
    let nl: number;
    while ((nl = rest.indexOf("\n", from)) >= 0) {
      yield { at: at++, text: rest.slice(from, nl).replace(/\r$/, "") };
      from = nl + 1;
    }
    rest = rest.slice(from);
  }
  rest += decoder.decode();
  if (rest.length > 0) yield { at: at++, text: rest.replace(/\r$/, "") };
}
