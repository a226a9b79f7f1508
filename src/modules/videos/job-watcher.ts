/**
 * One watcher per instance for every open progress stream (GET …/events): it LISTENs on
 * `reelay_video_jobs`, which a trigger on video_jobs notifies with the job id whenever a job's
 * status or progress changes, on whichever instance ran the statement; then it reads the changed
 * jobs in one query and hands each row to that job's streams.
 *
 * Why LISTEN/NOTIFY and not polling each stream's row: 500 streams polled every 500 ms would be
 * 1,000 queries a second for mostly unchanged rows; here an idle stream costs nothing, a change
 * reaches its streams in milliseconds, and N changes within a tick are read with one query. The
 * watched rows are also re-read every `fallbackMs` (one query for all of them) because
 * notifications are not durable: one sent while the listening connection was reconnecting is lost.
 */
import type { Database } from "../../db/index.ts";
import { listen } from "../../db/listen.ts";
import type { Logger } from "../../logger.ts";
import { readWatchedJobs, type WatchedJob } from "./job-table/read-jobs.ts";

export interface JobListener {
  /** the job's row as of now (maybe unchanged: deduplicate) */
  onRow(row: WatchedJob): void;
  /** every pingMs: keep idle connections (and proxies) from timing out */
  onPing(): void;
  /** the watcher closes (shutdown): end the stream */
  onClose(): void;
}

export interface JobWatcher {
  watch(jobId: string, listener: JobListener): () => void;
  /** number of open watches (benchmarks, metrics) */
  size(): number;
  close(): Promise<void>;
}

export function createJobWatcher(deps: { database: Database; logger: Logger }, opts: { fallbackMs: number; pingMs: number }): JobWatcher {
  const subs = new Map<string, Set<JobListener>>();
  const due = new Set<string>();
  let flushing = false;
  let unlisten: Promise<(() => Promise<void>) | null> | null = null;
  let fallback: ReturnType<typeof setInterval> | null = null;
  let ping: ReturnType<typeof setInterval> | null = null;
  let closed = false;

  const dueAll = () => {
    for (const id of subs.keys()) due.add(id);
    flush();
  };

  /** Read every due job in one query; changes arriving meanwhile are read by the next round. */
  function flush() {
    if (flushing || due.size === 0 || closed) return;
    flushing = true;
    queueMicrotask(async () => {
      const ids = [...due];
      due.clear();
      try {
        for (const row of await readWatchedJobs(deps.database.db, ids)) {
          for (const l of subs.get(row.id) ?? []) l.onRow(row);
        }
      } catch (err) {
        if (!closed) deps.logger.warn({ err, jobs: ids.length }, "progress streams: could not read job states; retrying at the next change or poll");
      } finally {
        flushing = false;
        flush();
      }
    });
  }

  /** LISTEN once, on the first watch, until close(): later streams reuse it, and a notification for a job nobody watches is one Map lookup. */
  function listenOnce() {
    unlisten ??= listen(deps.database, "reelay_video_jobs", (id) => {
      if (subs.has(id)) {
        due.add(id);
        flush();
      }
    }, dueAll).catch((err) => {
      deps.logger.warn({ err }, `progress streams cannot LISTEN; they poll every ${opts.fallbackMs} ms instead`);
      return null;
    });
  }

  /** the timers run only while someone watches */
  function startTimers() {
    fallback = setInterval(dueAll, opts.fallbackMs);
    ping = setInterval(() => {
      for (const set of subs.values()) for (const l of set) l.onPing();
    }, opts.pingMs);
  }

  function stopTimers() {
    if (fallback) clearInterval(fallback);
    if (ping) clearInterval(ping);
    fallback = ping = null;
  }

  return {
    watch(jobId, listener) {
      if (closed) {
        queueMicrotask(() => listener.onClose());
        return () => {};
      }
      listenOnce();
      if (!fallback) startTimers();
      let set = subs.get(jobId);
      if (!set) subs.set(jobId, (set = new Set()));
      set.add(listener);
      return () => {
        set!.delete(listener);
        if (set!.size === 0) subs.delete(jobId);
        if (subs.size === 0) stopTimers();
      };
    },
    size: () => [...subs.values()].reduce((n, s) => n + s.size, 0),
    async close() {
      closed = true;
      const all = [...subs.values()].flatMap((s) => [...s]);
      subs.clear();
      for (const l of all) l.onClose();
      stopTimers();
      const u = await unlisten;
      await u?.().catch(() => {});
    },
  };
}
