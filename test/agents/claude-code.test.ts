/**
 * Claude Code (the real CLI from node_modules/.bin, 2.1) through reelay, end to end, as a user
 * sets it up: only ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (a reelay key) and `--model <an alias>`.
 * It runs in a temporary directory with its own HOME and config directory (it touches nothing of
 * ours) and no network but reelay. The upstream is the fake OpenAI-compatible server, scripted to
 * answer the first turn with a call to Claude Code's `Write` tool and the turn after the tool
 * result with a final answer. Asserts what the user sees (exit 0, the answer printed, the file
 * written) and the money: the account is charged exactly the sum of the turns' usage rows, each the
 * upstream's reported usage at the model's prices.
 *
 * What Claude Code 2.1 sends (found by logging what reelay and the fake receive): `HEAD /`, then
 * one `POST /v1/messages?beta=true` per turn (x-api-key, anthropic-version, a long anthropic-beta,
 * `thinking: {type: "adaptive"}`, `output_config.effort`, `context_management`, system text blocks
 * with cache_control, a mid-conversation `system` message, ~24 custom tools, `stream: true`). With
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC it sends no background requests (title, quota) and no
 * count_tokens; the small fast model is set to an alias anyway, as docs/coding-agents.md says.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakePromptTokens } from "../fakes/openai-upstream.ts";
import { cost, startMessagesServer, type MessagesServer } from "../chat/messages-server.ts";

const CLAUDE = join(import.meta.dir, "../../node_modules/.bin/claude");
const CREDITS = 5_000_000;

let t: MessagesServer;
const dir = mkdtempSync(join(tmpdir(), "reelay-claude-code-"));
beforeAll(async () => { t = await startMessagesServer(); }, 60_000);
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("claude -p writes a file with its Write tool and answers; the account pays exactly the turns' usage", async () => {
  const { key, get } = await t.newClient(CREDITS);
  const work = join(dir, "work");
  const home = join(dir, "home");
  mkdirSync(work);
  mkdirSync(home);
  const file = join(work, "hello.txt");
  const content = "hello from reelay\n";
  t.fake.behave({ toolCalls: [{ name: "Write", arguments: JSON.stringify({ file_path: file, content }) }], reply: "I created hello.txt for you." });
  const logFrom = t.logLines.length;

  const proc = Bun.spawn([CLAUDE, "-p", "Create hello.txt saying hello from reelay.", "--model", "claude-sonnet-test", "--permission-mode", "acceptEdits"], {
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
      ANTHROPIC_SMALL_FAST_MODEL: "claude-haiku-test",
      ANTHROPIC_DEFAULT_HAIKU_MODEL: "claude-haiku-test",
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

  // every request Claude Code sent was answered, none with an error
  const seen = t.logLines.slice(logFrom).filter((l) => l.msg === "request");
  expect(seen.filter((l) => l.status >= 400).map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual([]);
  expect(seen.filter((l) => l.route === "/v1/messages").length).toBeGreaterThanOrEqual(2);

  // two turns reached the upstream as chat completions: the Write call, then the answer after its result
  const turns = t.fake.requests;
  if (process.env.CLAUDE_CODE_DEBUG) console.log(seen.map((l) => `${l.method} ${l.path} ${l.status}`), JSON.stringify(turns.map((r) => ({ ...r.body, tools: r.body.tools?.length, messages: r.body.messages.map((m: any) => m.role) }))));
  expect(turns.map((r) => r.path)).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
  expect(turns.every((r) => r.body.model === "up-a" && r.body.stream === true)).toBe(true);
  expect(turns[0]!.body.tools.map((x: any) => x.function.name)).toContain("Write");
  expect(turns[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_fake0" });

  // money: each turn a usage row at the upstream's reported usage; the balance moved by their sum, nothing held
  const rows = ((await get("/v1/usage")).data as any[]).reverse();
  expect(rows.map((r) => [r.route, r.model, r.status, r.token_source])).toEqual([
    ["/v1/messages", "chat-a", 200, "upstream"],
    ["/v1/messages", "chat-a", 200, "upstream"],
  ]);
  rows.forEach((r, i) => {
    expect(r.prompt_tokens).toBe(fakePromptTokens(turns[i]!.body.messages));
    expect(r.cost).toBe(cost(r.prompt_tokens, r.completion_tokens));
  });
  const acct = await get("/v1/account");
  expect([acct.balance, acct.held]).toEqual([CREDITS - rows.reduce((n, r) => n + r.cost, 0), 0]);
  expect(rows.every((r) => r.cost > 0)).toBe(true);
}, 120_000);
