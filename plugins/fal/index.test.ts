/** The fal plugin against the fake fal queue (test/fakes/fal.ts). */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { checkOptions, type ModelInstance, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { CONTRACT_PNG, runPluginContract } from "@reelay/plugin-sdk/contract";
import { expectQueuedThenRunning, hostTestContext, realHost, testCall } from "../../test/support/plugin-context.ts";
import { startFakeFal } from "../../test/fakes/fal.ts";
import plugin from "./index.ts";

const KEY = "fal-key-0123456789:abcdef0123456789";
const APP = "fal-ai/kling-video/v2.1/standard/image-to-video";
const fal = await startFakeFal({ apiKey: KEY, queueMs: 40, runMs: 150 });
afterAll(() => fal.stop());
beforeEach(() => fal.reset());

const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
  jobId: `vid_${crypto.randomUUID().slice(0, 8)}`, prompt: "a red panda eats bamboo", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 480, height: 832, seconds: 5, seed: 11, ...over,
});

function model(options: Record<string, unknown> = {}) {
  const ctx = hostTestContext({ app: APP, baseUrl: fal.url, apiKeyEnv: "FAL_KEY", pollIntervalMs: 50, ...options }, { plugin, envVars: { FAL_KEY: KEY } });
  expect(plugin.validateOptions!(ctx.options)).toEqual([]);
  const instance = plugin.create(ctx) as ModelInstance;
  return { video: instance.video!, instance };
}

async function runToEnd(video: NonNullable<ModelInstance["video"]>, handle: string) {
  const seen: VideoPollResult[] = [];
  for (let i = 0; i < 500; i++) {
    const r = await video.poll(handle, testCall());
    seen.push(r);
    if (r.state !== "queued" && r.state !== "running") return { last: r, seen };
    await Bun.sleep(20);
  }
  throw new Error("request never finished");
}
const thrown = (p: Promise<unknown>) => p.then(() => { throw new Error("resolved"); }, (e) => e);

describe("options", () => {
  test("app required, a key, baseUrl or deployments; each problem names its option", () => {
    const check = (o: Record<string, unknown>) => plugin.validateOptions!(checkOptions(plugin.options!, o).options as never);
    expect(check({ app: APP })).toEqual(['option "apiKeyEnv": is required (the environment variable holding the key, e.g. FAL_KEY)']);
    expect(check({ app: APP, apiKeyEnv: "K", deployments: [{ apiKeyEnv: "K" }] })).toEqual(['option "deployments": give either "baseUrl" / "apiKeyEnv" or "deployments", not both']);
    expect(checkOptions(plugin.options!, { app: "kling", apiKeyEnv: "K", baseUrl: "queue.fal.run" }).problems.map((p) => p.option)).toEqual(["app", "baseUrl"]);
  });
});

describe("against the fake fal queue", () => {
  test("submit with `Key` auth and fal's input names; IN_QUEUE → IN_PROGRESS (progress from the logs) → COMPLETED → the result's video URL", async () => {
    const { video } = model();
    fal.hold(); // each state held while it is polled: the test sees them whatever the machine's speed
    const { handle } = await video.submit(request(), testCall());
    const submit = fal.calls.find((c) => c.kind === "submit")!;
    expect(submit).toMatchObject({ path: `/${APP}`, auth: `Key ${KEY}` });
    expect(submit.body).toEqual({ prompt: "a red panda eats bamboo", image_url: `data:image/png;base64,${Buffer.from(CONTRACT_PNG).toString("base64")}`, duration: "5", aspect_ratio: "9:16", seed: 11 });
    const [r] = [...fal.requests.values()];
    expect(handle).toBe(`127.0.0.1:${new URL(fal.url).port}/${r!.id} ${r!.urls.status} ${r!.urls.response} ${r!.urls.cancel}`);
    await expectQueuedThenRunning(video, handle, fal);
    const { last } = await runToEnd(video, handle);
    expect(last).toEqual({ state: "succeeded", url: `${fal.url}/files/${r!.id}.mp4` });
  });

  test("the status, result and cancel URLs are followed as fal returns them, wherever they point on the queue", async () => {
    fal.behave({ urlStyle: "elsewhere" });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    const { last } = await runToEnd(video, handle);
    expect(last.state).toBe("succeeded");
    expect(fal.calls.filter((c) => c.kind === "status").every((c) => c.path.startsWith("/q/v2/"))).toBe(true);
    expect(fal.calls.filter((c) => c.kind === "result").map((c) => c.path)).toEqual([`/q/v2/${[...fal.requests.keys()][0]}/out`]);
  });

  test("the app's error payload fails the job with its message and type; its 500 is retried", async () => {
    fal.behave({ outcome: "validation_error" });
    const { video } = model();
    const { last } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last).toEqual({ state: "failed", code: "image_load_error", message: "Unsupported image: the face detector found no face", retryable: false });
    fal.behave({ outcome: "app_error", queueMs: 0, runMs: 0 });
    const { handle } = await video.submit(request(), testCall());
    await Bun.sleep(20);
    expect(await thrown(video.poll(handle, testCall()))).toMatchObject({ kind: "upstream_http", status: 500, retryable: true, message: "Internal Server Error: CUDA out of memory" });
  });

  test("cancel: PUT cancel_url; the request then never succeeds; an unknown request is lost", async () => {
    fal.behave({ runMs: 60_000 });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    await video.cancel!(handle, testCall());
    expect(fal.calls.filter((c) => c.kind === "cancel").map((c) => c.auth)).toEqual([`Key ${KEY}`]);
    expect((await runToEnd(video, handle)).last).toMatchObject({ state: "failed", message: "Request was cancelled" });
    expect(await video.poll("queue.fal.run/0b0b0b0b-0000-0000-0000-000000000000", testCall())).toEqual({ state: "lost" });
  });

  test("a wrong key: 401 fails the job (not retried)", async () => {
    const ctx = hostTestContext({ app: APP, baseUrl: fal.url, apiKeyEnv: "FAL_KEY" }, { plugin, envVars: { FAL_KEY: "wrong-key-000000" } });
    const err = await thrown((plugin.create(ctx) as ModelInstance).video!.submit(request(), testCall()));
    expect(err).toMatchObject({ kind: "upstream_http", status: 401, retryable: false });
  });
});

runPluginContract("fal", () => plugin, {
  capabilities: ["video"],
  options: () => ({ app: APP, baseUrl: fal.url, apiKeyEnv: "FAL_KEY", pollIntervalMs: 50, inputMapping: { size: "width,height", seconds: "duration" } }),
  ctx: realHost({ envVars: { FAL_KEY: KEY } }),
  setup: () => fal.reset(),
  video: { timeoutMs: 20_000 },
  failures: {
    httpStatus: (status) => fal.failNext("submit", 1_000, status),
    jobFails: () => fal.behave({ outcome: "validation_error" }),
    reset: () => fal.reset(),
  },
});
