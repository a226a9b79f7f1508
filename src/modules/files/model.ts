import { t } from "elysia";

export const FILE_PURPOSES = ["batch", "user_data"] as const;

/** OpenAI's file object */
export const FileObject = t.Object({
  id: t.String(),
  object: t.Literal("file"),
  bytes: t.Number(),
  created_at: t.Number({ description: "unix seconds" }),
  expires_at: t.Number({ description: "unix seconds: the file is deleted then (REELAY_FILES_TTL_SECONDS)" }),
  filename: t.String(),
  purpose: t.String({ description: "`batch`, `user_data`, or `batch_output` for a batch's output and error files" }),
  status: t.Literal("processed"),
});

export const FileList = t.Object({
  object: t.Literal("list"),
  data: t.Array(FileObject),
  first_id: t.Union([t.String(), t.Null()]),
  last_id: t.Union([t.String(), t.Null()]),
  has_more: t.Boolean(),
});

export const FileListQuery = t.Object({
  purpose: t.Optional(t.String()),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 10_000, default: 10_000, description: "page size (1–10,000)" })),
  after: t.Optional(t.String({ description: "cursor: the last id of the previous page" })),
  order: t.Optional(t.Union([t.Literal("asc"), t.Literal("desc")], { default: "desc" })),
});

export const FileDeleted = t.Object({ id: t.String(), object: t.Literal("file"), deleted: t.Boolean() });
