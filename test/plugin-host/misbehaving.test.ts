/**
 * An external plugin, bundled on its own with its own copy of the SDK, through the real server:
 * every error kind gets the documented status on chat, embeddings and video (recognised by its
 * brand), and whatever garbage the plugin returns is never a 500 and never charged: a 502 (or a
 * failed job) naming plugin and model, with the hold released at once, not by the sweeper.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLogger } from "../../src/logger.ts";
import { bundlePlugin } from "../support/bundle-plugin.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";

const dir = mkdtempSync(join(tmpdir(), "reelay-misbehaving-"));
/** what the plugin reads from the environment, as its upstream key: it must reach no client, job or log */
const SECRET_ENV = "REELAY_TEST_MISBEHAVING_UPSTREAM_KEY";
const SECRET = "sk-misbehaving-SECRET-0f1e2d3c4b5a";
const record = join(dir, "calls.log");
const logLines: any[] = [];
let s: TestServer;
let mp4Server: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  await bundlePlugin(join(import.meta.dir, "misbehaving-plugin.ts"), join(dir, "plugins", "misbehaving.js"));
  writeFileSync(record, "");
  // a "provider's storage" on loopback serving an MP4 header: private, so only allowPrivateNetwork may fetch it
  mp4Server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Uint8Array.of(0, 0, 0, 16, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0)) });
  process.env[SECRET_ENV] = SECRET;
  const video = (id: string, extra = {}) => ({ id, plugin: "misbehaving", options: { record, secretEnv: SECRET_ENV }, pricing: { perSecond: 10_000 }, ...extra });
  const chatModel = { id: "mis-chat", plugin: "misbehaving", options: { record, secretEnv: SECRET_ENV }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 64 };
  writeFileSync(join(dir, "models.json"), JSON.stringify({ builtins: false, models: [chatModel, video("mis-video"), video("mis-video-private", { allowPrivateNetwork: true })] }));
  const sink = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split("\n")) if (l) logLines.push(JSON.parse(l)); done(); } });
  s = await startTestServer(
    { REELAY_PLUGINS_DIR: join(dir, "plugins"), REELAY_MODELS_FILE: join(dir, "models.json"), REELAY_SCHEDULER_POLL_MS: "50" },
    { logger: createLogger({ logLevel: "info", logPretty: false }, sink) },
  );
}, 60_000);
afterAll(async () => {
  await s?.close();
  mp4Server?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

const CREDITS = 10_000_000;
async function client() {
  const c = await s.newClient({ credits: CREDITS });
  const h = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
  const post = (path: string, body: unknown) => fetch(s.url + path, { method: "POST", headers: h, body: JSON.stringify(body) });
  const account = async () => (await (await fetch(s.url + "/v1/account", { headers: h })).json()) as { balance: number; held: number };
  return { ...c, post, account, get: (path: string) => fetch(s.url + path, { headers: h }) };
}
const chat = (c: Awaited<ReturnType<typeof client>>, content: string, extra: Record<string, unknown> = {}, model = "mis-chat") =>
  c.post("/v1/chat/completions", { model, messages: [{ role: "user", content }], max_tokens: 16, ...extra });

/** status + error code of a failed response, after checking the envelope and that nothing is held or charged */
async function refused(c: Awaited<ReturnType<typeof client>>, res: Response) {
  const body = (await res.json()) as any;
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(await c.account()).toEqual(expect.objectContaining({ balance: CREDITS, held: 0 })); // released at once, not by the sweeper
  return { status: res.status, code: body.error.code, message: body.error.message as string, retryAfter: res.headers.get("retry-after") };
}

const KINDS: Array<[string, number, string]> = [
  ["throw invalid_request", 400, "invalid_request"],
  ["throw upstream_http 400", 400, ""],
  ["throw upstream_http 401", 502, "upstream_auth_failed"],
  ["throw upstream_http 404", 404, ""],
  ["throw upstream_http 429", 429, ""],
  ["throw upstream_http 500", 502, "upstream_error"],
  ["throw connect", 502, "upstream_unavailable"],
  ["throw timeout", 504, "upstream_timeout"],
  ["throw malformed", 502, "upstream_malformed"],
  ["throw failed", 502, "content_policy"],
  ["throw overloaded", 503, "model_overloaded"],
  ["throw stream_interrupted", 502, "upstream_interrupted"],
  ["crash", 502, "plugin_failed"],
];

describe("every error kind, thrown by a plugin bundled on its own, gets its documented status", () => {
  test("chat, non-streamed and streamed (before the first event)", async () => {
    const c = await client();
    for (const [mode, status, code] of KINDS) {
      const plain = await refused(c, await chat(c, mode));
      expect({ mode, status: plain.status, code: plain.code ?? "" }).toEqual({ mode, status, code });
      if (status === 503) expect(plain.retryAfter).toBe("1");
      const streamed = await refused(c, await chat(c, `stream-throw-first ${mode.replace(/^throw /, "")}`, { stream: true }));
      if (mode !== "crash") expect({ mode, status: streamed.status, code: streamed.code ?? "" }).toEqual({ mode, status, code });
    }
  });

  test("embeddings", async () => {
    const c = await client();
    for (const [mode, status, code] of KINDS) {
      const r = await refused(c, await c.post("/v1/embeddings", { model: "mis-emb", input: [mode, "second"] }));
      expect({ mode, status: r.status, code: r.code ?? "" }).toEqual({ mode, status, code });
    }
  });

  test("a crash tells the client which plugin failed, not what it threw; the log has both", async () => {
    const c = await client();
    const r = await refused(c, await chat(c, "crash"));
    expect(r.message).toContain(`plugin "misbehaving", model "mis-chat"`);
    expect(r.message).not.toContain("o.x.y");
    const line = logLines.find((l) => l.msg === "plugin threw an error that is not a PluginError (a bug in the plugin)" && l.model === "mis-chat");
    expect(line).toMatchObject({ plugin: "misbehaving", model: "mis-chat", requestId: expect.stringMatching(/^req_/) });
    expect(line.err.message).toContain("o.x.y");
  });
});

describe("garbage from a plugin: never a 500, never a charge, a 502 naming plugin and model", () => {
  const cases: Array<[string, RegExp]> = [
    ["usage-string", /usage.prompt_tokens is "5", not an integer ≥ 0/],
    ["usage-nan", /usage.completion_tokens is NaN, not an integer ≥ 0/],
    ["usage-negative", /usage.completion_tokens is -2, not an integer ≥ 0/],
    ["usage-too-many", /usage.completion_tokens is 10000, more than the 16 this request allows/],
    ["undefined", /complete\(\) returned undefined/],
    ["no-choices", /completion.choices is not a non-empty array/],
  ];
  for (const [mode, problem] of cases) {
    test(`chat: ${mode}`, async () => {
      const c = await client();
      const r = await refused(c, await chat(c, mode));
      expect([r.status, r.code]).toEqual([502, "invalid_plugin_result"]);
      expect(r.message).toContain(`Plugin "misbehaving" (model "mis-chat") returned an invalid result`);
      expect(r.message).toMatch(problem);
      expect(logLines.some((l) => l.msg === "plugin returned an invalid result" && l.plugin === "misbehaving" && l.model === "mis-chat" && problem.test(l.problem))).toBe(true);
    });
  }

  test("chat streams: an event without its JSON, or data that is not JSON, before the first event → 502", async () => {
    const c = await client();
    for (const mode of ["stream-no-json", "stream-text"]) {
      const r = await refused(c, await chat(c, mode, { stream: true }));
      expect({ mode, status: r.status, code: r.code }).toEqual({ mode, status: 502, code: "invalid_plugin_result" });
    }
  });

  test("chat streams: a break after the first events → an SSE error event, only the delivered tokens charged", async () => {
    const c = await client();
    for (const [mode, code] of [["stream-break", "upstream_interrupted"], ["stream-crash-mid", "plugin_failed"]]) {
      const before = (await c.account()).balance;
      const res = await chat(c, mode!, { stream: true });
      expect(res.status).toBe(200);
      const events = (await res.text()).split("\n\n").filter(Boolean).map((e) => JSON.parse(e.slice(6)));
      expect(events.at(-1).error).toMatchObject({ type: "upstream_error", code });
      const after = await c.account();
      expect(after.held).toBe(0);
      expect(before - after.balance).toBeGreaterThan(0); // the delivered "hi there" is paid for, no more
      expect(before - after.balance).toBeLessThan(100);
    }
  });

  test("embeddings: string usage, a vector missing, undefined → 502 invalid_plugin_result", async () => {
    const c = await client();
    for (const mode of ["usage-string", "wrong-count", "undefined"]) {
      const r = await refused(c, await c.post("/v1/embeddings", { model: "mis-emb", input: [mode, "second"] }));
      expect({ mode, status: r.status, code: r.code }).toEqual({ mode, status: 502, code: "invalid_plugin_result" });
    }
  });
});

describe("a chat capability without stream()", () => {
  test("stream: true is answered from complete(), as one content chunk, billed like the plain call", async () => {
    const c = await client();
    const res = await chat(c, "ok", { stream: true, stream_options: { include_usage: true } }, "mis-chat-nostream");
    expect(res.status).toBe(200);
    const events = (await res.text()).split("\n\n").filter(Boolean).map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? null).join("")).toBe("hi there");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 2 } });
    expect(CREDITS - (await c.account()).balance).toBe(5 * 1 + 2 * 2);
  });
});

describe("the per-call context", () => {
  test("a plugin's log line carries the client's request id; its own fields cannot overwrite the host's", async () => {
    const c = await client();
    const res = await chat(c, "ok");
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id");
    const line = logLines.find((l) => l.msg === "misbehaving chat called" && l.mode === "ok" && l.requestId === requestId);
    expect(line).toMatchObject({ plugin: "misbehaving", model: "mis-chat", requestId, plugin_requestId: "forged-by-plugin", plugin_plugin: "forged" });
  });
});

describe("video: the same kinds, the same checks", () => {
  const IMG = pngBase64();
  async function job(c: Awaited<ReturnType<typeof client>>, prompt: string, model = "mis-video") {
    const res = await c.post("/v1/videos/generations", { model, prompt, image: IMG, seconds: 1 });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    for (const end = Date.now() + 20_000; Date.now() < end; await Bun.sleep(50)) {
      const j = (await (await c.get(`/v1/videos/generations/${id}`)).json()) as any;
      if (j.status === "completed" || j.status === "failed") {
        const calls = readFileSync(record, "utf8").split("\n").filter((l) => l.endsWith(id));
        return { ...j, submits: calls.filter((l) => l.startsWith("submit")).length, polls: calls.filter((l) => l.startsWith("poll")).length };
      }
    }
    throw new Error(`job ${id} did not finish`);
  }

  test("final errors fail the job at once with the client's code: one submit, no retries", async () => {
    const c = await client();
    const cases: Array<[string, string]> = [["throw upstream_http 401", "upstream_auth_failed"], ["throw invalid_request", "invalid_request"], ["throw failed", "content_policy"], ["throw malformed", "upstream_malformed"]];
    for (const [prompt, code] of cases) {
      const j = await job(c, prompt);
      expect({ prompt, status: j.status, code: j.error.code, submits: j.submits }).toEqual({ prompt, status: "failed", code, submits: 1 });
    }
    expect((await c.account())).toEqual(expect.objectContaining({ balance: CREDITS, held: 0 }));
  });

  test("a permanent failure reported by poll is not retried: one submit, one poll", async () => {
    const c = await client();
    const j = await job(c, "fail-permanent");
    expect({ status: j.status, code: j.error.code, submits: j.submits, polls: j.polls }).toEqual({ status: "failed", code: "content_policy", submits: 1, polls: 1 });
  });

  test("retryable errors are retried, then the job fails without a charge", async () => {
    const c = await client();
    const j = await job(c, "throw upstream_http 503");
    expect({ status: j.status, code: j.error.code, submits: j.submits }).toEqual({ status: "failed", code: "upstream_error", submits: 5 });
  }, 30_000);

  test("garbage: a numeric handle, HTML as the MP4, progress as a percentage → failed job naming plugin and model, nothing charged", async () => {
    const c = await client();
    const cases: Array<[string, RegExp]> = [
      ["handle-number", /handle 42; a handle is a non-empty string/],
      ["html-mp4", /not an MP4 \(no ftyp box first\)/],
      ["progress-percent", /progress 50; progress is a fraction from 0 to 1/],
    ];
    for (const [prompt, problem] of cases) {
      const j = await job(c, prompt);
      expect({ prompt, status: j.status, code: j.error.code }).toEqual({ prompt, status: "failed", code: "invalid_plugin_result" });
      expect(j.error.message).toContain(`Plugin "misbehaving" (model "mis-video") returned an invalid result`);
      expect(j.error.message).toMatch(problem);
    }
    expect(await c.account()).toEqual(expect.objectContaining({ balance: CREDITS, held: 0 }));
    expect(readFileSync(record, "utf8")).toContain("cancel "); // the provider was asked to stop the job it was still running
  });

  test("a result URL on a private address: refused by default, fetched when the model allows private networks", async () => {
    const c = await client();
    const url = `http://127.0.0.1:${mp4Server.port}/out.mp4`;
    const refusedJob = await job(c, `url ${url}`);
    expect({ status: refusedJob.status, code: refusedJob.error.code }).toEqual({ status: "failed", code: "output_url_blocked" });
    expect(refusedJob.error.message).toContain("allowPrivateNetwork");
    const allowed = await job(c, `url ${url}`, "mis-video-private");
    expect(allowed.status).toBe("completed");
    expect(Buffer.from(allowed.data[0].b64_json, "base64").subarray(4, 8).toString()).toBe("ftyp");
    expect(CREDITS - (await c.account()).balance).toBe(10_000); // only the completed job, 1 s
  });
});

describe("a secret the plugin read from the environment (its upstream key) reaches no client, job or log", () => {
  test("an error message quoting it, a streamed chunk holding it, its own log line and fields, a failed job's message", async () => {
    const c = await client();
    const linesBefore = logLines.length;

    const thrown = await chat(c, "leak-throw");
    const thrownText = await thrown.text();
    expect(thrown.status).toBe(502);
    expect(thrownText).not.toContain(SECRET);
    expect(thrownText).toContain("[redacted]");

    const streamed = await (await chat(c, "leak-stream", { stream: true })).text();
    expect(streamed).toContain("the key is [redacted]");
    expect(streamed).not.toContain(SECRET);

    expect((await chat(c, "leak-log")).status).toBe(200);

    const img = pngBase64();
    const ids: string[] = [];
    for (const prompt of ["leak-fail", "leak-throw"]) {
      const res = await c.post("/v1/videos/generations", { model: "mis-video", prompt, image: img, seconds: 1 });
      ids.push(((await res.json()) as { id: string }).id);
    }
    for (const id of ids) {
      let j: any;
      for (const end = Date.now() + 20_000; Date.now() < end; await Bun.sleep(50)) {
        j = await (await c.get(`/v1/videos/generations/${id}`)).json();
        if (j.status === "failed" || j.status === "completed") break;
      }
      expect(j.status).toBe("failed");
      expect(JSON.stringify(j)).not.toContain(SECRET);
      expect(j.error.message).toContain("[redacted]");
    }

    const logged = logLines.slice(linesBefore).map((l) => JSON.stringify(l));
    expect(logged.some((l) => l.includes("calling upstream with key [redacted]"))).toBe(true);
    expect(logged.filter((l) => l.includes(SECRET))).toEqual([]);
    // what the client was charged for the stream is what it received, key or not
    expect((await c.account()).held).toBe(0);
  });
});
