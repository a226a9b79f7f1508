/**
 * Budgets and plans from the compiled dist/reelay (embedded PGlite, its migrations, the console and
 * the CLI inside the binary): a key with a daily budget of one micro-dollar makes one chat with the
 * built-in stories260k and is refused the next with 402 budget_exceeded; an account on a plan made
 * with the binary's CLI sees its prices; /docs documents the routes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary, freePort, waitForOwnListener } from "../support/harness.ts";

const ADMIN = "budgets-binary-admin-token";
let dir: string;
let bin: string;

beforeAll(() => {
  const built = compiledBinary();
  dir = mkdtempSync(join(tmpdir(), "reelay-bin-budgets-"));
  bin = join(dir, "reelay");
  copyFileSync(built, bin);
  Bun.spawnSync(["chmod", "+x", bin]);
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const env = (port: number) => ({ PATH: "/usr/bin:/bin", HOME: dir, TMPDIR: dir, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_FORMAT: "json", REELAY_DATA_DIR: join(dir, "data") });
const cli = (...args: string[]) => {
  const r = Bun.spawnSync([bin, ...args], { cwd: dir, env: env(0) });
  expect({ args, code: r.exitCode, err: r.stderr.toString() }).toMatchObject({ args, code: 0 });
  return JSON.parse(r.stdout.toString());
};

test("the binary enforces a budget, prices on a plan and documents both", async () => {
  const account = cli("accounts", "create", "--name", "bin-budgets", "--credits", "2000000").id;
  const key = cli("keys", "create", "--account", account, "--name", "k", "--budget", "day:1");
  expect(key.budgets[0]).toMatchObject({ period: "day", limit: 1 });
  cli("plans", "set", "half", "--adjust=-50");
  cli("accounts", "plan", account, "half");

  const port = freePort();
  const proc = Bun.spawn([bin, "serve"], { cwd: dir, env: env(port), stdout: "pipe", stderr: "pipe" });
  let out = "";
  void (async () => { for await (const c of proc.stdout) out += new TextDecoder().decode(c); })();
  try {
    await waitForOwnListener(proc, port, () => out, 120_000);
    const url = `http://127.0.0.1:${port}`;
    const chat = () => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "stories260k", messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 10 }) });
    const first = await chat();
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const second = await chat();
    expect(second.status).toBe(402);
    expect(((await second.json()) as any).error).toMatchObject({ code: "budget_exceeded", budget: { period: "day", limit: 1, remaining: 0 } });
    const models = ((await (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key.key}` } })).json()) as any).data;
    expect(models.find((m: any) => m.id === "stories260k").pricing).toEqual({ input_per_million: 5_000, output_per_million: 10_000, plan: "half" });
    const doc = (await (await fetch(`${url}/docs/json`)).json()) as any;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/admin/keys/{id}/budgets", "/admin/accounts/{id}/plan"]));
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}, 300_000);
