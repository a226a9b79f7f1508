/**
 * docs/video-backends.md's models-file examples, as an operator would paste them: together they
 * boot a server (options valid, workflow files found, keys named), every model is listed with the
 * video capability and its deployments, and — with each backend's URL pointed at its fake — one job
 * per model completes and is charged.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { freePort, startTestServer, testConfig, type TestServer } from "../support/harness.ts";
import { createLogger } from "../../src/logger.ts";
import { buildModels } from "../../src/registry/build-models.ts";
import { upstreamReport } from "../../src/registry/upstream-report.ts";
import { startFakeComfy } from "../fakes/comfyui.ts";
import { startFakeReplicate } from "../fakes/replicate.ts";
import { startFakeFal } from "../fakes/fal.ts";
import { startFakeOpenAIVideos } from "../fakes/openai-videos.ts";
import { client, pngBase64 } from "../videos/support.ts";

const ROOT = join(import.meta.dir, "../..");
type Model = { id: string; plugin: string; options: Record<string, any>; pricing: { perSecond: number }; allowPrivateNetwork?: boolean; seconds?: number[] };
const doc = readFileSync(join(ROOT, "docs/video-backends.md"), "utf8");
const models = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) => (parse(m[1]!) as { models: Model[] }).models);

const comfy = await startFakeComfy({ queueMs: 20, runMs: 100 });
const replicate = await startFakeReplicate({ startMs: 20, runMs: 100 });
const fal = await startFakeFal({ queueMs: 20, runMs: 100 });
const openai = await startFakeOpenAIVideos({ queueMs: 20, runMs: 100 });
const fakeOf: Record<string, string> = { comfyui: comfy.url, replicate: replicate.url, fal: fal.url, "openai-videos": openai.url };

let s: TestServer;
beforeAll(async () => {
  // every key the examples name, set as an operator would
  for (const m of models) for (const name of JSON.stringify(m.options).match(/"(?:apiKeyEnv|webhookSecretEnv)":"(\w+)"/g) ?? []) {
    const env = name.split(":")[1]!.replaceAll('"', "");
    process.env[env] ??= env.includes("SECRET") ? replicate.secret : `doc-test-${env.toLowerCase()}-0123456789`;
  }
  // the same entries with each backend's URL pointed at its fake (loopback: results allowed from private addresses)
  const local = models.map((m) => {
    const o = structuredClone(m.options);
    if (o.deployments) for (const d of o.deployments) d.baseUrl = fakeOf[m.plugin];
    else o.baseUrl = fakeOf[m.plugin];
    return { ...m, id: m.id, options: o, allowPrivateNetwork: true };
  });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-doc-backends-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: local }));
  const port = freePort();
  s = await startTestServer({ PORT: String(port), REELAY_PUBLIC_URL: `http://127.0.0.1:${port}`, REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50" });
});
afterAll(async () => {
  await s?.close();
  await Promise.all([comfy.stop(), replicate.stop(), fal.stop(), openai.stop()]);
});

test("the examples cover every backend, several deployments included", () => {
  expect([...new Set(models.map((m) => m.plugin))].sort()).toEqual(["comfyui", "fal", "openai-videos", "replicate"]);
  for (const plugin of ["comfyui", "replicate", "fal", "openai-videos"]) expect(models.some((m) => m.plugin === plugin && m.options.deployments?.length > 1)).toBe(true);
});

test("as written (the real backends' URLs), they boot: options, workflow files and keys valid; the deployments as listed", async () => {
  const file = join(mkdtempSync(join(tmpdir(), "reelay-doc-backends-")), "as-written.yaml");
  writeFileSync(file, doc.match(/```yaml\n[\s\S]*?```/g)!.map((b) => b.slice(8, -3).replace(/^models:\n/, "")).join("").replace(/^/, "models:\n"));
  const config = testConfig({ REELAY_MODELS_FILE: file, REELAY_PUBLIC_URL: "https://reelay.example.com" });
  const registry = await buildModels(config, createLogger(config));
  try {
    const report = Object.fromEntries(upstreamReport(registry).map((m) => [m.model, m.deployments.map((d) => d.name)]));
    expect(report).toEqual({
      "wan22-i2v": ["10.0.0.7:8188"], "ltxv-i2v": ["gpu-a", "gpu-b"],
      "kling-v2.1": ["api.replicate.com"], "wan-2.2-i2v": ["acct-main", "acct-spare"],
      "kling-2.1-fal": ["queue.fal.run"], "seedance-fal": ["fal-a", "fal-b"],
      "sora-2": ["api.openai.com"], "sora-2-resold": ["openai", "gateway"],
    });
  } finally {
    await registry.close();
  }
});

test("pointed at the fakes: every model served with the video capability, its deployments in /admin/upstreams", async () => {
  const listed = (await (await s.admin("/admin/upstreams")).json()) as { data: Array<{ model: string; deployments: Array<{ name: string }> }> };
  for (const m of models) {
    const report = listed.data.find((x) => x.model === m.id);
    expect(report?.deployments.map((d) => d.name)).toEqual(m.options.deployments ? m.options.deployments.map((d: { name: string }) => d.name) : [expect.any(String)]);
  }
  const c = await s.newClient({ credits: 100_000_000 });
  const served = ((await (await fetch(`${s.url}/v1/models`, { headers: { authorization: `Bearer ${c.key}` } })).json()) as { data: Array<{ id: string; capabilities: string[] }> }).data;
  for (const m of models) expect(served.find((x) => x.id === m.id)?.capabilities).toEqual(["video"]);
});

test("each example runs a job against its backend's fake and is charged price × seconds", async () => {
  const c = await s.newClient({ credits: 100_000_000 });
  const api = client(s.url, c.key);
  const jobs = await Promise.all(models.map(async (m) => {
    const seconds = m.seconds?.[0] ?? (m.plugin === "openai-videos" ? 4 : 1);
    const res = await api.submit({ model: m.id, prompt: "a lighthouse at dusk", image: pngBase64(), seconds });
    expect(res.status).toBe(202);
    return { m, seconds, id: ((await res.json()) as { id: string }).id };
  }));
  for (const { m, id } of jobs) expect([m.id, (await api.waitFinal(id, 30_000)).status]).toEqual([m.id, "completed"]);
  const spent = jobs.reduce((n, j) => n + j.m.pricing.perSecond * j.seconds, 0);
  expect(await api.account()).toMatchObject({ balance: 100_000_000 - spent, held: 0 });
}, 60_000);
