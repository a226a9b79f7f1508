/**
 * In-process bookkeeping for render jobs. Results live here only until the host has polled them
 * once (it stores them in Postgres) or until `resultTtlMs` passes, and at most `maxFinished` wait at
 * a time, so an instance that nobody polls cannot fill its memory with MP4s (a 5 s clip is ~1 MB).
 * A handle this table does not know (evicted, expired, or from before a restart) polls as "lost".
 */
import type { VideoPollResult } from "@reelay/plugin-sdk";

export type JobState =
  | { state: "queued" }
  | { state: "running"; progress: number }
  | { state: "succeeded"; mp4: Uint8Array; finishedAt: number }
  | { state: "failed"; code: string; message: string; finishedAt: number };

export interface JobTableLimits {
  resultTtlMs: number;
  maxFinished: number;
}

export class JobTable {
  private readonly jobs = new Map<string, JobState>();
  constructor(private readonly limits: JobTableLimits, private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.jobs.size;
  }

  set(handle: string, state: JobState): void {
    this.jobs.delete(handle); // re-insert so Map order is the order jobs reached their state
    this.jobs.set(handle, state);
    if (state.state === "succeeded" || state.state === "failed") this.sweep();
  }

  has(handle: string): boolean {
    return this.jobs.has(handle);
  }

  delete(handle: string): void {
    this.jobs.delete(handle);
  }

  /** what poll answers; a finished job is handed over once and then forgotten */
  take(handle: string): VideoPollResult {
    this.sweep();
    const job = this.jobs.get(handle);
    if (!job) return { state: "lost" };
    switch (job.state) {
      case "queued":
        return { state: "queued" };
      case "running":
        return { state: "running", progress: job.progress };
      case "succeeded":
        this.jobs.delete(handle);
        return { state: "succeeded", mp4: job.mp4 };
      case "failed":
        this.jobs.delete(handle);
        return { state: "failed", code: job.code, message: job.message, retryable: false };
    }
  }

  /** drop finished jobs past their TTL, then the oldest finished beyond the count limit */
  private sweep(): void {
    const cutoff = this.now() - this.limits.resultTtlMs;
    const finished: string[] = [];
    for (const [handle, job] of this.jobs) {
      if (job.state !== "succeeded" && job.state !== "failed") continue;
      if (job.finishedAt <= cutoff) this.jobs.delete(handle);
      else finished.push(handle);
    }
    for (let i = 0; i < finished.length - this.limits.maxFinished; i++) this.jobs.delete(finished[i]!);
  }
}
