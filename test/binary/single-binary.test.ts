/**
 * The compiled dist/reelay, copied alone into an empty directory (no node_modules, no sources) and
 * started the way docs/operations.md's "single binary" block says (a directory in the home
 * directory: no root needed): starts on embedded PGlite, applies its embedded migrations, serves
 * chat (OpenAI's and Anthropic's APIs over stories260k) and local embeddings, renders a
 * preview video (its worker threads are embedded too) and the docs UI, runs the CLI, and stops
 * gracefully on SIGTERM.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";
import { blocksCheckedBy, ROOT } from "../readme/doc-blocks.ts";

// docs/operations.md: `bash compile.sh`, then a copy in a directory of its own, then `./reelay serve` there
const [docBlock] = blocksCheckedBy("test/binary/single-binary.test.ts");
const [compileLine, copyLine, serveLine] = docBlock!.code.split("\n").map((l) => l.replace(/\s+#.*$/, ""));
const ADMIN = /REELAY_ADMIN_TOKEN=(\S+)/.exec(serveLine!)![1]!;
let home: string;
let dir: string;
let bin: string;

beforeAll(() => {
  expect(compileLine).toBe("bash compile.sh");
  compiledBinary(); // what compile.sh makes (built once for the whole suite)
  home = mkdtempSync(join(tmpdir(), "reelay-bin-home-"));
  const copy = Bun.spawnSync(["bash", "-euc", copyLine!], { cwd: ROOT, env: { PATH: "/usr/bin:/bin", HOME: home } });
  expect({ code: copy.exitCode, err: copy.stderr.toString() }).toEqual({ code: 0, err: "" });
  dir = join(home, "reelay");
  bin = join(dir, "reelay");
  mkdirSync(join(dir, "tmp"));
}, 300_000);
// a 200 MB copy of the binary per run: left behind, 80 runs filled the machine's disk
afterAll(() => rmSync(home, { recursive: true, force: true }));

const env = (port: number) => ({ PATH: "/usr/bin:/bin", HOME: home, TMPDIR: join(dir, "tmp"), PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json" });

test("the docs' single-binary block writes only under the home directory: no root needed", () => {
  expect(docBlock!.code).not.toMatch(/(^|\s)\/(?!dev\/null)/m); // no absolute path
  expect(readdirSync(home)).toEqual(["reelay"]);
  expect(readdirSync(dir).sort()).toEqual(["reelay", "tmp"]);
});

function cli(...args: string[]) {
  const r = Bun.spawnSync([bin, ...args], { cwd: dir, env: env(0) });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** the docs' serve line, as typed at the repository root (bash execs the server: its pid is ours) */
function serve(port: number) {
  const logFile = join(dir, `serve-${port}.log`);
  const proc = Bun.spawn(["bash", "-c", serveLine!], { cwd: ROOT, env: env(port), stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  return { proc, url: `http://127.0.0.1:${port}`, log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "") };
}

let account: string;
let key: string;

test("the CLI works from an empty directory on embedded PGlite", () => {
  expect(existsSync(join(dir, "node_modules"))).toBe(false);
  const help = cli("help");
  expect(help.code).toBe(0);
  expect(help.out).toContain("keys create");
  const acct = cli("accounts", "create", "--name", "bin", "--credits", "2000000");
  expect(acct.code).toBe(0);
  account = JSON.parse(acct.out).id;
  const k = cli("keys", "create", "--account", account, "--name", "cli-key");
  expect(k.code).toBe(0);
  key = JSON.parse(k.out).key;
  expect(key).toStartWith("rl-");
  const listed = cli("keys", "list", "--account", account);
  expect(JSON.parse(listed.out)[0].prefix).toBe(key.slice(0, 11));
  expect(listed.out).not.toContain(key);
  const bal = cli("balance", "--account", account);
  expect(JSON.parse(bal.out)).toEqual({ balance: 2_000_000, held: 0, available: 2_000_000 });
  const bad = cli("credits", "grant", "--account", account, "--amount", "-5");
  expect(bad.code).toBe(2);
  expect(bad.err).toContain("--amount");
  expect(existsSync(join(dir, "data"))).toBe(true);
}, 120_000);

test("serves the API and the offline docs UI, then stops gracefully on SIGTERM", async () => {
  const port = freePort();
  const s = serve(port);
  try {
    await waitForOwnListener(s.proc, port, s.log, 90_000);
    const ready = await (await fetch(s.url + "/readyz")).json();
    expect(ready.status).toBe("ready");
    expect(ready.checks[0].detail).toBe("pglite");
    const models = await (await fetch(s.url + "/v1/models", { headers: { authorization: `Bearer ${key}` } })).json();
    expect(models.data.map((m: { id: string }) => m.id).sort()).toEqual(["preview-motion", "stories260k", "use-lite"]);
    // chat from stories260K and llama.cpp's libraries embedded in the binary (unpacked under TMPDIR only while loading)
    const openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
    const story = await openai.chat.completions.create({ model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12, temperature: 0 });
    expect(story.choices[0]!.message.content).toStartWith(", there was");
    expect(story.usage).toEqual({ prompt_tokens: 5, completion_tokens: 12, total_tokens: 17 });
    let streamed = "";
    for await (const chunk of await openai.chat.completions.create({ model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12, temperature: 0, stream: true })) {
      streamed += chunk.choices[0]?.delta?.content ?? "";
    }
    expect(streamed).toBe(story.choices[0]!.message.content!);
    // the Responses API over the same model, kept in the embedded PGlite (migration 0005) and read back
    const resp = await openai.responses.create({ model: "stories260k", input: "Once upon a time", max_output_tokens: 12, temperature: 0 });
    expect(resp.output_text).toBe(story.choices[0]!.message.content!);
    expect((await openai.responses.retrieve(resp.id)).output_text).toBe(resp.output_text);
    // Anthropic's Messages API over the same model, as the Anthropic SDK and Claude Code call it (x-api-key)
    expect((await fetch(s.url + "/", { method: "HEAD" })).status).toBe(200);
    const anthropic = new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 });
    const msg = await anthropic.messages.create({ model: "stories260k", max_tokens: 12, messages: [{ role: "user", content: "Once upon a time" }], ...({ temperature: 0 } as {}) });
    expect([msg.content[0]?.type === "text" && msg.content[0].text, msg.stop_reason, msg.usage.output_tokens]).toEqual([story.choices[0]!.message.content!, "max_tokens", 12]);
    const ms = anthropic.messages.stream({ model: "stories260k", max_tokens: 12, messages: [{ role: "user", content: "Once upon a time" }], ...({ temperature: 0 } as {}) });
    const streamedMsg = await ms.finalMessage();
    expect(streamedMsg.content.map((b) => b.type === "text" && b.text)).toEqual([story.choices[0]!.message.content!]);
    const missing = await anthropic.messages.create({ model: "nope", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).then(() => null, (err) => err);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(readdirSync(join(dir, "tmp")).filter((f) => f.startsWith("reelay-llama-") || f.startsWith("reelay-model-"))).toEqual([]);
    // local embeddings from the weights and WASM embedded in the binary
    const emb = await fetch(s.url + "/v1/embeddings", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "use-lite", input: ["How old are you?", "What is your age?"] }) });
    expect(emb.status).toBe(200);
    const e = (await emb.json()) as { data: Array<{ embedding: number[] }>; usage: { prompt_tokens: number } };
    expect(e.data).toHaveLength(2);
    expect(e.data[0]!.embedding).toHaveLength(512);
    const dot = e.data[0]!.embedding.reduce((acc, x, i) => acc + x * e.data[1]!.embedding[i]!, 0);
    expect(dot).toBeGreaterThan(0.7);
    expect(e.usage.prompt_tokens).toBeGreaterThan(0);
    // a preview video: its render workers are extra entrypoints embedded in the binary
    const png = Buffer.from((await import("fast-png")).encode({ width: 64, height: 64, data: new Uint8Array(64 * 64 * 4).fill(200), channels: 4 })).toString("base64");
    const sub = await fetch(s.url + "/v1/videos/generations", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "preview-motion", prompt: "zoom in", seconds: 1, size: "624x624", image: png }) });
    expect(sub.status).toBe(202);
    const job = await sub.json();
    let polled: any;
    for (let i = 0; i < 120; i++) {
      polled = await (await fetch(s.url + `/v1/videos/generations/${job.id}`, { headers: { authorization: `Bearer ${key}` } })).json();
      if (polled.status === "completed" || polled.status === "failed") break;
      await Bun.sleep(250);
    }
    expect(polled.status).toBe("completed");
    const mp4 = Buffer.from(polled.data[0].b64_json, "base64");
    expect(mp4.subarray(4, 8).toString()).toBe("ftyp");
    // its stills come from the encoder's worker in the binary
    for (const variant of ["thumbnail", "spritesheet"]) {
      const still = await fetch(s.url + `/v1/videos/${job.id}/content?variant=${variant}`, { headers: { authorization: `Bearer ${key}` } });
      expect([variant, still.status, still.headers.get("content-type")]).toEqual([variant, 200, "image/jpeg"]);
      expect(new Uint8Array(await still.arrayBuffer()).subarray(0, 2)).toEqual(new Uint8Array([0xff, 0xd8]));
    }
    const html = await (await fetch(s.url + "/docs")).text();
    expect(html).toContain("/docs/assets/scalar.js");
    expect((await fetch(s.url + "/docs/assets/scalar.js")).status).toBe(200);
    const bal = await (await fetch(s.url + `/admin/accounts/${account}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    expect(bal.balance).toBeLessThan(2_000_000); // the embeddings call was billed
    expect(bal.held).toBe(0);
  } finally {
    s.proc.kill("SIGTERM");
  }
  expect(await s.proc.exited).toBe(0);
  expect(s.log()).toContain('"msg":"stopped"');
  // the data directory is released: the CLI can open it again
  expect(cli("balance", "--account", account).code).toBe(0);
}, 180_000);

test("a fresh data dir: /healthz answers before the database is open, /readyz goes 503 starting → 200, and the data dir comes from the embedded seed", async () => {
  const port = freePort();
  const logFile = join(dir, `fresh-${port}.log`);
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env: { ...env(port), REELAY_DATA_DIR: join(dir, "fresh-data") }, stdout: Bun.file(logFile), stderr: "inherit" });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  try {
    // our own process: its "reelay listening" line carries its pid
    for (const end = Date.now() + 60_000; !log().split("\n").some((l) => l.includes('"msg":"reelay listening"') && l.includes(`"pid":${proc.pid}`)); ) {
      if (Date.now() > end || proc.exitCode !== null) throw new Error(`no listening line:\n${log()}`);
      await Bun.sleep(2);
    }
    let healthzAt = 0, readyAt = 0, sawStarting = false, ready: any;
    for (let i = 0; !readyAt && i < 20_000; i++) {
      const t = performance.now();
      if (!healthzAt && (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) healthzAt = t;
      const r = await fetch(`http://127.0.0.1:${port}/readyz`);
      const body = await r.json();
      if (r.status === 503 && body.checks[0].detail.startsWith("starting")) sawStarting = true;
      if (r.status === 200) (readyAt = performance.now()), (ready = body);
      else await Bun.sleep(3);
    }
    expect(healthzAt).toBeGreaterThan(0);
    expect(sawStarting).toBe(true);
    expect(readyAt).toBeGreaterThan(healthzAt);
    expect(ready.models).toEqual([{ id: "use-lite", state: "unloaded" }, { id: "stories260k", state: "unloaded" }, { id: "preview-motion", state: "ready" }]);
    expect(log()).toContain("new PGlite data dir unpacked from the embedded seed");
    expect(log()).not.toContain("migrations applied"); // the seed is the binary's own migrations
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
}, 120_000);
