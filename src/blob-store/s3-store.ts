/**
 * Blobs in S3-compatible object storage (AWS S3, Cloudflare R2, MinIO …) through Bun's built-in
 * S3Client: no SDK to bundle. Writes of a stream go up as a multipart upload (parts of PART_BYTES,
 * so memory stays at a few parts whatever the object's size); reads are ranged GETs streamed
 * a chunk at a time as the reader asks; /content's large downloads are one GET whose body Bun.serve
 * sends on as it is (getForResponse); presigned GETs let /content redirect instead of relaying the bytes.
 */
import { S3Client, type S3File } from "bun";
import type { S3Config } from "../config.ts";
import { BlobStoreError, type BlobStore } from "./blob-store.ts";

/** S3's smallest part is 5 MiB */
const PART_BYTES = 5 * 1024 * 1024;
/** a read asks for this much at a time: memory per reader stays at about one chunk (bench/video-jobs.ts, section 5) */
const READ_CHUNK_BYTES = 512 * 1024;
/** the URL a response body is read from is used at once; a minute covers a slow connect */
const PRESIGN_READ_SECONDS = 60;
/** a store that sends nothing for this long has failed the download */
const IDLE_TIMEOUT_MS = 30_000;

const emptyBody = () => new ReadableStream<Uint8Array>({ start: (c) => c.close() });

export function s3BlobStore(config: S3Config): BlobStore {
  const client = new S3Client({
    bucket: config.bucket,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.region ? { region: config.region } : {}),
    ...(config.accessKeyId ? { accessKeyId: config.accessKeyId } : {}),
    ...(config.secretAccessKey ? { secretAccessKey: config.secretAccessKey } : {}),
    ...(config.sessionToken ? { sessionToken: config.sessionToken } : {}),
    virtualHostedStyle: config.virtualHostedStyle,
  });
  const fail = (what: string, cause: unknown) => new BlobStoreError("s3", `${what}: ${(cause as Error)?.message ?? cause}`, { cause });
  const missing = (e: unknown) => (e as { code?: string })?.code === "NoSuchKey" || (e as { code?: string })?.code === "NotFound";
  const stat = async (file: S3File) => {
    try {
      const s = await file.stat();
      return { size: s.size, contentType: s.type || "application/octet-stream" };
    } catch (e) {
      if (missing(e)) return null;
      throw fail(`head ${file.name}`, e);
    }
  };
  return {
    name: "s3",
    async put(key, data, opts) {
      const file = client.file(key, { type: opts.contentType });
      try {
        if (data instanceof Uint8Array) {
          await file.write(data, { type: opts.contentType });
          return;
        }
        const writer = file.writer({ type: opts.contentType, partSize: PART_BYTES, retry: 2 });
        for await (const chunk of data) await writer.write(chunk);
        await writer.end();
      } catch (e) {
        throw fail(`put ${key}`, e);
      }
    },
    head: (key) => stat(client.file(key)),
    async get(key, span) {
      const file = client.file(key);
      const info = await stat(file);
      if (!info) return null;
      const end = Math.min(span?.end ?? info.size - 1, info.size - 1);
      let at = span?.start ?? 0;
      // one ranged GET per chunk, each asked for only when the reader wants more: Bun's own S3 and
      // fetch body streams read ahead without limit (5 slow readers of a 50 MB object: +150 MB RSS)
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (at > end) return controller.close();
          const next = Math.min(end + 1, at + READ_CHUNK_BYTES);
          try {
            const part = new Uint8Array(await file.slice(at, next).arrayBuffer());
            if (part.byteLength === 0) return controller.error(new BlobStoreError("s3", `${key} ended early at byte ${at}`));
            at += part.byteLength;
            controller.enqueue(part);
          } catch (e) {
            controller.error(fail(`read ${key}`, e));
          }
        },
      }, { highWaterMark: 0 });
    },
    async getForResponse(key, span) {
      // one GET, no HEAD first: the caller knows the object's size (its span is within it), and
      // the answer's own status, Content-Range and Content-Length say whether the store agrees
      if (span && span.start > span.end) return emptyBody();
      const file = client.file(key);
      let res: Response;
      try {
        // `timeout` is Bun's idle timer: it runs while a slow client holds the download back too
        res = await fetch(file.presign({ method: "GET", expiresIn: PRESIGN_READ_SECONDS }), {
          headers: { ...(span ? { range: `bytes=${span.start}-${span.end}` } : {}), "accept-encoding": "identity" },
          timeout: IDLE_TIMEOUT_MS,
        } as RequestInit);
      } catch (e) {
        throw fail(`read ${key}`, e);
      }
      if (res.status === 404) {
        await res.body?.cancel();
        return null;
      }
      if (res.status === 416 && span) {
        // the span starts past the object's end: nothing to send, as get() answers
        await res.body?.cancel();
        return emptyBody();
      }
      const length = Number(res.headers.get("content-length"));
      // 206: the span the store sends must start where asked and run to the asked end or the object's
      // last byte; 200: the whole object, right only when it was asked for (no span, or a span from 0
      // to at least its end: a store that ignores Range answers 200)
      const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get("content-range") ?? "");
      const ok = res.status === 206
        ? span !== undefined && range !== null && Number(range[1]) === span.start && length === Math.min(span.end, Number(range[3]) - 1) - span.start + 1
        : res.status === 200 && Number.isFinite(length) && (span === undefined || (span.start === 0 && span.end >= length - 1));
      if (!ok || !res.body) {
        const detail = res.status === 206 || res.status === 200 ? `${length} bytes (${res.headers.get("content-range") ?? "no Content-Range"}) for ${span ? `bytes ${span.start}-${span.end}` : "the whole object"}` : (await res.text().catch(() => "")).slice(0, 300);
        await res.body?.cancel().catch(() => {});
        throw fail(`read ${key}`, new Error(`${res.status}: ${detail}`));
      }
      return res.body;
    },
    async delete(keys) {
      try {
        await Promise.all(keys.map((k) => client.file(k).delete().catch((e) => {
          if (!missing(e)) throw e;
        })));
      } catch (e) {
        throw fail("delete", e);
      }
    },
    presignGet(key, opts) {
      return client.file(key).presign({
        expiresIn: opts.expiresInSeconds,
        method: "GET",
        ...(opts.contentType ? { type: opts.contentType } : {}),
        ...(opts.contentDisposition ? { contentDisposition: opts.contentDisposition } : {}),
      });
    },
  };
}
