/**
 * An upstream's non-2xx answer → PluginError('upstream_http') with the upstream's status and its own
 * message, code and param when its error body has them. The body is read up to 64 KiB: enough for
 * any real error body, bounded for a hostile one that never ends.
 */
import { PluginError } from "./errors.ts";

const MAX_ERROR_BODY = 64 * 1024;

export interface ErrorBody {
  message?: string;
  code?: string;
  param?: string | null;
  /** how long to wait, from the body (Google's `google.rpc.RetryInfo` detail), whole seconds ≥ 1 */
  retryAfterSeconds?: number;
}

/**
 * The message, code and param of the usual error shapes: OpenAI `{error: {message, type, param,
 * code}}`, vLLM `{object: "error", message, type, code}`, Ollama and others `{error: "text"}`,
 * FastAPI `{detail: "text" | [{msg, type}]}` (fal's queue too), RFC 7807 `{title, detail}`, Google
 * APIs `{error: {code: 429, message, status: "RESOURCE_EXHAUSTED", details: [{"@type":
 * "…google.rpc.RetryInfo", retryDelay: "37s"}]}}` (the status is the code; the retry delay is
 * `retryAfterSeconds`). Anything else: {}.
 */
export function parseErrorBody(text: string): ErrorBody {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof body !== "object" || body === null) return {};
  const e = typeof body.error === "object" && body.error !== null ? body.error : body;
  const detail = Array.isArray(body.detail) ? body.detail.map((d: any) => d?.msg).filter((m: unknown) => typeof m === "string").join("; ") : body.detail;
  const message = typeof e.message === "string" ? e.message
    : typeof body.error === "string" ? body.error
    : typeof detail === "string" && detail ? detail
    : typeof body.title === "string" ? body.title : undefined;
  const firstDetail = Array.isArray(body.detail) ? body.detail[0] : undefined;
  const code = typeof e.code === "string" ? e.code : typeof e.type === "string" ? e.type : typeof e.status === "string" ? e.status : typeof firstDetail?.type === "string" ? firstDetail.type : undefined;
  const param = typeof e.param === "string" ? e.param : null;
  const retry = Array.isArray(e.details) ? e.details.find((d: any) => typeof d?.["@type"] === "string" && d["@type"].endsWith("google.rpc.RetryInfo")) : undefined;
  const retryAfter = typeof retry?.retryDelay === "string" && /^\d+(\.\d+)?s$/.test(retry.retryDelay) ? retryAfterSeconds(retry.retryDelay.slice(0, -1)) : undefined;
  return { message, code, param, ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}) };
}

/** The upstream answered `res.status` (not 2xx): its error, secrets redacted, as a PluginError. */
export async function upstreamHttpError(res: Response, redact: (text: string) => string = (t) => t): Promise<PluginError> {
  let text = "";
  try {
    text = redact(await readPrefix(res, MAX_ERROR_BODY));
  } catch {
    // the status alone is still a valid answer
  }
  const parsed = parseErrorBody(text);
  const message = parsed.message ?? (text.trim() && !/^\s*</.test(text) ? text.trim().slice(0, 500) : `upstream answered HTTP ${res.status}`);
  // 529: Anthropic's "overloaded", a 503 by another number. The wait: `retry-after-ms` (Azure
  // OpenAI's, also read by OpenAI's SDKs; finer than seconds), else `Retry-After`, else the body's
  const retryAfter = res.status === 429 || res.status === 503 || res.status === 529
    ? retryAfterMsSeconds(res.headers.get("retry-after-ms")) ?? retryAfterSeconds(res.headers.get("retry-after")) ?? parsed.retryAfterSeconds
    : undefined;
  return new PluginError("upstream_http", message.slice(0, 1000), { status: res.status, code: parsed.code, param: parsed.param, retryAfterSeconds: retryAfter });
}

/** A Retry-After header (delay-seconds or an HTTP date) in whole seconds ≥ 1; undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  const seconds = /^\d+(\.\d+)?$/.test(text) ? Number(text) : (Date.parse(text) - Date.now()) / 1000;
  if (!Number.isFinite(seconds) || seconds <= 0) return undefined;
  return Math.min(3600, Math.ceil(seconds));
}

/** A `retry-after-ms` header in whole seconds ≥ 1 (rounded up); undefined when absent or unreadable. */
function retryAfterMsSeconds(header: string | null): number | undefined {
  if (!header || !/^\s*\d+(\.\d+)?\s*$/.test(header)) return undefined;
  const ms = Number(header);
  return ms > 0 ? Math.min(3600, Math.ceil(ms / 1000)) : undefined;
}

/** The first `max` bytes of a body as text; the rest is never read. */
async function readPrefix(res: Response, max: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let bytes = 0;
  try {
    while (bytes < max) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = value.subarray(0, max - bytes);
      bytes += take.byteLength;
      text += decoder.decode(take, { stream: true });
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return text + decoder.decode();
}
