/**
 * Validation of a batch's input file, read line by line from the blob store: every line must be a
 * JSON object {custom_id, method: "POST", url: <the batch's endpoint>, body: {model, …}} with a
 * custom_id used once and a model the batch's key may use for that endpoint. Valid lines are
 * stored (batch_lines) 500 at a time; any invalid one fails the batch with errors naming lines.
 * Every write is made only while `owner` still holds the batch's lease (batch-table.ts): a
 * validation that lost it (or whose batch was cancelled or expired meanwhile) stops, and returns
 * null, without touching what the instance that took the batch over stores.
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { resolveModel } from "../../registry/resolve-model.ts";
import { readLines } from "../files/file-parts.ts";
import { fileContent } from "../files/service.ts";
import { findFile } from "../files/file-table.ts";
import { clearValidation, insertLines, insertSlices, type BatchRow } from "./batch-table.ts";
import type { BatchEndpoint } from "./model.ts";

/** OpenAI's limit of requests per batch */
export const MAX_BATCH_LINES = 50_000;
/** errors listed for an invalid file (the rest of the file is not read) */
const MAX_ERRORS = 100;
const INSERT_ROWS = 500;

export interface LineError {
  code: string;
  message: string;
  param: string | null;
  /** 1-based */
  line: number | null;
}

const capabilityOf = (endpoint: BatchEndpoint) => (endpoint === "/v1/embeddings" ? "embeddings" : "chat");

/**
 * Check and store the lines; the errors (empty: valid) and the number of lines, or null: the
 * batch is not ours to validate any more (`signal` aborted by the lease's heartbeat, or a write
 * found the lease gone), so nothing may be written about it.
 */
export async function validateInput(deps: AppDeps, b: BatchRow, owner: string, sliceLines: number, signal: AbortSignal): Promise<{ errors: LineError[]; total: number } | null> {
  const db = deps.database.db;
  // a validation taken over from a dead (or stalled) instance starts over
  if (!(await clearValidation(db, b.id, owner))) return null;
  const file = await findFile(db, b.inputFileId, b.accountId);
  if (!file) return { errors: [{ code: "invalid_file", message: `The input file ${b.inputFileId} does not exist any more.`, param: "input_file_id", line: null }], total: 0 };
  const principal = b.principal as unknown as Principal;
  const errors: LineError[] = [];
  const seen = new Set<string>();
  let pending: Array<{ line: number; customId: string; body: string }> = [];
  let total = 0;
  const fail = (line: number, code: string, message: string, param: string | null) => errors.push({ code, message, param, line: line + 1 });
  for await (const { at, text } of readLines(fileContent(deps, file))) {
    if (signal.aborted) return null;
    if (errors.length >= MAX_ERRORS) break;
    if (text.trim() === "") continue;
    let entry: unknown;
    try {
      entry = JSON.parse(text);
    } catch {
      fail(at, "invalid_json_line", `Line ${at + 1} is not valid JSON.`, null);
      continue;
    }
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) { fail(at, "invalid_json_line", `Line ${at + 1} is not a JSON object.`, null); continue; }
    const e = entry as Record<string, unknown>;
    if (typeof e.custom_id !== "string" || e.custom_id === "" || e.custom_id.length > 512) { fail(at, "missing_custom_id", `Line ${at + 1}: 'custom_id' must be a string of 1 to 512 characters.`, "custom_id"); continue; }
    if (seen.has(e.custom_id)) { fail(at, "duplicate_custom_id", `Line ${at + 1}: the custom_id '${e.custom_id.slice(0, 100)}' is used by an earlier line; each must be unique in the file.`, "custom_id"); continue; }
    seen.add(e.custom_id);
    if (e.method !== undefined && e.method !== "POST") { fail(at, "invalid_method", `Line ${at + 1}: 'method' must be "POST".`, "method"); continue; }
    if (e.url !== b.endpoint) { fail(at, "invalid_url", `Line ${at + 1}: 'url' is ${JSON.stringify(e.url)?.slice(0, 100)}, but this batch's endpoint is ${b.endpoint}: every line must use it.`, "url"); continue; }
    const body = e.body;
    if (!body || typeof body !== "object" || Array.isArray(body)) { fail(at, "invalid_body", `Line ${at + 1}: 'body' must be a JSON object (the request).`, "body"); continue; }
    const model = (body as Record<string, unknown>).model;
    if (typeof model !== "string") { fail(at, "missing_model", `Line ${at + 1}: 'body.model' is required.`, "body.model"); continue; }
    try {
      resolveModel(deps, principal, model, capabilityOf(b.endpoint as BatchEndpoint));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      fail(at, err.code ?? "model_not_found", `Line ${at + 1}: ${err.message}`, "body.model");
      continue;
    }
    if (total >= MAX_BATCH_LINES) { fail(at, "too_many_lines", `The file has more than ${MAX_BATCH_LINES} requests, the most a batch takes.`, null); break; }
    if (errors.length === 0) {
      pending.push({ line: total, customId: e.custom_id, body: JSON.stringify(body) });
      if (pending.length >= INSERT_ROWS) {
        if (!(await insertLines(db, b.id, owner, pending))) return null;
        pending = [];
      }
    }
    total++;
  }
  if (errors.length === 0 && total === 0) errors.push({ code: "empty_file", message: "The input file has no requests.", param: "input_file_id", line: null });
  if (signal.aborted) return null;
  if (errors.length > 0) return (await clearValidation(db, b.id, owner)) ? { errors, total } : null;
  if (!(await insertLines(db, b.id, owner, pending))) return null;
  if (!(await insertSlices(db, b.id, owner, total, sliceLines))) return null;
  return { errors, total };
}
