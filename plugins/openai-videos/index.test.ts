/** The openai-videos plugin against the fake OpenAI-style videos upstream (test/fakes/openai-videos.ts). */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { checkOptions, type ModelInstance, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { CONTRACT_PNG, runPluginContract } from "@reelay/plugin-sdk/contract";
import { expectQueuedThenRunning, hostTestContext, realHost, testCall } from "../../test/support/plugin-context.ts";
import { startFakeOpenAIVideos } from "../../test/fakes/openai-videos.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import plugin from "./index.ts";

const KEY = "sk-upstream-videos-0123456789";
const upstream = await startFakeOpenAIVideos({ apiKey: KEY, queueMs: 30, runMs: 150 });
const other = await startFakeOpenAIVideos({ apiKey: KEY, queueMs: 30, runMs: 150 });
afterAll(async () => {
  await upstream.stop();
  await other.stop();
});
beforeEach(() => {
  upstream.reset();
  other.reset();
});

const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
  jobId: `vid_${crypto.randomUUID().slice(0, 8)}`, prompt: "a city at night, rain", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 720, height: 1280, seconds: 4, seed: 3, ...over,
});

function model(options: Record<string, unknown> = {}) {
  const ctx = hostTestContext({ baseUrl: upstream.url, apiKeyEnv: "UPSTREAM_KEY", upstreamModel: "sora-2", pollIntervalMs: 50, ...options }, { plugin, envVars: { UPSTREAM_KEY: KEY } });
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
  throw new Error("video never finished");
}

describe("options", () => {
  test("baseUrl or deployments; each problem names its option", () => {
    const check = (o: Record<string, unknown>) => plugin.validateOptions!(checkOptions(plugin.options!, o).options as never);
    expect(check({})).toEqual(['option "baseUrl": is required (or "deployments", a list of upstreams)']);
    expect(check({ baseUrl: upstream.url, deployments: [{ baseUrl: other.url }] })).toEqual(['option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both']);
    expect(checkOptions(plugin.options!, { baseUrl: "api.openai.com", upstreamModel: "" }).problems.map((p) => p.option)).toEqual(["baseUrl", "upstreamModel"]);
  });
});

describe("against the fake upstream", () => {
  test("create as multipart (seconds as a string, the image as input_reference), queued → in_progress (progress) → completed → the /content MP4", async () => {
    const { video } = model();
    upstream.hold(); // each state held while it is polled: the test sees them whatever the machine's speed
    const { handle } = await video.submit(request(), testCall());
    const create = upstream.calls.find((c) => c.kind === "create")!;
    expect(create.contentType).toStartWith("multipart/form-data; boundary=");
    expect(create.fields).toEqual({ model: "sora-2", prompt: "a city at night, rain", seconds: "4", size: "720x1280", input_reference: { file: "reference.png", type: "image/png", bytes: CONTRACT_PNG.byteLength } });
    expect(create.auth).toBe(`Bearer ${KEY}`);
    await expectQueuedThenRunning(video, handle, upstream);
    const { last } = await runToEnd(video, handle);
    expect(last.state).toBe("succeeded");
    expect((await ffprobe((last as { mp4: Uint8Array }).mp4)).streams[0]).toMatchObject({ width: 720, height: 1280, nb_read_frames: "32" });
    expect(upstream.calls.find((c) => c.kind === "content")!.auth).toBe(`Bearer ${KEY}`);
  });

  test("a failed video: its error's code and message, not retried; an unknown id is lost", async () => {
    upstream.behave({ fail: { code: "moderation_blocked", message: "Your request was blocked by our moderation system." } });
    const { video } = model();
    const { last } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last).toEqual({ state: "failed", code: "moderation_blocked", message: "Your request was blocked by our moderation system.", retryable: false });
    expect(await video.poll("x/video_unknown", testCall())).toEqual({ state: "lost" });
  });

  test("the upstream's 400 (seconds it does not make) fails the job with its message and param", async () => {
    upstream.behave({ allowedSeconds: ["4", "8", "12"] });
    const err = await model().video.submit(request({ seconds: 5 }), testCall()).catch((e) => e);
    expect(err).toMatchObject({ kind: "upstream_http", status: 400, param: "seconds", message: "Invalid value: '5'. Supported values are: '4', '8', '12'.", retryable: false });
  });

  test("cancel deletes the video upstream; a video over maxOutputBytes fails", async () => {
    upstream.behave({ runMs: 60_000 });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    await video.cancel!(handle, testCall());
    expect(upstream.calls.filter((c) => c.kind === "delete").map((c) => c.id)).toEqual([handle.split("/")[1]]);
    expect(await video.poll(handle, testCall())).toEqual({ state: "lost" });
    upstream.behave({});
    const small = model({ maxOutputBytes: 1024 }).video;
    const { last } = await runToEnd(small, (await small.submit(request({ seconds: 1 }), testCall())).handle).catch((e) => ({ last: e }));
    expect(last).toMatchObject({ kind: "failed", code: "output_too_large" });
  });

  test("two upstreams: a 503 at create goes to the other; each video polled where it was made, with that upstream's model name", async () => {
    upstream.failNext("create", 1, 503);
    const { video } = model({ baseUrl: undefined, apiKeyEnv: undefined, deployments: [{ name: "vendor", baseUrl: upstream.url, apiKeyEnv: "UPSTREAM_KEY" }, { name: "gateway", baseUrl: other.url, apiKeyEnv: "UPSTREAM_KEY", upstreamModel: "openai/sora-2" }] });
    const handles = [(await video.submit(request(), testCall())).handle, (await video.submit(request(), testCall())).handle];
    for (const h of handles) expect((await runToEnd(video, h)).last.state).toBe("succeeded");
    expect(other.calls.filter((c) => c.kind === "create").map((c) => c.fields!.model)).toContain("openai/sora-2");
    for (const [fake, name] of [[upstream, "vendor"], [other, "gateway"]] as const) {
      for (const c of fake.calls.filter((x) => x.kind === "get")) expect(handles).toContain(`${name}/${c.id}`);
    }
  });
});

runPluginContract("openai-videos", () => plugin, {
  capabilities: ["video"],
  options: () => ({ baseUrl: upstream.url, apiKeyEnv: "UPSTREAM_KEY", upstreamModel: "sora-2", pollIntervalMs: 50 }),
  ctx: realHost({ envVars: { UPSTREAM_KEY: KEY } }),
  setup: () => upstream.reset(),
  video: { timeoutMs: 20_000 },
  failures: {
    httpStatus: (status) => upstream.failNext("create", 1_000, status),
    jobFails: () => upstream.behave({ fail: { code: "generation_failed", message: "the model could not render this prompt" } }),
    reset: () => upstream.reset(),
  },
});
