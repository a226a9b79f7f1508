/** SDK 1.2: Standard Webhooks verification (against the reference implementation's signatures) and VideoJobRouter. */
import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { PluginError } from "../src/errors.ts";
import { verifyStandardWebhook } from "../src/standard-webhooks.ts";
import { VideoJobRouter } from "../src/video-jobs.ts";
import { aspectRatio, buildInput, problemsWithMapping, resolution } from "../src/input-mapping.ts";

const SECRET = "whsec_" + Buffer.from("a-replicate-signing-secret-32byt").toString("base64");

function signed(body: string, over: { secret?: string; at?: Date; id?: string } = {}) {
  const at = over.at ?? new Date();
  const id = over.id ?? "msg_2x9";
  return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(over.secret ?? SECRET).sign(id, at, body) };
}

describe("verifyStandardWebhook", () => {
  const body = JSON.stringify({ id: "p1", status: "succeeded", output: "https://x/y.mp4" });

  test("a delivery signed by the reference implementation verifies, as bytes or text; one of several signatures may match", () => {
    const headers = signed(body);
    expect(verifyStandardWebhook(SECRET, headers, new TextEncoder().encode(body))).toMatchObject({ ok: true, id: "msg_2x9" });
    expect(verifyStandardWebhook(SECRET, { ...headers, "webhook-signature": `v1,AAAA ${headers["webhook-signature"]}` }, body).ok).toBe(true);
  });

  test("a changed body, another secret, an old timestamp, missing headers or another scheme are refused with a reason", () => {
    const reasons = [
      verifyStandardWebhook(SECRET, signed(body), body.replace("succeeded", "failed")),
      verifyStandardWebhook(SECRET, signed(body, { secret: "whsec_" + Buffer.from("another-secret-another-secret-32").toString("base64") }), body),
      verifyStandardWebhook(SECRET, signed(body, { at: new Date(Date.now() - 10 * 60_000) }), body),
      verifyStandardWebhook(SECRET, { "webhook-id": "x" }, body),
      verifyStandardWebhook(SECRET, { ...signed(body), "webhook-signature": signed(body)["webhook-signature"].replace("v1,", "v1a,") }, body),
    ].map((r) => (r.ok ? "ok" : r.reason));
    expect(reasons).toEqual([
      "no v1 signature matches",
      "no v1 signature matches",
      "webhook-timestamp is more than 300 s away from now",
      "missing webhook-id, webhook-timestamp or webhook-signature",
      "no v1 signature matches",
    ]);
  });
});

describe("VideoJobRouter", () => {
  const call = () => ({ signal: new AbortController().signal });
  const make = (names: string[], maxConcurrent?: number) => new VideoJobRouter(names.map((name) => ({ name, weight: 1, maxConcurrent, target: name })));

  test("a submit refused by one deployment goes to the next; the handle names the deployment that took it", async () => {
    const jobs = make(["a", "b"]);
    const tried: string[] = [];
    const handle = await jobs.submit(call(), async (d) => {
      tried.push(d.name);
      if (tried.length === 1) throw new PluginError("upstream_http", "busy", { status: 503 });
      return "job/42";
    });
    expect(handle).toBe(`${tried[1]}/job/42`);
    expect(jobs.locate(handle)).toMatchObject({ deployment: { name: tried[1] }, id: "job/42" });
  });

  test("a job holds its deployment's slot until finished; a handle naming no deployment goes whole to the first", async () => {
    const jobs = make(["a", "b"], 1);
    const h1 = await jobs.submit(call(), async () => "1");
    const h2 = await jobs.submit(call(), async () => "2");
    const full = await jobs.submit(call(), async () => "3").catch((e) => e);
    expect(full).toMatchObject({ kind: "overloaded" });
    jobs.finished(h1);
    jobs.finished(h1); // twice is harmless
    expect((await jobs.submit(call(), async () => "4")).split("/")[0]).toBe(h1.split("/")[0]);
    expect(jobs.locate("unknown-123")).toMatchObject({ deployment: { name: "a" }, id: "unknown-123" });
    expect(jobs.locate("gone/123")).toMatchObject({ deployment: { name: "a" }, id: "gone/123" });
    jobs.finished(h2);
    jobs.close();
    expect(jobs.status().map((d) => d.inFlight)).toEqual([0, 0]);
  });

  test("with one deployment, any prefix is that deployment's (its default name, a host, may change)", () => {
    expect(make(["gpu:8188"]).locate("old-host:8188/p-1")).toMatchObject({ deployment: { name: "gpu:8188" }, id: "p-1" });
  });

  test("failures of calls about a job teach that deployment's breaker", async () => {
    const jobs = new VideoJobRouter([{ name: "a", weight: 1, target: 0 }], { breaker: { consecutiveFailures: 2, errorRate: 0.5, minRequests: 100, windowMs: 1000, cooldownMs: 60_000 } });
    const { deployment } = jobs.locate("a/1");
    for (let i = 0; i < 2; i++) await jobs.on(deployment, call().signal, async () => { throw new PluginError("connect", "refused"); }).catch(() => {});
    expect(jobs.status()[0]).toMatchObject({ state: "open", errors: { connect: 2 } });
  });
});

describe("buildInput: the shared input mapping", () => {
  const req = { jobId: "vid_1", prompt: "a fox", image: { bytes: new Uint8Array([1, 2, 3]), mime: "image/png" as const }, width: 480, height: 832, seconds: 5, seed: 9 };

  test("a plugin's own defaults, and the transforms hosted APIs need: seconds as a string, size as an aspect ratio or a resolution class", () => {
    const falDefaults = { prompt: "prompt", negative_prompt: "negative_prompt", image: "image_url:dataUrl", seconds: "duration:string", size: "aspect_ratio:aspectRatio", seed: "seed", steps: null, job_id: null };
    expect(buildInput(req, {}, {}, falDefaults)).toEqual({ prompt: "a fox", image_url: "data:image/png;base64,AQID", duration: "5", aspect_ratio: "9:16", seed: 9 });
    expect(buildInput({ ...req, width: 832, height: 480 }, { size: "resolution:resolution", seconds: "num_frames:*16+1" }, { fps: 16 }, falDefaults)).toMatchObject({ resolution: "480p", num_frames: 81, fps: 16 });
    expect(["624x624", "1280x720", "1024x1792", "1920x1080"].map((s) => s.split("x").map(Number)).map(([w, h]) => [aspectRatio(w!, h!), resolution(w!, h!)])).toEqual([["1:1", "720p"], ["16:9", "720p"], ["9:16", "1080p"], ["16:9", "1080p"]]);
  });

  test("problems name the source: unknown fields, bad targets, transforms on the wrong source", () => {
    expect(problemsWithMapping({ picture: "x", seconds: "d:string", size: "w,h:aspectRatio", image: "img:hex" })).toEqual([
      'picture" is not a request field (known: prompt, negative_prompt, image, seconds, size, seed, steps, job_id)',
      'size" has an unknown transform ":aspectRatio" (image: base64 | dataUrl; seconds: *N, *N+M or string; size with one target: aspectRatio | resolution)',
      'image" has an unknown transform ":hex" (image: base64 | dataUrl; seconds: *N, *N+M or string; size with one target: aspectRatio | resolution)',
    ]);
  });
});
