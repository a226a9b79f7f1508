/** SDK 1.2: Standard Webhooks verification (against the reference implementation's signatures) and VideoJobRouter. */
import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { PluginError } from "../src/errors.ts";
import { verifyStandardWebhook } from "../src/standard-webhooks.ts";
import { VideoJobRouter } from "../src/video-jobs.ts";

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
