/**
 * A process that holds credits and is killed with SIGKILL before settling: the server's sweeper
 * releases the request's hold once it expires, charges nothing, and leaves video-job holds alone.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import * as billing from "../../src/billing/index.ts";
import { startServer, type Running } from "../../src/boot.ts";
import { createLogger } from "../../src/logger.ts";
import { testConfig } from "../support/harness.ts";
import { expectInvariants, fundedAccount, holdRows, ledgerOf, openPostgres, settle, type BillingDb } from "./support.ts";

let pg: BillingDb;
let server: Running | null = null;
beforeAll(async () => {
  pg = await openPostgres(4);
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await pg?.dispose();
});

async function firstLine(stream: ReadableStream<Uint8Array>, timeoutMs: number): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!text.includes("\n")) {
    const r = await Promise.race([reader.read(), Bun.sleep(Math.max(1, deadline - Date.now())).then(() => null)]);
    if (!r) throw new Error(`no line from the child within ${timeoutMs} ms (got ${JSON.stringify(text)})`);
    if (r.done) throw new Error(`child exited before printing (got ${JSON.stringify(text)})`);
    text += new TextDecoder().decode(r.value);
  }
  reader.releaseLock();
  return text.split("\n")[0]!;
}

test("kill -9 before settling: the sweeper releases the expired hold; a video hold stays; a late settlement is charged once from available credit", async () => {
  const db = pg.db;
  const FUNDS = 1_000_000, AMOUNT = 150_000;
  const acct = await fundedAccount(db, FUNDS);
  const child = Bun.spawn(["bun", join(import.meta.dir, "fixtures/hold-then-hang.ts")], {
    env: { ...process.env, DATABASE_URL: pg.url!, ACCOUNT_ID: acct, AMOUNT: String(AMOUNT), EXPIRES_MS: "1000" },
    stdout: "pipe",
    stderr: "inherit",
  });
  const line = await firstLine(child.stdout, 30_000);
  const [word, syncHold, videoHold, syncRef, videoRef] = line.split(" ");
  expect(word).toBe("held");
  child.kill("SIGKILL");
  expect(await child.exited).not.toBe(0);
  expect(child.signalCode).toBe("SIGKILL");

  // the dead request's credits are still reserved
  expect(await billing.getBalance(db, acct)).toEqual({ balance: FUNDS, held: 2 * AMOUNT, available: FUNDS - 2 * AMOUNT });

  server = await startServer(testConfig({ DATABASE_URL: pg.url!, REELAY_HOLD_SWEEP_MS: "200" }), { logger: createLogger(testConfig({ REELAY_LOG_LEVEL: "error" })), listen: false });
  const deadline = Date.now() + 15_000;
  while ((await holdRows(db, syncHold!)).length < 2 && Date.now() < deadline) await Bun.sleep(100);

  const rows = await holdRows(db, syncHold!);
  expect(rows.map((r) => r.kind)).toEqual(["hold", "release"]);
  expect(rows[1]).toMatchObject({ amount: 0, held_change: -AMOUNT, reason: "hold expired: owner request never finished" });

  // several more sweeps: the video job's hold is only closed by the job's own transitions
  await Bun.sleep(1_000);
  expect((await holdRows(db, videoHold!)).map((r) => r.kind)).toEqual(["hold"]);
  expect(await billing.getBalance(db, acct)).toEqual({ balance: FUNDS, held: AMOUNT, available: FUNDS - AMOUNT });
  expect((await ledgerOf(db, acct)).filter((r) => r.kind === "charge")).toEqual([]);

  // a late settlement (a journal replayed after the expiry) is charged once, from available credit
  const sync = { id: syncHold!, accountId: acct, amount: AMOUNT, ref: syncRef! };
  expect(await settle(db, sync, 1_000, "late")).toEqual({ applied: true, fromHold: false, charged: 1_000, shortfall: 0, released: 0 });
  expect((await settle(db, sync, 1_000, "late again")).applied).toBe(false);
  expect((await holdRows(db, syncHold!)).map((r) => r.kind)).toEqual(["hold", "release"]);
  // the video hold is still the job's to settle
  expect(await settle(db, { id: videoHold!, accountId: acct, amount: AMOUNT, ref: videoRef! }, AMOUNT, "video completed")).toEqual({ applied: true, fromHold: true, charged: AMOUNT, shortfall: 0, released: 0 });
  expect(await billing.getBalance(db, acct)).toEqual({ balance: FUNDS - AMOUNT - 1_000, held: 0, available: FUNDS - AMOUNT - 1_000 });
  await expectInvariants(db, [acct]);
}, 60_000);

test("holds that have not expired yet are not swept", async () => {
  const db = pg.db;
  const acct = await fundedAccount(db, 10_000);
  const h = await billing.hold(db, { accountId: acct, amount: 4_000, ref: "req_alive", reason: "chat", expiresAt: new Date(Date.now() + 60_000) });
  expect(await billing.sweepExpiredHolds(db)).toBe(0);
  expect((await holdRows(db, h.id)).map((r) => r.kind)).toEqual(["hold"]);
  expect(await billing.getBalance(db, acct)).toEqual({ balance: 10_000, held: 4_000, available: 6_000 });
}, 60_000);
