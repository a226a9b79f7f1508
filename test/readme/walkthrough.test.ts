/**
 * The README's tour and the docs' examples, run as written so they cannot rot (markers:
 * test/readme/doc-blocks.ts). The server is started with the README's own command (`npm start`, on
 * embedded PGlite), then every block marked `server running` runs against it — the README's in
 * order, then the docs pages' — in one bash session in a directory of its own that has what the
 * repository root has for the tour (`examples/photo.png`, `node_modules`); blocks marked `file NAME`
 * are written there at their place. The server is stopped and the `server stopped` blocks run at the
 * repository root (the CLI on the same data directory).
 *
 * The only edit to the text is the port (`localhost:8080` → the test's own free port). The shell's
 * PATH has no node_modules/.bin in it, as a new user's has not. Nothing else is configured: no
 * models file, so the chat and the SDK example use the built-in `stories260k` a fresh clone has.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "../support/harness.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import { allBlocks, blocksOf, docFiles, ROOT, WALKED_PAGES, where, type DocBlock } from "./doc-blocks.ts";

async function run(cmd: string[], opts: { cwd: string; env: Record<string, string>; stdin?: string; killAfterMs?: number }) {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env, stdin: opts.stdin ? new TextEncoder().encode(opts.stdin) : "ignore", stdout: "pipe", stderr: "pipe" });
  let killed = false;
  const timer = opts.killAfterMs ? setTimeout(() => ((killed = true), proc.kill("SIGKILL")), opts.killAfterMs) : undefined;
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { out, err, code, killed };
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

const blocks = allBlocks();
const readmeBlocks = blocksOf("README.md");
const startBlock = readmeBlocks.find((b) => b.marker?.kind === "starts the server");
/** the README's start command, without the `npm install &&` before it (the suite runs installed) */
const startCommand = startBlock?.code.split("\n").find((l) => /\bnpm start$/.test(l))?.replace(/^npm install && /, "");
const admin = /REELAY_ADMIN_TOKEN=(\S+)/.exec(startCommand ?? "")?.[1];
const port = freePort();
const work = mkdtempSync(join(tmpdir(), "reelay-readme-"));
const dataDir = join(work, "data");
let server: Subprocess<"ignore", "pipe", "pipe"> | undefined;
let serverPid = 0;
let serverOut = "";
/** a new user's PATH: npm and the system's tools, not the repository's node_modules/.bin */
const userPath = (process.env.PATH ?? "").split(":").filter((p) => !p.includes("node_modules")).join(":");
const baseEnv = () => ({ PATH: userPath, HOME: process.env.HOME ?? work, REELAY_DATA_DIR: dataDir, REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins", REELAY_LOG_FORMAT: "json" });
const onOurPort = (code: string) => code.replaceAll("http://localhost:8080", `http://127.0.0.1:${port}`);
const byKind = (kind: string) => blocks.filter((b) => b.marker?.kind === kind);

/** The blocks as one bash script: shell blocks as they are, `file` blocks written to their file. */
function script(of: DocBlock[]): string {
  return of
    .map((b) => (b.marker?.kind === "file" ? `cat > ${b.marker.name} <<'READMEBLOCK_EOF'\n${onOurPort(b.code)}\nREADMEBLOCK_EOF` : `# ${where(b)}\n${onOurPort(b.code)}`))
    .join("\n");
}

beforeAll(async () => {
  // the tour's working directory: what it uses from the repository root
  mkdirSync(join(work, "examples"));
  copyFileSync(join(ROOT, "examples/photo.png"), join(work, "examples/photo.png"));
  symlinkSync(join(ROOT, "node_modules"), join(work, "node_modules"));
  // the README's command, on a port of our own
  server = Bun.spawn(["bash", "-c", startCommand!], { cwd: ROOT, env: { ...baseEnv(), PORT: String(port), HOST: "127.0.0.1" }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
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

describe("the docs say how each block is checked", () => {
  test("the README starts the server with one command, and its tour, SDK example and CLI blocks are marked to run here", () => {
    expect(startCommand).toBe("REELAY_ADMIN_TOKEN=change-me-to-a-long-secret npm start");
    expect(readmeBlocks.map((b) => (b.marker?.kind === "file" ? `file ${b.marker.name}` : b.marker?.kind))).toEqual([
      "starts the server", "server running", "server running", "server running", "server running", "file tour.ts", "server running",
      // Batches: curl, then the SDK example written and run
      "server running", "file batch.ts", "server running",
      // Running in production: migrate --check and a backup, on the stopped server's data
      "server stopped",
    ]);
    expect(byKind("server stopped").map(where)).toEqual([expect.stringMatching(/^README\.md:/), expect.stringMatching(/^docs\/operations\.md:/)]);
  });

  test("every block of the README and of the pages moved out of it carries a marker", () => {
    const unmarked = blocks.filter((b) => WALKED_PAGES.includes(b.file) && !b.marker).map(where);
    // mark each: `<!-- readme-test: server running -->` to run it here, or
    // `<!-- readme-test: checked by test/….test.ts -->` naming the test that reads and checks it
    expect(unmarked).toEqual([]);
    for (const page of WALKED_PAGES) expect(existsSync(join(ROOT, page))).toBe(true);
  });

  test("a block checked by another test names a test that exists and reads that page", () => {
    for (const b of blocks) {
      if (b.marker?.kind !== "checked by") continue;
      const path = join(ROOT, b.marker.test);
      expect({ block: where(b), exists: existsSync(path) }).toEqual({ block: where(b), exists: true });
      expect({ block: where(b), readsIt: readFileSync(path, "utf8").includes(`blocksCheckedBy(`) }).toEqual({ block: where(b), readsIt: true });
    }
  });

  test("every relative link of the README and the docs pages points at a file that exists, and a #fragment at a heading of it", () => {
    const slug = (h: string) => h.toLowerCase().replace(/[`*]/g, "").replace(/[^\p{L}\p{N} _-]/gu, "").trim().replace(/ /g, "-");
    const headings = (file: string) => new Set(readFileSync(file, "utf8").split("\n").filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ""))));
    const broken: string[] = [];
    for (const file of docFiles()) {
      const text = readFileSync(join(ROOT, file), "utf8").replace(/^```[\s\S]*?^```/gm, "");
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const url = m[1]!;
        if (/^[a-z]+:/.test(url)) continue;
        const [path, fragment] = url.split("#");
        const target = path ? join(ROOT, dirname(file), path) : join(ROOT, file);
        if (!existsSync(target)) broken.push(`${file}: ${url} (no such file)`);
        else if (fragment && statSync(target).isFile() && !headings(target).has(fragment)) broken.push(`${file}: ${url} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("the tour's video block with a photo of one's own (its PHOTO line changed, as it invites)", () => {
  const [accountBlock] = byKind("server running");
  const videoBlock = readmeBlocks.find((b) => b.code.includes("PHOTO="))!;
  const withPhoto = (path: string) => script([accountBlock!]) + "\n" + onOurPort(videoBlock.code).replace(/^PHOTO=\S+/m, `PHOTO=${path}`);

  test("a multi-megabyte JPEG from a camera goes through: the body is sent from a file, not the command line", async () => {
    const photo = join(work, "camera.jpg"); // 4032×3024, a phone camera's size, with noise so that it does not compress away
    const ff = Bun.spawnSync(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=4032x3024:rate=1,noise=alls=10:allf=t", "-frames:v", "1", "-q:v", "2", photo]);
    expect(ff.exitCode).toBe(0);
    expect(statSync(photo).size).toBeGreaterThan(3_000_000);
    const r = await run(["bash", "-euo", "pipefail", "-s"], { cwd: work, env: baseEnv(), stdin: withPhoto(photo) });
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
    expect(r.out).toMatch(/^\{"id":"vid_\w+","status":"completed",/m);
    const mp4 = await ffprobe(new Uint8Array(readFileSync(join(work, "out.mp4"))));
    expect(mp4.streams[0]).toMatchObject({ codec_name: "h264" });
  }, 120_000);

  test("a refused submit ends the block with reelay's message, pasted into a shell that goes on after errors", async () => {
    writeFileSync(join(work, "notes.txt"), "not a photo\n");
    // plain bash, no -e: an interactive shell goes on after a failed command
    const r = await run(["bash", "-s"], { cwd: work, env: baseEnv(), stdin: withPhoto("notes.txt"), killAfterMs: 60_000 });
    expect(r.killed).toBe(false); // it ended by itself: no endless poll
    expect(r.err).toContain("jq: error");
    expect(r.err).toMatch(/PNG, JPEG or WebP/); // invalid_image's message
    expect(r.out).not.toContain('"status":"queued"');
  }, 90_000);
});

test("the tour and the docs' examples run as written against `npm start`, then the CLI on the stopped server's data", async () => {
  const env = baseEnv();
  const running = blocks.filter((b) => ["server running", "file"].includes(b.marker?.kind ?? ""));
  const walk = await run(["bash", "-euo", "pipefail", "-s"], { cwd: work, env, stdin: `${script(running)}\nprintf '\\n__KEY=%s\\n' "$KEY"\n` });
  expect({ code: walk.code, err: walk.err }).toEqual({ code: 0, err: "" });
  const key = /__KEY=(\S+)/.exec(walk.out)![1]!;
  expect(key).toStartWith("rl-");

  // every answer printed as JSON stands on a line of its own (ends with a newline)
  const jsonish = walk.out.split("\n").filter((l) => l.startsWith("{"));
  expect(jsonish.filter((l) => { try { return (JSON.parse(l), false); } catch { return true; } })).toEqual([]);
  expect(walk.out).toContain('{"id":"use-lite","capabilities":["embeddings"]}');
  expect(walk.out).toContain('{"prompt_tokens":10,"total_tokens":10}'); // the two sentences' tokens
  expect(walk.out).toMatch(/^\{"id":"vid_\w+","status":"completed",/m);
  expect(walk.out).toContain("event: video.generation.completed"); // docs/video.md's progress stream
  const mp4 = await ffprobe(new Uint8Array(readFileSync(join(work, "out.mp4"))));
  expect(mp4.streams[0]).toMatchObject({ codec_name: "h264", width: 480, height: 832 });

  // the SDK example, run with `npx bun tour.ts`: the embedding's length and prompt tokens, then
  // stories260K's story and its usage chunk
  const printed = /^512 5\n([\s\S]+?)\n\((\d+) prompt \+ (\d+) completion tokens\)$/m.exec(walk.out);
  expect(printed, walk.out).not.toBeNull();
  expect(printed![1]!.trim().split(/\s+/).length).toBeGreaterThan(3);
  expect(Number(printed![3])).toBeGreaterThan(0);
  expect(Number(printed![3])).toBeLessThanOrEqual(40);
  const usage = (await (await fetch(`http://127.0.0.1:${port}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: any[] };
  // the newest row of a live route (the Batches section, after the tour, adds rows of route "batch")
  expect(usage.data.find((r) => r.route !== "batch")).toMatchObject({ kind: "chat", model: "stories260k", route: "/v1/chat/completions", prompt_tokens: Number(printed![2]), completion_tokens: Number(printed![3]), token_source: "local", status: 200 });
  // the Batches section: its curl batch and its SDK batch, three embeddings lines each over use-lite, every custom_id in the output
  expect(walk.out).toMatch(/^\{"status":"completed","request_counts":\{"total":3,"completed":3,"failed":0\}\}$/m);
  for (const q of ["q1", "q2", "q3"]) expect(walk.out).toMatch(new RegExp(`^\\{"custom_id":"${q}","status":200,"tokens":\\d+\\}$`, "m"));
  expect(walk.out).toContain(`completed {"total":3,"completed":3,"failed":0}`);
  expect(usage.data.filter((r) => r.route === "batch" && r.kind === "embeddings" && r.status === 200)).toHaveLength(6);
  // every row carries the route its client called, the video job's too
  expect(usage.data.filter((r) => !r.route).map((r) => r.kind)).toEqual([]);
  expect(usage.data.find((r) => r.kind === "video")).toMatchObject({ route: "/v1/videos/generations", seconds: 5 });

  // stop the server (PGlite: one process at a time), then the CLI blocks on its data
  process.kill(serverPid, "SIGTERM");
  await server!.exited;
  serverPid = 0;
  const cli = await run(["bash", "-euo", "pipefail", "-s"], { cwd: ROOT, env, stdin: script(byKind("server stopped")) });
  // stderr: nothing but the audit log's line for each change the CLI made (docs/operating.md)
  const errLines = cli.err.split("\n").filter(Boolean);
  const audit = errLines.flatMap((l) => {
    try {
      const j = JSON.parse(l);
      return j.msg === "audit" ? [j.audit as { action: string; actor: { type: string } }] : [];
    } catch {
      return [];
    }
  });
  expect({ code: cli.code, other: errLines.length - audit.length }).toEqual({ code: 0, other: 0 });
  expect(audit.map((a) => a.action)).toEqual(expect.arrayContaining(["account.create", "key.create", "credits.grant", "credits.adjust"]));
  expect(audit.every((a) => a.actor.type === "cli")).toBe(true);
  expect(cli.out).toContain('"balance": 14750000'); // 5 USD + 10 USD granted − 0.25 USD adjusted
  expect(cli.out).toContain("keys create --account ACCOUNT_ID"); // help
  // the README's production section: nothing pending on a data dir the server migrated, and a backup that unpacks
  expect(cli.out).toContain('{"pending":[],"database":"pglite"}');
  const backup = cli.out.match(/"file":"([^"]+\.tar\.gz)"/)?.[1];
  expect(backup).toBeTruthy();
  const listing = Bun.spawnSync(["tar", "-tzf", backup!]);
  expect({ code: listing.exitCode, version: listing.stdout.toString().split("\n").some((l) => l.endsWith("PG_VERSION")) }).toEqual({ code: 0, version: true });
  rmSync(dirname(backup!), { recursive: true, force: true }); // the block's mktemp -d
}, 240_000);
