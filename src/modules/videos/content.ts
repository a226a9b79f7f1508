/**
 * GET /v1/videos/generations/{id}/content: the MP4 itself (the polling answer keeps its base64
 * copy as the spec says). Byte ranges (RFC 9110 §14) so a browser `<video>` can seek, a strong
 * ETag (a job's video never changes once completed) for If-None-Match / If-Range, 404 and 410
 * exactly as polling answers.
 *
 * A range is read with `substring` in SQL: an MP4 is incompressible, so its bytea is stored out of
 * line uncompressed and a seek reads only the TOAST chunks it needs, not the whole file. The span
 * is sent as one buffer, not a stream: Bun.serve drops Content-Length from ReadableStream bodies
 * (oven-sh/bun#10507, still so in 1.4.5), and players want the length. Results are a few MB.
 */
import { createHash } from "node:crypto";
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { readContentMeta, readContentSlice, type ContentMeta } from "./job-table/read-jobs.ts";
import { jobNotFound, videoExpired } from "./poll.ts";
import { CONTENT_GET_DOCS, CONTENT_HEAD_DOCS } from "./stream-docs.ts";

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

function etagOf(id: string, meta: ContentMeta): string {
  const h = createHash("sha256").update(`${id}|${meta.size}|${meta.completedAt?.getTime() ?? 0}`).digest("base64url").slice(0, 22);
  return `"${h}"`;
}

const notReady = (id: string, status: string) =>
  status === "failed"
    ? new ApiError(409, "invalid_request_error", `Video job '${id}' failed; it has no video. Poll it for the error.`, { code: "video_failed" })
    : new ApiError(409, "invalid_request_error", `Video job '${id}' is still ${status}; its video is available once it is completed (poll it, or use its /events stream).`, { code: "video_not_ready" });

export async function videoContent(deps: Pick<AppDeps, "database">, id: string, accountId: string, request: Request): Promise<Response> {
  const meta = await readContentMeta(deps.database.db, id, accountId);
  if (!meta) throw jobNotFound(id);
  const expired = meta.status === "expired" || (meta.status === "completed" && (meta.size === null || !meta.expiresAt || meta.expiresAt <= new Date()));
  if (expired) throw videoExpired(id);
  if (meta.status !== "completed") throw notReady(id, meta.status);
  const size = meta.size!;
  const etag = etagOf(id, meta);
  const headers: Record<string, string> = {
    "content-type": "video/mp4",
    "accept-ranges": "bytes",
    etag,
    "last-modified": (meta.completedAt ?? new Date()).toUTCString(),
    // the bytes never change but vanish at expires_at: private caches may keep them until then
    "cache-control": `private, max-age=${Math.max(0, Math.floor((meta.expiresAt!.getTime() - Date.now()) / 1000))}`,
    "content-disposition": `inline; filename="${id}.mp4"`,
  };
  if (request.headers.get("if-none-match")?.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
    return new Response(null, { status: 304, headers: { etag, "cache-control": headers["cache-control"]! } });
  }
  const ifRange = request.headers.get("if-range");
  const range = ifRange && ifRange !== etag ? null : parseRange(request.headers.get("range"), size);
  if (range === "unsatisfiable") {
    throw new ApiError(416, "invalid_request_error", `The range ${request.headers.get("range")} is outside the video's ${size} bytes.`, { code: "range_not_satisfiable", headers: { "content-range": `bytes */${size}`, "accept-ranges": "bytes" } });
  }
  const span = range ?? { start: 0, end: size - 1 };
  headers["content-length"] = String(size === 0 ? 0 : span.end - span.start + 1);
  if (range) headers["content-range"] = `bytes ${span.start}-${span.end}/${size}`;
  // HEAD reads the bytes too: Elysia rebuilds a body-less Response with Content-Length 0, and
  // Bun.serve sends no body for HEAD anyway (HEAD is rare; players use ranged GETs)
  if (size === 0) return new Response(null, { status: 200, headers });
  const body = await readContentSlice(deps.database.db, id, span.start, span.end - span.start + 1);
  if (!body) throw videoExpired(id); // retention ran out a moment ago
  return new Response(body, { status: range ? 206 : 200, headers });
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
