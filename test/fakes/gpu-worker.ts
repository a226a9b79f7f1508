/**
 * A fake GPU worker speaking the RunPod serverless protocol (docs/remote-gpu-protocol.md) over real
 * HTTP on a loopback port, producing real MP4s with the preview renderer.
 *
 *   const worker = await startFakeGpuWorker({ queueMs: 100, runMs: 500 });
 *   worker.url                  // "http://127.0.0.1:<port>/v2/fake-endpoint" — the model's baseUrl
 *   worker.calls                // every /run, /status, /cancel: { kind, id?, at, auth, input? }
 *   worker.count("run")         // how many /run calls
 *   worker.behave({ ... })      // change behaviour for jobs submitted from now on (WorkerBehaviour)
 *   worker.failNext("status", 3, 503)   // the next 3 /status calls answer 503 (also "run", "cancel", "any")
 *   worker.jobs.get(id)         // the job as the worker sees it
 *   worker.reset(); await worker.stop();
 *
 * A job is IN_QUEUE for queueMs, IN_PROGRESS (with `progress`) for runMs, then reaches its outcome.
 * The MP4 is rendered once per distinct input (prompt, image, size, seconds capped by
 * maxRenderSeconds) and cached, so a benchmark of 1,000 identical jobs renders once.
 */
import type { Server } from "bun";
import { render } from "../../plugins/preview-video/index.ts";
import type { VideoRequest } from "../../src/plugin-sdk/index.ts";
import { hostServices } from "../../src/plugin-host/host-services.ts";

/** the renderer the fake worker borrows reelay's encoder for (its workers close themselves when idle) */
const host = hostServices();

export interface WorkerBehaviour {
  queueMs?: number;
  runMs?: number;
  /** final outcome of new jobs */
  outcome?: "completed" | "failed" | "timed_out";
  /** error text for FAILED */
  errorMessage?: string;
  /** the worker forgets jobs: /status answers 404 once the job is queued */
  lose?: boolean;
  /** how COMPLETED carries the video */
  output?: "base64" | "url" | "data_url";
  /** where the video goes in `output`: "video" → {"output": {"video": …}}; "" → {"output": "<video>"} */
  outputKey?: string;
  /** replace the video with these bytes (e.g. a PNG, to test validation) */
  outputBytes?: Uint8Array;
  /** API key the worker demands (401 otherwise); undefined accepts anything */
  apiKey?: string;
  /** cap on rendered seconds (keeps tests fast; the clip is still a real MP4 at the requested size) */
  maxRenderSeconds?: number;
  /** how long /run takes to answer (the job exists from the start) */
  runAnswerMs?: number;
}

export interface WorkerCall {
  /** "other": a path outside the protocol (a model whose baseUrl is wrong), answered 404 */
  kind: "run" | "status" | "cancel" | "output" | "other";
  /** method and path, e.g. "POST /v2/fake-endpoint/run" */
  request?: string;
  id?: string;
  at: number;
  auth: string | null;
  /** the W3C traceparent the call carried (reelay sends one when tracing is on) */
  traceparent?: string | null;
  input?: Record<string, any>;
}

export interface FakeJob {
  id: string;
  input: Record<string, any>;
  submittedAt: number;
  behaviour: Required<Omit<WorkerBehaviour, "outputBytes" | "apiKey">> & Pick<WorkerBehaviour, "outputBytes">;
  cancelled: boolean;
  statusCalls: number;
}

type Kind = "run" | "status" | "cancel" | "any";

const DEFAULTS = { queueMs: 50, runMs: 200, outcome: "completed", errorMessage: "CUDA out of memory", lose: false, output: "base64", outputKey: "video", maxRenderSeconds: 1, runAnswerMs: 0 } as const;

/**
 * `clock`: where the worker reads the time a job's phases are measured against (default Date.now);
 * a test that asserts each phase passes its own clock and moves it, instead of sleeping into a
 * phase and hoping a loaded machine woke it in time.
 */
export async function startFakeGpuWorker(initial: WorkerBehaviour = {}, opts: { clock?: () => number } = {}) {
  const now = opts.clock ?? Date.now;
  let behaviour: WorkerBehaviour = { ...initial };
  const jobs = new Map<string, FakeJob>();
  const calls: WorkerCall[] = [];
  const bursts: Array<{ kind: Kind; left: number; status: number }> = [];
  const renders = new Map<string, Promise<Uint8Array>>();
  let seq = 0;

  const takeBurst = (kind: Kind): number | null => {
    const b = bursts.find((x) => x.left > 0 && (x.kind === kind || x.kind === "any"));
    if (!b) return null;
    b.left--;
    return b.status;
  };

  const mp4For = (job: FakeJob): Promise<Uint8Array> => {
    if (job.behaviour.outputBytes) return Promise.resolve(job.behaviour.outputBytes);
    const i = job.input;
    const width = Number(i.width ?? 480), height = Number(i.height ?? 832);
    const seconds = Math.max(1, Math.min(Number(i.seconds ?? 1), job.behaviour.maxRenderSeconds));
    const image = String(i.image ?? i.image_base64 ?? "").replace(/^data:[^,]*,/, "");
    const key = JSON.stringify([i.prompt, image.length, image.slice(0, 64), image.slice(-64), width, height, seconds]);
    let p = renders.get(key);
    if (!p) {
      const req: VideoRequest = { jobId: job.id, prompt: String(i.prompt ?? ""), image: { bytes: new Uint8Array(Buffer.from(image, "base64")), mime: "image/png" }, width, height, seconds, seed: Number(i.seed ?? 0) };
      p = render(req, { quantizer: 36 }, new AbortController().signal, () => {}, host);
      p.catch(() => renders.delete(key));
      renders.set(key, p);
    }
    return p;
  };

  const statusOf = async (job: FakeJob, origin: string): Promise<Record<string, unknown>> => {
    const base = { id: job.id };
    if (job.cancelled) return { ...base, status: "CANCELLED" };
    const t = now() - job.submittedAt;
    const { queueMs, runMs } = job.behaviour;
    if (t < queueMs) return { ...base, status: "IN_QUEUE", delayTime: t };
    if (t < queueMs + runMs) return { ...base, status: "IN_PROGRESS", delayTime: queueMs, progress: Math.round(((t - queueMs) / runMs) * 100) / 100 };
    const timing = { delayTime: queueMs, executionTime: runMs };
    if (job.behaviour.outcome === "failed") return { ...base, ...timing, status: "FAILED", error: job.behaviour.errorMessage };
    if (job.behaviour.outcome === "timed_out") return { ...base, ...timing, status: "TIMED_OUT" };
    let video: string;
    if (job.behaviour.output === "url") video = `${origin}/outputs/${job.id}.mp4`;
    else {
      const b64 = Buffer.from(await mp4For(job)).toString("base64");
      video = job.behaviour.output === "data_url" ? `data:video/mp4;base64,${b64}` : b64;
    }
    return { ...base, ...timing, status: "COMPLETED", output: job.behaviour.outputKey ? { [job.behaviour.outputKey]: video } : video };
  };

  const json = (body: unknown, status = 200) => Response.json(body, { status });

  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const url = new URL(req.url);
      const auth = req.headers.get("authorization");
      const m = /^\/v2\/[\w-]+\/(run|status|cancel)(?:\/([\w-]+))?$/.exec(url.pathname);
      const out = /^\/outputs\/([\w-]+)\.mp4$/.exec(url.pathname);
      if (out) {
        calls.push({ kind: "output", id: out[1], at: Date.now(), auth });
        const job = jobs.get(out[1]!);
        if (!job) return json({ error: "no such output" }, 404);
        return new Response(await mp4For(job), { headers: { "content-type": "video/mp4" } });
      }
      if (!m) {
        calls.push({ kind: "other", request: `${req.method} ${url.pathname}`, at: Date.now(), auth });
        return json({ error: "not found" }, 404);
      }
      const kind = m[1] as "run" | "status" | "cancel";
      const id = m[2];
      const call: WorkerCall = { kind, id, at: Date.now(), auth, traceparent: req.headers.get("traceparent") };
      calls.push(call);
      if (behaviour.apiKey !== undefined && auth !== `Bearer ${behaviour.apiKey}`) return json({ error: "Unauthorized" }, 401);
      const burst = takeBurst(kind);
      if (burst !== null) return json({ error: `injected ${burst}` }, burst);

      if (kind === "run" && req.method === "POST") {
        const body = (await req.json().catch(() => null)) as { input?: Record<string, any> } | null;
        if (!body || typeof body.input !== "object" || body.input === null) return json({ error: "body must be {\"input\": {...}}" }, 400);
        call.input = body.input;
        const job: FakeJob = { id: `job-${++seq}-${crypto.randomUUID().slice(0, 8)}`, input: body.input, submittedAt: now(), behaviour: { ...DEFAULTS, ...behaviour }, cancelled: false, statusCalls: 0 };
        jobs.set(job.id, job);
        if (behaviour.runAnswerMs) await Bun.sleep(behaviour.runAnswerMs);
        return json({ id: job.id, status: "IN_QUEUE" });
      }
      const job = id ? jobs.get(id) : undefined;
      if (!job) return json({ error: "job not found" }, 404);
      if (kind === "status" && req.method === "GET") {
        job.statusCalls++;
        if (job.behaviour.lose) return json({ error: "job not found" }, 404);
        return json(await statusOf(job, url.origin));
      }
      if (kind === "cancel" && req.method === "POST") {
        job.cancelled = true;
        return json({ id: job.id, status: "CANCELLED" });
      }
      return json({ error: "method not allowed" }, 405);
    },
  });

  const origin = `http://127.0.0.1:${server.port}`;
  return {
    origin,
    url: `${origin}/v2/fake-endpoint`,
    calls,
    jobs,
    count: (kind: WorkerCall["kind"]) => calls.filter((c) => c.kind === kind).length,
    behave(b: WorkerBehaviour) {
      behaviour = { ...behaviour, ...b };
    },
    /** the next `n` calls of `kind` answer `status` (503, 429, …) with a RunPod-style error body */
    failNext(kind: Kind, n: number, status: number) {
      bursts.push({ kind, left: n, status });
    },
    reset() {
      behaviour = { ...initial };
      jobs.clear();
      calls.length = 0;
      bursts.length = 0;
    },
    stop: () => server.stop(true),
  };
}

export type FakeGpuWorker = Awaited<ReturnType<typeof startFakeGpuWorker>>;
