/**
 * Every usage row carries the route its client called, a video job's too: the route it was
 * submitted with (the job records it), whichever of the two video APIs that was.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { pngBase64, scriptedEnv } from "./support.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ ...scriptedEnv([{ id: "instant", options: { durationMs: 0 } }]), REELAY_SCHEDULER_POLL_MS: "50" });
});
afterAll(() => s?.close());

test("a job's usage row has the route it was submitted with: /v1/videos/generations or /v1/videos", async () => {
  const { key } = await s.newClient();
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const png = pngBase64(96, 64);
  const generation = await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: h, body: JSON.stringify({ model: "instant", prompt: "p", seconds: 1, image: png }) });
  expect(generation.status).toBe(202);
  const video = await fetch(`${s.url}/v1/videos`, { method: "POST", headers: h, body: JSON.stringify({ model: "instant", prompt: "p", seconds: 1, input_reference: { image_url: `data:image/png;base64,${png}` } }) });
  expect([200, 202]).toContain(video.status);
  const ids = { [((await generation.json()) as any).id]: "/v1/videos/generations", [((await video.json()) as any).id]: "/v1/videos" };
  let rows: any[] = [];
  for (let i = 0; i < 100 && rows.length < 2; i++) {
    await Bun.sleep(100);
    rows = ((await (await fetch(`${s.url}/v1/usage`, { headers: h })).json()) as any).data.filter((r: any) => r.kind === "video");
  }
  expect(Object.fromEntries(rows.map((r) => [r.ref, r.route]))).toEqual(ids);
});
