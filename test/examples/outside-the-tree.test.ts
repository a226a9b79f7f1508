/**
 * The two example plugins as a provider builds them: each copied OUT of reelay's tree, given the
 * SDK from its `npm pack` tarball, built with `bun run build`, type-checked against the packed
 * declarations and tested with its own tests (the SDK's contract against its fake server). Then
 * the built files are loaded by a real reelay from a plugins directory and used through the
 * official OpenAI client and the video API, with exact billing and the documented error statuses.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOllama, type FakeOllama } from "../../examples/ollama-native/fake-ollama.ts";
import { startFakeQueue, type FakeQueue } from "../../examples/queue-video/fake-queue.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";

const ROOT = join(import.meta.dir, "../..");
const EXAMPLES = ["ollama-native", "queue-video"] as const;
const work = mkdtempSync(join(tmpdir(), "reelay-examples-")); // outside the tree: no reelay node_modules above it
const plugins = join(work, "plugins");
const built: Record<string, { dir: string; testOutput: string; typecheck: string; imports: string[] }> = {};

function run(cmd: string[], cwd: string): string {
  const r = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, FORCE_COLOR: "0" } });
  const out = r.stdout.toString() + r.stderr.toString();
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} (in ${cwd}) exited ${r.exitCode}:\n${out}`);
  return out;
}

beforeAll(() => {
  // the SDK as a provider gets it: the tarball `npm pack` makes (prepack builds dist/)
  run(["npm", "pack", "--pack-destination", work], join(ROOT, "packages/plugin-sdk"));
  const tarball = join(work, readdirSync(work).find((f) => f.endsWith(".tgz"))!);
  mkdirSync(plugins);
  for (const name of EXAMPLES) {
    const dir = join(work, name);
    cpSync(join(ROOT, "examples", name), dir, { recursive: true, filter: (src) => !/\/(node_modules|dist)(\/|$)/.test(src) });
    run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], dir);
    run(["bun", "run", "build"], dir);
    const file = join(dir, "dist", `${name}.js`);
    cpSync(file, join(plugins, `${name}.js`));
    built[name] = {
      dir,
      imports: new Bun.Transpiler({ loader: "js" }).scanImports(readFileSync(file, "utf8")).map((i) => i.path),
      // the packed declarations (dist/*.d.ts), with Bun's types from reelay's install
      typecheck: run([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", ".", "--typeRoots", join(ROOT, "node_modules/@types")], dir),
      testOutput: run(["bun", "test"], dir),
    };
  }
}, 300_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.each(EXAMPLES)("%s, outside the tree, against the packed SDK", (name) => {
  test("it installed @reelay/plugin-sdk from the tarball, not from reelay's tree", () => {
    const installed = JSON.parse(readFileSync(join(built[name]!.dir, "node_modules/@reelay/plugin-sdk/package.json"), "utf8"));
    expect(installed.version).toBe(JSON.parse(readFileSync(join(ROOT, "packages/plugin-sdk/package.json"), "utf8")).version);
    expect(JSON.parse(readFileSync(join(built[name]!.dir, "package.json"), "utf8")).dependencies["@reelay/plugin-sdk"]).toMatch(/^file:.*\.tgz$/);
  });

  test("the build is one ES module importing nothing but built-ins", () => {
    expect(built[name]!.imports.filter((p) => !/^(node|bun):/.test(p) && !builtinModules.includes(p))).toEqual([]);
  });

  test("it type-checks against the packed declarations", () => {
    expect(built[name]!.typecheck).toBe("");
  });

  test("its own tests, the SDK's contract included, pass", () => {
    const out = built[name]!.testOutput;
    expect(out).toMatch(/\b0 fail\b/);
    expect(Number(/(\d+) pass/.exec(out)?.[1])).toBeGreaterThan(10);
    expect(out).toContain("plugin contract:");
  });
});

describe("the built plugins in a running reelay", () => {
  let s: TestServer;
  let ollama: FakeOllama;
  let queue: FakeQueue;
  let key: string;
  let openai: OpenAI;
  const PRICE = { inputPerMillion: 1_000_000, outputPerMillion: 3_000_000 };
  const VIDEO_PER_SECOND = 70_000;

  beforeAll(async () => {
    ollama = await startFakeOllama();
    queue = await startFakeQueue();
    process.env.EXAMPLE_QUEUE_KEY = queue.key; // reelay reads a model's secrets from its environment
    const models = join(work, "models.json");
    writeFileSync(models, JSON.stringify({
      builtins: false,
      models: [
        { id: "llama-local", plugin: "ollama-native", options: { baseUrl: ollama.url, model: "llama3.2:3b", capabilities: ["chat", "embeddings"] }, pricing: PRICE, maxOutputTokens: 64 },
        // the queue's result URLs are on loopback here: the operator allows it for this model only
        { id: "clip-maker", plugin: "queue-video", allowPrivateNetwork: true, options: { baseUrl: queue.url, app: "fal-ai/fake-video/image-to-video", apiKeyEnv: "EXAMPLE_QUEUE_KEY", pollIntervalMs: 50 }, pricing: { perSecond: VIDEO_PER_SECOND } },
      ],
    }));
    s = await startTestServer({ REELAY_PLUGINS_DIR: plugins, REELAY_MODELS_FILE: models, REELAY_SCHEDULER_POLL_MS: "50" });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await ollama?.stop();
    await queue?.stop();
  });

  const CREDITS = 10_000_000;
  /**
   * A new funded account for each billed request: its money is then exactly that request's. (It
   * also keeps every request on an exact hold, away from leases: see the report of this branch on
   * a billing-engine stall when a lease give-back meets a settlement batch.)
   */
  async function fresh() {
    key = (await s.newClient({ credits: CREDITS })).key;
    openai = new OpenAI({ apiKey: key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  }
  const spent = async () => CREDITS - ((await (await fetch(`${s.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } })).json()) as { balance: number }).balance;
  const video = async (body: Record<string, unknown>) => {
    const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const { id } = (await (await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: h, body: JSON.stringify(body) })).json()) as { id: string };
    for (const end = Date.now() + 20_000; Date.now() < end; await Bun.sleep(50)) {
      const j = (await (await fetch(`${s.url}/v1/videos/generations/${id}`, { headers: h })).json()) as any;
      if (j.status === "completed" || j.status === "failed") return j;
    }
    throw new Error(`job ${id} did not finish`);
  };

  test("chat through Ollama's native API: streamed and plain, billed on Ollama's counts", async () => {
    await fresh();
    const stream = await openai.chat.completions.create({ model: "llama-local", messages: [{ role: "user", content: "Say hello" }], max_tokens: 3, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      usage = chunk.usage ?? usage;
    }
    expect([text, usage?.completion_tokens]).toEqual(["Hello from a", 3]);
    expect(await spent()).toBe(6 * 1 + 3 * 3);

    await fresh();
    const r = await openai.chat.completions.create({ model: "llama-local", messages: [{ role: "user", content: "Say hello" }], max_tokens: 5 });
    expect(r.choices[0]!.message.content).toBe("Hello from a fake Ollama");
    expect(r.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 5 });
    expect(await spent()).toBe(6 * 1 + 5 * 3);
  });

  test("embeddings through /api/embed", async () => {
    await fresh();
    const r = await openai.embeddings.create({ model: "llama-local", input: ["one two", "three"] });
    expect(r.data.map((d) => d.embedding.length)).toEqual([8, 8]);
    expect(r.usage.prompt_tokens).toBe(3);
    expect(await spent()).toBe(3);
  });

  test("Ollama's failures reach the client with the documented statuses, nothing charged", async () => {
    await fresh();
    for (const [status, want] of [[404, 404], [500, 502], [401, 502]] as const) {
      ollama.behave({ status });
      const err = await openai.chat.completions.create({ model: "llama-local", messages: [{ role: "user", content: "hi" }] }).catch((e) => e);
      expect({ upstream: status, client: err.status }).toEqual({ upstream: status, client: want });
      const embErr = await openai.embeddings.create({ model: "llama-local", input: "hi" }).catch((e) => e);
      expect({ upstream: status, client: embErr.status }).toEqual({ upstream: status, client: want });
    }
    ollama.behave({});
    expect(await spent()).toBe(0);

    await fresh();
    ollama.behave({ dropAfterLines: 2 });
    const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "llama-local", messages: [{ role: "user", content: "hi" }], stream: true }) });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"code":"upstream_interrupted"');
    ollama.behave({});
    // the broken stream's prompt (reelay's estimate, 8) and the 2 tokens delivered before the break
    expect(await spent()).toBe(8 * 1 + 2 * 3);
  });

  test("a queue video job: submitted, polled, the result URL downloaded and stored, charged price × seconds", async () => {
    await fresh();
    const j = await video({ model: "clip-maker", prompt: "a slow zoom", image: pngBase64(), seconds: 3 });
    expect(j.status).toBe("completed");
    expect(Buffer.from(j.data[0].b64_json, "base64").equals(readFileSync(join(ROOT, "examples/queue-video/fixtures/clip.mp4")))).toBe(true);
    expect(await spent()).toBe(3 * VIDEO_PER_SECOND);
  });

  test("queue failures: a refused key fails the job at once, a content refusal fails it with the provider's code; nothing charged", async () => {
    await fresh();
    queue.behave({ submitStatus: 401 });
    const calls = queue.calls.length;
    const refused = await video({ model: "clip-maker", prompt: "x", image: pngBase64(), seconds: 1 });
    expect([refused.status, refused.error.code]).toEqual(["failed", "upstream_auth_failed"]);
    expect(queue.calls.length - calls).toBe(1); // not retried
    queue.behave({ jobFails: true, queueMs: 0, runMs: 0 });
    const flagged = await video({ model: "clip-maker", prompt: "x", image: pngBase64(), seconds: 1 });
    expect([flagged.status, flagged.error.code]).toEqual(["failed", "content_policy_violation"]);
    queue.behave({});
    expect(await spent()).toBe(0);
  });
});
