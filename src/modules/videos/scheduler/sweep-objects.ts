/**
 * Retention for the blob store: the objects of expired jobs (past retention or deleted by their
 * owner) and of failed jobs (their source image) are deleted, then forgotten
 * (job-table/stored-objects.ts). A store that is down keeps its objects until a later sweep.
 */
import type { AppDeps } from "../../../deps.ts";
import { allKeys } from "../blob-keys.ts";
import { clearStoredObjects, jobsWithObjectsToDelete } from "../job-table/stored-objects.ts";

const BATCH = 100;

export async function sweepStoredObjects(deps: Pick<AppDeps, "database" | "blobs" | "logger">): Promise<number> {
  const jobs = await jobsWithObjectsToDelete(deps.database.db, BATCH);
  const done: string[] = [];
  for (const job of jobs) {
    const store = deps.blobs.byName(job.blobStore);
    if (!store) continue; // a store no longer configured: its objects stay where they are
    try {
      await store.delete(allKeys(job.id));
      done.push(job.id);
    } catch (err) {
      deps.logger.warn({ err, jobId: job.id, store: job.blobStore }, "could not delete a video job's objects; the next sweep tries again");
    }
  }
  await clearStoredObjects(deps.database.db, done);
  return done.length;
}
