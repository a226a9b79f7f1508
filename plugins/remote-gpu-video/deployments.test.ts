/**
 * remote-gpu-video over several GPU workers (`deployments`), through the whole video flow: a job is
 * submitted to one healthy worker and polled there; a worker failing at submit hands the job to
 * the next before anything fails; the worker a job went to is visible in GET /admin/upstreams.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONTRACT_PNG } from "@reelay/plugin-sdk/contract";
import { checkOptions, type ModelInstance } from "@reelay/plugin-sdk";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeGpuWorker } from "../../test/fakes/gpu-worker.ts";
import plugin from "./index.ts";

const PRICE = 30_000;
const IMAGE = Buffer.from(CONTRACT_PNG).toString("base64");
const first = await startFakeGpuWorker({ queueMs: 50, runMs: 100 });
const second = await startFakeGpuWorker({ queueMs: 50, runMs: 100 });
const gone = await startFakeGpuWorker();
const goneUrl = gone.url;
await gone.stop(); // connection refused

let s: TestServer;
let key: string;
let accountId: string;

beforeAll(async () => {
  const options = (deployments: unknown[]) => ({ deployments, allowPrivateNetwork: true, pollIntervalMs: 50, inputMapping: { image: "image:dataUrl", seconds: "seconds" } });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-gpu-deps-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    { id: "wan-pair", plugin: "remote-gpu-video", options: options([{ name: "first", baseUrl: first.url }, { name: "second", baseUrl: second.url }]), pricing: { perSecond: PRICE } },
    { id: "wan-typo", plugin: "remote-gpu-video", options: options([{ name: "typo", baseUrl: first.url, weight: 100 }, { name: "second", baseUrl: second.url }]), pricing: { perSecond: PRICE } },
    { id: "wan-refused", plugin: "remote-gpu-video", options: options([{ name: "gone", baseUrl: goneUrl, weight: 100 }, { name: "second", baseUrl: second.url }]), pricing: { perSecond: PRICE } },
  ] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "2000" });
  ({ key, accountId } = await s.newClient({ credits: 10_000_000 }));
});
afterAll(async () => {
  await s?.close();
  await Promise.all([first.stop(), second.stop()]);
});

const headers = () => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
async function runJob(model: string): Promise<any> {
  const res = await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: headers(), body: JSON.stringify({ model, prompt: "a red fox running", image: IMAGE, seconds: 2 }) });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as { id: string };
  for (let i = 0; i < 200; i++) {
    const job = (await (await fetch(`${s.url}/v1/videos/generations/${id}`, { headers: headers() })).json()) as any;
    if (job.status === "completed" || job.status === "failed") return job;
    await Bun.sleep(50);
  }
  throw new Error("job did not finish");
}
const balance = async () => ((await (await s.admin(`/admin/accounts/${accountId}`)).json()) as { balance: number }).balance;

describe("several GPU workers", () => {
  test("the first worker answering 503 at submit: the job goes to the second, is polled there, completes and is charged once", async () => {
    first.reset();
    second.reset();
    first.failNext("run", 1, 503);
    const before = await balance();
    const job = await runJob("wan-pair");
    expect(job.status).toBe("completed");
    expect(job.data[0].b64_json.length).toBeGreaterThan(100);
    expect([first.count("run"), second.count("run")]).toEqual([1, 1]);
    expect(first.calls.filter((c) => c.kind === "status")).toEqual([]); // polled only where it runs
    expect(second.calls.filter((c) => c.kind === "status").length).toBeGreaterThan(0);
    await s.deps.billing.sync();
    expect(before - (await balance())).toBe(2 * PRICE);
  });

  test("a worker with no /run at its URL (404, a typo) at submit: the job runs on the other worker", async () => {
    first.reset();
    second.reset();
    first.failNext("run", 1, 404);
    const before = await balance();
    const job = await runJob("wan-typo");
    expect(job.status).toBe("completed");
    expect([first.count("run"), second.count("run")]).toEqual([1, 1]); // "typo" (weight 100) refused, "second" ran it
    await s.deps.billing.sync();
    expect(before - (await balance())).toBe(2 * PRICE);
  });

  test("an unreachable worker at submit: the job runs on the other; the operator sees the refused one's errors", async () => {
    second.reset();
    const job = await runJob("wan-refused");
    expect(job.status).toBe("completed");
    expect(second.count("run")).toBe(1);
    const res = (await (await s.admin("/admin/upstreams")).json()) as { data: Array<{ model: string; deployments: any[] }> };
    const view = Object.fromEntries(res.data.find((m) => m.model === "wan-refused")!.deployments.map((d) => [d.name, d]));
    expect(view.gone.errors.connect).toBeGreaterThanOrEqual(1);
    expect(view.second).toMatchObject({ state: "closed", in_flight: 0 });
    expect(view.second.successes).toBeGreaterThanOrEqual(1);
  });

  test("jobs are spread over the workers, each polled where it was submitted", async () => {
    first.reset();
    second.reset();
    const jobs = await Promise.all(Array.from({ length: 4 }, () => runJob("wan-pair")));
    expect(jobs.every((j) => j.status === "completed")).toBe(true);
    expect([first.count("run"), second.count("run")]).toEqual([2, 2]);
    const statusIds = (w: typeof first) => new Set(w.calls.filter((c) => c.kind === "status").map((c) => c.id));
    const runIds = (w: typeof first) => new Set(w.jobs.keys());
    for (const w of [first, second]) for (const id of statusIds(w)) expect(runIds(w).has(id!)).toBe(true);
  });
});

describe("maxConcurrent jobs per worker", () => {
  test("a worker takes at most maxConcurrent unfinished jobs; a cancelled job frees its slot; none free → overloaded with Retry-After (retryable: the job waits)", async () => {
    first.reset();
    second.reset();
    first.behave({ queueMs: 0, runMs: 100_000 });
    second.behave({ queueMs: 0, runMs: 100_000 });
    const { options } = checkOptions(plugin.options!, { deployments: [{ name: "first", baseUrl: first.url, maxConcurrent: 1 }, { name: "second", baseUrl: second.url, maxConcurrent: 2 }], allowPrivateNetwork: true });
    const instance = plugin.create(testPluginContext(options, { plugin }) as never) as ModelInstance;
    const req = { jobId: "vid_x", prompt: "a cat", image: { bytes: CONTRACT_PNG, mime: "image/png" as const }, width: 480, height: 832, seconds: 1, seed: 1 };
    const handles = [];
    for (let i = 0; i < 3; i++) handles.push((await instance.video!.submit(req, testCall())).handle);
    expect(handles.map((h) => h.split("/")[0]).sort()).toEqual(["first", "second", "second"]);
    const full = await instance.video!.submit(req, testCall()).catch((e) => e);
    expect([full.kind, full.retryAfterSeconds]).toEqual(["overloaded", 1]);
    expect(first.count("run") + second.count("run")).toBe(3);
    // the job on "first" is cancelled: its slot is free again
    await instance.video!.cancel!(handles.find((h) => h.startsWith("first/"))!, testCall());
    expect((await instance.video!.submit(req, testCall())).handle.startsWith("first/")).toBe(true);
    expect(instance.upstreams!().map((d) => [d.name, d.inFlight])).toEqual([["first", 1], ["second", 2]]);
    await instance.close?.();
    first.behave({});
    second.behave({});
  });
});

describe("options", () => {
  test("a deployment's unset key stops the boot with a message naming the deployment and the variable", () => {
    const { options } = checkOptions(plugin.options!, { deployments: [{ name: "east", baseUrl: first.url }, { name: "west", baseUrl: second.url, apiKeyEnv: "NOT_SET_ANYWHERE_19" }] });
    expect(() => plugin.create(testPluginContext(options, { plugin }) as never) as ModelInstance).toThrow('deployment "west": apiKeyEnv names the environment variable NOT_SET_ANYWHERE_19, which is not set');
  });

  test("baseUrl or deployments, not both; deployment names unique", () => {
    const check = (o: Record<string, unknown>) => plugin.validateOptions!(checkOptions(plugin.options!, o).options as never);
    expect(check({})).toContain('option "baseUrl": is required (or "deployments", a list of workers)');
    expect(check({ baseUrl: first.url, deployments: [{ baseUrl: second.url }] })).toContain('option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both');
    expect(check({ deployments: [{ name: "x", baseUrl: first.url }, { name: "x", baseUrl: second.url }] })).toEqual(['option "deployments.1.name": "x" names two deployments (give each a unique name)']);
  });
});
