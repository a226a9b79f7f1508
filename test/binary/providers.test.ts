/**
 * Upstream providers from the compiled dist/reelay, alone in an empty directory on embedded
 * PGlite: openai-compatible presets (Groq, Azure OpenAI with its api-key header and deployment
 * URL, DeepSeek with its cache fields), the native gemini plugin and the native bedrock plugin (the
 * AWS SDK, SigV4 and ConverseStream's event-stream decoding bundled into the binary), each pointed
 * at its fake; one chat each, streamed where the wire format differs, every bill exact.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { FAKE_AWS, startFakeBedrock } from "../fakes/bedrock.ts";
import { startFakeGemini } from "../fakes/gemini.ts";
import { startFakeProvider } from "../fakes/openai-presets.ts";
import { startFakeOpenAI } from "../fakes/openai-upstream.ts";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";

const ADMIN = "binary-providers-admin-token-0123";
const inner = await startFakeOpenAI();
const groq = await startFakeProvider("groq", { inner });
const azure = await startFakeProvider("azure-openai", { inner });
const deepseek = await startFakeProvider("deepseek", { inner });
const gemini = await startFakeGemini();
const bedrock = await startFakeBedrock();
const PRICE = { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000, cachedInputPerMillion: 500_000, cacheWritePerMillion: 1_250_000 };
let dir: string;
let bin: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-providers-"));
  bin = join(dir, "reelay");
  copyFileSync(compiledBinary(), bin);
  Bun.spawnSync(["chmod", "+x", bin]);
}, 300_000);
afterAll(async () => {
  await Promise.all([groq.stop(), azure.stop(), deepseek.stop(), gemini.stop(), bedrock.stop()]);
  await inner.stop();
  rmSync(dir, { recursive: true, force: true }); // a 220 MB copy of the binary
});

test("from the binary on PGlite: presets, gemini and bedrock answer, streamed and not, billed exactly", async () => {
  const port = freePort();
  const model = (id: string, plugin: string, options: Record<string, unknown>) => ({ id, plugin, options, pricing: PRICE, maxOutputTokens: 64 });
  writeFileSync(join(dir, "models.yaml"), JSON.stringify({ builtins: false, models: [
    model("llama", "openai-compatible", { provider: "groq", baseUrl: groq.url, upstreamModel: "llama-3.3-70b-versatile" }),
    model("gpt", "openai-compatible", { provider: "azure-openai", baseUrl: azure.url, upstreamModel: "gpt-4o", apiVersion: "2024-10-21" }),
    model("deepseek", "openai-compatible", { provider: "deepseek", baseUrl: deepseek.url, upstreamModel: "deepseek-chat" }),
    model("flash", "gemini", { baseUrl: gemini.url, upstreamModel: "gemini-2.5-flash" }),
    model("nova", "bedrock", { baseUrl: bedrock.url, region: "eu-west-3", upstreamModel: "amazon.nova-lite-v1:0" }),
  ] }));
  const env = {
    PATH: "/usr/bin:/bin", HOME: dir, PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json", REELAY_MODELS_FILE: "models.yaml",
    GROQ_API_KEY: groq.apiKey, AZURE_OPENAI_API_KEY: azure.apiKey, DEEPSEEK_API_KEY: deepseek.apiKey, GEMINI_API_KEY: gemini.apiKey,
    AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId, AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey,
  };
  const logFile = join(dir, "serve.log");
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env, stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, log, 60_000);
    const admin = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const account = await admin("/admin/accounts", { name: "bin-providers", credits: 10_000_000 });
    const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "k" });
    const openai = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Count for me." }];
    const cost = (u: any) => Math.ceil(((u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0) - (u.prompt_tokens_details?.cache_write_tokens ?? 0)) * PRICE.inputPerMillion
      + (u.prompt_tokens_details?.cached_tokens ?? 0) * PRICE.cachedInputPerMillion + (u.prompt_tokens_details?.cache_write_tokens ?? 0) * PRICE.cacheWritePerMillion + u.completion_tokens * PRICE.outputPerMillion) / 1_000_000);
    let spent = 0;

    groq.behave({ reasoning: "Think.", reply: " one two" });
    const llama = await openai.chat.completions.create({ model: "llama", messages, max_tokens: 8, logprobs: true });
    expect([llama.choices[0]!.message.content, (llama.choices[0]!.message as any).reasoning_content]).toEqual([" one two", "Think."]);
    spent += cost(llama.usage);

    const gpt = await openai.chat.completions.create({ model: "gpt", messages, max_tokens: 4 });
    expect(gpt.choices[0]!.message.content).toBe(" one two three four");
    expect(azure.requests.map((r) => [r.path, r.query["api-version"], r.headers["api-key"], "authorization" in r.headers])).toEqual([["/openai/deployments/gpt-4o/chat/completions", "2024-10-21", azure.apiKey, false]]);
    spent += cost(gpt.usage);

    deepseek.behave({ cachedTokens: 3 });
    let usage: any;
    for await (const c of await openai.chat.completions.create({ model: "deepseek", messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } })) usage = c.usage ?? usage;
    expect(usage.prompt_tokens_details.cached_tokens).toBe(3);
    spent += cost(usage);

    gemini.behave({ thought: "Hmm.", tokens: 3, cachedTokens: 2 });
    let text = "";
    usage = undefined;
    for await (const c of await openai.chat.completions.create({ model: "flash", messages, max_tokens: 16, stream: true, stream_options: { include_usage: true } })) {
      text += c.choices[0]?.delta?.content ?? "";
      usage = c.usage ?? usage;
    }
    expect([text, usage.prompt_tokens_details.cached_tokens]).toEqual([" one two three", 2]);
    spent += cost(usage);

    bedrock.behave({ tokens: 3, cacheRead: 4, cacheWrite: 1 });
    text = "";
    usage = undefined;
    for await (const c of await openai.chat.completions.create({ model: "nova", messages, max_tokens: 16, stream: true, stream_options: { include_usage: true } })) {
      text += c.choices[0]?.delta?.content ?? "";
      usage = c.usage ?? usage;
    }
    expect([text, usage.prompt_tokens_details]).toEqual([" one two three", { cached_tokens: 4, cache_write_tokens: 1 }]);
    expect(bedrock.requests[0]!.region).toBe("eu-west-3"); // signed, and the signature checked by the fake
    spent += cost(usage);

    bedrock.behave({ exception: "ThrottlingException", retryAfter: 9 });
    const throttled = (await openai.chat.completions.create({ model: "nova", messages, max_tokens: 4 }).then(() => null, (e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect([throttled.status, throttled.headers?.get("retry-after")]).toEqual([429, "9"]);

    const balance = await fetch(`${url}/v1/account`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as Promise<any>);
    expect(balance).toMatchObject({ balance: 10_000_000 - spent, held: 0 });
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 120_000);
