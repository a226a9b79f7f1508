/**
 * Webhooks, the progress stream and the MP4 download from the compiled dist/reelay, alone in an
 * empty directory on embedded PGlite (its LISTEN/NOTIFY, triggers and the generated secret key):
 * the CLI registers an endpoint, the server renders a preview job, streams its progress, signs
 * the event (verified with standardwebhooks) and serves the MP4 with ranges.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";
import { startReceiver, verified, type Receiver } from "../webhooks/receiver.ts";

const ADMIN = "binary-webhooks-admin-token-0123";
let dir: string;
let bin: string;
let receiver: Receiver;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-wh-"));
  bin = join(dir, "reelay");
  copyFileSync(compiledBinary(), bin);
  mkdirSync(join(dir, "tmp"));
  Bun.spawnSync(["chmod", "+x", bin]);
  receiver = startReceiver();
}, 300_000);
afterAll(async () => {
  await receiver?.stop();
  rmSync(dir, { recursive: true, force: true }); // a 220 MB copy of the binary
});

const env = (port: number) => ({
  PATH: "/usr/bin:/bin", HOME: dir, TMPDIR: join(dir, "tmp"), PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json",
  REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
});

function cli(...args: string[]) {
  const r = Bun.spawnSync([bin, ...args], { cwd: dir, env: env(0) });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

test("from the binary on PGlite: CLI endpoint, signed event, progress stream, ranged MP4", async () => {
  const account = JSON.parse(cli("accounts", "create", "--name", "bin-wh", "--credits", "5000000").out).id;
  const key = JSON.parse(cli("keys", "create", "--account", account, "--name", "k").out).key;
  const made = cli("webhooks", "create", "--account", account, "--url", `${receiver.url}/bin`);
  expect(made.code).toBe(0);
  const { secret } = JSON.parse(made.out);
  expect(secret).toMatch(/^whsec_/);
  // no REELAY_SECRET_KEY: the embedded default keeps a generated one beside the data, owner-only
  expect(statSync(join(dir, "data", "secret.key")).mode & 0o777).toBe(0o600);

  const port = freePort();
  const logFile = join(dir, "serve.log");
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env: env(port), stdout: Bun.file(logFile), stderr: Bun.file(logFile + ".err") });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
  const url = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${key}` };
  try {
    await waitForOwnListener(proc, port, log, 90_000);
    const sub = await fetch(`${url}/v1/videos/generations`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ model: "preview-motion", prompt: "zoom", image: pngBase64(96, 64), seconds: 2 }) });
    expect(sub.status).toBe(202);
    const id = ((await sub.json()) as any).id;

    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e) });
    const stream = await fetch(`${url}/v1/videos/generations/${id}/events`, { headers: auth });
    expect(stream.status).toBe(200);
    for await (const chunk of stream.body!) parser.feed(new TextDecoder().decode(chunk));
    expect(events.at(-1)!.event).toBe("video.generation.completed");

    await receiver.waitFor((x) => x.some((q) => q.path === "/bin"), 30_000);
    const event = verified(secret, receiver.on("/bin")[0]!);
    expect(event).toMatchObject({ type: "video.generation.completed", data: { id, status: "completed", urls: { content: `${url}/v1/videos/generations/${id}/content` } } });

    const whole = await fetch(event.data.urls.content, { headers: auth });
    expect(whole.headers.get("content-type")).toBe("video/mp4");
    const bytes = new Uint8Array(await whole.arrayBuffer());
    expect(Buffer.from(bytes.subarray(4, 8)).toString()).toBe("ftyp");
    const part = await fetch(event.data.urls.content, { headers: { ...auth, range: "bytes=100-199" } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.from(bytes.subarray(100, 200)))).toBe(true);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  expect(log()).not.toContain('"level":50');
}, 180_000);
