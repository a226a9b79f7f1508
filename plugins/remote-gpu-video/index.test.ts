import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { checkOptions, PluginError, type ModelInstance, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { hostTestContext as testPluginContext, realHost, testCall } from "../../test/support/plugin-context.ts";
import { startFakeGpuWorker } from "../../test/fakes/gpu-worker.ts";
import { CONTRACT_PNG, runPluginContract } from "@reelay/plugin-sdk/contract";
import plugin, { buildInput } from "./index.ts";

// the worker's phases follow `clock`: real time, unless a test sets `manual` and moves it itself
// (sleeping into a 60 ms phase is what a loaded CI box overslept)
let manual: number | null = null;
const worker = await startFakeGpuWorker({ queueMs: 30, runMs: 60 }, { clock: () => manual ?? Date.now() });
afterAll(() => worker.stop());
beforeEach(() => {
  manual = null;
  worker.reset();
});

const KEY = "rp_secret_key_0123456789";
const signal = () => new AbortController().signal;
const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
  jobId: "vid_test", prompt: "a cat surfing", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 480, height: 832, seconds: 2, seed: 42, ...over,
});

function model(options: Record<string, unknown> = {}) {
  const opts = { baseUrl: worker.url, allowPrivateNetwork: true, pollIntervalMs: 50, apiKeyEnv: "GPU_KEY", ...options };
  const ctx = testPluginContext(opts, { envVars: { GPU_KEY: KEY }, plugin });
  expect(plugin.validateOptions!(ctx.options)).toEqual([]);
  return { video: (plugin.create(ctx) as ModelInstance).video!, ctx };
}

async function runToEnd(video: ModelInstance["video"] & {}, handle: string): Promise<{ last: VideoPollResult; states: string[] }> {
  const states: string[] = [];
  for (let i = 0; i < 400; i++) {
    const r = await video.poll(handle, testCall());
    if (states.at(-1) !== r.state) states.push(r.state);
    if (r.state !== "queued" && r.state !== "running") return { last: r, states };
    await Bun.sleep(20);
  }
  throw new Error("job never finished");
}

const thrown = (p: Promise<unknown>) => p.then(() => { throw new Error("resolved"); }, (e) => e);

describe("options", () => {
  test("each problem names its option; minimal options are valid", () => {
    const { problems } = checkOptions(plugin.options!, {
      baseUrl: "ftp://x", apiKeyEnv: "rp_123 secret",
      staticInput: [], outputPath: "result.video", pollIntervalMs: 1, maxConcurrency: 0, timeouts: { requestMs: -1, fooMs: 1 }, allowPrivateNetwork: "yes", maxOutputBytes: 1, extra: 1,
    });
    expect(problems.map((p) => p.option).sort()).toEqual(["allowPrivateNetwork", "apiKeyEnv", "baseUrl", "extra", "maxConcurrency", "maxOutputBytes", "outputPath", "pollIntervalMs", "timeouts.fooMs", "timeouts.requestMs"]);
    const more = plugin.validateOptions!({ inputMapping: { picture: "img", seconds: "frames:/2", image: "image:hex" }, staticInput: [] });
    for (const name of ["inputMapping.picture", "inputMapping.seconds", "inputMapping.image", "staticInput"]) expect(more.some((p) => p.includes(`"${name}`))).toBe(true);
    const minimal = checkOptions(plugin.options!, { baseUrl: "https://api.runpod.ai/v2/abc123" });
    expect([minimal.problems, plugin.validateOptions!(minimal.options)]).toEqual([[], []]);
  });

  test("an apiKeyEnv naming an unset variable stops model creation, without the key anywhere", () => {
    const ctx = testPluginContext({ baseUrl: worker.url, apiKeyEnv: "NOT_SET_ANYWHERE" }, { plugin });
    expect(() => plugin.create(ctx)).toThrow(/NOT_SET_ANYWHERE/);
  });
});

describe("input mapping", () => {
  test("defaults: image as base64, size as width/height, absent fields left out", () => {
    const input = buildInput(request(), {}, {});
    expect(input).toEqual({ prompt: "a cat surfing", image: Buffer.from(CONTRACT_PNG).toString("base64"), seconds: 2, width: 480, height: 832, seed: 42 });
  });

  test("custom targets, transforms, nesting, omissions and static fields", () => {
    const input = buildInput(request({ negativePrompt: "blurry", steps: 30 }), {
      image: "params.image:dataUrl", seconds: "num_frames:*16+1", size: "resolution", steps: "params.num_inference_steps", negative_prompt: null, job_id: "request_id",
    }, { model: "wan2.1-i2v-480p", params: { guidance: 5 } });
    expect(input).toEqual({
      model: "wan2.1-i2v-480p", prompt: "a cat surfing", seed: 42, request_id: "vid_test", num_frames: 33, resolution: "480x832",
      params: { guidance: 5, image: `data:image/png;base64,${Buffer.from(CONTRACT_PNG).toString("base64")}`, num_inference_steps: 30 },
    });
  });
});

describe("RunPod protocol against the fake worker", () => {
  test("submit sends {input} with the key; polls go IN_QUEUE → IN_PROGRESS → COMPLETED with a real MP4", async () => {
    const { video, ctx } = model({ inputMapping: { seconds: "num_frames:*16" } });
    manual = 1_000_000;
    const { handle } = await video.submit(request(), testCall());
    expect(worker.jobs.has(handle)).toBe(true);
    const run = worker.calls.find((c) => c.kind === "run")!;
    expect(run.auth).toBe(`Bearer ${KEY}`);
    expect(run.input).toMatchObject({ prompt: "a cat surfing", num_frames: 32, width: 480, height: 832, seed: 42 });
    const states: string[] = [(await video.poll(handle, testCall())).state];
    manual += 40; // into IN_PROGRESS (queueMs 30)
    states.push((await video.poll(handle, testCall())).state);
    manual += 60; // past runMs 60: COMPLETED
    const { last, states: rest } = await runToEnd(video, handle);
    states.push(...rest);
    expect(states).toEqual(["queued", "running", "succeeded"]);
    expect(last.state === "succeeded" && "mp4" in last && new TextDecoder().decode(last.mp4.subarray(4, 8))).toBe("ftyp");
    expect(worker.calls.filter((c) => c.kind === "status").every((c) => c.auth === `Bearer ${KEY}`)).toBe(true);
    expect(JSON.stringify(ctx.logs)).not.toContain(KEY);
  });

  test("progress is reported as 0..1", async () => {
    worker.behave({ queueMs: 0, runMs: 2_000 });
    const { video } = model();
    manual = 1_000_000;
    const { handle } = await video.submit(request(), testCall());
    manual += 300;
    const r = await video.poll(handle, testCall());
    expect(r.state).toBe("running");
    expect(r.state === "running" && r.progress! > 0 && r.progress! < 1).toBe(true);
  });

  for (const output of ["url", "data_url"] as const) {
    test(`output as ${output} at a configured outputPath`, async () => {
      worker.behave({ output, outputKey: "result" });
      const { video } = model({ outputPath: "output.result" });
      const { handle } = await video.submit(request(), testCall());
      const { last } = await runToEnd(video, handle);
      expect(last.state).toBe("succeeded");
      expect(worker.count("output")).toBe(output === "url" ? 1 : 0);
      // the key is for the worker's API, never for the output host
      expect(worker.calls.filter((c) => c.kind === "output").every((c) => c.auth === null)).toBe(true);
    });
  }

  test("a URL output on a private address fails the job unless allowPrivateNetwork", async () => {
    worker.behave({ output: "url" });
    const { video } = model({ allowPrivateNetwork: false });
    const { handle } = await video.submit(request(), testCall());
    const { last } = await runToEnd(video, handle);
    expect(last).toMatchObject({ state: "failed", code: "output_url_blocked", retryable: false });
    expect(worker.count("output")).toBe(0);
  });

  test("outputs that are not MP4s, or too large, fail the job", async () => {
    worker.behave({ outputBytes: CONTRACT_PNG });
    let { video } = model();
    let { handle } = await video.submit(request(), testCall());
    expect((await runToEnd(video, handle)).last).toMatchObject({ state: "failed", code: "output_invalid" });

    worker.behave({ outputBytes: undefined, output: "url" });
    ({ video } = model({ maxOutputBytes: 2048 }));
    ({ handle } = await video.submit(request(), testCall()));
    expect((await runToEnd(video, handle)).last).toMatchObject({ state: "failed", code: "output_too_large" });
  });

  test("FAILED, TIMED_OUT and CANCELLED are final failures with the worker's message", async () => {
    const { video } = model();
    worker.behave({ outcome: "failed", errorMessage: "CUDA out of memory on worker 3" });
    let { handle } = await video.submit(request(), testCall());
    expect((await runToEnd(video, handle)).last).toEqual({ state: "failed", code: "worker_failed", message: "CUDA out of memory on worker 3", retryable: false });

    worker.behave({ outcome: "timed_out" });
    ({ handle } = await video.submit(request(), testCall()));
    expect((await runToEnd(video, handle)).last).toMatchObject({ state: "failed", code: "worker_timeout", retryable: false });

    worker.behave({ outcome: "completed", queueMs: 5_000 });
    ({ handle } = await video.submit(request(), testCall()));
    await video.cancel!(handle, testCall());
    expect(worker.calls.find((c) => c.kind === "cancel")).toMatchObject({ id: handle, auth: `Bearer ${KEY}` });
    expect((await runToEnd(video, handle)).last).toMatchObject({ state: "failed", code: "cancelled" });
  });

  test("a job the worker no longer knows (404) is lost", async () => {
    worker.behave({ lose: true });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    expect(await video.poll(handle, testCall())).toEqual({ state: "lost" });
  });

  test("5xx and 429 are retryable PluginErrors; other 4xx are not; the next call succeeds", async () => {
    const { video } = model();
    worker.failNext("run", 1, 503);
    let err = await thrown(video.submit(request(), testCall()));
    expect(err).toBeInstanceOf(PluginError);
    expect(err).toMatchObject({ kind: "upstream_http", status: 503, retryable: true });
    const { handle } = await video.submit(request(), testCall());

    worker.failNext("status", 1, 429);
    err = await thrown(video.poll(handle, testCall()));
    expect(err).toMatchObject({ status: 429, retryable: true });
    expect((await runToEnd(video, handle)).last.state).toBe("succeeded");

    worker.behave({ apiKey: "another-key" });
    err = await thrown(video.submit(request(), testCall()));
    expect(err).toMatchObject({ status: 401, retryable: false });
    expect(err.message).not.toContain(KEY);
  });

  test("404 or 405 to POST /run: a final error telling the operator to check baseUrl (the URL only in the log)", async () => {
    const site = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("<h1>405 Not Allowed</h1>", { status: 405, headers: { "content-type": "text/html" } }) });
    try {
      for (const [baseUrl, status] of [[`${worker.origin}/v2`, 404], [`http://127.0.0.1:${site.port}`, 405]] as const) {
        const { video, ctx } = model({ baseUrl });
        const err = await thrown(video.submit(request(), testCall()));
        expect(err).toBeInstanceOf(PluginError);
        expect(err).toMatchObject({ status, retryable: false, code: "worker_endpoint_not_found" });
        expect(err.message).toBe(`the GPU worker answered ${status} to POST /run: no worker endpoint at the model's baseUrl (the operator must check baseUrl)`);
        expect(ctx.logs).toContainEqual({ level: "error", msg: "GPU worker has no /run endpoint at baseUrl: check the model's baseUrl", fields: { baseUrl, status } });
      }
    } finally {
      site.stop(true);
    }
  });

  test("boot: an unreachable baseUrl is warned about at once, naming it; a reachable one is not", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const deadUrl = `http://127.0.0.1:${closed.port}/v2/x`;
    closed.stop(true);
    const downCtx = testPluginContext({ baseUrl: deadUrl }, { plugin });
    const down = plugin.create(downCtx) as ModelInstance;
    const up = model(); // the fake worker answers (404 to /health counts as reachable)
    const upInstance = plugin.create(up.ctx) as ModelInstance;
    try {
      for (let i = 0; i < 100 && !downCtx.logs.some((l) => l.level === "warn"); i++) await Bun.sleep(20);
      expect(downCtx.logs.filter((l) => l.level === "warn")).toEqual([
        { level: "warn", msg: "GPU worker unreachable at boot: check the model's baseUrl and the worker", fields: { baseUrl: deadUrl, reason: expect.any(String) } },
      ]);
      await Bun.sleep(200);
      expect(up.ctx.logs.filter((l) => l.level === "warn")).toEqual([]);
    } finally {
      await down.close?.();
      await upInstance.close?.();
    }
  });

  test("an unreachable worker and a slow worker are retryable connect / timeout errors", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const deadUrl = `http://127.0.0.1:${closed.port}/v2/x`;
    closed.stop(true);
    let err = await thrown(model({ baseUrl: deadUrl }).video.submit(request(), testCall()));
    expect(err).toMatchObject({ kind: "connect", retryable: true });

    const slow = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async () => { await Bun.sleep(2_000); return Response.json({ id: "x" }); } });
    try {
      err = await thrown(model({ baseUrl: `http://127.0.0.1:${slow.port}/v2/x`, timeouts: { requestMs: 200 } }).video.submit(request(), testCall()));
      expect(err).toMatchObject({ kind: "timeout", retryable: true });
    } finally {
      slow.stop(true);
    }
  });

  test("the host's abort is passed through as the abort reason, not a worker error", async () => {
    worker.behave({});
    const { video } = model();
    const c = new AbortController();
    const reason = new Error("shutting down");
    c.abort(reason);
    expect(await thrown(video.submit(request(), testCall({ signal: c.signal })))).toBe(reason);
  });
});

runPluginContract("remote-gpu-video", () => plugin, {
  capabilities: ["video"],
  options: () => ({ baseUrl: worker.url, allowPrivateNetwork: true, pollIntervalMs: 50 }),
  setup: () => worker.reset(),
  ctx: realHost(),
  video: { timeoutMs: 20_000 },
  failures: {
    httpStatus: (status) => worker.failNext("run", 1_000, status),
    jobFails: () => worker.behave({ outcome: "failed", errorMessage: "content policy: refused" }),
    reset: () => worker.reset(),
  },
});
