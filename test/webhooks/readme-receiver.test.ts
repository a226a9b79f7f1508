/**
 * The README's webhook receiver is examples/webhook-receiver.ts, verbatim; here it runs as its own
 * process against a real reelay: it accepts reelay's signed event and refuses a forged one.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { until } from "./receiver.ts";

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

test("the README shows examples/webhook-receiver.ts as it is", () => {
  const readme = readFileSync(ROOT + "README.md", "utf8");
  expect(readme).toContain("```ts\n" + readFileSync(ROOT + "examples/webhook-receiver.ts", "utf8") + "```");
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
