/**
 * A plugin's video capability as the scheduler calls it. submit() must give a string handle; poll()
 * a known state, progress as a fraction 0–1, an MP4 that starts with an `ftyp` box. A result URL is
 * downloaded here, through the SSRF guard (private addresses only when the operator set the
 * model's `allowPrivateNetwork`), and checked like bytes, so the scheduler only ever stores an MP4.
 * A violation fails the job (the plugin is asked to cancel its upstream job, best effort). An
 * inbound hook (webhook()) must say whether it was genuine; only a genuine one wakes jobs.
 */
import { downloadFailure, isMp4, isPluginError, problemWithHandle, problemWithPollResult, type SafeFetchOptions, type VideoCapability, type VideoPollResult } from "../plugin-sdk/index.ts";
import { guarded, violation, type PluginSite } from "./plugin-faults.ts";
import type { PluginCalls } from "./plugin-calls.ts";
import type { HostCall, HostPollResult, HostVideo } from "./types.ts";

/** a 10 s clip at a high bitrate is ~30 MB; 256 MB bounds a hostile URL's answer */
const MAX_RESULT_BYTES = 256 * 1024 * 1024;
const RESULT_FETCH_TIMEOUT_MS = 120_000;
const CANCEL_TIMEOUT_MS = 10_000;

export interface VideoSite extends PluginSite {
  /** the model's allowPrivateNetwork: result URLs may point at private / loopback addresses */
  allowPrivateNetwork: boolean;
  download(url: string, opts: SafeFetchOptions): Promise<{ bytes: Uint8Array }>;
}

export function checkedVideo(video: VideoCapability, site: VideoSite, calls: PluginCalls): HostVideo {
  const checked: HostVideo = Object.create(video);
  const cancel = typeof video.cancel === "function" ? video.cancel.bind(video) : undefined;
  checked.submit = async (req, call) => {
    const r = await guarded(site, call.signal, call.requestId, () => video.submit(req, calls.options(call)));
    const problem = problemWithHandle(r);
    if (problem) throw violation(site, problem, call.requestId);
    return { handle: r.handle };
  };
  checked.poll = async (handle, call) => {
    const r = await guarded(site, call.signal, call.requestId, () => video.poll(handle, calls.options(call)));
    const problem = problemWithPollResult(r);
    if (problem) {
      // the job fails here: do not leave it running (and billing) at the provider
      cancel?.(handle, calls.options({ signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS), requestId: call.requestId })).catch(() => {});
      throw violation(site, problem, call.requestId);
    }
    if (r.state === "failed" && site.secrets) return { ...r, message: site.secrets.redact(r.message) } as HostPollResult;
    return r.state === "succeeded" && "url" in r ? fetchResult(site, r.url, call) : (r as HostPollResult);
  };
  if (cancel) checked.cancel = (handle, call) => guarded(site, call.signal, call.requestId, () => cancel(handle, calls.options(call)));
  const webhook = typeof video.webhook === "function" ? video.webhook.bind(video) : undefined;
  if (webhook) {
    checked.webhook = async (req, call) => {
      const r = await guarded(site, call.signal, call.requestId, () => webhook(req, calls.options(call)));
      const wake = (r as { wake?: unknown } | undefined)?.wake ?? [];
      if (typeof r !== "object" || r === null || typeof r.accepted !== "boolean" || !Array.isArray(wake) || !wake.every((h) => typeof h === "string")) {
        throw violation(site, "webhook() must return { accepted: boolean, wake?: string[] }", call.requestId);
      }
      return { accepted: r.accepted, wake: r.accepted ? (wake as string[]) : [] };
    };
  }
  return checked;
}

async function fetchResult(site: VideoSite, url: string, call: HostCall): Promise<HostPollResult> {
  let bytes: Uint8Array;
  try {
    ({ bytes } = await site.download(url, { maxBytes: MAX_RESULT_BYTES, timeoutMs: RESULT_FETCH_TIMEOUT_MS, allowPrivateNetwork: site.allowPrivateNetwork, signal: call.signal }));
  } catch (err) {
    if (call.signal.aborted) throw err;
    const failure = downloadFailure(err, url);
    if (isPluginError(failure)) throw failure; // retryable: the next poll downloads again
    return failure as Extract<VideoPollResult, { state: "failed" }>;
  }
  if (!isMp4(bytes)) throw violation(site, `the result URL's ${bytes.byteLength} bytes are not an MP4 (no ftyp box first)`, call.requestId);
  return { state: "succeeded", mp4: bytes };
}
