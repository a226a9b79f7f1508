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
import postgres from "postgres";
import { createLogger } from "../../src/logger.ts";
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

  const sql = postgres(t.s.databaseUrl!, { max: 1 });
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
      // in the database: Σ ledger amount = balance, Σ held_change = held = what open holds and leases reserve (live requests' leases may stay open), no line's hold left open
      const [db] = await sql<{ balance: number; held: number; ledger_amount: number; ledger_held: number; reserved: number; open_requests: number }[]>`
        SELECT a.balance::float8 AS balance, a.held::float8 AS held,
          (SELECT COALESCE(sum(amount), 0) FROM ledger WHERE account_id = a.id)::float8 AS ledger_amount,
          (SELECT COALESCE(sum(held_change), 0) FROM ledger WHERE account_id = a.id)::float8 AS ledger_held,
          (SELECT COALESCE(sum(amount), 0) FROM holds WHERE account_id = a.id AND state = 'open')::float8 AS reserved,
          (SELECT count(*) FROM holds WHERE account_id = a.id AND state = 'open' AND kind <> 'lease')::float8 AS open_requests
        FROM accounts a WHERE a.id = ${c.accountId}`;
      expect(db!.balance).toBe(acct.balance);
      expect([db!.ledger_amount, db!.ledger_held, db!.reserved, db!.open_requests]).toEqual([db!.balance, db!.held, db!.held, 0]);
      const view = (await (await t.s.admin(`/admin/keys/${c.keyId}/budgets`)).json()) as any;
      expect(view.data[0].window).toMatchObject({ spent, reserved: 0 });
    }
  } finally {
    await sql.end();
  }
  expect(problems).toEqual([]);
}, 120_000);
