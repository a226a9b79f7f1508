/**
 * Codex CLI (`@openai/codex`, a dev dependency) pointed at a reelay, for end-to-end tests: a
 * CODEX_HOME with the config.toml a user would write (docs/coding-agents.md), and `codex exec` run
 * non-interactively with a deadline.
 *
 * Codex must reach nothing but reelay: update checks, analytics, feedback, the plugin marketplace
 * sync (`git ls-remote https://github.com/openai/plugins.git`) and apps are turned off in the
 * config, HOME is the test's own directory (no login-shell snapshot of the developer's dotfiles),
 * and every proxy variable points at a closed port, so whatever Codex might still try fails at once
 * instead of leaving the machine. Observed with `strace -f -e trace=connect` (Codex 0.171): with
 * this config the only connections are to reelay.
 *
 * The sandbox is off (`danger-full-access`, approvals `never`): the test machine may not allow
 * Codex's Landlock/seccomp sandbox, and the commands are the test's own.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fakePromptTokens, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { turnCompletionTokens, type ScriptedTurn } from "../fakes/scripted-chat.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
export const CODEX_BIN = join(ROOT, "node_modules/.bin/codex");

/** The env var that holds the reelay key (the provider's `env_key`). */
export const KEY_ENV = "REELAY_API_KEY";

/** config.toml for Codex against reelay's OpenAI-compatible base URL (`…/v1`). */
export function codexConfig(baseUrl: string, model: string): string {
  return `# Codex CLI through reelay (Responses API)
model = "${model}"
model_provider = "reelay"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.reelay]
name = "reelay"
base_url = "${baseUrl}"
env_key = "${KEY_ENV}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
tool_suggest = false
in_app_updates = false
skill_mcp_dependency_install = false
shell_snapshot = false
`;
}

export interface CodexSetup {
  /** the working directory Codex runs in (and writes files to) */
  work: string;
  env: Record<string, string>;
}

/** `dir/home` (HOME and CODEX_HOME, with config.toml) and `dir/work`. */
export function setUpCodex(dir: string, opts: { baseUrl: string; model: string; key: string }): CodexSetup {
  const home = join(dir, "home");
  const work = join(dir, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(home, "config.toml"), codexConfig(opts.baseUrl, opts.model));
  const closed = "http://127.0.0.1:9"; // discard port: nothing listens, a connection is refused at once
  return {
    work,
    env: {
      // node runs the npm wrapper (bin/codex.js); bash runs the commands
      PATH: [...new Set([dirname(Bun.which("node") ?? "/usr/bin/node"), "/usr/local/bin", "/usr/bin", "/bin"])].join(":"), HOME: home, CODEX_HOME: home, [KEY_ENV]: opts.key,
      HTTP_PROXY: closed, HTTPS_PROXY: closed, ALL_PROXY: closed, http_proxy: closed, https_proxy: closed, all_proxy: closed,
      NO_PROXY: "127.0.0.1,localhost", no_proxy: "127.0.0.1,localhost",
    },
  };
}

export interface CodexRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `codex <args>` in `setup.work`, stdin empty. Past `timeoutMs` its whole process group (the node
 * wrapper, the native binary, the shells it started) is killed and this throws, with what it printed.
 */
export function runCodex(setup: CodexSetup, args: string[], timeoutMs = 90_000): Promise<CodexRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(CODEX_BIN, args, { cwd: setup.work, env: setup.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {}
      reject(new Error(`codex ${args.join(" ")} did not finish within ${timeoutMs} ms and was killed (hung waiting on the server?)\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * The task both Codex tests give it: the model (scripted) reasons, has Codex write a file through
 * its shell tool `exec_command`, then answers; a resumed session gets a third turn.
 */
export const CODEX_TASK = {
  prompt: "Create note.txt saying who made it.",
  file: "note.txt",
  content: "made by codex through reelay",
  resumePrompt: "Are you still there?",
  turns: [
    { reasoning: "The user wants a file; I will write it with the shell.", toolCalls: [{ name: "exec_command", arguments: JSON.stringify({ cmd: "printf 'made by codex through reelay' > note.txt" }) }] },
    { reasoning: "The command succeeded.", reply: "Created note.txt." },
    { reasoning: "Resumed with the earlier turns.", reply: "Still here: note.txt is written." },
  ] satisfies ScriptedTurn[],
};

/** What each chat request the fake answered (of `upstreamModel`, if given) should have been billed: its prompt at the fake's count, its turn's completion tokens. */
export function expectedUsage(fake: FakeOpenAI, turns: ScriptedTurn[], upstreamModel?: string) {
  const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions" && (upstreamModel === undefined || r.body?.model === upstreamModel));
  return sent.map((r, i) => ({ prompt_tokens: fakePromptTokens(r.body.messages), completion_tokens: turns[i] ? turnCompletionTokens(turns[i]!) : -1 }));
}
