/**
 * A completed job's downloads, for both APIs: the MP4 (GET /v1/videos/generations/{id}/content,
 * GET /v1/videos/{id}/content) and its stills (`?variant=thumbnail|spritesheet`, JPEG), read from
 * the blob store the job's objects are in. Byte ranges (RFC 9110 §14) so a browser `<video>` can
 * seek, a strong ETag (a job's objects never change once completed) for If-None-Match / If-Range,
 * 404 and 410 exactly as polling answers.
 *
 * Spans up to BUFFER_LIMIT are read whole and sent with a Content-Length; larger ones are streamed
 * as the store delivers them (chunked, the Content-Range still exact): Bun.serve drops
 * Content-Length from ReadableStream bodies (oven-sh/bun#10507, still so in 1.4.5) and players
 * want the length of the small spans they seek with, but a 50 MB result sent to 20 clients must
 * not be 20 copies in memory. With REELAY_S3_PRESIGN_SECONDS set, a GET is answered with a 302 to a
 * presigned URL of the object instead, and the bytes never pass through reelay.
 */
import { createHash } from "node:crypto";
import { Elysia, t } from "elysia";
import { isBlobStoreError, type BlobInfo, type BlobStore } from "../../blob-store/index.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { stillKey, videoKey, type StillVariant } from "./blob-keys.ts";
import { readContentMeta, type ContentMeta } from "./job-table/read-jobs.ts";
import { jobNotFound, videoExpired } from "./poll.ts";
import { storageUnavailable } from "./submit.ts";
import { CONTENT_GET_DOCS, CONTENT_HEAD_DOCS } from "./stream-docs.ts";

export type ContentVariant = "video" | StillVariant;
/** 8 MiB: a player's seek fits, and 20 of them at once are 160 MB at most */
const BUFFER_LIMIT = 8 * 1024 * 1024;

export type ByteRange = { start: number; end: number };

/**
 * One `bytes=` range against a body of `size` bytes (end inclusive). null: no usable Range (absent,
 * malformed, several ranges, another unit) → the whole body, as RFC 9110 allows; "unsatisfiable"
 * → 416.
 */
export function parseRange(header: string | null, size: number): ByteRange | "unsatisfiable" | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== "" && Number(m[2]) < start) return null; // invalid: ignored
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

function etagOf(id: string, variant: ContentVariant, size: number, meta: ContentMeta): string {
  const h = createHash("sha256").update(`${id}|${variant}|${size}|${meta.completedAt?.getTime() ?? 0}`).digest("base64url").slice(0, 22);
  return `"${h}"`;
}

const notReady = (id: string, status: string) =>
  status === "failed"
    ? new ApiError(409, "invalid_request_error", `Video job '${id}' failed; it has no video. Poll it for the error.`, { code: "video_failed" })
    : new ApiError(409, "invalid_request_error", `Video job '${id}' is still ${status}; its video is available once it is completed (poll it, or use its /events stream).`, { code: "video_not_ready" });

const variantMissing = (id: string, variant: ContentVariant) =>
  new ApiError(404, "not_found_error", variant === "spritesheet"
    ? `Video '${id}' has no spritesheet: its model's backend delivered a finished MP4, and reelay takes spritesheets from the frames it encodes itself (the thumbnail is available).`
    : `Video '${id}' has no ${variant}.`, { code: "variant_not_available", param: "variant" });

const TYPES: Record<ContentVariant, { type: string; ext: string }> = { video: { type: "video/mp4", ext: "mp4" }, thumbnail: { type: "image/jpeg", ext: "jpg" }, spritesheet: { type: "image/jpeg", ext: "jpg" } };

const unavailable = (e: unknown) => (isBlobStoreError(e) ? storageUnavailable(e) : e);

export async function videoContent(deps: Pick<AppDeps, "database" | "blobs" | "thumbnails">, id: string, accountId: string, request: Request, variant: ContentVariant = "video"): Promise<Response> {
  const meta = await readContentMeta(deps.database.db, id, accountId);
  if (!meta) throw jobNotFound(id);
  const expired = meta.status === "expired" || (meta.status === "completed" && (meta.resultSize === null || !meta.expiresAt || meta.expiresAt <= new Date()));
  if (expired) throw videoExpired(id);
  if (meta.status !== "completed") throw notReady(id, meta.status);
  const store = meta.blobStore ? deps.blobs.byName(meta.blobStore) : null;
  if (!store) throw videoExpired(id);
  let size: number;
  const key = variant === "video" ? videoKey(id) : stillKey(id, variant);
  if (variant === "video") size = meta.resultSize!;
  else {
    if (!meta.variants?.includes(variant)) throw variantMissing(id, variant);
    const info = await (variant === "thumbnail" ? stillOnDemand(deps, store, id, accountId, meta) : store.head(key)).catch((e) => {
      throw unavailable(e);
    });
    if (!info) throw videoExpired(id);
    size = info.size;
  }
  const etag = etagOf(id, variant, size, meta);
  const { type, ext } = TYPES[variant];
  const maxAge = Math.max(0, Math.floor((meta.expiresAt!.getTime() - Date.now()) / 1000));
  const headers: Record<string, string> = {
    "content-type": type,
    "accept-ranges": "bytes",
    etag,
    "last-modified": (meta.completedAt ?? new Date()).toUTCString(),
    // the bytes never change but vanish at expires_at: private caches may keep them until then
    "cache-control": `private, max-age=${maxAge}`,
    "content-disposition": `inline; filename="${id}${variant === "video" ? "" : "-" + variant}.${ext}"`,
  };
  if (request.headers.get("if-none-match")?.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
    return new Response(null, { status: 304, headers: { etag, "cache-control": headers["cache-control"]! } });
  }
  if (request.method === "GET" && deps.blobs.presignSeconds > 0 && store.presignGet) {
    const seconds = Math.max(1, Math.min(deps.blobs.presignSeconds, maxAge));
    const location = store.presignGet(key, { expiresInSeconds: seconds, contentType: type, contentDisposition: headers["content-disposition"] });
    return new Response(null, { status: 302, headers: { location, "cache-control": "no-store" } });
  }
  const ifRange = request.headers.get("if-range");
  const range = ifRange && ifRange !== etag ? null : parseRange(request.headers.get("range"), size);
  if (range === "unsatisfiable") {
    throw new ApiError(416, "invalid_request_error", `The range ${request.headers.get("range")} is outside the ${variant}'s ${size} bytes.`, { code: "range_not_satisfiable", headers: { "content-range": `bytes */${size}`, "accept-ranges": "bytes" } });
  }
  const span = range ?? { start: 0, end: size - 1 };
  const length = size === 0 ? 0 : span.end - span.start + 1;
  headers["content-length"] = String(length);
  if (range) headers["content-range"] = `bytes ${span.start}-${span.end}/${size}`;
  // HEAD reads the bytes too: Elysia rebuilds a body-less Response with Content-Length 0, and
  // Bun.serve sends no body for HEAD anyway (HEAD is rare; players use ranged GETs)
  if (size === 0) return new Response(null, { status: 200, headers });
  const status = range ? 206 : 200;
  // a large span goes straight from the store to the client, for a GET through reused buffers where
  // the store has them (a HEAD's body is never read: get() costs nothing until it is)
  const streamed = length > BUFFER_LIMIT;
  const body = await (streamed && request.method === "GET" && store.getForResponse ? store.getForResponse(key, span) : store.get(key, span)).catch((e) => {
    throw unavailable(e);
  });
  if (!body) throw videoExpired(id); // retention ran out a moment ago
  if (streamed) return new Response(body, { status, headers });
  const bytes = await new Response(body).arrayBuffer().catch((e) => {
    throw unavailable(e);
  });
  return new Response(bytes, { status, headers });
}

/**
 * A thumbnail is stored with the video when reelay encoded it; a backend's video gets one the first
 * time it is asked for (thumbnails.ts). One made while retention was deleting the job's objects is
 * deleted again, so nothing outlives the job in the store.
 */
async function stillOnDemand(deps: Pick<AppDeps, "database" | "thumbnails">, store: BlobStore, id: string, accountId: string, meta: ContentMeta): Promise<BlobInfo | null> {
  const r = await deps.thumbnails.ensure(store, { id, width: meta.width, height: meta.height });
  if (!r?.made) return r?.info ?? null;
  const now = await readContentMeta(deps.database.db, id, accountId);
  if (now?.status === "completed" && now.blobStore === store.name) return r.info;
  await store.delete([stillKey(id, "thumbnail")]);
  return null;
}

const IdParams = t.Object({ id: t.String({ maxLength: 64, error: "'id' must be a video job id." }) });

export const videoContentRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["videos"] })
    .use(requireKey(deps))
    // explicit: through the GET route, Elysia would answer HEAD with Content-Length 0
    .head("/videos/generations/:id/content", ({ principal, params, request }) => videoContent(deps, params.id, principal.accountId, request), {
      params: IdParams,
      detail: {
        summary: "Download headers of a job's MP4",
        description: "The download's headers (length, type, ETag) without the bytes",
        security: [{ bearer: [] }],
        ...CONTENT_HEAD_DOCS,
      },
    })
    .get("/videos/generations/:id/content", ({ principal, params, request }) => videoContent(deps, params.id, principal.accountId, request), {
      params: IdParams,
      detail: {
        summary: "Download a job's MP4",
        description: "The completed job's MP4 (video/mp4); 404/410 as polling, 409 while it is not completed. Supports `Range: bytes=start-end` (one range; 206 with Content-Range, 416 when outside the file), `If-None-Match` (304) and `If-Range`. Use it as the `src` of a `<video>` (with the key in the Authorization header) to stream and seek.",
        security: [{ bearer: [] }],
        ...CONTENT_GET_DOCS,
      },
      response: {
        404: ErrorEnvelope,
        409: ErrorEnvelope,
        410: ErrorEnvelope,
        416: ErrorEnvelope,
        ...authErrors,
      },
    });
