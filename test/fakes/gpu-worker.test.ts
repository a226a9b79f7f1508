/** The fake worker itself speaks the protocol of docs/remote-gpu-protocol.md, over plain HTTP. */
import { afterAll, beforeEach, expect, test } from "bun:test";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import { CONTRACT_PNG } from "@reelay/plugin-sdk/contract";
import { startFakeGpuWorker } from "./gpu-worker.ts";

// the phases follow this test's clock: moved by hand in the first test, real time elsewhere
let manual: number | null = null;
const worker = await startFakeGpuWorker({ queueMs: 100, runMs: 200, apiKey: "k1" }, { clock: () => manual ?? Date.now() });
afterAll(() => worker.stop());
beforeEach(() => worker.reset());

const auth = { authorization: "Bearer k1", "content-type": "application/json" };
const input = { prompt: "p", image: Buffer.from(CONTRACT_PNG).toString("base64"), width: 480, height: 832, seconds: 1 };
const run = async () => (await (await fetch(`${worker.url}/run`, { method: "POST", headers: auth, body: JSON.stringify({ input }) })).json()) as { id: string; status: string };
const status = async (id: string) => (await fetch(`${worker.url}/status/${id}`, { headers: auth })).json() as Promise<any>;

test("IN_QUEUE → IN_PROGRESS (progress) → COMPLETED with a real H.264 MP4 of the requested size", async () => {
  manual = 1_000_000;
  try {
    const job = await run();
    expect(job.status).toBe("IN_QUEUE");
    expect((await status(job.id)).status).toBe("IN_QUEUE");
    manual += 180;
    const mid = await status(job.id);
    expect(mid.status).toBe("IN_PROGRESS");
    expect(mid.progress).toBe(0.4);
    manual += 200;
    var done = await status(job.id);
  } finally {
    manual = null;
  }
  expect(done.status).toBe("COMPLETED");
  const probe = await ffprobe(new Uint8Array(Buffer.from(done.output.video, "base64")));
  expect(probe.streams[0]).toMatchObject({ codec_name: "h264", width: 480, height: 832 });
  expect(worker.calls.map((c) => c.kind)).toEqual(["run", "status", "status", "status"]);
});

test("auth, 404 for unknown jobs, injected bursts, lost jobs, URL outputs, cancel", async () => {
  expect((await fetch(`${worker.url}/run`, { method: "POST", body: JSON.stringify({ input }) })).status).toBe(401);
  expect((await fetch(`${worker.url}/status/nope`, { headers: auth })).status).toBe(404);
  worker.failNext("run", 2, 503);
  expect((await fetch(`${worker.url}/run`, { method: "POST", headers: auth, body: JSON.stringify({ input }) })).status).toBe(503);
  expect((await fetch(`${worker.url}/run`, { method: "POST", headers: auth, body: JSON.stringify({ input }) })).status).toBe(503);
  worker.behave({ lose: true });
  const lost = await run();
  expect((await fetch(`${worker.url}/status/${lost.id}`, { headers: auth })).status).toBe(404);
  worker.behave({ lose: false, output: "url", queueMs: 0, runMs: 0 });
  const j = await run();
  const done = await status(j.id);
  const mp4 = new Uint8Array(await (await fetch(done.output.video)).arrayBuffer());
  expect(new TextDecoder().decode(mp4.subarray(4, 8))).toBe("ftyp");
  worker.behave({ queueMs: 10_000 });
  const c = await run();
  expect(((await (await fetch(`${worker.url}/cancel/${c.id}`, { method: "POST", headers: auth })).json()) as any).status).toBe("CANCELLED");
  expect((await status(c.id)).status).toBe("CANCELLED");
});
