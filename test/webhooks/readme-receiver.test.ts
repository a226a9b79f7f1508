/**
 * docs/webhooks.md's examples against a real reelay: its receiver is examples/webhook-receiver.ts,
 * verbatim, and runs as its own process (it accepts reelay's signed event and refuses a forged one);
 * its `curl` creating an endpoint runs as written (the receiver's URL for the example's host) and
 * answers what the page shows; its sample event has the shape of a real delivery.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { blocksCheckedBy } from "../readme/doc-blocks.ts";
import { startReceiver, until } from "./receiver.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    ...scriptedEnv([{ id: "fast", options: { durationMs: 50 } }]),
    REELAY_SCHEDULER_POLL_MS: "50",
    REELAY_SECRET_KEY: "readme-receiver-secret-key-0123456789abc",
    REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  });
});
afterAll(() => s?.close());

const [curlBlock, eventBlock, receiverBlock] = blocksCheckedBy("test/webhooks/readme-receiver.test.ts");

/** every key path of a JSON value ("data.urls.poll"), arrays as their first element */
function shape(v: unknown, at = ""): string[] {
  if (Array.isArray(v)) return v.length ? shape(v[0], at + "[]") : [at + "[]"];
  if (v && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => shape(x, at ? `${at}.${k}` : k)).sort();
  return [at];
}

test("docs/webhooks.md shows examples/webhook-receiver.ts as it is", () => {
  expect([curlBlock?.lang, eventBlock?.lang, receiverBlock?.lang]).toEqual(["sh", "json", "ts"]);
  expect(receiverBlock!.code + "\n").toBe(readFileSync(ROOT + "examples/webhook-receiver.ts", "utf8"));
});

test("the page's curl creates an endpoint and answers what the page shows; a delivery has the sample event's shape", async () => {
  const c = await s.newClient();
  const hooks = startReceiver();
  try {
    const curl = curlBlock!.code.replaceAll("https://hooks.example.com/reelay", `${hooks.url}/reelay`);
    // asynchronously: the server answering it runs in this process
    const proc = Bun.spawn(["bash", "-euo", "pipefail", "-c", curl], { env: { PATH: process.env.PATH!, R: s.url, KEY: c.key }, stdout: "pipe", stderr: "pipe" });
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(err).toBe("");
    const created = JSON.parse(out);
    const shown = JSON.parse(curlBlock!.code.slice(curlBlock!.code.indexOf("# → ") + 4).replace(/^#\s*/gm, "").replaceAll("…", ""));
    expect(Object.keys(created).sort()).toEqual(Object.keys(shown).sort());
    expect(created).toMatchObject({ object: "webhook_endpoint", url: `${hooks.url}/reelay`, events: shown.events, enabled: true, disabled_reason: null });
    expect(created.secret).toStartWith("whsec_");

    const job = ((await (await client(s.url, c.key).submit({ model: "fast", prompt: "p", image: pngBase64(), seconds: 1 })).json()) as any).id;
    const [delivery] = await hooks.waitFor((rs) => rs.some((x) => x.body.includes(job)));
    const real = JSON.parse(hooks.requests.find((x) => x.body.includes(job))!.body);
    expect(shape(real)).toEqual(shape(JSON.parse(eventBlock!.code)));
    expect(delivery).toBeDefined();
  } finally {
    await hooks.stop();
  }
});

test("the example receiver verifies reelay's delivery and refuses a forged one", async () => {
  const c = await s.newClient();
  const h = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
  const { secret } = (await (await fetch(`${s.url}/v1/webhooks/secret`, { method: "POST", headers: h })).json()) as { secret: string };
  const proc = Bun.spawn(["bun", "examples/webhook-receiver.ts"], { cwd: ROOT, env: { ...process.env, REELAY_WEBHOOK_SECRET: secret, PORT: "0" }, stdout: "pipe", stderr: "inherit" });
  try {
    const lines: string[] = [];
    (async () => {
      let buf = "";
      for await (const chunk of proc.stdout) {
        buf += new TextDecoder().decode(chunk);
        const parts = buf.split("\n");
        buf = parts.pop()!;
        lines.push(...parts);
      }
    })();
    const printed = async (pred: () => string | undefined, what: string) => {
      for (let i = 0; i < 300; i++) {
        const hit = pred();
        if (hit) return hit;
        await Bun.sleep(50);
      }
      throw new Error(`receiver never printed ${what}; output: ${lines.join("\n")}`);
    };
    const url = (await printed(() => lines.find((l) => l.startsWith("listening on ")), "its address")).slice("listening on ".length).replace(/\/$/, "");
    const forged = await fetch(`${url}/hook`, { method: "POST", headers: { "webhook-id": "msg_x", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" }, body: "{}" });
    expect(forged.status).toBe(400);

    const job = ((await (await client(s.url, c.key).submit({ model: "fast", prompt: "p", image: pngBase64(), seconds: 1, webhook_url: `${url}/hook` })).json()) as any).id;
    const line = JSON.parse(await printed(() => lines.find((l) => l.includes(job)), "the event"));
    expect(line).toMatchObject({ type: "video.generation.completed", job, download: `${s.url}/v1/videos/generations/${job}/content` });
    expect(line.webhookId).toMatch(/^msg_/);
    const log: any = await until(async () => (await fetch(`${s.url}/v1/webhooks/deliveries?job_id=${job}`, { headers: h })).json(), (l: any) => l.data[0]?.status === "delivered");
    expect(log.data[0]).toMatchObject({ id: line.webhookId, status: "delivered", last_status: 204 });
  } finally {
    proc.kill();
    await proc.exited;
  }
}, 30_000);
