/**
 * The statements the previous release (222e0b0) writes to video_jobs, run on this release's schema:
 * the expand/contract triggers of migration 0010 copy its bytes between the row and "blobs" both
 * ways, and must never make one of its statements fail. Its completion (status completed with the
 * MP4 in the row, in one UPDATE) once failed with "tuple to be updated was already modified by an
 * operation triggered by the current command": the row trigger stored the MP4 in "blobs", whose own
 * trigger then updated the same row under the outer UPDATE. In the rolling upgrade that failed
 * every job an old instance finished, until a job was "lost" five times.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
let sql: postgres.Sql;
let accountId: string;

beforeAll(async () => {
  s = await startTestServer({ REELAY_SCHEDULER_ENABLED: "false" });
  accountId = (await s.newClient()).accountId;
  sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await s?.close();
});

const SOURCE = "the source image bytes";
const MP4 = "the finished mp4 bytes";
/** bytes as the text they were made from (a readable diff when they differ) */
const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

/** a job as the previous release inserts it: its source image in the row, no blob store named */
async function submitAsPreviousRelease(id: string) {
  await sql`INSERT INTO video_jobs (id, account_id, model, status, prompt, seed, seconds, width, height, image, image_mime, created_at, next_run_at)
            VALUES (${id}, ${accountId}, 'preview-motion', 'queued', 'p', 1, 4, 480, 832, ${Buffer.from(SOURCE)}, 'image/png', now(), now() + interval '1 day')`;
}
const blob = async (key: string) => text((await sql<{ data: Buffer }[]>`SELECT data FROM blobs WHERE key = ${key}`)[0]?.data ?? null);

test("a job the previous release submits, runs and completes: every statement succeeds and the bytes reach both places", async () => {
  const id = "vid_prev_release_rows_1";
  await submitAsPreviousRelease(id);
  // this release reads the source from the blob store
  expect(await blob(`videos/${id}/source`)).toEqual(SOURCE);
  await sql`UPDATE video_jobs SET status = 'processing', plugin_handle = 'pv_1', progress = 0.5 WHERE id = ${id}`;
  // the previous release's completeJob: the MP4 in the row, the source dropped, in one UPDATE
  await sql`UPDATE video_jobs SET status = 'completed', result = ${Buffer.from(MP4)}, image = NULL, progress = 1, completed_at = now(), expires_at = now() + interval '1 day' WHERE id = ${id}`;
  const [row] = await sql<{ status: string; result: Buffer | null; image: Buffer | null; result_size: number | null; blob_store: string | null }[]>`
    SELECT status, result, image, result_size::int AS result_size, blob_store FROM video_jobs WHERE id = ${id}`;
  expect({ ...row, result: text(row!.result), image: text(row!.image) }).toEqual({ status: "completed", result: MP4, image: null, result_size: MP4.length, blob_store: "postgres" });
  // this release reads the video from the blob store
  expect(await blob(`videos/${id}/video.mp4`)).toEqual(MP4);
});

test("a job this release completes (its MP4 stored in blobs first) has its video in the row for the previous release", async () => {
  const id = "vid_prev_release_rows_2";
  await submitAsPreviousRelease(id);
  await sql`UPDATE video_jobs SET status = 'processing' WHERE id = ${id}`;
  await sql`INSERT INTO blobs (key, content_type, size, data) VALUES (${`videos/${id}/video.mp4`}, 'video/mp4', ${MP4.length}, ${Buffer.from(MP4)})`;
  await sql`UPDATE video_jobs SET status = 'completed', result_size = ${MP4.length}, completed_at = now() WHERE id = ${id}`;
  const [row] = await sql<{ result: Buffer | null; image: Buffer | null }[]>`SELECT result, image FROM video_jobs WHERE id = ${id}`;
  expect({ result: text(row!.result), image: text(row!.image) }).toEqual({ result: MP4, image: null });
});
