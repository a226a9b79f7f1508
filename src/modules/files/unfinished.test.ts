/**
 * Uploads that never finish (issue 30): a file's row exists from before its first part is put,
 * "uploading" until the last one is. Cut off mid-way — the client aborts, or the server is killed
 * (kill -9, a child process) — the file is never visible (list, retrieve, content, delete, batch
 * input, the other account); a client's abort deletes its parts at once, a killed server's parts
 * are deleted by the sweep once the row has not been touched for UPLOAD_IDLE_MS (not before: a
 * row as fresh as a live upload's is kept).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { spawnServer, type ChildServer } from "../../../test/support/child-server.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { createLogger } from "../../logger.ts";
import { FILE_PART_BYTES, partKey } from "./file-parts.ts";
import { sweepExpiredFiles, sweepStaleUploads, UPLOAD_IDLE_MS } from "./service.ts";

let s: TestServer;
let sql: postgres.Sql;
let dir: string;
/** the in-process server's log lines (an upload the client cut off is no error of the server's) */
const logLines: Array<{ level: number; msg: string; path?: string }> = [];
beforeAll(async () => {
  const logger = createLogger({ logLevel: "info", logPretty: false }, { write: (l: string) => void l.split("\n").filter(Boolean).forEach((x) => logLines.push(JSON.parse(x))) } as unknown as NodeJS.WritableStream);
  s = await startTestServer({}, { logger });
  sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
  dir = mkdtempSync(join(tmpdir(), "reelay-files-unfinished-"));
}, 60_000);
afterAll(async () => {
  await sql.end();
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const BOUNDARY = "----reelay-unfinished";

/** POST /v1/files to `url` whose body sends the purpose and `bytes` of the file, then nothing more until `signal` aborts. */
function stalledUpload(url: string, key: string, bytes: number, signal: AbortSignal) {
  const enc = new TextEncoder();
  const chunk = new Uint8Array(1024 * 1024).fill(120);
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(enc.encode(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n\r\n`));
    },
    async pull(c) {
      if (sent >= bytes) return new Promise<void>(() => {}); // the rest never comes
      sent += chunk.length;
      c.enqueue(chunk);
    },
  });
  return fetch(url + "/v1/files", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}` }, body, duplex: "half", signal } as RequestInit).catch((e) => e as Error);
}

interface Row { id: string; status: string; parts: number }
const rowsOf = (accountId: string) => sql<Row[]>`SELECT id, status, parts FROM files WHERE account_id = ${accountId}`;
const partsLeft = async (id: string, upTo: number) => {
  const left: number[] = [];
  for (let n = 0; n < upTo; n++) if (await s.deps.blobs.current.head(partKey(id, n))) left.push(n);
  return left;
};

/** Wait until the account's one file row is uploading with its first `parts` parts in the blob store. */
async function untilPartsPut(accountId: string, parts: number): Promise<Row> {
  for (const until = performance.now() + 30_000; performance.now() < until; await Bun.sleep(50)) {
    const [r] = await rowsOf(accountId);
    if (r && r.parts >= parts && (await partsLeft(r.id, parts)).length === parts) return r;
  }
  throw new Error(`no uploading file of ${parts} parts: ${JSON.stringify(await rowsOf(accountId))}`);
}

/** Every API a client has, for the owner and for another account: the file does not exist. */
async function expectInvisible(url: string, owner: { key: string }, other: { key: string }, id: string) {
  const call = async (key: string, path: string, init: RequestInit = {}) => {
    const res = await fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  for (const who of [owner, other]) {
    expect((await call(who.key, "/v1/files")).body.data).toEqual([]);
    expect((await call(who.key, "/v1/files?purpose=batch")).body.data).toEqual([]);
    expect((await call(who.key, `/v1/files/${id}`)).status).toBe(404);
    expect((await call(who.key, `/v1/files/${id}/content`)).status).toBe(404);
    const batch = await call(who.key, "/v1/batches", { method: "POST", body: JSON.stringify({ input_file_id: id, endpoint: "/v1/chat/completions", completion_window: "24h" }) });
    expect([batch.status, batch.body.error.param]).toEqual([404, "input_file_id"]);
  }
  // a delete is a 404 and takes nothing: the row is still there for its writer (or the sweeper)
  expect((await call(owner.key, `/v1/files/${id}`, { method: "DELETE" })).status).toBe(404);
}

test("a client that aborts its upload mid-way: the file was never visible, and its row and parts are gone at once", async () => {
  const owner = await s.newClient();
  const other = await s.newClient();
  const abort = new AbortController();
  const upload = stalledUpload(s.url, owner.key, 2 * FILE_PART_BYTES + 1024 * 1024, abort.signal);
  const row = await untilPartsPut(owner.accountId, 2);
  expect(row.status).toBe("uploading");
  await expectInvisible(s.url, owner, other, row.id);
  expect((await rowsOf(owner.accountId)).map((r) => r.status)).toEqual(["uploading"]);

  abort.abort();
  await upload;
  // the server sees the body end early and deletes what it wrote (no sweep needed)
  for (const until = performance.now() + 30_000; performance.now() < until && (await rowsOf(owner.accountId)).length > 0; ) await Bun.sleep(50);
  expect((await rowsOf(owner.accountId)).length).toBe(0);
  expect(await partsLeft(row.id, row.parts + 1)).toEqual([]);
  // logged as the client's doing, not as an unhandled error of the server's
  const lines = logLines.filter((l) => l.path === "/v1/files");
  expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  expect(lines.map((l) => l.msg)).toContain("the client closed the connection before its request was read");
}, 60_000);

test("a server killed (kill -9) mid-upload: the file is never visible; the sweep keeps the row while it is as fresh as a live upload's, then deletes it and every part it counts", async () => {
  const owner = await s.newClient();
  const other = await s.newClient();
  let child: ChildServer | null = await spawnServer({ DATABASE_URL: s.databaseUrl!, REELAY_DATA_DIR: join(dir, "child") });
  const abort = new AbortController();
  try {
    const upload = stalledUpload(child.url, owner.key, 2 * FILE_PART_BYTES + 1024 * 1024, abort.signal);
    const row = await untilPartsPut(owner.accountId, 2);
    await child.kill9();
    child = null;
    await upload;
    const [left] = await rowsOf(owner.accountId);
    expect(left).toMatchObject({ id: row.id, status: "uploading" });
    // the count is written before each part's put: it covers every part that may exist
    expect(left!.parts).toBeGreaterThanOrEqual(2);
    expect(await partsLeft(row.id, 2)).toEqual([0, 1]);
    await expectInvisible(s.url, owner, other, row.id);

    // as fresh as a live upload's (touched within UPLOAD_IDLE_MS): kept
    await sweepStaleUploads(s.deps);
    expect((await rowsOf(owner.accountId)).map((r) => r.id)).toEqual([row.id]);
    expect(await partsLeft(row.id, 2)).toEqual([0, 1]);

    // not touched for longer than UPLOAD_IDLE_MS: a dead writer's
    await sql`UPDATE files SET updated_at = now() - make_interval(secs => ${UPLOAD_IDLE_MS / 1000 + 60}) WHERE id = ${row.id}`;
    expect(await sweepStaleUploads(s.deps)).toBe(1);
    expect((await rowsOf(owner.accountId)).length).toBe(0);
    expect(await partsLeft(row.id, left!.parts + 1)).toEqual([]);
    await expectInvisible(s.url, owner, other, row.id);
  } finally {
    abort.abort();
    await child?.kill9();
  }
}, 90_000);

test("a file the previous release wrote (its INSERT names none of migration 0019's columns) is a complete file: listed, read, deleted", async () => {
  const owner = await s.newClient();
  const id = "file-previousrelease000000001";
  await s.deps.blobs.current.put(partKey(id, 0), new TextEncoder().encode("old bytes"), { contentType: "application/octet-stream" });
  // the previous release's insertFile, word for word
  await sql`INSERT INTO files (id, account_id, filename, purpose, bytes, parts, blob_store, expires_at)
    VALUES (${id}, ${owner.accountId}, 'old.txt', 'user_data', 9, 1, ${s.deps.blobs.current.name}, now() + interval '1 day')`;
  const get = (path: string, method = "GET") => fetch(s.url + path, { method, headers: { authorization: `Bearer ${owner.key}` } });
  expect(((await (await get("/v1/files")).json()) as any).data.map((f: any) => [f.id, f.status, f.bytes])).toEqual([[id, "processed", 9]]);
  expect(await (await get(`/v1/files/${id}/content`)).text()).toBe("old bytes");
  expect(await sweepStaleUploads(s.deps, 0)).toBe(0); // a complete file is never the dead-upload sweep's
  expect((await get(`/v1/files/${id}`, "DELETE")).status).toBe(200);
  expect(await s.deps.blobs.current.head(partKey(id, 0))).toBeNull();
});

test("a deletion cut off between taking the row and deleting the parts (a kill -9 in the expiry sweep or a DELETE) leaves a row the dead-upload sweep finishes", async () => {
  const owner = await s.newClient();
  const put = async (id: string) => {
    await s.deps.blobs.current.put(partKey(id, 0), new TextEncoder().encode("x"), { contentType: "application/octet-stream" });
    await sql`INSERT INTO files (id, account_id, filename, purpose, bytes, parts, blob_store, expires_at, created_at, updated_at)
      VALUES (${id}, ${owner.accountId}, 'a.txt', 'user_data', 1, 1, ${s.deps.blobs.current.name}, now() - interval '1 second', now() - interval '30 days', now() - interval '30 days')`;
  };
  // expired: the expiry sweep takes the row, deletes the part, then the row
  await put("file-expired00000000000000001");
  expect(await sweepExpiredFiles(s.deps)).toBe(1);
  expect(await s.deps.blobs.current.head(partKey("file-expired00000000000000001", 0))).toBeNull();
  // the same, killed after the row was taken: the row stays "deleting" (invisible), then the dead-upload sweep deletes part and row
  await put("file-expired00000000000000002");
  await sql`UPDATE files SET status = 'deleting' WHERE id = 'file-expired00000000000000002'`;
  expect((await fetch(`${s.url}/v1/files/file-expired00000000000000002`, { headers: { authorization: `Bearer ${owner.key}` } })).status).toBe(404);
  expect(await sweepStaleUploads(s.deps)).toBe(1);
  expect(await s.deps.blobs.current.head(partKey("file-expired00000000000000002", 0))).toBeNull();
  expect((await rowsOf(owner.accountId)).length).toBe(0);
});
