/**
 * The compiled dist/reelay loads the example external plugin, built exactly as
 * docs/writing-a-plugin.md says, and serves its models through /v1 — from an empty directory with
 * no node_modules and no sources, so the plugin can only work if it imports nothing at run time.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildEchoPlugin } from "../../examples/echo-plugin/build.ts";
import { startFakeOllama } from "../../examples/ollama-native/fake-ollama.ts";
import { startFakeQueue } from "../../examples/queue-video/fake-queue.ts";
import { bundlePlugin } from "../support/bundle-plugin.ts";
import { pngBase64 } from "../videos/support.ts";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";

const ADMIN = "plugin-binary-admin-token-0123";
let root: string;
let bin: string;
const procs: Array<ReturnType<typeof Bun.spawn>> = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "reelay-extplug-"));
  mkdirSync(join(root, "bin"));
  bin = join(root, "bin", "reelay");
  copyFileSync(process.env.REELAY_BINARY ?? compiledBinary(), bin); // REELAY_BINARY: test a freshly built binary
  Bun.spawnSync(["chmod", "+x", bin]);
  mkdirSync(join(root, "my-plugins"));
  buildEchoPlugin(join(root, "my-plugins", "echo-plugin.js"));
}, 300_000);

afterAll(async () => {
  for (const p of procs) {
    p.kill("SIGTERM");
    await p.exited;
  }
  rmSync(root, { recursive: true, force: true }); // a 200 MB copy of the binary per run
});

async function serve(name: string, extraEnv: Record<string, string>) {
  const cwd = join(root, name);
  mkdirSync(cwd);
  const port = freePort();
  const log = join(cwd, "serve.log");
  const proc = Bun.spawn([bin, "serve"], {
    cwd,
    env: { PATH: "/usr/bin:/bin", HOME: cwd, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_DATA_DIR: join(cwd, "data"), REELAY_LOG_FORMAT: "json", ...extraEnv },
    stdout: Bun.file(log),
    stderr: Bun.file(log + ".err"),
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitForOwnListener(proc, port, () => (existsSync(log) ? readFileSync(log, "utf8") : "") + (existsSync(log + ".err") ? readFileSync(log + ".err", "utf8") : ""), 60_000);
  const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const acct = (await (await fetch(`${url}/admin/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ name: "ext", credits: 5_000_000 }) })).json()) as { id: string };
  const key = (await (await fetch(`${url}/admin/accounts/${acct.id}/keys`, { method: "POST", headers: admin, body: JSON.stringify({ name: "k" }) })).json()) as { key: string };
  return { url, auth: { authorization: `Bearer ${key.key}`, "content-type": "application/json" }, log: () => readFileSync(log, "utf8") };
}

test("REELAY_PLUGINS_DIR: the echo model answers /v1/chat/completions, plain and streamed", async () => {
  const s = await serve("run-a", { REELAY_PLUGINS_DIR: join(root, "my-plugins") });
  const models = (await (await fetch(`${s.url}/v1/models`, { headers: s.auth })).json()) as { data: Array<{ id: string; owned_by: string }> };
  expect(models.data).toEqual(expect.arrayContaining([expect.objectContaining({ id: "echo", owned_by: "example" }), expect.objectContaining({ id: "solid-colour" })]));
  expect(s.log()).toContain("external plugin loaded");

  const body = { model: "echo", messages: [{ role: "user", content: "hello from the binary" }] };
  const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: s.auth, body: JSON.stringify(body) });
  const json = (await res.json()) as any;
  expect({ status: res.status, error: json.error }).toEqual({ status: 200, error: undefined });
  expect(json.choices[0].message.content).toBe("echo: hello from the binary");
  expect(json.usage.completion_tokens).toBeGreaterThan(0);

  const streamed = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: s.auth, body: JSON.stringify({ ...body, stream: true }) });
  expect(streamed.status).toBe(200);
  expect(streamed.headers.get("content-type")).toStartWith("text/event-stream");
  const text = await streamed.text();
  const content = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? "").join("");
  expect(content).toBe("echo: hello from the binary");
  expect(text.trim().endsWith("data: [DONE]")).toBe(true);
}, 120_000);

test("default plugins directory: ./plugins beside the binary", async () => {
  mkdirSync(join(root, "bin", "plugins"));
  copyFileSync(join(root, "my-plugins", "echo-plugin.js"), join(root, "bin", "plugins", "echo-plugin.js"));
  const s = await serve("run-b", {});
  const models = (await (await fetch(`${s.url}/v1/models`, { headers: s.auth })).json()) as { data: Array<{ id: string }> };
  expect(models.data.map((m) => m.id)).toContain("echo");
}, 120_000);

test("a broken plugin stops the binary with the file named", () => {
  const dir = join(root, "broken-plugins");
  mkdirSync(dir);
  Bun.write(join(dir, "broken.js"), "export default {");
  const cwd = join(root, "run-c");
  mkdirSync(cwd);
  const r = Bun.spawnSync([bin, "serve"], { cwd, env: { PATH: "/usr/bin:/bin", HOME: cwd, PORT: String(freePort()), REELAY_PLUGINS_DIR: dir, REELAY_DATA_DIR: join(cwd, "data"), REELAY_LOG_FORMAT: "json" }, timeout: 60_000 });
  expect(r.exitCode).toBe(1);
  expect(r.stderr.toString()).toContain(`plugin ${join(dir, "broken.js")}`);
}, 120_000);

test("the two example plugins (Ollama's NDJSON chat, a queue video API) work from the binary, with its SSRF guard and a model's allowPrivateNetwork", async () => {
  const dir = join(root, "example-plugins");
  mkdirSync(dir);
  const examples = new URL("../../examples/", import.meta.url).pathname;
  await bundlePlugin(join(examples, "ollama-native/index.ts"), join(dir, "ollama-native.js"));
  await bundlePlugin(join(examples, "queue-video/index.ts"), join(dir, "queue-video.js"));
  const ollama = await startFakeOllama();
  const queue = await startFakeQueue();
  try {
    const models = join(root, "example-models.json");
    const video = (id: string, extra = {}) => ({ id, plugin: "queue-video", options: { baseUrl: queue.url, app: "fal-ai/fake-video/i2v", apiKeyEnv: "QUEUE_KEY", pollIntervalMs: 50 }, pricing: { perSecond: 10_000 }, ...extra });
    require("node:fs").writeFileSync(models, JSON.stringify({ builtins: false, models: [
      { id: "llama-local", plugin: "ollama-native", options: { baseUrl: ollama.url, model: "llama3.2:3b" }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 1_000_000 } },
      video("clips"),
      video("clips-private", { allowPrivateNetwork: true }),
    ] }));
    const s = await serve("run-d", { REELAY_PLUGINS_DIR: dir, REELAY_MODELS_FILE: models, QUEUE_KEY: queue.key, REELAY_SCHEDULER_POLL_MS: "50" });
    const streamed = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: s.auth, body: JSON.stringify({ model: "llama-local", messages: [{ role: "user", content: "Say hello" }], max_tokens: 3, stream: true }) });
    const text = (await streamed.text()).split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? "").join("");
    expect([streamed.status, text]).toEqual([200, "Hello from a"]);
    const job = async (model: string) => {
      const { id } = (await (await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: s.auth, body: JSON.stringify({ model, prompt: "zoom", image: pngBase64(), seconds: 1 }) })).json()) as { id: string };
      for (;;) {
        const j = (await (await fetch(`${s.url}/v1/videos/generations/${id}`, { headers: s.auth })).json()) as any;
        if (j.status === "completed" || j.status === "failed") return j;
        await Bun.sleep(50);
      }
    };
    // the queue's result URL is on loopback: refused by default, fetched where the operator allows it
    expect((await job("clips")).error?.code).toBe("output_url_blocked");
    const done = await job("clips-private");
    expect(done.status).toBe("completed");
    expect(Buffer.from(done.data[0].b64_json, "base64").subarray(4, 8).toString()).toBe("ftyp");
  } finally {
    await ollama.stop();
    await queue.stop();
  }
}, 120_000);
