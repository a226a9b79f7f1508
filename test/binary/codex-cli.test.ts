/**
 * Codex CLI through the compiled dist/reelay, alone in an empty directory on embedded PGlite and
 * without REELAY_SECRET_KEY (reasoning sealed with the data directory's generated key): the
 * operator's CLI makes an account and a key, `reelay serve` relays to a chat upstream (the fake,
 * scripted), `codex exec` writes a file through its shell tool and answers, `codex exec resume`
 * continues with the sealed reasoning given back to the model, and the account paid exactly the
 * usage rows. The same flow in process, with more checks: src/modules/responses/codex-cli.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { scriptedTurns } from "../fakes/scripted-chat.ts";
import { CODEX_TASK, expectedUsage, runCodex, setUpCodex } from "../support/codex-cli.ts";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";

const ADMIN = "binary-codex-admin-token-0123";
const CREDITS = 5_000_000;
let dir: string;
let bin: string;
let fake: FakeOpenAI;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-codex-"));
  bin = join(dir, "reelay");
  copyFileSync(compiledBinary(), bin);
  Bun.spawnSync(["chmod", "+x", bin]);
  mkdirSync(join(dir, "tmp"));
  fake = await startFakeOpenAI();
  fake.script(scriptedTurns(CODEX_TASK.turns).pick);
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [{ id: "coder", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 4_000_000 } }],
  }));
}, 300_000);
afterAll(async () => {
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true }); // a 220 MB copy of the binary
});

const env = (port: number) => ({
  PATH: "/usr/bin:/bin", HOME: dir, TMPDIR: join(dir, "tmp"), PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json",
  REELAY_MODELS_FILE: join(dir, "models.json"),
});
function cli(...args: string[]) {
  const r = Bun.spawnSync([bin, ...args], { cwd: dir, env: env(0) });
  return JSON.parse(r.stdout.toString());
}

test("from the binary on PGlite: codex exec writes a file through exec_command, resume carries the sealed reasoning, billed exactly", async () => {
  const account = cli("accounts", "create", "--name", "bin-codex", "--credits", String(CREDITS)).id;
  const key = cli("keys", "create", "--account", account, "--name", "codex").key;
  const port = freePort();
  const logFile = join(dir, "serve.log");
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env: env(port), stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, log, 90_000);
    const codex = setUpCodex(join(dir, "codex"), { baseUrl: `${url}/v1`, model: "coder", key });
    const first = await runCodex(codex, ["exec", "--skip-git-repo-check", CODEX_TASK.prompt]);
    expect({ code: first.code, stdout: first.stdout.trim() }).toEqual({ code: 0, stdout: CODEX_TASK.turns[1]!.reply! });
    expect(readFileSync(join(codex.work, CODEX_TASK.file), "utf8")).toBe(CODEX_TASK.content);
    const resumed = await runCodex(codex, ["exec", "resume", "--last", "--skip-git-repo-check", CODEX_TASK.resumePrompt]);
    expect({ code: resumed.code, stdout: resumed.stdout.trim() }).toEqual({ code: 0, stdout: CODEX_TASK.turns[2]!.reply! });

    const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions");
    expect(sent.at(-1)!.body.messages.filter((m: any) => m.reasoning_content).map((m: any) => m.reasoning_content)).toEqual([CODEX_TASK.turns[0]!.reasoning, CODEX_TASK.turns[1]!.reasoning]);
    const auth = { authorization: `Bearer ${key}` };
    const rows = ((await (await fetch(`${url}/v1/usage?limit=100`, { headers: auth })).json()) as any).data.reverse();
    const expected = expectedUsage(fake, CODEX_TASK.turns);
    expect(expected).toHaveLength(3);
    const costOf = (e: { prompt_tokens: number; completion_tokens: number }) => e.prompt_tokens + e.completion_tokens * 4;
    expect(rows.map((u: any) => ({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cost: u.cost }))).toEqual(expected.map((e) => ({ ...e, cost: costOf(e) })));
    const acct = (await (await fetch(`${url}/v1/account`, { headers: auth })).json()) as any;
    expect([acct.balance, acct.held]).toEqual([CREDITS - expected.reduce((sum, e) => sum + costOf(e), 0), 0]);
    // no REELAY_SECRET_KEY: the embedded default's generated key sealed the reasoning
    expect(existsSync(join(dir, "data", "secret.key"))).toBe(true);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  expect(log()).not.toContain('"level":50');
}, 300_000);
