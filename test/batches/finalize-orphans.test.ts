/**
 * A finalization stopped after its output file is complete and while its error file is being
 * written, before its final transition (issue 30), with two instances on one Postgres database:
 * instance A's blob store holds the error file's first part put forever (A is frozen: as good as
 * killed), and its lease is taken from it (as a dead instance's lapses). The instance that takes
 * the batch over deletes A's files — the complete one and the half-written one, rows and parts —
 * before writing its own: the account's file list holds exactly the batch's output and error files.
 * Then A wakes up (the stalled case): it finds its file gone and leaves nothing either.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { partKey } from "../../src/modules/files/file-parts.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { gateBlobStores } from "../support/blob-gate.ts";
import type { TestServer } from "../support/harness.ts";
import { chatLine, fileLines, startBatchServer, uploadBatchFile, waitForBatch } from "./batch-server.ts";

const LEASE_MS = 3_000;
const LINES = 20;

let fake: FakeOpenAI;
beforeAll(async () => { fake = await startFakeOpenAI(); });
afterAll(() => fake.stop());

/** Holds every put of the second file written after the input (the first finalization's error file) until `release()`. */
class SecondFileHold {
  private readonly ids: string[] = [];
  heldFile: string | null = null;
  private reachedNow!: () => void;
  readonly reached = new Promise<void>((r) => (this.reachedNow = r));
  private releaseNow!: () => void;
  private readonly released = new Promise<void>((r) => (this.releaseNow = r));
  constructor(private readonly inputId: string) {}
  async pass(key: string) {
    const id = key.split("/")[1]!;
    if (!key.startsWith("files/") || id === this.inputId) return;
    if (!this.ids.includes(id)) this.ids.push(id);
    if (this.ids.indexOf(id) !== 1) return;
    this.heldFile = id;
    this.reachedNow();
    await this.released;
  }
  release() {
    this.releaseNow();
  }
}

function holdPuts(s: TestServer, hold: SecondFileHold) {
  gateBlobStores(s, { beforePut: (key) => hold.pass(key) });
}

test("a finalization stopped between its file writes and its final transition: the instance that takes over deletes its files (rows and parts); the account holds exactly the batch's output and error files", async () => {
  const env = { REELAY_SCHEDULER_LEASE_MS: String(LEASE_MS) };
  const a = await startBatchServer(env, { fake });
  const b = await startBatchServer({ ...env, DATABASE_URL: a.s.databaseUrl! }, { fake });
  const sql = postgres(a.s.databaseUrl!, { max: 1, onnotice: () => {} });
  let hold: SecondFileHold | null = null;
  try {
    const c = await a.newClient(100_000_000);
    fake.reset();
    // one line fails upstream: the batch has an output file and an error file
    fake.behave({ tokens: 2, failWhen: { lastMessageIncludes: "question 7", status: 400 } });
    const input = await uploadBatchFile(c.openai, Array.from({ length: LINES }, (_, i) => chatLine(i)));
    hold = new SecondFileHold(input.id);
    for (const x of [a, b]) holdPuts(x.s, hold);
    const batch = await c.openai.batches.create({ input_file_id: input.id, endpoint: "/v1/chat/completions", completion_window: "24h" });

    await hold.reached;
    const files = () => sql<{ id: string; status: string; parts: number; batch_id: string | null }[]>`
      SELECT id, status, parts, batch_id FROM files WHERE account_id = ${c.accountId} AND purpose <> 'batch' ORDER BY created_at`;
    // the stopped finalization's files: its output file complete, its error file's row counting the part being put
    const stopped = await files();
    expect(stopped.map((f) => [f.status, f.batch_id])).toEqual([["processed", batch.id], ["uploading", batch.id]]);
    expect(stopped[1]!.id).toBe(hold.heldFile!);
    const stoppedParts = stopped.map((f) => ({ id: f.id, parts: f.parts }));
    expect(await a.s.deps.blobs.current.head(partKey(stopped[0]!.id, 0))).not.toBeNull();
    // the instance is gone: its lease lapses (here: is taken from it)
    await sql`UPDATE batches SET lease_owner = 'a-dead-instance', lease_expires_at = now() - interval '1 millisecond' WHERE id = ${batch.id}`;

    const done = await waitForBatch(c.openai, batch.id, undefined, 120_000);
    expect(done).toMatchObject({ status: "completed", request_counts: { total: LINES, completed: LINES - 1, failed: 1 } });
    expect((await fileLines(c.openai, done.output_file_id)).length).toBe(LINES - 1);
    expect((await fileLines(c.openai, done.error_file_id)).map((l) => l.custom_id)).toEqual(["req-7"]);
    const mine = [done.output_file_id!, done.error_file_id!].sort();
    const expectOnlyTheBatchFiles = async () => {
      // the account's list (every page) holds exactly the input and the batch's two files
      const listed: string[] = [];
      for await (const f of await c.openai.files.list({ limit: 2 })) listed.push(f.id);
      expect(listed.sort()).toEqual([input.id, ...mine].sort());
      expect((await files()).map((f) => f.id).sort()).toEqual(mine);
      for (const f of stoppedParts) {
        for (let n = 0; n <= f.parts; n++) expect(await a.s.deps.blobs.current.head(partKey(f.id, n))).toBeNull();
        expect((await fetch(`${a.s.url}/v1/files/${f.id}`, { headers: { authorization: `Bearer ${c.key}` } })).status).toBe(404);
      }
    };
    // A frozen for good (a kill -9): nothing of its finalization is left
    await expectOnlyTheBatchFiles();

    // A wakes up (a stall, not a kill): its error file's part is put, its row is found gone, it deletes what it wrote
    hold.release();
    await Promise.all([a.s.stop(), b.s.stop()]); // a stop waits for the scheduler's tick: A's finalization has ended
    expect((await files()).map((f) => f.id).sort()).toEqual(mine);
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM blobs WHERE key LIKE ${`files/${stoppedParts[0]!.id}/%`} OR key LIKE ${`files/${stoppedParts[1]!.id}/%`}`;
    expect(n).toBe(0);
  } finally {
    hold?.release();
    await sql.end();
    await b.close();
    await a.close();
  }
}, 180_000);
