/** The replicate plugin against the fake Replicate API (test/fakes/replicate.ts). */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { checkOptions, type ModelInstance, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { CONTRACT_PNG, runPluginContract } from "@reelay/plugin-sdk/contract";
import { expectQueuedThenRunning, hostTestContext, realHost, testCall } from "../../test/support/plugin-context.ts";
import { startFakeReplicate } from "../../test/fakes/replicate.ts";
import plugin from "./index.ts";

const KEY = "r8_test_token_0123456789abcdef";
const replicate = await startFakeReplicate({ apiKey: KEY, startMs: 30, runMs: 150 });
afterAll(() => replicate.stop());
beforeEach(() => replicate.reset());

const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
  jobId: `vid_${crypto.randomUUID().slice(0, 8)}`, prompt: "a heron takes off", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 480, height: 832, seconds: 5, seed: 7, ...over,
});

function model(options: Record<string, unknown> = {}, hookBase?: string) {
  const woken: string[] = [];
  const ctx = hostTestContext({ model: "kwaivgi/kling-v2.1", baseUrl: replicate.url, apiKeyEnv: "REPLICATE_API_TOKEN", pollIntervalMs: 50, ...options }, {
    plugin, envVars: { REPLICATE_API_TOKEN: KEY },
    video: { wake: (h: string) => void woken.push(h), webhookUrl: (token: string) => (hookBase ? `${hookBase}/${token}` : undefined) },
  });
  expect(plugin.validateOptions!(ctx.options)).toEqual([]);
  const instance = plugin.create(ctx) as ModelInstance;
  return { video: instance.video!, instance, ctx, woken };
}

async function runToEnd(video: NonNullable<ModelInstance["video"]>, handle: string) {
  const seen: VideoPollResult[] = [];
  for (let i = 0; i < 500; i++) {
    const r = await video.poll(handle, testCall());
    seen.push(r);
    if (r.state !== "queued" && r.state !== "running") return { last: r, seen };
    await Bun.sleep(20);
  }
  throw new Error("prediction never finished");
}

const thrown = (p: Promise<unknown>) => p.then(() => { throw new Error("resolved"); }, (e) => e);
const signed = (secret: string, body: string) => {
  const at = new Date();
  const id = `msg_${crypto.randomUUID()}`;
  return { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign(id, at, body) };
};

describe("options", () => {
  test("model or version (exactly one), a key, baseUrl or deployments; each problem names its option", () => {
    const check = (o: Record<string, unknown>) => plugin.validateOptions!(checkOptions(plugin.options!, o).options as never);
    expect(check({ apiKeyEnv: "K" })).toEqual(['option "model": give either "model" ("owner/name") or "version", exactly one']);
    expect(check({ model: "a/b" })).toEqual(['option "apiKeyEnv": is required (the environment variable holding the API token, e.g. REPLICATE_API_TOKEN)']);
    expect(check({ model: "a/b", apiKeyEnv: "K", deployments: [{ apiKeyEnv: "K2" }] })).toEqual(['option "deployments": give either "baseUrl" / "apiKeyEnv" / "webhookSecretEnv" or "deployments", not both']);
    expect(check({ version: "a".repeat(64), deployments: [{ name: "acct", apiKeyEnv: "K1" }, { name: "acct", apiKeyEnv: "K2" }] })).toEqual(['option "deployments.1.name": "acct" names two deployments (give each a unique name)']);
    expect(check({ version: "a".repeat(64), deployments: [{ apiKeyEnv: "K1" }, { apiKeyEnv: "K2" }] })).toEqual([]); // "api.replicate.com", "api.replicate.com#2"
    expect(check({ model: "a/b", apiKeyEnv: "K", inputMapping: { image: "start_image:hex" } })[0]).toStartWith('option "inputMapping.image" has an unknown transform ":hex"');
    expect(checkOptions(plugin.options!, { model: "kling", version: "v1", apiKeyEnv: "K" }).problems.map((p) => p.option)).toEqual(["model", "version"]);
  });
});

describe("against the fake Replicate", () => {
  test("create by model: the input mapped (defaults + mapping + static), Bearer key; starting → processing with progress from the logs → the output URL", async () => {
    const { video } = model({ inputMapping: { image: "start_image:dataUrl", size: "width,height" }, staticInput: { mode: "standard" } });
    replicate.hold(); // each state held while it is polled: the test sees them whatever the machine's speed
    const { handle } = await video.submit(request({ negativePrompt: "blur" }), testCall());
    const create = replicate.calls.find((c) => c.kind === "create")!;
    expect(create).toMatchObject({ path: "/v1/models/kwaivgi/kling-v2.1/predictions", auth: `Bearer ${KEY}` });
    expect(create.body).toEqual({ input: { mode: "standard", prompt: "a heron takes off", negative_prompt: "blur", start_image: `data:image/png;base64,${Buffer.from(CONTRACT_PNG).toString("base64")}`, duration: 5, width: 480, height: 832, seed: 7 } });
    const [p] = [...replicate.predictions.values()];
    expect(handle).toBe(`127.0.0.1:${new URL(replicate.url).port}/${p!.id}`);
    await expectQueuedThenRunning(video, handle, replicate);
    const { last } = await runToEnd(video, handle);
    expect(last).toEqual({ state: "succeeded", url: `${replicate.url}/files/${p!.id}.mp4` });
  });

  test("create by version: POST /v1/predictions {version, input}", async () => {
    const version = "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa";
    const { video } = model({ model: undefined, version });
    await video.submit(request(), testCall());
    expect(replicate.calls.find((c) => c.kind === "create")).toMatchObject({ path: "/v1/predictions", body: { version } });
  });

  test("failed: the prediction's error, not retried; unknown id: lost", async () => {
    replicate.behave({ outcome: "failed", error: "The input image violates the content policy" });
    const { video } = model();
    const { last } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last).toEqual({ state: "failed", code: "replicate_failed", message: "The input image violates the content policy", retryable: false });
    expect(await video.poll("api.replicate.com/doesnotexist", testCall())).toEqual({ state: "lost" });
  });

  test("refusals: 422 input validation fails the job with Replicate's detail; 429 is retried after Retry-After", async () => {
    const { video } = model({ inputMapping: { prompt: "text" } });
    expect(await thrown(video.submit(request(), testCall()))).toMatchObject({ kind: "upstream_http", status: 422, message: "- input: prompt is required", retryable: false });
    replicate.failNext("create", 1, 429);
    expect(await thrown(model().video.submit(request(), testCall()))).toMatchObject({ kind: "upstream_http", status: 429, retryable: true, retryAfterSeconds: 1 });
  });

  test("cancel: POST …/cancel; the prediction then reads as cancelled", async () => {
    replicate.behave({ runMs: 60_000 });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    await video.cancel!(handle, testCall());
    expect(replicate.calls.filter((c) => c.kind === "cancel").map((c) => c.id)).toEqual([handle.split("/")[1]]);
    expect(await video.poll(handle, testCall())).toMatchObject({ state: "failed", code: "cancelled" });
  });
});

describe("webhooks", () => {
  test("with a hook URL the create asks for the completed event; a delivery signed with the account's secret (read once from the API) wakes the job, whose poll then needs no GET", async () => {
    const { video, instance } = model({}, "https://reelay.example.com/v1/plugin-hooks/kling");
    expect(video.pollIntervalMs).toBe(30_000); // polling is only the safety net
    const { handle } = await video.submit(request(), testCall());
    const deployment = handle.split("/")[0]!;
    expect(replicate.calls.find((c) => c.kind === "create")!.body).toMatchObject({ webhook: `https://reelay.example.com/v1/plugin-hooks/kling/${deployment}`, webhook_events_filter: ["completed"] });
    const id = handle.split("/")[1]!;
    const body = JSON.stringify({ id, status: "succeeded", output: `${replicate.url}/files/${id}.mp4`, logs: "" });
    const r = await video.webhook!({ token: deployment, headers: signed(replicate.secret, body), body: new TextEncoder().encode(body) }, testCall());
    expect(r).toEqual({ accepted: true, wake: [handle] });
    const gets = replicate.count("get");
    expect(await video.poll(handle, testCall())).toEqual({ state: "succeeded", url: `${replicate.url}/files/${id}.mp4` });
    expect(replicate.count("get")).toBe(gets);
    expect(replicate.count("secret")).toBe(1);
    await instance.close?.();
  });

  test("a delivery with a bad signature, another token or a stale timestamp is refused and changes nothing", async () => {
    const { video } = model({}, "https://reelay.example.com/hooks");
    const { handle } = await video.submit(request(), testCall());
    const [deployment, id] = handle.split("/") as [string, string];
    const body = JSON.stringify({ id, status: "succeeded", output: "https://attacker.example.com/v.mp4" });
    const forged = signed("whsec_" + Buffer.from("someone-elses-secret-0123456789a").toString("base64"), body);
    const bytes = new TextEncoder().encode(body);
    expect(await video.webhook!({ token: deployment, headers: forged, body: bytes }, testCall())).toEqual({ accepted: false });
    expect(await video.webhook!({ token: "other-deployment", headers: signed(replicate.secret, body), body: bytes }, testCall())).toEqual({ accepted: false });
    const stale = { ...signed(replicate.secret, body), "webhook-timestamp": String(Math.floor(Date.now() / 1000) - 3600) };
    expect(await video.webhook!({ token: deployment, headers: stale, body: bytes }, testCall())).toEqual({ accepted: false });
    expect((await video.poll(handle, testCall())).state).not.toBe("succeeded");
  });

  test("a configured signing secret (webhookSecretEnv) is used instead of asking the API", async () => {
    const ctx = hostTestContext({ model: "a/b", baseUrl: replicate.url, apiKeyEnv: "T", webhookSecretEnv: "S" }, { plugin, envVars: { T: KEY, S: replicate.secret }, video: { wake: () => {}, webhookUrl: (t: string) => `https://x/${t}` } });
    const video = (plugin.create(ctx) as ModelInstance).video!;
    const body = JSON.stringify({ id: "abc", status: "failed", error: "boom" });
    const token = `127.0.0.1:${new URL(replicate.url).port}`;
    expect(await video.webhook!({ token, headers: signed(replicate.secret, body), body: new TextEncoder().encode(body) }, testCall())).toEqual({ accepted: true, wake: [`${token}/abc`] });
    expect(replicate.count("secret")).toBe(0);
  });
});

runPluginContract("replicate", () => plugin, {
  capabilities: ["video"],
  options: () => ({ model: "kwaivgi/kling-v2.1", baseUrl: replicate.url, apiKeyEnv: "REPLICATE_API_TOKEN", pollIntervalMs: 50, inputMapping: { size: "width,height" } }),
  ctx: realHost({ envVars: { REPLICATE_API_TOKEN: KEY } }),
  setup: () => replicate.reset(),
  video: { timeoutMs: 20_000 },
  failures: {
    httpStatus: (status) => replicate.failNext("create", 1_000, status),
    jobFails: () => replicate.behave({ outcome: "failed", error: "NSFW content detected" }),
    reset: () => replicate.reset(),
  },
});
