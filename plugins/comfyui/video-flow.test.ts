/**
 * comfyui through the whole video flow: HTTP API → hold → scheduler → plugin → fake ComfyUI →
 * result, balance and failures as a client sees them, with the shipped example workflows.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeComfy } from "../../test/fakes/comfyui.ts";
import { client, pngBase64 } from "../../test/videos/support.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";

const PRICE = 30_000;
const EXAMPLES = join(import.meta.dir, "../../examples/comfyui");
const IMAGE = pngBase64(64, 48);
const comfy = await startFakeComfy({ queueMs: 50, runMs: 400 });
const other = await startFakeComfy({ queueMs: 50, runMs: 400 });

let s: TestServer;
beforeAll(async () => {
  const model = (id: string, options: Record<string, unknown>) => ({ id, plugin: "comfyui", options: { baseUrl: comfy.url, workflowFile: join(EXAMPLES, "wan22-i2v.json"), pollIntervalMs: 100, ...options }, pricing: { perSecond: PRICE } });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-comfy-flow-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    model("wan22", {}),
    model("ltxv", { workflowFile: join(EXAMPLES, "ltxv-i2v.json"), fps: 24 }),
    // polled once every 10 minutes: only the websocket's push can finish its jobs within a test
    model("wan22-push", { pollIntervalMs: 600_000 }),
    model("wan22-pair", { baseUrl: undefined, deployments: [{ name: "gpu-a", baseUrl: comfy.url }, { name: "gpu-b", baseUrl: other.url }] }),
  ] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "3000" });
});
afterAll(async () => {
  await s?.close();
  await comfy.stop();
  await other.stop();
});
beforeEach(() => {
  comfy.reset();
  other.reset();
});

async function progressSeen(api: ReturnType<typeof client>, id: string): Promise<{ job: any; progress: number[] }> {
  const progress: number[] = [];
  for (let i = 0; i < 600; i++) {
    const job: any = await (await api.get(id)).json();
    if (typeof job.progress === "number") progress.push(job.progress);
    if (job.status === "completed" || job.status === "failed") return { job, progress };
    await Bun.sleep(25);
  }
  throw new Error(`job ${id} did not finish`);
}

describe("ComfyUI, end to end", () => {
  for (const [model, fps] of [["wan22", 16], ["ltxv", 24]] as const) {
    test(`${model}: progress while it runs, then an MP4 of the requested size and frame count; exactly the seconds charged`, async () => {
      comfy.behave({ queueMs: 50, runMs: 1_500 });
      const c = await s.newClient({ credits: 1_000_000 });
      const api = client(s.url, c.key);
      const res = await api.submit({ model, prompt: "a paper boat on a pond", image: IMAGE, seconds: 2, size: "832x480" });
      expect(res.status).toBe(202);
      const { id } = (await res.json()) as { id: string };
      const { job, progress } = await progressSeen(api, id);
      expect(job.status).toBe("completed");
      expect(progress.some((p) => p > 0 && p < 1)).toBe(true);
      const probe = await ffprobe(Buffer.from(job.data[0].b64_json, "base64"));
      expect(probe.streams[0]).toMatchObject({ width: 832, height: 480, nb_read_frames: String(2 * fps + 1) });
      expect(await api.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
      expect(comfy.count("prompt")).toBe(1);
    }, 60_000);
  }

  test("the websocket's push finishes a job whose poll interval is 10 minutes", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const { id } = (await (await api.submit({ model: "wan22-push", prompt: "a kite", image: IMAGE, seconds: 1 })).json()) as { id: string };
    const done = await api.waitFinal(id, 30_000);
    expect(done.status).toBe("completed");
    expect(comfy.count("history")).toBe(1); // read once, when the push said the prompt ended
  }, 60_000);

  test("a node error: the job fails naming the node, nothing charged, submitted once", async () => {
    comfy.behave({ nodeError: { node: "2", message: "Value not in list", details: "unet_name: 'wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors' not in []" } });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const done = await api.waitFinal(((await (await api.submit({ model: "wan22", prompt: "x", image: IMAGE, seconds: 1 })).json()) as { id: string }).id);
    expect(done).toMatchObject({ status: "failed", error: { code: "comfyui_workflow_rejected", message: "ComfyUI refused the workflow: node 2 (UNETLoader): Value not in list: unet_name: 'wan2.2_i2v_low_noise_14B_fp8_scaled.safetensors' not in []" } });
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
    expect(comfy.count("prompt")).toBe(1);
  }, 60_000);

  test("cancel: the running prompt is interrupted on the server, nothing charged", async () => {
    comfy.behave({ queueMs: 0, runMs: 60_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const { id } = (await (await api.submit({ model: "wan22", prompt: "x", image: IMAGE, seconds: 1 })).json()) as { id: string };
    for (let i = 0; i < 200 && !(await (await api.get(id)).json() as any).progress; i++) await Bun.sleep(50);
    expect((await api.cancel(id)).status).toBe(200);
    const [prompt] = [...comfy.prompts.values()];
    expect(comfy.calls.filter((x) => x.kind === "interrupt").map((x) => x.id)).toEqual([prompt!.id]);
    expect(prompt!.outcome).toBe("interrupted");
    expect(await api.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("two servers: jobs are spread over both, each followed on its own, each charged once", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const api = client(s.url, c.key);
    const ids = await Promise.all([0, 1, 2, 3].map(async (i) => ((await (await api.submit({ model: "wan22-pair", prompt: `p${i}`, image: IMAGE, seconds: 1 })).json()) as { id: string }).id));
    const finals = await Promise.all(ids.map((id) => api.waitFinal(id, 30_000)));
    expect(finals.map((f) => f.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect([comfy.prompts.size, other.prompts.size]).toEqual([2, 2]);
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 4 * PRICE, held: 0 });
  }, 60_000);
});
