/**
 * The README's walkthrough, run as written so it cannot rot: the server is started with the
 * README's own command (`npm start`, on embedded PGlite), then every code block the README marks
 * with `<!-- readme-test: server running -->` runs against it (bash blocks in one shell session,
 * `ts` blocks with bun), the server is stopped, and the blocks marked
 * `<!-- readme-test: server stopped -->` run (the CLI on the same data directory).
 *
 * Only marked blocks run: a new README section is not executed unless its author marks it. The
 * only edits to the text are the port (`localhost:8080` → the test's own free port) and, for the
 * TypeScript blocks, nothing at all. Nothing else is configured: no models file, so the SDK
 * example chats with the built-in `stories260k` a fresh clone has.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../support/harness.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

interface ReadmeBlock {
  when: "server running" | "server stopped";
  lang: string;
  code: string;
  line: number;
}

/** The fenced blocks right after a `<!-- readme-test: … -->` marker, in README order. */
function markedBlocks(readme: string): ReadmeBlock[] {
  const blocks: ReadmeBlock[] = [];
  const marker = /^<!-- readme-test: (server running|server stopped) -->\n```(\w+)\n([\s\S]*?)\n```/gm;
  for (const m of readme.matchAll(marker)) {
    blocks.push({ when: m[1] as ReadmeBlock["when"], lang: m[2]!, code: m[3]!, line: readme.slice(0, m.index).split("\n").length });
  }
  const markers = readme.match(/^<!-- readme-test:[^>]*-->$/gm)?.length ?? 0; // on a line of its own
  if (markers !== blocks.length) throw new Error(`README has ${markers} readme-test markers but ${blocks.length} are followed directly by a fenced block`);
  return blocks;
}

async function run(cmd: string[], opts: { cwd: string; env: Record<string, string>; stdin?: string }) {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env, stdin: opts.stdin ? new TextEncoder().encode(opts.stdin) : "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { out, err, code };
}

/** is `pid` our `ancestor` or one of its descendants? (npm start runs sh, which runs bun) */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid, i = 0; p > 1 && i < 10; i++) {
    if (p === ancestor) return true;
    const stat = readFileSync(`/proc/${p}/stat`, "utf8");
    p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  }
  return false;
}

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const blocks = markedBlocks(readme);
const admin = /ADMIN=(\S+)/.exec(blocks.find((b) => b.lang === "sh")?.code ?? "")?.[1];
const port = freePort();
const work = mkdtempSync(join(tmpdir(), "reelay-readme-"));
const dataDir = join(work, "data");
let server: Subprocess<"ignore", "pipe", "pipe"> | undefined;
let serverPid = 0;
let serverOut = "";
const baseEnv = () => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? work,
  REELAY_ADMIN_TOKEN: admin!,
  REELAY_DATA_DIR: dataDir,
  REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins",
  REELAY_LOG_FORMAT: "json",
});
const onOurPort = (code: string) => code.replaceAll("http://localhost:8080", `http://127.0.0.1:${port}`);

beforeAll(async () => {
  // the README's command, on a port of our own
  server = Bun.spawn(["npm", "start"], { cwd: ROOT, env: { ...baseEnv(), PORT: String(port), HOST: "127.0.0.1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const pump = async (s: ReadableStream<Uint8Array>) => { for await (const c of s) serverOut += new TextDecoder().decode(c); };
  void pump(server.stdout);
  void pump(server.stderr);
  const until = Date.now() + 60_000;
  while (!serverPid) {
    for (const line of serverOut.split("\n")) {
      try {
        const j = JSON.parse(line) as { msg?: string; pid?: number; url?: string };
        if (j.msg === "reelay listening" && new URL(j.url!).port === String(port) && descendsFrom(j.pid!, server.pid)) serverPid = j.pid!;
      } catch {}
    }
    if (server.exitCode !== null) throw new Error(`npm start exited with ${server.exitCode}:\n${serverOut}`);
    if (Date.now() > until) throw new Error(`npm start did not listen on ${port} within 60 s:\n${serverOut}`);
    await Bun.sleep(50);
  }
}, 90_000);

afterAll(async () => {
  if (serverPid) process.kill(serverPid, "SIGTERM");
  await server?.exited;
  rmSync(work, { recursive: true, force: true });
});

test("the README marks the walkthrough, the CLI and the SDK example for this test", () => {
  expect(admin).toBeString();
  expect(blocks.map((b) => `${b.when}/${b.lang}`)).toEqual(["server running/sh", "server stopped/sh", "server running/ts"]);
});

test("the walkthrough runs as written against `npm start`, then the CLI on the stopped server's data", async () => {
  const env = { ...baseEnv() };
  // bash blocks: one session, strict mode; the sample image is found where the README says
  mkdirSync(join(work, "examples"));
  copyFileSync(join(ROOT, "examples/photo.png"), join(work, "examples/photo.png"));
  const shRunning = blocks.filter((b) => b.when === "server running" && b.lang === "sh").map((b) => onOurPort(b.code)).join("\n");
  const walk = await run(["bash", "-euo", "pipefail", "-s"], { cwd: work, env, stdin: `${shRunning}\nprintf '\\n__KEY=%s\\n' "$KEY"\n` });
  expect({ code: walk.code, err: walk.err }).toEqual({ code: 0, err: "" });
  const key = /__KEY=(\S+)/.exec(walk.out)![1]!;
  expect(key).toStartWith("rl-");
  expect(walk.out).toMatch(/vid_\w+: completed/);
  expect(walk.out).toContain('{"id":"use-lite","capabilities":["embeddings"]}');
  const job = JSON.parse(readFileSync(join(work, "job.json"), "utf8"));
  expect(job.status).toBe("completed");
  const mp4 = await ffprobe(new Uint8Array(readFileSync(join(work, "out.mp4"))));
  expect(mp4.streams[0]).toMatchObject({ codec_name: "h264", width: 480, height: 832 });

  // TypeScript blocks with bun, from inside the repository so `openai` resolves
  const tsDir = join(ROOT, "node_modules/.cache/reelay-readme-test");
  mkdirSync(tsDir, { recursive: true });
  for (const [i, b] of blocks.filter((x) => x.when === "server running" && x.lang === "ts").entries()) {
    const file = join(tsDir, `block-${process.pid}-${i}.ts`);
    writeFileSync(file, onOurPort(b.code));
    const r = await run(["bun", file], { cwd: ROOT, env: { ...env, KEY: key } }).finally(() => rmSync(file, { force: true }));
    expect({ line: b.line, code: r.code, err: r.err }).toEqual({ line: b.line, code: 0, err: "" });
    // the embedding's length and prompt tokens, then stories260K's story and its usage chunk
    const printed = /^512 5\n([\s\S]+)\n\((\d+) prompt \+ (\d+) completion tokens\)\n$/.exec(r.out);
    expect(printed, r.out).not.toBeNull();
    expect(printed![1]!.trim().split(/\s+/).length).toBeGreaterThan(3);
    expect(Number(printed![3])).toBeGreaterThan(0);
    expect(Number(printed![3])).toBeLessThanOrEqual(40);
    // billed to the key's account like any chat
    const usage = (await (await fetch(`http://127.0.0.1:${port}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] };
    expect(usage.data[0]).toMatchObject({ kind: "chat", model: "stories260k", prompt_tokens: Number(printed![2]), completion_tokens: Number(printed![3]), token_source: "local", status: 200 });
  }

  // stop the server (PGlite: one process at a time), then the CLI blocks on its data
  process.kill(serverPid, "SIGTERM");
  await server!.exited;
  serverPid = 0;
  const shStopped = blocks.filter((b) => b.when === "server stopped").map((b) => b.code).join("\n");
  const cli = await run(["bash", "-euo", "pipefail", "-s"], { cwd: ROOT, env, stdin: shStopped });
  expect({ code: cli.code, err: cli.err }).toEqual({ code: 0, err: "" });
  expect(cli.out).toContain('"balance": 14750000'); // 5 USD + 10 USD granted − 0.25 USD adjusted
  expect(cli.out).toContain("keys create --account ACCOUNT_ID"); // help
}, 240_000);
