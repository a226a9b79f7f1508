/**
 * OpenAI's Files API: POST /v1/files (multipart, streamed to the blob store), GET /v1/files,
 * GET /v1/files/{id}, GET /v1/files/{id}/content (streamed), DELETE /v1/files/{id}. Per account: a
 * file of another account is a 404.
 */
import { Elysia, t } from "elysia";
import { every, type BackgroundTask } from "../../background.ts";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { listFiles } from "./file-table.ts";
import { FileDeleted, FileList, FileListQuery, FileObject } from "./model.ts";
import { deleteFile, fileContent, fileObject, getFile, sweepExpiredFiles, sweepStaleUploads, uploadFile } from "./service.ts";

/** POST /v1/files takes bodies up to REELAY_FILES_MAX_BYTES, not REELAY_MAX_BODY_BYTES (app.ts skips its check for it) */
export const isFileUpload = (request: Request) => request.method === "POST" && new URL(request.url).pathname.replace(/\/+$/, "") === "/v1/files";

const IdParams = t.Object({ id: t.String() });

export const fileRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["files"] })
    .use(requireKey(deps))
    .post(
      "/files",
      async ({ principal, request }) => fileObject(await uploadFile(deps, principal.accountId, request)),
      {
        detail: {
          summary: "Upload a file",
          description:
            "multipart/form-data with `file` (the bytes) and `purpose` (`batch` for a batch's input, or `user_data`). The file is stored in the blob store as it arrives " +
            "(REELAY_BLOB_STORE: Postgres by default, S3-compatible storage at scale), counted as its bytes arrive: past REELAY_FILES_MAX_BYTES (default 200 MB) it is a 413 " +
            "and nothing is kept. Files are deleted REELAY_FILES_TTL_SECONDS after upload (`expires_at`).",
          requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object", required: ["file", "purpose"], properties: { file: { type: "string", format: "binary" }, purpose: { type: "string", enum: ["batch", "user_data"] } } } } } },
          security: [{ bearer: [] }],
        },
        response: { 200: FileObject, 400: ErrorEnvelope, 413: ErrorEnvelope, ...authErrors },
      },
    )
    .get(
      "/files",
      async ({ principal, query }) => {
        const limit = query.limit ?? 10_000;
        const rows = await listFiles(deps.database.db, { accountId: principal.accountId, purpose: query.purpose, after: query.after, limit: limit + 1, order: query.order ?? "desc" });
        const data = rows.slice(0, limit).map(fileObject);
        return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
      },
      {
        query: FileListQuery,
        detail: { summary: "List files", description: "The account's files, newest first (`order=asc`: oldest first); `purpose` filters; `after` is the cursor (the previous page's last id).", security: [{ bearer: [] }] },
        response: { 200: FileList, 400: ErrorEnvelope, ...authErrors },
      },
    )
    .get("/files/:id", async ({ principal, params }) => fileObject(await getFile(deps, principal.accountId, params.id)), {
      params: IdParams,
      detail: { summary: "Retrieve a file", security: [{ bearer: [] }] },
      response: { 200: FileObject, 404: ErrorEnvelope, ...authErrors },
    })
    .get(
      "/files/:id/content",
      async ({ principal, params }) => {
        const f = await getFile(deps, principal.accountId, params.id);
        return new Response(fileContent(deps, f), { headers: { "content-type": "application/octet-stream", "content-length": String(f.bytes) } });
      },
      {
        params: IdParams,
        detail: { summary: "Retrieve a file's content", description: "The bytes, streamed from the blob store.", security: [{ bearer: [] }] },
        response: { 200: t.Any({ description: "the file's bytes" }), 404: ErrorEnvelope, ...authErrors },
      },
    )
    .delete(
      "/files/:id",
      async ({ principal, params }) => {
        await deleteFile(deps, principal.accountId, params.id);
        return { id: params.id, object: "file" as const, deleted: true };
      },
      {
        params: IdParams,
        detail: { summary: "Delete a file", security: [{ bearer: [] }] },
        response: { 200: FileDeleted, 404: ErrorEnvelope, ...authErrors },
      },
    );

/** Every minute: deletes expired files, and files a dead instance left half-written (not touched for UPLOAD_IDLE_MS) — rows and parts. */
export function fileBackgroundTasks(deps: AppDeps): BackgroundTask[] {
  return [
    every(60_000, async () => {
      await sweepExpiredFiles(deps);
      await sweepStaleUploads(deps);
    }, (e) => deps.logger.warn({ err: e }, "files: the expiry or dead-upload sweep failed")),
  ];
}
