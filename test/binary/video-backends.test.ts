/**
 * The four video backend plugins from the compiled dist/reelay, alone in an empty directory on
 * embedded PGlite: a models file naming comfyui (with the shipped Wan 2.2 workflow beside it),
 * replicate (webhooks to REELAY_PUBLIC_URL), fal and openai-videos, each pointed at its fake; one
 * job per backend completes with a real MP4 and is charged.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";
import { client, pngBase64 } from "../videos/support.ts";
import { decodeImage } from "../../src/media/index.ts";
import { startFakeComfy } from "../fakes/comfyui.ts";
import { startFakeReplicate } from "../fakes/replicate.ts";
import { startFakeFal } from "../fakes/fal.ts";
import { startFakeOpenAIVideos } from "../fakes/openai-videos.ts";

const ADMIN = "binary-backends-admin-token-0123";
const KEYS = { REPLICATE_API_TOKEN: "r8_binary_token_0123456789", FAL_KEY: "fal-binary-key:0123456789", OPENAI_API_KEY: "sk-binary-0123456789" };
const comfy = await startFakeComfy({ queueMs: 20, runMs: 200 });
const replicate = await startFakeReplicate({ apiKey: KEYS.REPLICATE_API_TOKEN, startMs: 20, runMs: 200 });
const fal = await startFakeFal({ apiKey: KEYS.FAL_KEY, queueMs: 20, runMs: 200 });
const openai = await startFakeOpenAIVideos({ apiKey: KEYS.OPENAI_API_KEY, queueMs: 20, runMs: 200 });
let dir: string;
let bin: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-backends-"));
  bin = join(dir, "reelay");
  copyFileSync(compiledBinary(), bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  mkdirSync(join(dir, "workflows"));
  copyFileSync(join(import.meta.dir, "../../examples/comfyui/wan22-i2v.json"), join(dir, "workflows/wan22-i2v.json"));
}, 300_000);
afterAll(async () => {
  await Promise.all([comfy.stop(), replicate.stop(), fal.stop(), openai.stop()]);
  rmSync(dir, { recursive: true, force: true }); // a 220 MB copy of the binary
});

test("from the binary on PGlite: a job on each of ComfyUI, Replicate (webhook), fal and an OpenAI-style upstream completes", async () => {
  const port = freePort();
  const common = { allowPrivateNetwork: true, pricing: { perSecond: 10_000 } };
  writeFileSync(join(dir, "models.yaml"), JSON.stringify({ builtins: false, models: [
    { id: "wan22", plugin: "comfyui", ...common, options: { baseUrl: comfy.url, workflowFile: "workflows/wan22-i2v.json" } },
    { id: "kling-replicate", plugin: "replicate", ...common, options: { model: "kwaivgi/kling-v2.1", baseUrl: replicate.url, apiKeyEnv: "REPLICATE_API_TOKEN", webhookPollIntervalMs: 600_000, inputMapping: { size: "width,height" } } },
    { id: "kling-fal", plugin: "fal", ...common, options: { app: "fal-ai/kling-video/v2.1/standard/image-to-video", baseUrl: fal.url, apiKeyEnv: "FAL_KEY", pollIntervalMs: 200, inputMapping: { size: "width,height" } } },
    { id: "sora", plugin: "openai-videos", ...common, options: { baseUrl: openai.url, apiKeyEnv: "OPENAI_API_KEY", upstreamModel: "sora-2", pollIntervalMs: 200, sizes: ["480x832"], seconds: [1] } },
  ] }));
  const env = {
    PATH: "/usr/bin:/bin", HOME: dir, PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json", REELAY_MODELS_FILE: "models.yaml",
    REELAY_PUBLIC_URL: `http://127.0.0.1:${port}`, REELAY_SCHEDULER_POLL_MS: "50", ...KEYS,
  };
  const logFile = join(dir, "serve.log");
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env, stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, log, 60_000);
    const admin = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const account = await admin("/admin/accounts", { name: "bin-backends", credits: 1_000_000 });
    const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "k" });
    const api = client(url, key);
    const ids = await Promise.all(["wan22", "kling-replicate", "kling-fal", "sora"].map(async (model) => {
      const res = await api.submit({ model, prompt: "a lantern on a pier", image: pngBase64(), seconds: 1 });
      expect(res.status).toBe(202);
      return ((await res.json()) as { id: string }).id;
    }));
    const finals = await Promise.all(ids.map((id) => api.waitFinal(id, 40_000)));
    expect(finals.map((f) => f.status)).toEqual(["completed", "completed", "completed", "completed"]);
    for (const f of finals) expect(Buffer.from(f.data[0].b64_json, "base64").subarray(4, 8).toString()).toBe("ftyp");
    // a backend's thumbnail is made on a worker thread (an extra entrypoint of the binary) when first asked for
    const thumb = await fetch(`${url}/v1/videos/${ids[0]}/content?variant=thumbnail`, { headers: { authorization: `Bearer ${key}` } });
    expect([thumb.status, thumb.headers.get("content-type")]).toEqual([200, "image/jpeg"]);
    const jpeg = await decodeImage(new Uint8Array(await thumb.arrayBuffer()));
    expect([jpeg.width, jpeg.height]).toEqual([480, 832]); // the default size
    expect([...replicate.predictions.values()][0]!.webhookDeliveries).toEqual([{ event: "completed", status: 200 }]);
    expect(await api.account()).toMatchObject({ balance: 1_000_000 - 4 * 10_000, held: 0 });
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 120_000);
