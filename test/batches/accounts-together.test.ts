/**
 * Batches of several accounts at once, with live requests of the same accounts and a budget on
 * every key: the scheduler's one writer takes the lines' holds in the transaction of the results'
 * settlements (only for the accounts those settlements locked: billing's lock order), so groups mix
 * accounts, settlements and holds. Every line is answered and charged once, nothing stays held,
 * ledger == balance for every account, each budget window counts exactly what was charged under it,
 * and no group failed (no deadlock, no line written alone) on the way.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import { idList } from "../../src/billing/window-statements.ts";
import { openDatabase, query } from "../../src/db/index.ts";
import { createLogger } from "../../src/logger.ts";
import { accountState, expectInvariants } from "../billing/support.ts";
import { chatLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchServer } from "./batch-server.ts";

let t: BatchServer;
const problems: string[] = [];
beforeAll(async () => {
  const capture = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n")) if (line && JSON.parse(line).level >= 40) problems.push(line);
      done();
    },
  });
  t = await startBatchServer({ REELAY_BATCH_SLICE_LINES: "20" }, { logger: createLogger({ logLevel: "info", logPretty: false }, capture) });
}, 60_000);
afterAll(() => t.close());

test("four accounts' batches at once beside their live requests: every line charged once, nothing held, ledger == balance, budget windows exact, no group failed", async () => {
  problems.length = 0; // (the boot's warnings: webhooks off without a secret key)
  const credits = 100_000_000;
  const accounts = await Promise.all(Array.from({ length: 4 }, () => t.newClient(credits)));
  for (const c of accounts) expect((await t.s.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets: [{ period: "day", limit: 50_000_000 }] } })).status).toBe(200);
  t.fake.behave({ tokens: 2, delayHeadersMs: 3 });
  const total = 120;
  const batches = await Promise.all(accounts.map(async (c) => {
    const file = await uploadBatchFile(c.openai, Array.from({ length: total }, (_, i) => chatLine(i)));
    return c.openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  }));

  // live requests of the same accounts while their batches run (their settlements lock the same rows)
  let running = true;
  let live = 0;
  const liveLoops = accounts.flatMap((c) => Array.from({ length: 2 }, async () => {
    while (running) {
      const r = await c.openai.chat.completions.create({ model: "chat-a", messages: [{ role: "user", content: "live" }], max_tokens: 5 });
      expect(r.choices[0]!.message.content).toBeString();
      live++;
    }
  }));
  const done = await Promise.all(accounts.map((c, i) => waitForBatch(c.openai, batches[i]!.id, undefined, 110_000)));
  running = false;
  await Promise.all(liveLoops);
  expect(live).toBeGreaterThan(0);

  const database = await openDatabase({ databaseUrl: t.s.databaseUrl!, dataDir: "/nonexistent", poolSize: 1 });
  try {
    for (const [i, c] of accounts.entries()) {
      const b = done[i]!;
      expect(b.status).toBe("completed");
      expect(b.request_counts).toEqual({ total, completed: total, failed: 0 });
      const out = await fileLines(c.openai, b.output_file_id);
      expect(new Set(out.map((l) => l.custom_id)).size).toBe(total);
      // every line charged once; every usage row of the account accounted for in its balance
      const rows = await usageRows(c);
      const batchRows = rows.filter((u) => u.route === "batch");
      expect(batchRows.map((u) => u.ref).sort()).toEqual(out.map((l) => `${b.id}:${l.custom_id}`).sort());
      for (const u of batchRows) expect(u.cost).toBeGreaterThan(0);
      const spent = rows.reduce((n, u) => n + u.cost, 0);
      const acct = await c.get("/v1/account");
      expect([acct.balance, acct.held]).toEqual([credits - spent, 0]);
      expect((await accountState(database.db, c.accountId)).balance).toBe(acct.balance);
      const view = (await (await t.s.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any;
      expect(view.data[0].window).toMatchObject({ spent, reserved: 0 });
    }
    // in the database: Σ ledger amount = balance, Σ held_change = held = what open holds and leases reserve (live requests' leases may stay open); no line's hold left open
    await expectInvariants(database.db, accounts.map((c) => c.accountId));
    const open = await query(database.db, sql`SELECT id FROM holds WHERE account_id = ANY (${idList(accounts.map((c) => c.accountId))}) AND state = 'open' AND kind <> 'lease'`);
    expect(open).toEqual([]);
  } finally {
    await database.close();
  }
  expect(problems).toEqual([]);
}, 120_000);
