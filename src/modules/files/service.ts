/**
 * Files: upload (streamed into blob-store parts, refused with 413 once past the limit), read,
 * list, delete, and the sweep of expired files. Batches read their input and write their output
 * and error files through here.
 */
import type { BlobStores } from "../../blob-store/index.ts";
import type { Tx } from "../../db/index.ts";
import { badRequest, notFound, quoted, tooLarge } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import type { Logger } from "../../logger.ts";
import { deleteParts, PartWriter, readParts } from "./file-parts.ts";
import { deleteFileRow, findFile, insertFile, takeExpiredFiles, type FileRow } from "./file-table.ts";
import { FILE_PURPOSES } from "./model.ts";
import { boundaryOf, readMultipart } from "./multipart-stream.ts";

export interface FileDeps {
  database: { db: Tx };
  blobs: BlobStores;
  config: { filesMaxBytes: number; filesTtlMs: number };
  logger: Logger;
}

export const fileNotFound = (id: string) => notFound(`No such File object: ${quoted(id)}`, "file_not_found", "file_id");

export function fileObject(f: FileRow) {
  return {
    id: f.id, object: "file" as const, bytes: f.bytes, created_at: Math.floor(f.createdAt.getTime() / 1000), expires_at: Math.floor(f.expiresAt.getTime() / 1000),
    filename: f.filename, purpose: f.purpose, status: "processed" as const,
  };
}

/** POST /v1/files: the multipart body is read as it arrives; the `file` part goes to the blob store part by part. */
export async function uploadFile(deps: FileDeps, accountId: string, request: Request): Promise<FileRow> {
  const boundary = boundaryOf(request.headers.get("content-type"));
  if (!boundary || !request.body) throw badRequest("Send the file as multipart/form-data with the fields 'file' and 'purpose'.", null, "invalid_content_type");
  const max = deps.config.filesMaxBytes;
  const declared = Number(request.headers.get("content-length") ?? 0);
  // the multipart framing adds a few hundred bytes: a body past the limit by more holds a file past it
  if (declared > max + 64 * 1024) throw tooLarge(`The file exceeds the limit of ${max} bytes.`, "file");
  const id = randomId("file", 24).replace(/^file_/, "file-");
  const store = deps.blobs.current;
  const writer = new PartWriter(store, id);
  const fields: Record<string, string> = {};
  let field: string | null = null;
  let filename: string | null = null;
  let seenFile = false;
  try {
    await readMultipart(request.body, boundary, {
      start(p) {
        if (p.name === "file" && p.filename !== null) {
          if (seenFile) throw badRequest("Send one 'file' per upload.", "file", "invalid_form");
          seenFile = true;
          filename = p.filename;
          field = null;
        } else {
          field = p.name;
          fields[field] = "";
        }
      },
      async data(chunk) {
        if (field !== null) {
          fields[field] += new TextDecoder().decode(chunk);
          if (fields[field]!.length > 1024) throw badRequest(`The field '${quoted(field)}' is too long.`, field, "invalid_form");
          return;
        }
        if (writer.bytes + chunk.byteLength > max) throw tooLarge(`The file exceeds the limit of ${max} bytes.`, "file");
        await writer.write(chunk);
      },
      end() {
        field = null;
      },
    });
    if (!seenFile) throw badRequest("Missing required parameter: 'file' (a multipart file part).", "file", "missing_required_parameter");
    const purpose = fields.purpose;
    if (purpose === undefined) throw badRequest("Missing required parameter: 'purpose'.", "purpose", "missing_required_parameter");
    if (!(FILE_PURPOSES as readonly string[]).includes(purpose)) throw badRequest(`'${quoted(purpose)}' is not a supported purpose: use one of ${FILE_PURPOSES.join(", ")}.`, "purpose", "invalid_value");
    const { bytes, parts } = await writer.finish();
    return await insertFile(deps.database.db, {
      id, accountId, filename: cleanName(filename ?? "file"), purpose, bytes, parts, blobStore: store.name, expiresAt: new Date(Date.now() + deps.config.filesTtlMs),
    });
  } catch (e) {
    await writer.abandon().catch((err) => deps.logger.warn({ err, fileId: id }, "files: could not delete the parts of a refused upload"));
    throw e;
  }
}

/** A file made by reelay (a batch's output or error file), from its lines. */
export async function writeFile(deps: FileDeps, f: { accountId: string; filename: string; purpose: string }, lines: AsyncIterable<string>): Promise<FileRow> {
  const id = randomId("file", 24).replace(/^file_/, "file-");
  const store = deps.blobs.current;
  const writer = new PartWriter(store, id, "application/jsonl");
  const encoder = new TextEncoder();
  try {
    for await (const line of lines) await writer.write(encoder.encode(line + "\n"));
    const { bytes, parts } = await writer.finish();
    return await insertFile(deps.database.db, { id, accountId: f.accountId, filename: f.filename, purpose: f.purpose, bytes, parts, blobStore: store.name, expiresAt: new Date(Date.now() + deps.config.filesTtlMs) });
  } catch (e) {
    await writer.abandon().catch(() => {});
    throw e;
  }
}

export async function getFile(deps: FileDeps, accountId: string, id: string): Promise<FileRow> {
  const f = await findFile(deps.database.db, id, accountId);
  if (!f) throw fileNotFound(id);
  return f;
}

export function fileContent(deps: FileDeps, f: FileRow): ReadableStream<Uint8Array> {
  const store = deps.blobs.byName(f.blobStore);
  if (!store) throw notFound(`The content of ${f.id} is in the '${f.blobStore}' blob store, which is not configured.`, "file_not_found", "file_id");
  return readParts(store, f.id, f.parts);
}

export async function deleteFile(deps: FileDeps, accountId: string, id: string): Promise<void> {
  const f = await deleteFileRow(deps.database.db, id, accountId);
  if (!f) throw fileNotFound(id);
  await dropParts(deps, f);
}

/** Delete expired files (rows, then parts); returns how many. */
export async function sweepExpiredFiles(deps: FileDeps): Promise<number> {
  let n = 0;
  for (;;) {
    const gone = await takeExpiredFiles(deps.database.db, 100);
    for (const f of gone) await dropParts(deps, f);
    n += gone.length;
    if (gone.length < 100) return n;
  }
}

async function dropParts(deps: FileDeps, f: FileRow) {
  const store = deps.blobs.byName(f.blobStore);
  if (store) await deleteParts(store, f.id, f.parts).catch((err) => deps.logger.warn({ err, fileId: f.id }, "files: could not delete a deleted file's parts"));
}

/** a filename as shown back: its last path segment, control characters out, at most 255 characters */
function cleanName(name: string): string {
  return (name.split(/[\\/]/).pop() || "file").replace(/[\u0000-\u001f\u007f]/g, "").slice(0, 255) || "file";
}
