/**
 * The native Messages pass-through from the compiled dist/reelay (on Postgres, from an empty
 * directory): a Claude model of the anthropic plugin on the fake Anthropic API, the official
 * Anthropic SDK streaming a thinking + tool_use turn with finalMessage() and giving the signed
 * thinking back on the next turn, which reaches Anthropic byte for byte; both turns billed exactly,
 * cache reads and writes at their prices. The same flows in process, with more checks:
 * src/modules/messages/native.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { fakeInputTokens, startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-upstream.ts";
import { CLAUDE_PRICES, claudeCost } from "../chat/native-messages-server.ts";
import { compiledBinary, createTestDatabase, dropDatabase, freePort, waitForOwnListener } from "../support/harness.ts";

const ADMIN = "binary-native-messages-admin-0123";
const CREDITS = 1_000_000;
const SIGNATURE = "EqQBCkYIBxgCKkB+/0aZ9m3Q==\u00e9";
let dir: string;
let fake: FakeAnthropic;
let databaseUrl: string;

beforeAll(async () => {
  compiledBinary();
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-native-"));
  fake = await startFakeAnthropic();
  databaseUrl = await createTestDatabase();
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [{ id: "claude", plugin: "anthropic", options: { baseUrl: fake.url, apiKeyEnv: "ANTHROPIC_API_KEY", upstreamModel: "claude-up" }, pricing: CLAUDE_PRICES, maxOutputTokens: 4096 }],
  }));
}, 300_000);
afterAll(async () => {
  await fake?.stop();
  if (databaseUrl) await dropDatabase(databaseUrl);
  rmSync(dir, { recursive: true, force: true });
});

test("from the binary: a streamed thinking + tool turn and the next one pass through natively, the signature intact, billed at the cache prices", async () => {
  const port = freePort();
  const env = {
    PATH: "/usr/bin:/bin", HOME: dir, PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json", REELAY_MODELS_FILE: "models.json",
    DATABASE_URL: databaseUrl, ANTHROPIC_API_KEY: fake.apiKey,
  };
  const logFile = join(dir, "serve.log");
  const proc = Bun.spawn([compiledBinary(), "serve"], { cwd: dir, env, stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, log, 60_000);
    const admin = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const account = await admin("/admin/accounts", { name: "bin-native", credits: CREDITS });
    const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "sdk" });
    const anthropic = new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0 });

    const tools: Anthropic.Tool[] = [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
    fake.behave({ thinking: "Look it up.", signature: SIGNATURE, toolUse: [{ name: "get_weather", input: { city: "Oslo" } }], text: "Cold.", cacheRead: 6, cacheWrite: 2 });
    const first = await anthropic.messages.stream({ model: "claude", max_tokens: 64, tools, system: [{ type: "text", text: "Be brief and precise, always.", cache_control: { type: "ephemeral" } }], messages: [{ role: "user", content: "Weather in Oslo?" }] }).finalMessage();
    expect(first.content[0]).toEqual({ type: "thinking", thinking: "Look it up.", signature: SIGNATURE });
    expect(first.stop_reason).toBe("tool_use");
    const call = first.content.find((b) => b.type === "tool_use")!;
    await anthropic.messages.create({
      model: "claude", max_tokens: 64, tools,
      messages: [{ role: "user", content: "Weather in Oslo?" }, { role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "-3°C" }] }],
    });
    expect(JSON.stringify(fake.requests[1]!.body.messages[1].content)).toBe(JSON.stringify(first.content));
    expect(fake.requests[0]!.body.system).toEqual([{ type: "text", text: "Be brief and precise, always.", cache_control: { type: "ephemeral" } }]);

    const auth = { authorization: `Bearer ${key}` };
    const rows = ((await (await fetch(`${url}/v1/usage`, { headers: auth })).json()) as any).data.reverse();
    expect(rows.map((r: any) => [r.route, r.model, r.prompt_tokens, r.cached_tokens, r.cache_write_tokens])).toEqual(fake.requests.map((r) => ["/v1/messages", "claude", fakeInputTokens(r.body), 6, 2]));
    for (const r of rows) expect(r.cost).toBe(claudeCost({ input: r.prompt_tokens - 8, cacheRead: 6, cacheWrite: 2, output: r.completion_tokens }));
    const acct = (await (await fetch(`${url}/v1/account`, { headers: auth })).json()) as any;
    expect([acct.balance, acct.held]).toEqual([CREDITS - rows.reduce((n: number, r: any) => n + r.cost, 0), 0]);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  expect(log()).not.toContain('"level":50');
}, 300_000);
