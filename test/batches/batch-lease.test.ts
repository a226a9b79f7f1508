/**
 * The batch's own lease while it is validated and while its files are written, with two instances
 * on one Postgres database and a blob store that holds a read or a write until the test lets it go
 * (a slow store, deterministically): a step that outlasts the lease keeps it (renewed every
 * lease/3), so the other instance does not do it again; a step whose lease was lost anyway (an
 * instance stalled, simulated by taking the lease from it) stops without writing: no second
 * validation's lines, no second output file. Each batch: validated once, completed once, one
 * output file, every line sent upstream and charged once, ledger == balance.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { gateBlobStores } from "../support/blob-gate.ts";
import type { TestServer } from "../support/harness.ts";
import { chatLine, fileLines, startBatchServer, uploadBatchFile, usageRows, waitForBatch, type BatchClient, type BatchServer } from "./batch-server.ts";

/** the shortest lease the config takes is 1 s; 3 s leaves a loaded machine 2 s of slack between renewals */
const LEASE_MS = 3_000;
const LINES = 60;

let fake: FakeOpenAI;
/** released when a test ends, passed or not: a held step would keep its instance from stopping */
const allHolds: Hold[] = [];
beforeAll(async () => { fake = await startFakeOpenAI(); });
afterAll(() => fake.stop());

/** Holds the first blob-store call `match` picks until `release()`; counts every call it picks. */
class Hold {
  calls = 0;
  private reachedNow!: () => void;
  readonly reached = new Promise<void>((r) => (this.reachedNow = r));
  private releaseNow!: () => void;
  private readonly released = new Promise<void>((r) => (this.releaseNow = r));
  constructor(readonly match: (op: "get" | "put", key: string) => boolean) {}
  async pass(op: "get" | "put", key: string): Promise<void> {
    if (!this.match(op, key)) return;
    if (++this.calls > 1) return;
    this.reachedNow();
    await this.released;
  }
  release() {
    this.releaseNow();
  }
}

/** Route an instance's blob stores through `holds` (the scheduler reads deps.blobs at each call). */
function holdBlobs(s: TestServer, holds: Hold[]) {
  allHolds.push(...holds);
  gateBlobStores(s, {
    async beforeGet(key) { for (const h of holds) await h.pass("get", key); },
    async beforePut(key) { for (const h of holds) await h.pass("put", key); },
  });
}

interface Pair {
  a: BatchServer;
  b: BatchServer;
  c: BatchClient;
  sql: postgres.Sql;
  close(): Promise<void>;
}

async function twoInstances(): Promise<Pair> {
  const env = { REELAY_SCHEDULER_LEASE_MS: String(LEASE_MS) };
  const a = await startBatchServer(env, { fake });
  const b = await startBatchServer({ ...env, DATABASE_URL: a.s.databaseUrl! }, { fake });
  const c = await a.newClient(100_000_000);
  const sql = postgres(a.s.databaseUrl!, { max: 1, onnotice: () => {} });
  return { a, b, c, sql, async close() { for (const h of allHolds.splice(0)) h.release(); await sql.end(); await b.close(); await a.close(); } };
}

async function leaseOf(sql: postgres.Sql, batchId: string) {
  const [r] = await sql<{ status: string; owner: string | null; expires: Date | null }[]>`SELECT status, lease_owner AS owner, lease_expires_at AS expires FROM batches WHERE id = ${batchId}`;
  return r!;
}

/**
 * Wait (on the database's clock) until two whole leases have passed since the lease seen now would
 * have run out unrenewed: long enough for the other instance (polling every 50 ms) to claim the
 * batch had the lease lapsed. Returns the lease as it is then.
 */
async function outlastLease(sql: postgres.Sql, batchId: string) {
  const first = await leaseOf(sql, batchId);
  expect(first.expires).not.toBeNull();
  const until = first.expires!.getTime() + 2 * LEASE_MS;
  for (;;) {
    const [{ now }] = await sql<{ now: Date }[]>`SELECT now()`;
    if (now.getTime() > until) return { first, now: await leaseOf(sql, batchId) };
    await Bun.sleep(100);
  }
}

/** Every line once in the output, sent upstream once, charged once at its usage row's cost; nothing held; ledger == balance. */
async function expectExactlyOnce(p: Pair, batchId: string) {
  const done = await waitForBatch(p.c.openai, batchId, undefined, 120_000);
  expect(done).toMatchObject({ status: "completed", request_counts: { total: LINES, completed: LINES, failed: 0 }, error_file_id: null });
  const out = await fileLines(p.c.openai, done.output_file_id);
  const ids = Array.from({ length: LINES }, (_, i) => `req-${i}`).sort();
  expect(out.map((l) => l.custom_id).sort()).toEqual(ids);
  const sent = fake.requests.filter((r) => r.path === "/v1/chat/completions").map((r) => r.body.messages[0].content);
  expect(sent.sort()).toEqual(Array.from({ length: LINES }, (_, i) => `question ${i}`).sort());
  const rows = (await usageRows(p.c)).filter((u) => u.route === "batch");
  expect(rows.map((u) => u.ref).sort()).toEqual(out.map((l) => `${batchId}:${l.custom_id}`).sort());
  for (const u of rows) expect(u.cost).toBeGreaterThan(0);
  const acct = await p.c.get("/v1/account");
  expect([acct.balance, acct.held]).toEqual([100_000_000 - rows.reduce((n, u) => n + u.cost, 0), 0]);
  const [{ sum }] = await p.sql<{ sum: number }[]>`SELECT coalesce(sum(amount), 0)::float8 AS sum FROM ledger WHERE account_id = ${p.c.accountId}`;
  expect(sum).toBe(acct.balance);
  return done;
}

/** What is left in the database once both instances stopped: the account's output files, the batch's lines and slices. */
async function leftovers(p: Pair, batchId: string) {
  await Promise.all([p.a.s.stop(), p.b.s.stop()]);
  const files = await p.sql<{ id: string }[]>`SELECT id FROM files WHERE account_id = ${p.c.accountId} AND purpose = 'batch_output'`;
  const [{ lines }] = await p.sql<{ lines: number }[]>`SELECT count(*)::int AS lines FROM batch_lines WHERE batch_id = ${batchId}`;
  const [{ slices }] = await p.sql<{ slices: number }[]>`SELECT count(*)::int AS slices FROM batch_slices WHERE batch_id = ${batchId}`;
  const [batch] = await p.sql<{ status: string; output_file_id: string }[]>`SELECT status, output_file_id FROM batches WHERE id = ${batchId}`;
  return { files: files.map((f) => f.id), lines, slices, batch };
}

/** The input file's read from the blob store (validation) */
const inputRead = (fileId: string) => new Hold((op, key) => op === "get" && key.startsWith(`files/${fileId}/`));
/** A file written to the blob store other than the input (finalization's output) */
const outputWrite = (fileId: string) => new Hold((op, key) => op === "put" && key.startsWith("files/") && !key.startsWith(`files/${fileId}/`));

/** A batch of LINES chat lines created through instance a, both instances' blob stores holding what `holds` make for its input file. */
async function heldBatch(p: Pair, ...holds: Array<(fileId: string) => Hold>) {
  fake.reset();
  fake.behave({ tokens: 2 });
  const f = await uploadBatchFile(p.c.openai, Array.from({ length: LINES }, (_, i) => chatLine(i)));
  const made = holds.map((h) => h(f.id));
  for (const s of [p.a, p.b]) holdBlobs(s.s, made);
  const batch = await p.c.openai.batches.create({ input_file_id: f.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
  return { batch, holds: made };
}

/** The stalled instance's lease ran out and another took the batch: here its lease is taken from it. */
const takeLease = (p: Pair, batchId: string) => p.sql`UPDATE batches SET lease_owner = 'another-instance', lease_expires_at = now() - interval '1 millisecond' WHERE id = ${batchId}`;

/** Once both instances stopped: one output file (`done`'s), no line or slice left, the batch completed with it. */
async function expectOnlyOutput(p: Pair, batchId: string, done: { output_file_id?: string | null }) {
  expect(await leftovers(p, batchId)).toEqual({ files: [done.output_file_id!], lines: 0, slices: 0, batch: { status: "completed", output_file_id: done.output_file_id! } });
}

test("a validation and a finalization that outlast the lease keep it: the other instance does neither again; one output file, every line once", async () => {
  const p = await twoInstances();
  try {
    const { batch, holds: [readInput, writeOutput] } = await heldBatch(p, inputRead, outputWrite);

    await readInput.reached;
    const validating = await outlastLease(p.sql, batch.id);
    expect(readInput.calls).toBe(1); // read once: nobody claimed the batch to validate it again
    expect(validating.now).toMatchObject({ status: "validating", owner: validating.first.owner });
    expect(validating.now.expires!.getTime()).toBeGreaterThan(validating.first.expires!.getTime()); // renewed
    readInput.release();

    await writeOutput.reached;
    const finalizing = await outlastLease(p.sql, batch.id);
    expect(writeOutput.calls).toBe(1); // one output file being written: nobody claimed the batch to write its own
    expect(finalizing.now).toMatchObject({ status: "finalizing", owner: finalizing.first.owner });
    expect(finalizing.now.expires!.getTime()).toBeGreaterThan(finalizing.first.expires!.getTime());
    writeOutput.release();

    const done = await expectExactlyOnce(p, batch.id);
    expect(readInput.calls).toBe(1);
    expect(writeOutput.calls).toBe(1);
    await expectOnlyOutput(p, batch.id, done);
  } finally {
    await p.close();
  }
}, 120_000);

test("a validation that lost its lease (its instance stalled) stops without writing: the instance that took the batch over validates and runs it, and no line of the stale validation lands", async () => {
  const p = await twoInstances();
  try {
    const { batch, holds: [readInput] } = await heldBatch(p, inputRead);

    await readInput.reached;
    const stalled = await leaseOf(p.sql, batch.id);
    await takeLease(p, batch.id);
    // the other instance validates it (its read is the second; the stalled one's is still held) and runs it to the end
    const done = await expectExactlyOnce(p, batch.id);
    expect(readInput.calls).toBe(2);
    expect(stalled.owner).not.toBe("another-instance");

    readInput.release(); // the stalled validation goes on: it must find its lease gone and write nothing
    await expectOnlyOutput(p, batch.id, done); // both instances stopped: the stalled validation has ended
  } finally {
    await p.close();
  }
}, 120_000);

test("a finalization that lost its lease deletes the file it wrote: the instance that took the batch over writes the only output file", async () => {
  const p = await twoInstances();
  try {
    const { batch, holds: [writeOutput] } = await heldBatch(p, outputWrite);

    await writeOutput.reached;
    await takeLease(p, batch.id);
    const done = await expectExactlyOnce(p, batch.id);
    expect(writeOutput.calls).toBe(2);

    writeOutput.release(); // the stalled finalization's file is written, then found nobody's and deleted
    await expectOnlyOutput(p, batch.id, done);
  } finally {
    await p.close();
  }
}, 120_000);
