/**
 * What a kill -9 costs an instance that never comes back: the answered requests whose settlement was
 * not in the database yet, and how far back they go. Several kills in one run, each on a fresh
 * instance (its own data directory, so nothing is replayed) under closed-loop chat traffic.
 *
 *   bun bench/billing-crash-window.ts [kills, default 8] [request loops, default 8]
 *
 * Per kill: requests/s before it, answered requests, how many of them had no usage row 500 ms after
 * the kill (a statement sent just before it still commits), and the lost window: the kill time minus
 * the time the client had the oldest lost answer (an upper bound on the settlement's age). Beside
 * it, from the instance's own debug lines ("billing: batch landed"), every batch of that run: how
 * long its oldest settlement waited in memory before its statement committed (what a kill at that
 * moment would have lost), and how long the instance's statements took (lease heartbeats included).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, query } from "../src/db/index.ts";
import { startFakeOpenAI } from "../test/fakes/openai-upstream.ts";
import { newClientOn, spawnServer } from "../test/support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../test/support/harness.ts";
import { table } from "./lib/wrk.ts";

const KILLS = Number(process.argv[2] ?? 8);
const LOOPS = Number(process.argv[3] ?? 8);

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

const fake = await startFakeOpenAI({ tokens: 8 });
const dir = mkdtempSync(join(tmpdir(), "reelay-crash-window-"));
const models = join(dir, "models.json");
writeFileSync(models, JSON.stringify({
  builtins: false,
  models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 }],
}));
const url = await createTestDatabase();
const db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
const body = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "Say three words." }], max_tokens: 8 });

const rows: Array<Array<string | number>> = [];
const allLost: number[] = [];
const allWindows: number[] = [];
const allOldest: number[] = [];
const allStatement: number[] = [];
try {
  for (let k = 0; k < KILLS; k++) {
    const s = await spawnServer({ DATABASE_URL: url, REELAY_MODELS_FILE: models, REELAY_DATA_DIR: join(dir, `run${k}`), REELAY_LOG_LEVEL: "debug" });
    const c = await newClientOn(s, 1_000_000_000);
    const answered: Array<{ ref: string; at: number }> = [];
    const loops = Array.from({ length: LOOPS }, async () => {
      for (;;) {
        try {
          const res = await fetch(s.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body });
          await res.arrayBuffer();
          if (res.status === 200) answered.push({ ref: res.headers.get("x-request-id")!, at: performance.now() });
        } catch {
          return; // the process is gone
        }
      }
    });
    // warm (leases open), then kill at a point that is not a multiple of the flush interval
    await Bun.sleep(1_000);
    const from = answered.length, t0 = performance.now();
    await Bun.sleep(1_000 + Math.random() * 500);
    const killedAt = performance.now();
    const rate = ((answered.length - from) * 1000) / (killedAt - t0);
    await s.kill9();
    await Promise.all(loops);
    await Bun.sleep(500);
    const refs = answered.map((a) => a.ref);
    const landed = new Set((await query<{ ref: string }>(db.db, sql`SELECT ref FROM usage_records WHERE ref IN ${sql.raw(`(${refs.map((r) => `'${r}'`).join(",")})`)}`)).map((r) => r.ref));
    const lost = answered.filter((a) => !landed.has(a.ref));
    const window = lost.length ? Math.round(killedAt - Math.min(...lost.map((a) => a.at))) : 0;
    const statements = s.logLines().filter((l) => l.msg === "billing: batch landed") as Array<{ settlements: number; oldestMs: number | null; statementMs: number }>;
    const batches = statements.filter((b) => b.settlements > 0);
    const inBatches = batches.reduce((n, b) => n + b.settlements, 0);
    const oldest = batches.map((b) => b.oldestMs!), statement = statements.map((b) => b.statementMs);
    allLost.push(lost.length);
    allWindows.push(window);
    allOldest.push(...oldest);
    allStatement.push(...statement);
    rows.push([k + 1, Math.round(rate), answered.length, lost.length, window, `${batches.length} (${inBatches})`, pct(oldest, 50), pct(oldest, 99), Math.max(0, ...oldest), pct(statement, 50), pct(statement, 99), Math.max(0, ...statement)]);
  }
} finally {
  await db.close();
  await fake.stop();
  await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
}

console.log(`kill -9 of an instance that never restarts: ${KILLS} kills, ${LOOPS} closed request loops, REELAY_BILLING_FLUSH_MS=25\n`);
console.log(table(["kill", "req/s", "answered", "lost", "lost window ms", "batches (settlements)", "wait p50 ms", "wait p99", "wait max", "statement p50 ms", "statement p99", "statement max"], rows));
console.log(`\nlost per kill: median ${pct(allLost, 50)}, max ${Math.max(...allLost)}; lost window: median ${pct(allWindows, 50)} ms, max ${Math.max(...allWindows)} ms`);
console.log(`every batch of every run (${allOldest.length}): oldest settlement's wait p50 ${pct(allOldest, 50)} ms, p99 ${pct(allOldest, 99)} ms, max ${Math.max(...allOldest)} ms; statement p50 ${pct(allStatement, 50)} ms, p99 ${pct(allStatement, 99)} ms, max ${Math.max(...allStatement)} ms`);
