/** Turning upstream answers and network failures into PluginError. */
import { PluginError } from "../../src/plugin-sdk/index.ts";
import type { Redact } from "./redact.ts";

/** Only a refused connection is surely unseen by the upstream, so only it is retried. */
export function isConnectionRefused(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === "ECONNREFUSED";
}

/**
 * A fetch or body read failed without our own abort. `answered` = the upstream had sent headers,
 * so the failure cut a response short: the host must not retry that (tokens may have been relayed).
 */
export function networkFailure(err: unknown, answered: boolean, redact: Redact = (t) => t): PluginError {
  if (err instanceof PluginError) return err;
  const code = (err as { code?: string } | null)?.code;
  if (code === "ETIMEDOUT" || (err as Error | null)?.name === "TimeoutError") {
    return new PluginError("timeout", "upstream timed out", { retryable: !answered, cause: err });
  }
  const what = code === "ECONNREFUSED" ? "connection refused" : code === "ECONNRESET" ? "connection reset" : `connection failed (${redact(String(code ?? (err as Error)?.message ?? "unknown"))})`;
  return new PluginError("connect", answered ? `upstream ${what} mid-response` : `upstream ${what}`, { retryable: !answered, cause: err });
}

/** Up to 64 KiB of an error body is read: enough for any OpenAI-style error, bounded for a hostile one. */
const MAX_ERROR_BODY = 64 * 1024;

/** The upstream answered with a non-2xx status: keep its status and its own error message (secrets redacted). */
export async function upstreamHttpError(res: Response, redact: Redact = (t) => t): Promise<PluginError> {
  let text = "";
  try {
    text = redact(await readPrefix(res, MAX_ERROR_BODY));
  } catch {
    // the status alone is still a valid answer
  }
  const parsed = parseErrorBody(text);
  const message = parsed.message ?? (text.trim() ? text.trim().slice(0, 500) : `upstream answered HTTP ${res.status}`);
  return new PluginError("upstream_http", message, { status: res.status, code: parsed.code, param: parsed.param });
}

/** The first `max` bytes of a body as text; the rest is never read (a hostile error body may be endless). */
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

/**
 * OpenAI: {error: {message, type, param, code}}; vLLM: {object: "error", message, type, code};
 * some servers: {error: "text"} or FastAPI's {detail}.
 */
function parseErrorBody(text: string): { message?: string; code?: string; param?: string | null } {
  let body: any;
  try { body = JSON.parse(text); } catch { return {}; }
  if (typeof body !== "object" || body === null) return {};
  const e = typeof body.error === "object" && body.error !== null ? body.error : body;
  const message = typeof e.message === "string" ? e.message
    : typeof body.error === "string" ? body.error
    : typeof body.detail === "string" ? body.detail : undefined;
  const code = typeof e.code === "string" ? e.code : typeof e.type === "string" ? e.type : undefined;
  const param = typeof e.param === "string" ? e.param : null;
  return { message, code, param };
}
