/**
 * Turns a COMPLETED status answer into MP4 bytes. The video is a string at `outputPath` (or the
 * first of DEFAULT_OUTPUT_PATHS present): an http(s) URL (downloaded through the host's SSRF-guarded
 * fetch, size and time limited), a data URL, or plain base64. Whatever arrives must look like an
 * MP4 (an `ftyp` box first), so a worker returning a PNG or an error string fails the job clearly.
 */
import { downloadFailure, isMp4, isPluginError, type PluginContext, type VideoPollResult } from "@reelay/plugin-sdk";
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
  if (!isMp4(bytes)) return fail("output_invalid", `the video at ${path} is not an MP4 (no ftyp box)`);
  return bytes;
}

async function download(ctx: PluginContext, opts: RemoteGpuOptions, url: string, signal: AbortSignal): Promise<Uint8Array | Failure> {
  try {
    // no Authorization header: output URLs are usually presigned object-store links on another host
    const r = await ctx.safeFetchBytes(url, { maxBytes: opts.maxOutputBytes, timeoutMs: opts.timeouts.downloadMs, allowPrivateNetwork: opts.allowPrivateNetwork, signal });
    return r.bytes;
  } catch (err) {
    if (signal.aborted) throw err;
    // refused URL, too large, 4xx: the job fails; network, timeout, 5xx: the result is still on the worker, the next poll tries again
    const failure = downloadFailure(err, url);
    if (isPluginError(failure)) throw failure;
    return failure;
  }
}

function at(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const p of path.split(".")) v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[p] : undefined;
  return v;
}

const fail = (code: string, message: string): Failure => ({ state: "failed", code, message, retryable: false });
