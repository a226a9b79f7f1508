/**
 * The plugin against a fake queue (fake-queue.ts): the SDK's contract suite with its failure
 * scenarios, and what is particular to a queue API (the handle is the request id, progress arrives
 * as a percentage, a refusal is a 422 on the result). Needs only @reelay/plugin-sdk.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isMp4, type ModelInstance, type VideoRequest } from "@reelay/plugin-sdk";
import { CONTRACT_PNG, runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { startFakeQueue, type FakeQueue } from "./fake-queue.ts";
import plugin from "./index.ts";

const APP = "fal-ai/fake-video/image-to-video";
let queue: FakeQueue;
let stopped = false;
const failures: FailureScenarios = {
  httpStatus: (status) => queue.behave({ submitStatus: status }),
  unreachable: async () => {
    stopped = true;
    await queue.stop();
  },
  hang: () => queue.behave({ hang: true }),
  shortTimeouts: { requestMs: 300 },
  jobFails: () => queue.behave({ jobFails: true }),
  reset: async () => {
    if (stopped) queue = await startFakeQueue(queue.port);
    stopped = false;
    queue.behave({});
  },
};

runPluginContract("queue-video", () => plugin, {
  capabilities: ["video"],
  setup: async () => { queue = await startFakeQueue(); },
  teardown: () => queue.stop(),
  options: () => ({ baseUrl: queue.url, app: APP, apiKeyEnv: "FAKE_QUEUE_KEY", pollIntervalMs: 50 }),
  ctx: { envVars: { FAKE_QUEUE_KEY: "fal-test-key-0123456789" } },
  failures,
  video: { timeoutMs: 10_000 },
});

describe("queue specifics", () => {
  let fake: FakeQueue;
  let video: NonNullable<ModelInstance["video"]>;
  beforeAll(async () => {
    fake = await startFakeQueue();
    const ctx = testPluginContext({ baseUrl: fake.url, app: APP, apiKeyEnv: "KEY", pollIntervalMs: 50 }, { plugin, envVars: { KEY: fake.key } });
    video = (await plugin.create(ctx)).video!;
  });
  afterAll(() => fake.stop());
  const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({ jobId: "vid_1", prompt: "a slow zoom", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 480, height: 832, seconds: 5, seed: 3, ...over });
  const states = async (handle: string) => {
    const seen = [];
    for (let i = 0; i < 200; i++) {
      const r = await video.poll(handle, testCall());
      seen.push(r);
      if (r.state !== "queued" && r.state !== "running") return seen;
      await Bun.sleep(20);
    }
    throw new Error("never finished");
  };

  test("submit sends the key and the image as a data URL; the handle is the request id", async () => {
    fake.behave({});
    const { handle } = await video.submit(request(), testCall());
    expect(handle).toMatch(/^[0-9a-f-]{36}$/);
    expect(fake.calls.at(-1)).toBe(`POST /${APP}`);
  });

  test("queued, then running with progress as a fraction (the queue says percent), then the result's URL", async () => {
    fake.behave({ queueMs: 60, runMs: 200 });
    const seen = await states((await video.submit(request(), testCall())).handle);
    expect(seen[0]).toEqual({ state: "queued" });
    const progress = seen.filter((s) => s.state === "running").map((s) => (s as { progress: number }).progress);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((p) => p >= 0 && p <= 1)).toBe(true);
    const last = seen.at(-1)!;
    expect(last).toEqual({ state: "succeeded", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/files\/.+\.mp4$/) });
    expect(isMp4(new Uint8Array(await (await fetch((last as { url: string }).url)).arrayBuffer()))).toBe(true);
  });

  test("a refusal (422 on the result) is a final failure with the provider's code and message", async () => {
    fake.behave({ jobFails: true, queueMs: 0, runMs: 0 });
    const last = (await states((await video.submit(request(), testCall())).handle)).at(-1);
    expect(last).toEqual({ state: "failed", code: "content_policy_violation", message: "The image was flagged by the content checker", retryable: false });
  });

  test("a job the queue no longer knows is lost (reelay submits again)", async () => {
    expect(await video.poll("00000000-0000-0000-0000-000000000000", testCall())).toEqual({ state: "lost" });
  });
});
