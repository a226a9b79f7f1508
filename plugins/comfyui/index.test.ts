/** The comfyui plugin against the fake ComfyUI (test/fakes/comfyui.ts), with the two shipped example workflows. */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkOptions, type ModelInstance, type VideoPollResult, type VideoRequest } from "@reelay/plugin-sdk";
import { CONTRACT_PNG, runPluginContract } from "@reelay/plugin-sdk/contract";
import { hostTestContext, realHost, testCall } from "../../test/support/plugin-context.ts";
import { startFakeComfy } from "../../test/fakes/comfyui.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import plugin, { fillWorkflow, readWorkflow } from "./index.ts";

const EXAMPLES = join(import.meta.dir, "../../examples/comfyui");
const WAN = join(EXAMPLES, "wan22-i2v.json");
const LTXV = join(EXAMPLES, "ltxv-i2v.json");
const comfy = await startFakeComfy({ queueMs: 30, runMs: 150 });
const second = await startFakeComfy({ queueMs: 30, runMs: 150 });
afterAll(async () => {
  await comfy.stop();
  await second.stop();
});
beforeEach(() => {
  comfy.reset();
  second.reset();
});

const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
  jobId: `vid_${crypto.randomUUID().slice(0, 8)}`, prompt: "a lighthouse at dusk, waves", image: { bytes: CONTRACT_PNG, mime: "image/png" }, width: 480, height: 832, seconds: 1, seed: 42, ...over,
});

function model(options: Record<string, unknown> = {}) {
  const woken: string[] = [];
  const ctx = hostTestContext({ baseUrl: comfy.url, workflowFile: WAN, pollIntervalMs: 50, ...options }, { plugin, video: { wake: (h: string) => void woken.push(h), webhookUrl: () => undefined } });
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
  throw new Error("job never finished");
}

const thrown = (p: Promise<unknown>) => p.then(() => { throw new Error("resolved"); }, (e) => e);

describe("options and the workflow file", () => {
  const dir = mkdtempSync(join(tmpdir(), "reelay-comfy-opts-"));
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
    return path;
  };

  test("each problem names its option: missing file, UI format, unknown placeholder, no image, bad formula, outputNode, baseUrl vs deployments", () => {
    const check = (o: Record<string, unknown>) => plugin.validateOptions!(checkOptions(plugin.options!, o).options as never);
    expect(check({ baseUrl: comfy.url, workflowFile: "/nonexistent/wf.json" })).toEqual(['option "workflowFile": no file at /nonexistent/wf.json']);
    const ui = file("ui.json", { last_node_id: 3, nodes: [], links: [] });
    expect(check({ baseUrl: comfy.url, workflowFile: ui })).toEqual([`option "workflowFile": ${ui} is a UI-format workflow; export it in API format instead (ComfyUI: Workflow → Export (API))`]);
    const typo = file("typo.json", { "9": { class_type: "LoadImage", inputs: { image: "{{image}}" } }, "6": { class_type: "CLIPTextEncode", inputs: { text: "{{promt}} and {{prompt}}" } } });
    expect(check({ baseUrl: comfy.url, workflowFile: typo })[0]).toStartWith('option "workflowFile": node "6" (CLIPTextEncode) input "text" has an unknown placeholder {{promt}}');
    const noImage = file("noimage.json", { "6": { class_type: "CLIPTextEncode", inputs: { text: "{{prompt}}" } } });
    expect(check({ baseUrl: comfy.url, workflowFile: noImage })).toEqual([`option "workflowFile": ${noImage} has no {{image}} placeholder: put it where the workflow takes the source image (LoadImage's image)`]);
    expect(check({ baseUrl: comfy.url, workflowFile: WAN, framesFor: "seconds * fps +", outputNode: "99" })).toEqual([
      `option "workflowFile": outputNode "99" is not a node of ${WAN}`,
      'option "framesFor": "seconds * fps +" is not a formula: ends too early',
    ]);
    expect(check({ workflowFile: WAN })).toEqual(['option "baseUrl": is required (or "deployments", a list of ComfyUI servers)']);
    expect(check({ baseUrl: comfy.url, deployments: [{ baseUrl: second.url }], workflowFile: WAN })).toEqual(['option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both']);
    expect(checkOptions(plugin.options!, { baseUrl: "ftp://x", workflowFile: WAN, framesFor: { "5": 0 }, fps: 0 }).problems.map((p) => p.option).sort()).toEqual(["baseUrl", "fps", "framesFor"]);
  });

  test("placeholders: exactly one placeholder becomes the value (a number where numeric), inside a longer string it is replaced in place, and inserted text is not scanned again", () => {
    const { workflow } = readWorkflow(WAN);
    const filled = fillWorkflow(workflow!, { prompt: "a {{seed}} sign", negative_prompt: "blurry", image: "reelay/vid_1.png", seed: 1234, steps: 20, width: 480, height: 832, frames: 81, fps: 16, seconds: 5 });
    expect(filled["10"]!.inputs).toMatchObject({ width: 480, height: 832, length: 81, start_image: ["9", 0] });
    expect(filled["11"]!.inputs.noise_seed).toBe(1234);
    expect(filled["6"]!.inputs.text).toBe("a {{seed}} sign");
    expect(filled["9"]!.inputs.image).toBe("reelay/vid_1.png");
    expect(filled["15"]!.inputs.filename_prefix).toBe("video/reelay_wan22_1234");
    expect(JSON.stringify(readWorkflow(WAN).workflow)).toContain("{{seed}}"); // the template is untouched
  });
});

describe("against the fake ComfyUI", () => {
  for (const [name, workflowFile, fps, frames] of [["Wan 2.2", WAN, 16, 2 * 16 + 1], ["LTX-Video", LTXV, 24, 2 * 24 + 1]] as const) {
    test(`${name} example: upload, /prompt with the client id, progress from the websocket, the job woken at its end, an MP4 of the requested size and frame count`, async () => {
      const { video, woken, instance } = model({ workflowFile, fps });
      const req = request({ seconds: 2, width: 832, height: 480, negativePrompt: "static" });
      const { handle } = await video.submit(req, testCall());
      const [prompt] = [...comfy.prompts.values()];
      expect(handle).toBe(`127.0.0.1:${new URL(comfy.url).port}/${prompt!.id}`);
      expect(comfy.uploads.has(`reelay/${req.jobId}.png`)).toBe(true);
      const loadImage = Object.values(prompt!.workflow).find((n) => n.class_type === "LoadImage")!;
      expect(loadImage.inputs.image).toBe(`reelay/${req.jobId}.png`);
      expect(prompt!.clientId).toMatch(/^[0-9a-f]{32}$/);
      const { last, seen } = await runToEnd(video, handle);
      expect(woken).toEqual([handle]);
      const progress = seen.flatMap((r) => (r.state === "running" && r.progress !== undefined ? [r.progress] : []));
      expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
      expect(progress).toEqual([...progress].sort((a, b) => a - b)); // never goes back
      expect(last.state).toBe("succeeded");
      const probe = await ffprobe((last as { mp4: Uint8Array }).mp4);
      expect(probe.streams[0]).toMatchObject({ codec_name: "h264", width: 832, height: 480, nb_read_frames: String(frames) });
      // while the websocket followed it, polls read memory: /history once, at the end
      expect(comfy.count("history")).toBe(1);
      await instance.close?.();
    });
  }

  test("a framesFor table: seconds it lists map to its frames; others are refused (400 on seconds) before anything is queued", async () => {
    const { video, instance } = model({ framesFor: { "1": 17, "3": 49 } });
    const { handle } = await video.submit(request({ seconds: 3 }), testCall());
    expect([...comfy.prompts.values()][0]!.workflow["10"]!.inputs.length).toBe(49);
    const err = await thrown(video.submit(request({ seconds: 2 }), testCall()));
    expect(err).toMatchObject({ kind: "invalid_request", param: "seconds", message: "this model makes clips of 1, 3 seconds, not 2" });
    expect(comfy.count("prompt")).toBe(1);
    await video.cancel!(handle, testCall());
    await instance.close?.();
  });

  test("a node error from /prompt fails the job at once, naming the node and the server's message", async () => {
    comfy.behave({ nodeError: { node: "1", message: "Value not in list", details: "unet_name: 'wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors' not in []" } });
    const err = await thrown(model().video.submit(request(), testCall()));
    expect(err).toMatchObject({ kind: "failed", code: "comfyui_workflow_rejected", retryable: false });
    expect(err.message).toBe("ComfyUI refused the workflow: node 1 (UNETLoader): Value not in list: unet_name: 'wan2.2_i2v_high_noise_14B_fp8_scaled.safetensors' not in []");
  });

  test("a run that fails on the GPU: failed, naming the node and the exception", async () => {
    comfy.behave({ executionError: "Allocation on device 0 would exceed allowed memory. (out of memory)" });
    const { video } = model();
    const { last } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last).toEqual({ state: "failed", code: "comfyui_execution_error", message: "node 11 (KSamplerAdvanced) failed: Allocation on device 0 would exceed allowed memory. (out of memory)", retryable: false });
  });

  test("without the websocket (refused, or turned off) jobs are followed by polling /history and /queue", async () => {
    comfy.behave({ websocket: false });
    const { video, woken } = model();
    const { last, seen } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last.state).toBe("succeeded");
    expect(seen.some((r) => r.state === "queued" || r.state === "running")).toBe(true);
    expect(woken).toEqual([]);
    expect(comfy.count("queue")).toBeGreaterThan(0);
  });

  test("the websocket dropping mid-job: the job is followed by polling from then on and still completes", async () => {
    comfy.behave({ queueMs: 0, runMs: 600 });
    const { video } = model();
    const { handle } = await video.submit(request(), testCall());
    await Bun.sleep(100);
    comfy.dropSockets();
    const { last } = await runToEnd(video, handle);
    expect(last.state).toBe("succeeded");
    expect(comfy.count("queue")).toBeGreaterThan(0);
  });

  test("cancel: a waiting prompt is deleted from the queue, a running one interrupted; neither ever succeeds", async () => {
    comfy.behave({ queueMs: 60_000 });
    const { video } = model();
    const waiting = (await video.submit(request(), testCall())).handle;
    await video.cancel!(waiting, testCall());
    expect(comfy.calls.filter((c) => c.kind === "delete").map((c) => c.id)).toEqual([waiting.split("/")[1]]);
    expect((await video.poll(waiting, testCall())).state).toBe("lost");

    comfy.behave({ queueMs: 0, runMs: 60_000 });
    const running = (await video.submit(request(), testCall())).handle;
    await Bun.sleep(100);
    await video.cancel!(running, testCall());
    expect(comfy.calls.filter((c) => c.kind === "interrupt").map((c) => c.id)).toEqual([running.split("/")[1]]);
    expect(await runToEnd(video, running).then((r) => r.last)).toEqual({ state: "failed", code: "comfyui_interrupted", message: "the job was interrupted on the ComfyUI server", retryable: false });
  });

  test("a server that forgot the prompt (restarted): lost, so the host submits again", async () => {
    const { video } = model({ websocket: false });
    const { handle } = await video.submit(request(), testCall());
    comfy.behave({ lose: true });
    expect(await video.poll(handle, testCall())).toEqual({ state: "lost" });
  });

  test("an output that is not an MP4 fails the job, saying what to save instead", async () => {
    comfy.behave({ output: "webm" });
    const { video } = model();
    const { last } = await runToEnd(video, (await video.submit(request(), testCall())).handle);
    expect(last).toMatchObject({ state: "failed", code: "output_invalid" });
    expect((last as { message: string }).message).toContain("not an .mp4 (save with SaveVideo, format mp4");
  });
});

describe("several ComfyUI servers", () => {
  test("an unreachable server: a retryable connect error (the host tries again later)", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const url = `http://127.0.0.1:${closed.port}`;
    closed.stop(true);
    const err = await thrown(model({ baseUrl: url, websocket: false }).video.submit(request(), testCall()));
    expect(err).toMatchObject({ kind: "connect", retryable: true });
  });

  test("a server refusing /prompt (503) hands the job to the other; each job is polled on its own server", async () => {
    const { video, instance } = model({ baseUrl: undefined, deployments: [{ name: "box-a", baseUrl: comfy.url }, { name: "box-b", baseUrl: second.url }] });
    comfy.failNext("prompt", 1, 503);
    second.failNext("prompt", 1, 503);
    const handles = await Promise.all([0, 1, 2, 3].map(() => video.submit(request(), testCall()).then((r) => r.handle)));
    expect(handles.filter((h) => h.startsWith("box-a/")).length + handles.filter((h) => h.startsWith("box-b/")).length).toBe(4);
    expect(comfy.prompts.size + second.prompts.size).toBe(4);
    for (const h of handles) expect((await runToEnd(video, h)).last.state).toBe("succeeded");
    for (const h of handles) {
      const [server, id] = h.startsWith("box-a/") ? [comfy, h.slice(6)] : [second, h.slice(6)];
      expect(server.prompts.has(id)).toBe(true);
    }
    expect(instance.upstreams!().map((d) => [d.name, d.inFlight])).toEqual([["box-a", 0], ["box-b", 0]]);
    await instance.close?.();
  });
});

runPluginContract("comfyui", () => plugin, {
  capabilities: ["video"],
  options: () => ({ baseUrl: comfy.url, workflowFile: WAN, pollIntervalMs: 50 }),
  setup: () => comfy.reset(),
  ctx: realHost(),
  video: { timeoutMs: 20_000 },
  failures: {
    httpStatus: (status) => comfy.failNext("upload", 1_000, status),
    jobFails: () => comfy.behave({ executionError: "content refused by the safety checker" }),
    reset: () => comfy.reset(),
  },
});
