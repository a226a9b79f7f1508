/**
 * The host's SSRF-guarded download (`ctx.safeFetchBytes`) and its errors. The host's SafeFetchError
 * comes from the host's copy of this file, so plugins recognise it by its brand (`isSafeFetchError`),
 * and `downloadFailure` turns one into the failed video state or retryable PluginError reelay's own
 * plugins use.
 */
import { PluginError } from "./errors.ts";

export interface SafeFetchOptions {
  /** refuse bodies larger than this (bytes) */
  maxBytes: number;
  /** whole request deadline, ms */
  timeoutMs: number;
  /** allow private / loopback targets (only when the operator configured it explicitly) */
  allowPrivateNetwork?: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/**
 * - `invalid_url`: not http(s), unparsable, or with credentials
 * - `blocked_address`: the name resolves to a private, loopback, link-local or metadata address
 * - `too_large`: the body is larger than maxBytes
 * - `timeout`: not finished within timeoutMs
 * - `http_status`: a non-2xx answer (`status`), or a redirect loop
 * - `network`: DNS or connection failure
 */
export type SafeFetchErrorCode = "invalid_url" | "blocked_address" | "too_large" | "timeout" | "http_status" | "network";

export const SAFE_FETCH_ERROR_BRAND: unique symbol = Symbol.for("reelay.safe-fetch-error") as never;

export class SafeFetchError extends Error {
  readonly [SAFE_FETCH_ERROR_BRAND] = true as const;
  readonly code: SafeFetchErrorCode;
  /** the upstream status for `http_status` */
  readonly status?: number;
  constructor(code: SafeFetchErrorCode, message: string, opts: { status?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SafeFetchError";
    this.code = code;
    this.status = opts.status;
  }
}

export function isSafeFetchError(err: unknown): err is SafeFetchError {
  return typeof err === "object" && err !== null && (err as Record<symbol, unknown>)[SAFE_FETCH_ERROR_BRAND] === true;
}

/**
 * A failed download of a provider's result, as a video plugin reports it: refused URLs, oversized
 * bodies and 4xx are final (`failed`, with a code), while timeouts, network errors, 5xx and 429 are
 * a retryable PluginError (the result is still there; the next poll tries again). `what` names the
 * URL's origin in messages, never its query (presigned URLs carry credentials there).
 */
export function downloadFailure(err: unknown, url: string): { state: "failed"; code: string; message: string; retryable: false } | PluginError {
  const where = originOf(url);
  if (!isSafeFetchError(err)) return new PluginError("connect", `downloading the result from ${where} failed: ${(err as Error)?.message ?? String(err)}`, { retryable: true, cause: err });
  const final = (code: string, message: string) => ({ state: "failed" as const, code, message, retryable: false as const });
  switch (err.code) {
    case "invalid_url":
      return final("output_invalid", `the result URL is not allowed: ${err.message}`);
    case "blocked_address":
      return final("output_url_blocked", `the result URL points at a non-public address (${where}); the operator may set allowPrivateNetwork on this model`);
    case "too_large":
      return final("output_too_large", `the result at ${where} is too large: ${err.message}`);
    case "http_status":
      if ((err.status ?? 0) < 500 && err.status !== 429) return final("output_unavailable", `downloading the result from ${where} failed: HTTP ${err.status}`);
  }
  return new PluginError(err.code === "timeout" ? "timeout" : "connect", `downloading the result from ${where} failed: ${err.message}`, { retryable: true, cause: err });
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "an invalid URL";
  }
}

/**
 * A body (a fetch Response's, or an incoming Request's), read as it streams, stopping at
 * `maxBytes`: past it the read is cancelled and `tooLarge()` is thrown, so an oversized body never
 * sits in memory whole.
 */
export async function readBodyCapped(res: { body: ReadableStream<Uint8Array> | null }, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      reader.cancel().catch(() => {}); // not awaited: a sender that stalls must not hold the answer
      throw tooLarge();
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
