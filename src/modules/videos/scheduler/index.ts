/**
 * The in-process video scheduler. State lives in Postgres only, so any number of instances can run
 * it against one database: each claims due jobs under a lease (job-table/claim-due-jobs.ts), runs them
 * concurrently up to each model's `maxConcurrency`, renews its leases every lease/3 and, on
 * shutdown, aborts its plugin calls and hands its jobs straight back to the queue. A plugin's
 * wake-up (ctx.video.wake) ends the wait before a job's next poll here, or on the instance that
 * runs the job (wake-channel.ts).
 */
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../../deps.ts";
import type { RegisteredModel } from "../../../registry/model-registry.ts";
import { every, type BackgroundTask } from "../../../background.ts";
import { claimDueJobs, modelsWithDueJobs, releaseAllLeases, releaseJob, renewLeases, type ClaimedJob } from "../job-table/claim-due-jobs.ts";
import { expireResults, failJob } from "../job-table/transitions.ts";
import { runJob } from "./run-job.ts";
import { PollPacer } from "./poll-pacer.ts";
import { sweepStoredObjects } from "./sweep-objects.ts";
import { openWakeChannel, type WakeChannel } from "./wake-channel.ts";

/** a plugin that states no limit gets 4 jobs in flight per instance */
export const DEFAULT_MODEL_CONCURRENCY = 4;
const SWEEP_INTERVAL_MS = 5_000;
/** a job of a model this instance does not serve is looked at again after this long (another instance may serve it) */
const ORPHAN_RECHECK_MS = 30_000;

interface Running {
  model: string;
  controller: AbortController;
  done: Promise<void>;
}

export function createVideoScheduler(deps: AppDeps): BackgroundTask {
  const { config, logger } = deps;
  const db = deps.database.db;
  const owner = config.instanceId;
  const running = new Map<string, Running>();
  const perModel = new Map<string, number>();
  let stopped = true;
  let wake: (() => void) | null = null;
  let loop: Promise<void> | null = null;
  const pacer = new PollPacer();
  let channel: WakeChannel | null = null;
  let unsubscribe: (() => void) | null = null;

  const kick = () => wake?.();

  function start(job: ClaimedJob, model: RegisteredModel) {
    const controller = new AbortController();
    perModel.set(job.model, (perModel.get(job.model) ?? 0) + 1);
    const done = runJob({ deps, owner, plugin: model.plugin, video: model.instance.video!, signal: controller.signal, pacer }, job)
      .catch((err) => {
        if (!controller.signal.aborted) logger.error({ err, jobId: job.id }, "video job runner failed; the lease will expire and the job be retried");
      })
      .finally(() => {
        running.delete(job.id);
        pacer.forget(job.id);
        perModel.set(job.model, (perModel.get(job.model) ?? 1) - 1);
        kick();
      });
    running.set(job.id, { model: job.model, controller, done });
  }

  async function tick() {
    for (const model of await modelsWithDueJobs(db)) {
      if (stopped) return;
      const registered = deps.registry.get(model);
      const video = registered?.instance.video;
      if (!registered || !video) {
        // jobs of a model this instance does not serve: another instance may, so only fail them
        // once their lease is free and nobody else picked them for a whole minute
        await failOrphans(model);
        continue;
      }
      const free = (video.maxConcurrency ?? DEFAULT_MODEL_CONCURRENCY) - (perModel.get(model) ?? 0);
      if (free <= 0) continue;
      const jobs = await claimDueJobs(db, { owner, leaseMs: config.schedulerLeaseMs, model, limit: free });
      // a job still running here whose lease lapsed (its renewal came late: a stalled event loop)
      // is claimed back by this same instance: the claim renewed the lease, the runner goes on;
      // a second runner would submit it to the provider again before the first saved its handle
      for (const job of jobs) if (!running.has(job.id)) start(job, registered);
    }
  }

  async function failOrphans(model: string) {
    const jobs = await claimDueJobs(db, { owner, leaseMs: config.schedulerLeaseMs, model, limit: 50 });
    for (const job of jobs) {
      await failJob(deps, job.id, { code: "model_unavailable", message: `model '${model}' is no longer served` }, { plugin: null, guard: sql`v.lease_owner = ${owner} AND v.created_at < now() - interval '1 minute'` });
      await releaseJob(db, job.id, owner, ORPHAN_RECHECK_MS);
    }
  }

  async function runLoop() {
    while (!stopped) {
      try {
        await tick();
      } catch (err) {
        logger.error({ err }, "video scheduler tick failed");
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, config.schedulerPollMs);
        function done() {
          clearTimeout(timer);
          wake = null;
          resolve();
        }
        wake = done;
      });
    }
  }

  const heartbeat = every(Math.max(200, Math.floor(config.schedulerLeaseMs / 3)), async () => {
    const ids = [...running.keys()];
    const ours = await renewLeases(db, owner, ids, config.schedulerLeaseMs);
    for (const id of ids) {
      // cancelled, or the lease lapsed and another instance took the job: stop our copy
      if (!ours.has(id)) running.get(id)?.controller.abort(new Error("job no longer leased by this instance"));
    }
  }, (err) => logger.error({ err }, "video lease renewal failed"));

  const sweeper = every(SWEEP_INTERVAL_MS, async () => {
    const n = await expireResults(deps);
    if (n) logger.info({ expired: n }, "video results past retention dropped");
    const swept = await sweepStoredObjects(deps);
    if (swept) logger.info({ jobs: swept }, "stored objects of ended video jobs deleted");
  }, (err) => logger.error({ err }, "video retention sweep failed"));

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      channel = openWakeChannel(deps, owner, (model, handle) => pacer.wake(model, handle));
      // a job polled here is woken here; any other is woken on the instance that runs it
      unsubscribe = deps.registry.wakeups.subscribe((model, handle) => {
        if (!pacer.wake(model, handle)) channel?.send(model, handle);
      });
      loop = runLoop();
      heartbeat.start();
      sweeper.start();
    },
    async stop() {
      stopped = true;
      unsubscribe?.();
      kick();
      await loop;
      for (const r of running.values()) r.controller.abort(new Error("shutting down"));
      await Promise.allSettled([...running.values()].map((r) => r.done));
      await heartbeat.stop();
      await sweeper.stop();
      await channel?.close();
      const released = await releaseAllLeases(db, owner).catch((err) => {
        logger.warn({ err }, "could not hand video jobs back on shutdown; their leases will expire");
        return 0;
      });
      if (released) logger.info({ released }, "video jobs handed back to the queue");
    },
  };
}
