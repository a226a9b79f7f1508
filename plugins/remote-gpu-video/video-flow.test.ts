/**
 * remote-gpu-video through the whole video flow: HTTP API → hold → scheduler → plugin → fake GPU
 * worker → result, balance and failures as a client sees them.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, dropDatabase, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { startFakeGpuWorker } from "../../test/fakes/gpu-worker.ts";
import { CONTRACT_PNG } from "@reelay/plugin-sdk/contract";

const PRICE = 30_000;
const KEY_ENV = "REELAY_TEST_GPU_KEY";
process.env[KEY_ENV] = "rp-flow-secret-key";
const worker = await startFakeGpuWorker({ queueMs: 100, runMs: 300, apiKey: process.env[KEY_ENV] });
const IMAGE = Buffer.from(CONTRACT_PNG).toString("base64");
// a plain web server where an operator might point baseUrl by mistake: POST is 405, in HTML
const staticSite = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => req.method === "GET" ? new Response("<h1>hello</h1>", { headers: { "content-type": "text/html" } }) : new Response("<html><body><h1>405 Not Allowed</h1></body></html>", { status: 405, headers: { "content-type": "text/html" } }) });

function modelsFile(): string {
  const options = (extra: Record<string, unknown> = {}) => ({
    baseUrl: worker.url, apiKeyEnv: KEY_ENV, allowPrivateNetwork: true, pollIntervalMs: 100,
    inputMapping: { image: "image:dataUrl", seconds: "seconds" }, staticInput: { model_variant: "wan2.1-i2v-480p" }, ...extra,
  });
  const file = join(mkdtempSync(join(tmpdir(), "reelay-gpu-")), "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models: [
    { id: "wan-i2v", plugin: "remote-gpu-video", options: options(), pricing: { perSecond: PRICE } },
    { id: "wan-i2v-url", plugin: "remote-gpu-video", options: options({ outputPath: "output.video" }), pricing: { perSecond: PRICE } },
    // v1 for v2: the typo the issue saw
    { id: "wan-typo", plugin: "remote-gpu-video", options: options({ baseUrl: `${worker.origin}/v1/fake-endpoint` }), pricing: { perSecond: PRICE } },
    { id: "wan-static", plugin: "remote-gpu-video", options: options({ baseUrl: `http://127.0.0.1:${staticSite.port}/api` }), pricing: { perSecond: PRICE } },
  ] }));
  return file;
}

const env = () => ({ REELAY_MODELS_FILE: modelsFile(), REELAY_SCHEDULER_POLL_MS: "50", REELAY_SCHEDULER_LEASE_MS: "2000" });
let databaseUrl: string;
let s: TestServer;
beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  s = await startTestServer({ ...env(), DATABASE_URL: databaseUrl });
});
afterAll(async () => {
  await s?.close(); // drops only the harness's own (unused) database
  await dropDatabase(databaseUrl);
  await worker.stop();
  staticSite.stop(true);
});
beforeEach(() => worker.reset());

function api(url: string, key: string) {
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  return {
    submit: async (body: Record<string, unknown>) => {
      const res = await fetch(`${url}/v1/videos/generations`, { method: "POST", headers: h, body: JSON.stringify({ prompt: "a red fox running", image: IMAGE, seconds: 2, ...body }) });
      expect(res.status).toBe(202);
      return (await res.json()) as { id: string };
    },
    get: async (id: string) => (await (await fetch(`${url}/v1/videos/generations/${id}`, { headers: h })).json()) as any,
    cancel: (id: string) => fetch(`${url}/v1/videos/generations/${id}/cancel`, { method: "POST", headers: h }),
    account: async () => (await (await fetch(`${url}/v1/account`, { headers: h })).json()) as { balance: number; held: number },
    async waitFinal(id: string, timeoutMs = 40_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const job = await this.get(id);
        if (job.status === "completed" || job.status === "failed") return job;
        if (Date.now() > end) throw new Error(`job ${id} still ${job.status}`);
        await Bun.sleep(100);
      }
    },
  };
}

const isMp4 = (b64: string) => new TextDecoder().decode(Buffer.from(b64, "base64").subarray(4, 8)) === "ftyp";

describe("remote GPU video, end to end", () => {
  test("success with a base64 output: MP4 returned, exactly the seconds charged, input mapped", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const { id } = await a.submit({ model: "wan-i2v", negative_prompt: "blurry", steps: 20 });
    expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 2 * PRICE });
    const done = await a.waitFinal(id);
    expect(done.status).toBe("completed");
    expect(isMp4(done.data[0].b64_json)).toBe(true);
    expect(await a.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
    const run = worker.calls.filter((x) => x.kind === "run");
    expect(run).toHaveLength(1);
    expect(run[0]!.auth).toBe(`Bearer ${process.env[KEY_ENV]}`);
    expect(run[0]!.input).toMatchObject({ prompt: "a red fox running", negative_prompt: "blurry", steps: 20, seconds: 2, width: 480, height: 832, model_variant: "wan2.1-i2v-480p", image: `data:image/png;base64,${IMAGE}` });
  }, 60_000);

  test("success with a URL output on the worker's private address (allowPrivateNetwork)", async () => {
    worker.behave({ output: "url" });
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const { id } = await a.submit({ model: "wan-i2v-url" });
    const done = await a.waitFinal(id);
    expect(done.status).toBe("completed");
    expect(isMp4(done.data[0].b64_json)).toBe(true);
    expect(worker.count("output")).toBe(1);
  }, 60_000);

  test("worker FAILED → job failed with the worker's message, hold released, nothing charged", async () => {
    worker.behave({ outcome: "failed", errorMessage: "CUDA error: out of memory" });
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const { id } = await a.submit({ model: "wan-i2v" });
    const done = await a.waitFinal(id);
    expect(done.status).toBe("failed");
    expect(done.error.message).toContain("CUDA error: out of memory");
    expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 0 });
    expect(worker.count("run")).toBe(1);
  }, 60_000);

  test("worker TIMED_OUT → job failed, nothing charged", async () => {
    worker.behave({ outcome: "timed_out" });
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const done = await a.waitFinal((await a.submit({ model: "wan-i2v" })).id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("worker_timeout");
    expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("5xx / 429 bursts on /run and /status are retried, then the job succeeds with one worker job", async () => {
    worker.failNext("run", 2, 503);
    worker.failNext("status", 2, 429);
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const done = await a.waitFinal((await a.submit({ model: "wan-i2v" })).id);
    expect(done.status).toBe("completed");
    expect(worker.count("run")).toBe(3); // two refused, one accepted
    expect(worker.jobs.size).toBe(1);
    expect(await a.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
  }, 60_000);

  test("a baseUrl with no worker behind it (404, or 405 from a web server) fails the job at once with a clear message; hold released", async () => {
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    for (const [model, status] of [["wan-typo", 404], ["wan-static", 405]] as const) {
      const done = await a.waitFinal((await a.submit({ model })).id);
      expect({ status: done.status, error: done.error }).toEqual({
        status: "failed",
        error: { code: "worker_endpoint_not_found", message: `the GPU worker answered ${status} to POST /run: no worker endpoint at the model's baseUrl (the operator must check baseUrl)` },
      });
      expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 0 });
    }
    expect(worker.calls.map((x) => x.request ?? x.kind)).toEqual(["POST /v1/fake-endpoint/run"]); // submitted once, not retried
  }, 60_000);

  test("a worker refusing every /run (503): the job fails after 5 submits in a row, as documented; nothing charged", async () => {
    worker.failNext("run", 100, 503);
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const done = await a.waitFinal((await a.submit({ model: "wan-i2v" })).id);
    expect(done.status).toBe("failed");
    expect(done.error.code).toBe("upstream_error");
    expect(done.error.message).toStartWith("the provider kept failing (5 times); last error: submit: GPU worker answered POST /run with HTTP 503");
    expect(worker.count("run")).toBe(5);
    expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("cancel → the worker receives /cancel for its job, the client is not charged", async () => {
    worker.behave({ queueMs: 30_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const { id } = await a.submit({ model: "wan-i2v" });
    const end = Date.now() + 20_000;
    while (worker.jobs.size === 0 && Date.now() < end) await Bun.sleep(50);
    expect(worker.jobs.size).toBe(1);
    await Bun.sleep(300); // the handle is saved right after /run answers
    expect((await a.cancel(id)).status).toBe(200);
    const workerJob = [...worker.jobs.values()][0]!;
    const until = Date.now() + 10_000;
    while (!worker.calls.some((x) => x.kind === "cancel") && Date.now() < until) await Bun.sleep(50);
    expect(worker.calls.filter((x) => x.kind === "cancel").map((x) => x.id)).toEqual([workerJob.id]);
    expect((await a.get(id)).status).toBe("failed");
    expect(await a.account()).toMatchObject({ balance: 1_000_000, held: 0 });
  }, 60_000);

  test("a job whose lease lapsed while its /run was in flight (a renewal that came late) is not submitted twice by the instance running it", async () => {
    worker.behave({ runAnswerMs: 1_500, queueMs: 100, runMs: 300 });
    const c = await s.newClient({ credits: 1_000_000 });
    const a = api(s.url, c.key);
    const { id } = await a.submit({ model: "wan-i2v" });
    const end = Date.now() + 20_000;
    while (worker.count("run") === 0 && Date.now() < end) await Bun.sleep(20);
    expect(worker.count("run")).toBe(1);
    // the lease runs out while /run is still being answered, as when the renewal is late
    const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await db`UPDATE video_jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ${id}`;
    } finally {
      await db.end();
    }
    const done = await a.waitFinal(id);
    expect(done.status).toBe("completed");
    expect({ runs: worker.count("run"), workerJobs: worker.jobs.size }).toEqual({ runs: 1, workerJobs: 1 });
  }, 60_000);

  test("reelay restarted mid-job resumes polling the same worker job (exactly one /run)", async () => {
    worker.behave({ queueMs: 500, runMs: 3_000 });
    const c = await s.newClient({ credits: 1_000_000 });
    const { id } = await api(s.url, c.key).submit({ model: "wan-i2v" });
    const end = Date.now() + 20_000;
    while (!worker.calls.some((x) => x.kind === "status") && Date.now() < end) await Bun.sleep(50);
    await s.close(); // our database stays stays: the next instance finds the job with its saved handle
    const pollsBefore = worker.count("status");
    s = await startTestServer({ ...env(), DATABASE_URL: databaseUrl });
    const a = api(s.url, c.key);
    const done = await a.waitFinal(id);
    expect(done.status).toBe("completed");
    expect(worker.count("run")).toBe(1);
    expect(worker.count("status")).toBeGreaterThan(pollsBefore);
    expect(await a.account()).toMatchObject({ balance: 1_000_000 - 2 * PRICE, held: 0 });
  }, 60_000);
});
