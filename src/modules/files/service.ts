/**
 * Files: upload (streamed into blob-store parts, refused with 413 once past the limit), read,
 * list, delete, and the sweeps of expired files and of dead writes. Batches read their input and
 * write their output and error files through here.
 *
 * A file being written has a row from before its first part is put ("uploading": no API shows
 * it), which counts the parts before each is put and is touched at least every minute while bytes
 * arrive; the last part put, it becomes "processed". So a kill -9 mid-write leaves a row naming
 * every part that may exist: sweepStaleUploads deletes rows not touched for UPLOAD_IDLE_MS, with
 * their parts. Counting, not probing keys until the first missing one: the count is one indexed
 * UPDATE per 4 MiB part, and a probe would need a HEAD per part on S3 and could stop early at a
 * part whose put had not landed while a later one had (they are sequential today, not by contract).
 */
import type { BlobStores } from "../../blob-store/index.ts";
import type { Tx } from "../../db/index.ts";
import { badRequest, notFound, quoted, tooLarge } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import type { Logger } from "../../logger.ts";
import { deleteParts, PartWriter, readParts, type PartLog } from "./file-parts.ts";
import {
  deleteFileRows, findFile, finishUploading, insertFile, insertUploading, takeExpiredFiles, takeFileToDelete, takeStaleUploads, takeUnnamedBatchFiles, touchUploading, type FileRow,
} from "./file-table.ts";
import { FILE_PURPOSES } from "./model.ts";
import { boundaryOf, readMultipart } from "./multipart-stream.ts";

export interface FileDeps {
  database: { db: Tx };
  blobs: BlobStores;
  config: { filesMaxBytes: number; filesTtlMs: number };
  logger: Logger;
}

/**
 * An unfinished file's row not touched for this long is a dead writer's (a kill -9 mid-upload or
 * mid-finalization). A live writer touches its row before each part and at least every minute
 * while bytes arrive, and the server closes a connection idle for 255 s (listen.ts), so a live
 * upload's row is never more than ~5 minutes old: 10 minutes is twice that.
 */
export const UPLOAD_IDLE_MS = 10 * 60_000;

/** A write whose row was taken for deletion under it (the sweeper found it idle; a later finalization of its batch took over): it stopped and deleted its parts. */
export class FileWriteTaken extends Error {
  constructor(id: string) {
    super(`file ${id}: its row was taken for deletion while it was written`);
  }
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
  const fields: Record<string, string> = {};
  let field: string | null = null;
  let filename: string | null = null;
  let seenFile = false;
  // the purpose may come after the file: the uploading row holds what is known at its first part, the finished row the rest
  const writer = new PartWriter(store, id, undefined, partLog(deps, id, store.name, () => ({ accountId, filename: cleanName(filename ?? "file"), purpose: fields.purpose ?? "", batchId: null })));
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
    return await finish(deps, writer, { id, accountId, filename: cleanName(filename ?? "file"), purpose, blobStore: store.name, batchId: null });
  } catch (e) {
    await abandon(deps, writer, id);
    throw e;
  }
}

/** A file made by reelay (a batch's output or error file, naming the batch), from its lines. */
export async function writeFile(deps: FileDeps, f: { accountId: string; filename: string; purpose: string; batchId: string | null }, lines: AsyncIterable<string>): Promise<FileRow> {
  const id = randomId("file", 24).replace(/^file_/, "file-");
  const store = deps.blobs.current;
  const writer = new PartWriter(store, id, "application/jsonl", partLog(deps, id, store.name, () => f));
  const encoder = new TextEncoder();
  try {
    for await (const line of lines) await writer.write(encoder.encode(line + "\n"));
    return await finish(deps, writer, { id, ...f, blobStore: store.name });
  } catch (e) {
    await abandon(deps, writer, id);
    throw e;
  }
}

/**
 * The record of a file being written (PartLog): its uploading row, inserted before its first part
 * is put, then its part count and liveness. A row found gone or taken for deletion (the sweeper
 * found it idle; a finalization of its batch took over) stops the write.
 */
function partLog(deps: FileDeps, id: string, blobStore: string, row: () => { accountId: string; filename: string; purpose: string; batchId: string | null }): PartLog {
  let inserted = false;
  return async (parts) => {
    if (!inserted) {
      await insertUploading(deps.database.db, { ...row(), id, blobStore, parts, expiresAt: new Date(Date.now() + deps.config.filesTtlMs) });
      inserted = true;
    } else if (!(await touchUploading(deps.database.db, id, parts))) throw new FileWriteTaken(id);
  };
}

/** The last part put: the row becomes "processed" (a file of no part has no row yet: inserted complete). */
async function finish(deps: FileDeps, writer: PartWriter, f: { id: string; accountId: string; filename: string; purpose: string; blobStore: string; batchId: string | null }): Promise<FileRow> {
  const { bytes, parts } = await writer.finish();
  const expiresAt = new Date(Date.now() + deps.config.filesTtlMs);
  if (parts === 0) return insertFile(deps.database.db, { ...f, bytes, parts, expiresAt });
  const row = await finishUploading(deps.database.db, f.id, { filename: f.filename, purpose: f.purpose, bytes, parts, expiresAt });
  if (!row) throw new FileWriteTaken(f.id);
  return row;
}

/** A write stopped in-process: its parts, then its row (a kill between the two leaves the row, for the sweeper). */
async function abandon(deps: FileDeps, writer: PartWriter, id: string) {
  try {
    await writer.abandon();
    await deleteFileRows(deps.database.db, [id]);
  } catch (err) {
    deps.logger.warn({ err, fileId: id }, "files: could not delete a stopped write's parts or row; the sweeper deletes them once idle");
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

/** The row is taken ("deleting": a 404 from now on), then the parts and the row deleted: a kill in between leaves the row for the sweeper, not parts no row names. */
export async function deleteFile(deps: FileDeps, accountId: string, id: string): Promise<void> {
  const f = await takeFileToDelete(deps.database.db, id, accountId);
  if (!f) throw fileNotFound(id);
  await deleteTaken(deps, [f]);
}

/** Delete expired files (parts, then rows); returns how many. */
export async function sweepExpiredFiles(deps: FileDeps): Promise<number> {
  let n = 0;
  for (;;) {
    const gone = await takeExpiredFiles(deps.database.db, 100);
    n += await deleteTaken(deps, gone);
    if (gone.length < 100) return n;
  }
}

/**
 * Delete unfinished files (and "deleting" rows a kill left) whose rows were not touched for
 * `idleMs`: their parts (as many as each row counts), then their rows; returns how many.
 */
export async function sweepStaleUploads(deps: FileDeps, idleMs = UPLOAD_IDLE_MS): Promise<number> {
  let n = 0;
  for (;;) {
    const stale = await takeStaleUploads(deps.database.db, idleMs, 100);
    n += await deleteTaken(deps, stale);
    if (stale.length < 100) return n;
  }
}

/**
 * Delete the files batch `batchId`'s finalizations wrote that the batch does not name — an earlier
 * finalization's, killed before its final transition, complete or half-written — parts then rows.
 * A finalization runs it, holding the batch's lease as `leaseOwner`, before writing its own
 * files; returns the files deleted.
 */
export async function deleteUnnamedBatchFiles(deps: FileDeps, batchId: string, leaseOwner: string): Promise<FileRow[]> {
  const taken = await takeUnnamedBatchFiles(deps.database.db, batchId, leaseOwner);
  await deleteTaken(deps, taken);
  return taken;
}

/**
 * Rows marked "deleting": parts first, then the row; a row whose parts could not be deleted stays
 * "deleting" (invisible), for the dead-upload sweep to take again once idle.
 */
async function deleteTaken(deps: FileDeps, rows: FileRow[]): Promise<number> {
  const done: string[] = [];
  for (const f of rows) {
    const store = deps.blobs.byName(f.blobStore);
    if (!store) { done.push(f.id); continue; } // parts in a store no longer configured: out of reach, as for an expired file
    try {
      await deleteParts(store, f.id, f.parts);
      done.push(f.id);
    } catch (err) {
      deps.logger.warn({ err, fileId: f.id }, "files: could not delete a file's parts; its row stays, for the sweeper");
    }
  }
  await deleteFileRows(deps.database.db, done);
  return done.length;
}

/** a filename as shown back: its last path segment, control characters out, at most 255 characters */
function cleanName(name: string): string {
  return (name.split(/[\\/]/).pop() || "file").replace(/[\u0000-\u001f\u007f]/g, "").slice(0, 255) || "file";
}
