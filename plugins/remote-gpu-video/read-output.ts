/**
 * Turns a COMPLETED status answer into MP4 bytes. The video is a string at `outputPath` (or the
 * first of DEFAULT_OUTPUT_PATHS present): an http(s) URL (downloaded through the host's SSRF-guarded
 * fetch, size and time limited), a data URL, or plain base64. Whatever arrives must look like an
 * MP4 (an `ftyp` box first), so a worker returning a PNG or an error string fails the job clearly.
 */
import { PluginError, type PluginContext, type VideoPollResult } from "../../src/plugin-sdk/index.ts";
import { DEFAULT_OUTPUT_PATHS, type RemoteGpuOptions } from "./options.ts";

type Failure = Extract<VideoPollResult, { state: "failed" }>;

export async function readOutput(ctx: PluginContext, opts: RemoteGpuOptions, answer: Record<string, unknown>, signal: AbortSignal): Promise<Uint8Array | Failure> {
  const paths = opts.outputPath ? [opts.outputPath] : DEFAULT_OUTPUT_PATHS;
  const found = paths.map((p) => [p, at(answer, p)] as const).find(([, v]) => typeof v === "string" && v !== "");
  if (!found) return fail("output_missing", `the worker reported COMPLETED but no video string at ${paths.join(" | ")}`);
  const [path, value] = found as [string, string];

  let bytes: Uint8Array;
  if (/^https?:\/\//i.test(value)) {
    const downloaded = await download(ctx, opts, value, signal);
    if (!(downloaded instanceof Uint8Array)) return downloaded;
    bytes = downloaded;
  } else {
    const b64 = value.startsWith("data:") ? value.slice(value.indexOf(",") + 1) : value;
    if (b64.length > Math.ceil((opts.maxOutputBytes * 4) / 3) + 4) return fail("output_too_large", `the video at ${path} is larger than ${opts.maxOutputBytes} bytes`);
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(b64.replace(/\s+/g, ""))) return fail("output_invalid", `the value at ${path} is neither a URL nor base64`);
    bytes = new Uint8Array(Buffer.from(b64, "base64"));
  }
  if (!looksLikeMp4(bytes)) return fail("output_invalid", `the video at ${path} is not an MP4 (no ftyp box)`);
  return bytes;
}

async function download(ctx: PluginContext, opts: RemoteGpuOptions, url: string, signal: AbortSignal): Promise<Uint8Array | Failure> {
  try {
    // no Authorization header: output URLs are usually presigned object-store links on another host
    const r = await ctx.safeFetchBytes(url, { maxBytes: opts.maxOutputBytes, timeoutMs: opts.timeouts.downloadMs, allowPrivateNetwork: opts.allowPrivateNetwork, signal });
    return r.bytes;
  } catch (err) {
    if (signal.aborted) throw err;
    const e = err as { code?: string; status?: number; message?: string };
    const where = safeOrigin(url);
    switch (e.code) {
      case "too_large": return fail("output_too_large", `the video at ${where} is larger than ${opts.maxOutputBytes} bytes`);
      case "blocked_address": return fail("output_url_blocked", `the video URL points at a non-public address (${where}); set allowPrivateNetwork for a private GPU network`);
      case "invalid_url": return fail("output_invalid", `the video URL is not allowed: ${e.message}`);
      case "http_status":
        if ((e.status ?? 0) >= 500 || e.status === 429) break;
        return fail("output_unavailable", `downloading the video from ${where} failed: HTTP ${e.status}`);
    }
    // network, timeout, 5xx: the result is still on the worker; the next poll tries again
    throw new PluginError("connect", `downloading the video from ${where} failed: ${e.message ?? err}`, { retryable: true, cause: err });
  }
}

export function looksLikeMp4(bytes: Uint8Array): boolean {
  return bytes.byteLength >= 12 && bytes[4] === 0x66 && bytes[5] === 0x74 && bytes[6] === 0x79 && bytes[7] === 0x70;
}

function at(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const p of path.split(".")) v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[p] : undefined;
  return v;
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin; // presigned query strings are credentials: never echo them
  } catch {
    return "an invalid URL";
  }
}

const fail = (code: string, message: string): Failure => ({ state: "failed", code, message, retryable: false });
