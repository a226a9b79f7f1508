/**
 * Codex CLI end to end: the real `codex exec` (0.171, from node_modules) with only its provider's
 * base URL and key pointed at reelay, over a chat upstream (the fake) scripted to make Codex run a
 * shell command through its `exec_command` tool, then answer. Codex speaks only the Responses API
 * and sends everything this route must take: a `namespace` tool group, a hosted `web_search` tool,
 * `include: ["reasoning.encrypted_content"]`, `store: false`, developer messages, streaming. A
 * second run resumes the session: Codex sends the whole conversation back, sealed reasoning
 * included, and the model gets it all. Under one of OpenAI's newest model names Codex sends its
 * tools as `additional_tools` items and works in "code mode" (a free-form `exec` tool running
 * JavaScript that calls its other tools): that runs too. (The exec + resume flow through the
 * compiled binary: test/binary/codex-cli.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../../../test/fakes/openai-upstream.ts";
import { scriptedTurns, type ScriptedTurn } from "../../../test/fakes/scripted-chat.ts";
import { CODEX_TASK, expectedUsage, runCodex, setUpCodex, type CodexSetup } from "../../../test/support/codex-cli.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { cost, PRICING } from "../../../test/chat/chat-server.ts";

const CREDITS = 10_000_000;
const { turns: TURNS } = CODEX_TASK;

let dir: string;
let fake: FakeOpenAI;
let s: TestServer;
let codex: CodexSetup;
let client: { key: string; accountId: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "reelay-codex-"));
  fake = await startFakeOpenAI();
  const task = scriptedTurns(TURNS);
  const codeMode = scriptedTurns(CODE_MODE_TURNS);
  fake.script((body) => (body?.model === "up-sol" ? codeMode.pick(body) : task.pick(body)));
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [
      { id: "coder", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "up-coder" }, pricing: PRICING },
      // a name Codex 0.171 knows as one of OpenAI's newest models (it then sends its tools its newest way)
      { id: "gpt-6.2-sol", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "up-sol" }, pricing: PRICING },
    ],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: join(dir, "models.json"), REELAY_SECRET_KEY: "codex-test-operator-secret-0123456789abcdef" });
  client = await s.newClient({ credits: CREDITS });
  codex = setUpCodex(dir, { baseUrl: `${s.url}/v1`, model: "coder", key: client.key });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const CODE_MODE_TURNS: ScriptedTurn[] = [
  { toolCalls: [{ name: "exec", arguments: JSON.stringify({ input: 'const r = await tools.exec_command({ cmd: "printf code-mode > code.txt" }); text(JSON.stringify(r));' }) }] },
  { reply: "Ran it in code mode." },
];

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${client.key}` } })).json() as Promise<any>;
const chatRequests = () => fake.requests.filter((r) => r.path === "/v1/chat/completions" && r.body.model === "up-coder");

/** One usage row per upstream call, at the fake's counts, and the account paid exactly their sum. */
async function expectBilledExactly(turns: number) {
  const expected = expectedUsage(fake, TURNS, "up-coder");
  expect(expected).toHaveLength(turns);
  const rows = (await get("/v1/usage?limit=100")).data.reverse();
  expect(rows.map((u: any) => ({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cost: u.cost, route: u.route, model: u.model, status: u.status })))
    .toEqual(expected.map((e) => ({ ...e, cost: cost(e.prompt_tokens, e.completion_tokens), route: "/v1/responses", model: "coder", status: 200 })));
  const acct = await get("/v1/account");
  expect([acct.balance, acct.held]).toEqual([CREDITS - expected.reduce((sum, e) => sum + cost(e.prompt_tokens, e.completion_tokens), 0), 0]);
}

test("codex exec runs a shell command through exec_command, answers, and the account pays exactly the turns' usage", async () => {
  const run = await runCodex(codex, ["exec", "--skip-git-repo-check", CODEX_TASK.prompt]);
  expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr }).toEqual({ code: 0, stderr: "" });
  expect(run.stdout.trim()).toBe(TURNS[1].reply!);
  expect(readFileSync(join(codex.work, CODEX_TASK.file), "utf8")).toBe(CODEX_TASK.content);

  const [first, second] = chatRequests();
  // what Codex offered, as the model saw it: its functions, the multi-agent namespace flattened, web_search left out
  const offered = first!.body.tools.map((t: any) => t.function.name);
  expect(offered).toContain("exec_command");
  expect(offered).toContain("multi_agent_v1__spawn_agent");
  expect(first!.body.tools.every((t: any) => t.type === "function")).toBe(true);
  expect(first!.body).toMatchObject({ model: "up-coder", stream: true, tool_choice: "auto", parallel_tool_calls: true });
  expect(typeof first!.body.prompt_cache_key).toBe("string"); // Codex's session id, forwarded
  for (const k of ["client_metadata", "include", "store", "reasoning", "input"]) expect(first!.body[k]).toBeUndefined();
  expect(first!.body.messages[0].role).toBe("system"); // Codex's developer message
  // the second call carries the tool call, with the reasoning that led to it (sealed by reelay, sent back by Codex), and its result
  const call = second!.body.messages.find((m: any) => m.tool_calls);
  expect(call).toMatchObject({ role: "assistant", reasoning_content: TURNS[0].reasoning, tool_calls: [{ type: "function", function: { name: "exec_command", arguments: TURNS[0].toolCalls![0]!.arguments } }] });
  expect(second!.body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: call.tool_calls[0].id });
  expect(second!.body.messages.at(-1).content).toContain("exited with code 0");
  await expectBilledExactly(2);
}, 120_000);

test("codex exec resume --last sends the first run's conversation back, sealed reasoning included, and is billed", async () => {
  const run = await runCodex(codex, ["exec", "resume", "--last", "--skip-git-repo-check", CODEX_TASK.resumePrompt]);
  expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr }).toEqual({ code: 0, stderr: "" });
  expect(run.stdout.trim()).toBe(TURNS[2].reply!);
  const resumed = chatRequests()[2]!.body.messages;
  const conversation = resumed.filter((m: any) => m.role !== "system" && !String(m.content).startsWith("<environment_context>"));
  expect(conversation).toEqual([
    { role: "user", content: CODEX_TASK.prompt },
    { role: "assistant", content: null, reasoning_content: TURNS[0].reasoning, tool_calls: [expect.objectContaining({ function: { name: "exec_command", arguments: TURNS[0].toolCalls![0]!.arguments } })] },
    expect.objectContaining({ role: "tool" }),
    { role: "assistant", content: TURNS[1].reply, reasoning_content: TURNS[1].reasoning },
    { role: "user", content: CODEX_TASK.resumePrompt },
  ]);
  await expectBilledExactly(3);
}, 120_000);

test("under an OpenAI model name: tools sent as additional_tools items, the free-form `exec` tool (code mode) runs JavaScript that runs a shell command", async () => {
  const other = await s.newClient({ credits: CREDITS });
  const sol = setUpCodex(join(dir, "sol"), { baseUrl: `${s.url}/v1`, model: "gpt-6.2-sol", key: other.key });
  const run = await runCodex(sol, ["exec", "--skip-git-repo-check", "Write code.txt."]);
  const ok = run.code === 0 && run.stdout.trim() === CODE_MODE_TURNS[1]!.reply;
  // one comparison, so that a failure shows Codex's whole account of it
  expect({ code: run.code, stdout: run.stdout.trim(), stderr: ok ? "" : run.stderr, file: existsSync(join(sol.work, "code.txt")) ? readFileSync(join(sol.work, "code.txt"), "utf8") : null })
    .toEqual({ code: 0, stdout: CODE_MODE_TURNS[1]!.reply!, stderr: "", file: "code-mode" });
  const [first, second] = fake.requests.filter((r) => r.path === "/v1/chat/completions" && r.body.model === "up-sol");
  // offered: the `functions` namespace's members under their own names (`exec` a one-string function), other groups flattened
  const exec = first!.body.tools.find((t: any) => t.function.name === "exec");
  expect(exec.function.parameters).toMatchObject({ required: ["input"], properties: { input: { type: "string" } } });
  expect(first!.body.tools.map((t: any) => t.function.name)).toContain("collaboration__spawn_agent");
  // Codex ran the custom tool call and sent its output back
  expect(second!.body.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_fake0" });
  expect(second!.body.messages.at(-1).content).toContain('"exit_code":0');
  const billed = expectedUsage(fake, CODE_MODE_TURNS, "up-sol").reduce((sum, e) => sum + cost(e.prompt_tokens, e.completion_tokens), 0);
  expect((await (await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${other.key}` } })).json() as any).balance).toBe(CREDITS - billed);
}, 120_000);
