/**
 * Test-only video plugin whose behaviour is set by model options. Handles are self-describing
 * (`sv.<jobId>.<submittedAtMs>`), so a job submitted by one server process can be polled by another
 * and survives a restart, like a real remote provider.
 *
 * Options:
 *   durationMs          time from submit until the job succeeds (timer, no CPU; default 0)
 *   pollIntervalMs      default 50
 *   maxConcurrency      default 4
 *   fail                {code, message}: every job fails for good (non-retryable)
 *   failRetryableTimes  the first N polls of each job report a retryable failure (per process)
 *   submitErrorTimes    the first N submits of each job throw a retryable PluginError (per process)
 *   lostTimes           the first N handles of each job are reported lost (per process)
 *   resultUrl           succeed with this URL instead of MP4 bytes
 *   recordFile          append "submit <jobId>" / "cancel <jobId>" lines (to count calls across processes)
 *   mp4Bytes            succeed with this many deterministic pseudo-random bytes (per job) instead of a short marker
 *   releaseFile         jobs keep running (progress 0.5) until this file exists, then succeed at their next
 *                       poll: many jobs finishing within one poll interval (benchmarks)
 */
import { appendFileSync, existsSync } from "node:fs";
import { PLUGIN_API_VERSION, PluginError, type ModelInstance, type ReelayPlugin, type VideoPollResult } from "../../src/plugin-sdk/index.ts";

interface ScriptOptions {
  durationMs: number;
  pollIntervalMs: number;
  maxConcurrency: number;
  fail?: { code: string; message: string };
  failRetryableTimes: number;
  submitErrorTimes: number;
  lostTimes: number;
  resultUrl?: string;
  recordFile?: string;
  mp4Bytes?: number;
  releaseFile?: string;
}

/** An `ftyp` box (isom): what makes bytes an MP4 to the host's check; the rest is not a playable video. */
const FTYP = Uint8Array.of(0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0);

export function fakeMp4(jobId: string, size?: number): Uint8Array {
  if (!size) {
    const marker = new TextEncoder().encode(`fake-mp4:${jobId}`);
    const out = new Uint8Array(FTYP.length + marker.length);
    out.set(FTYP);
    out.set(marker, FTYP.length);
    return out;
  }
  const out = new Uint8Array(Math.max(size, FTYP.length));
  let x = [...jobId].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 2166136261) || 1;
  for (let i = 0; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  out.set(FTYP);
  return out;
}

export function createScripted(o: ScriptOptions): ModelInstance {
  const submits = new Map<string, number>();
  const polls = new Map<string, number>();
  const lost = new Map<string, number>();
  const record = (line: string) => o.recordFile && appendFileSync(o.recordFile, line + "\n");
  // one stat per 20 ms at most, however many jobs poll
  let released = false;
  let checkedAt = 0;
  const isReleased = () => {
    if (!released && o.releaseFile && Date.now() - checkedAt >= 20) {
      checkedAt = Date.now();
      released = existsSync(o.releaseFile);
    }
    return released;
  };
  const bump = (m: Map<string, number>, k: string) => {
    const n = (m.get(k) ?? 0) + 1;
    m.set(k, n);
    return n;
  };
  return {
    video: {
      maxConcurrency: o.maxConcurrency,
      pollIntervalMs: o.pollIntervalMs,
      async submit(req, { signal }) {
        signal.throwIfAborted();
        if (bump(submits, req.jobId) <= o.submitErrorTimes) throw new PluginError("upstream_http", "scripted: submit refused (503)", { status: 503 });
        record(`submit ${req.jobId} ${process.pid}`);
        return { handle: `sv.${req.jobId}.${Date.now()}` };
      },
      async poll(handle, { signal }): Promise<VideoPollResult> {
        signal.throwIfAborted();
        const [, jobId, at] = handle.split(".") as [string, string, string];
        if (bump(lost, handle) === 1 && (lost.get(`job:${jobId}`) ?? 0) < o.lostTimes) {
          bump(lost, `job:${jobId}`);
          return { state: "lost" };
        }
        const elapsed = Date.now() - Number(at);
        if (o.releaseFile && !isReleased()) return { state: "running", progress: 0.5 };
        if (elapsed < o.durationMs) return { state: "running", progress: elapsed / o.durationMs };
        if (o.fail) return { state: "failed", code: o.fail.code, message: o.fail.message, retryable: false };
        if (bump(polls, jobId) <= o.failRetryableTimes) return { state: "failed", code: "flaky", message: "scripted: retryable failure", retryable: true };
        if (o.resultUrl) return { state: "succeeded", url: o.resultUrl };
        return { state: "succeeded", mp4: fakeMp4(jobId, o.mp4Bytes) };
      },
      async cancel(handle) {
        record(`cancel ${handle.split(".")[1]}`);
      },
    },
  };
}

export default {
  name: "scripted-video",
  apiVersion: PLUGIN_API_VERSION,
  create(ctx) {
    const n = (k: string, d: number) => (typeof ctx.options[k] === "number" ? (ctx.options[k] as number) : d);
    return createScripted({
      durationMs: n("durationMs", 0),
      pollIntervalMs: n("pollIntervalMs", 50),
      maxConcurrency: n("maxConcurrency", 4),
      fail: ctx.options.fail as ScriptOptions["fail"],
      failRetryableTimes: n("failRetryableTimes", 0),
      submitErrorTimes: n("submitErrorTimes", 0),
      lostTimes: n("lostTimes", 0),
      resultUrl: ctx.options.resultUrl as string | undefined,
      recordFile: ctx.options.recordFile as string | undefined,
      mp4Bytes: ctx.options.mp4Bytes as number | undefined,
      releaseFile: ctx.options.releaseFile as string | undefined,
    });
  },
} satisfies ReelayPlugin;
