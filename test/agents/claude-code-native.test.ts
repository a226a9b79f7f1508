/**
 * Claude Code (the real CLI, as in claude-code.test.ts) through reelay to a model of the anthropic
 * plugin: its /v1/messages requests pass through natively to the fake Anthropic API. The upstream
 * answers the first turn with a thinking block (a signature) and a call to the `Write` tool, and
 * the turn after the tool result with a final answer. Asserts what the user sees (exit 0, the
 * answer, the file), that Claude Code's own request reached Anthropic untranslated (its system
 * blocks with cache_control, its betas, its thinking block given back with the signature byte for
 * byte on the second turn), and the money: each turn's usage row at Anthropic's reported usage,
 * cache reads and writes at their prices, the account charged exactly their sum.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakeInputTokens } from "../fakes/anthropic-upstream.ts";
import { claudeCost, NATIVE_ALIAS, startNativeMessagesServer, type NativeMessagesServer } from "../chat/native-messages-server.ts";

const CLAUDE = join(import.meta.dir, "../../node_modules/.bin/claude");
const CREDITS = 5_000_000;
const SIGNATURE = "EqQBCkYIBxgCKkB+/0aZ9m3Q==";

let t: NativeMessagesServer;
const dir = mkdtempSync(join(tmpdir(), "reelay-claude-code-native-"));
beforeAll(async () => { t = await startNativeMessagesServer({ maxOutputTokens: 64_000 }); }, 60_000);
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("claude -p over a Claude model: passed through natively (thinking signed, cache_control, betas), the Write tool used, billed exactly", async () => {
  const { key, get } = await t.newClient(CREDITS);
  const work = join(dir, "work");
  const home = join(dir, "home");
  mkdirSync(work);
  mkdirSync(home);
  const file = join(work, "hello.txt");
  const content = "hello from reelay\n";
  const thinking = "The user wants a file; I will use the Write tool.";
  t.fake.behave({ thinking, signature: SIGNATURE, toolUse: [{ name: "Write", input: { file_path: file, content } }], text: "I created hello.txt for you.", cacheRead: 1_000, cacheWrite: 200 });
  const logFrom = t.logLines.length;

  const proc = Bun.spawn([CLAUDE, "-p", "Create hello.txt saying hello from reelay.", "--model", NATIVE_ALIAS, "--permission-mode", "acceptEdits"], {
    cwd: work,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      CLAUDE_CONFIG_DIR: join(home, ".claude"),
      ANTHROPIC_BASE_URL: t.s.url,
      ANTHROPIC_API_KEY: key,
      ANTHROPIC_SMALL_FAST_MODEL: NATIVE_ALIAS,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: NATIVE_ALIAS,
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  });
  const timer = setTimeout(() => proc.kill(), 90_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);

  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toContain("I created hello.txt for you.");
  expect(existsSync(file) && readFileSync(file, "utf8")).toBe(content);

  const seen = t.logLines.slice(logFrom).filter((l) => l.msg === "request");
  expect(seen.filter((l) => l.status >= 400).map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([]);

  // the turns reached Anthropic as Claude Code wrote them: nothing went through chat
  const turns = t.fake.requests.filter((r) => r.path === "/v1/messages");
  if (process.env.CLAUDE_CODE_DEBUG) console.log(stdout, seen.map((l) => `${l.method} ${l.path} ${l.status}`), JSON.stringify(t.fake.requests.map((r) => ({ path: r.path, beta: r.headers["anthropic-beta"], ...r.body, tools: r.body?.tools?.length, system: undefined })), null, 1));
  expect(t.openai.requests).toEqual([]);
  expect(turns).toHaveLength(2);
  expect(turns.every((r) => r.body.model === "claude-up" && r.body.stream === true && r.body.thinking?.type === "adaptive")).toBe(true);
  expect(turns[0]!.body.tools.map((x: any) => x.name)).toContain("Write");
  expect(turns[0]!.body.system.some((b: any) => b.cache_control)).toBe(true);
  expect(turns[0]!.headers["anthropic-beta"]).toMatch(/claude-code-/);
  // the thinking block Anthropic signed, given back untouched with the Write call before its result
  const given = turns[1]!.body.messages.find((m: any) => m.role === "assistant" && Array.isArray(m.content) && m.content.some((b: any) => b.type === "tool_use"));
  expect(given.content[0]).toEqual({ type: "thinking", thinking, signature: SIGNATURE });
  expect(turns[1]!.body.messages.at(-1).content.some((b: any) => b.type === "tool_result")).toBe(true);

  // money: each turn a usage row at Anthropic's reported usage, cache reads and writes at their prices; the balance moved by their sum
  const rows = ((await get("/v1/usage")).data as any[]).reverse();
  expect(rows.map((r) => [r.route, r.model, r.status, r.token_source, r.cached_tokens, r.cache_write_tokens])).toEqual([
    ["/v1/messages", "claude-native", 200, "upstream", 1_000, 200],
    ["/v1/messages", "claude-native", 200, "upstream", 1_000, 200],
  ]);
  rows.forEach((r, i) => {
    expect(r.prompt_tokens).toBe(fakeInputTokens(turns[i]!.body));
    expect(r.cost).toBe(claudeCost({ input: r.prompt_tokens - 1_200, cacheRead: 1_000, cacheWrite: 200, output: r.completion_tokens }));
  });
  const acct = await get("/v1/account");
  expect([acct.balance, acct.held]).toEqual([CREDITS - rows.reduce((n, r) => n + r.cost, 0), 0]);
}, 120_000);
