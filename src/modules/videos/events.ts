/**
 * GET /v1/videos/generations/{id}/events: server-sent events with the job's status and progress as
 * they change, on any instance (job-watcher.ts), ending with the final job object (minus the video).
 *
 *   retry: 2000
 *
 *   id: 1
 *   event: video.generation.queued
 *   data: {"id":"vid_…","object":"video.generation","status":"queued",…,"urls":{…}}
 *
 *   id: 2
 *   event: video.generation.processing
 *   data: {…,"status":"processing","progress":0.35,…}
 *
 *   id: 7
 *   event: video.generation.completed
 *   data: {…,"status":"completed","expires_at":…,"urls":{…,"content":"…/content"}}
 *
 * The first event is the current state, so a client that reconnects (EventSource does, after
 * `retry`) simply gets the state again; after the final event the server closes the stream.
 */
import { Elysia, t } from "elysia";
import { isActiveStatus } from "../../db/schema/index.ts";
import type { AppDeps } from "../../deps.ts";
import { authErrors, ErrorEnvelope } from "../../http/schemas.ts";
import { requireKey } from "../../http/require-key.ts";
import { readWatchedJobs, type WatchedJob } from "./job-table/read-jobs.ts";
import { eventTypeFor, jobEventData } from "./job-event.ts";
import type { JobWatcher } from "./job-watcher.ts";
import { jobNotFound, videoExpired } from "./poll.ts";
import { EVENTS_DOCS } from "./stream-docs.ts";

/** EventSource waits this long before reconnecting (its default is about 3 s) */
const RETRY_MS = 2_000;

export function eventStream(watcher: JobWatcher, first: WatchedJob, base: string | null): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let seq = 0;
  let last = "";
  let done = false;
  let unwatch: (() => void) | null = null;
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const write = (text: string) => {
    if (!done) ctl.enqueue(encoder.encode(text));
  };
  const finish = () => {
    if (done) return;
    done = true;
    unwatch?.();
    ctl.close();
  };
  const send = (row: WatchedJob) => {
    if (done || row.accountId !== first.accountId) return;
    const key = `${row.status}|${row.progress}`;
    if (key === last) return;
    last = key;
    write(`id: ${++seq}\nevent: ${eventTypeFor(row.status, row.errorCode)}\ndata: ${JSON.stringify(jobEventData(row, base))}\n\n`);
    if (!isActiveStatus(row.status)) finish();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      ctl = controller;
      write(`retry: ${RETRY_MS}\n\n`);
      send(first);
      if (!done) unwatch = watcher.watch(first.id, { onRow: send, onPing: () => write(": ping\n\n"), onClose: finish });
    },
    cancel() {
      // the client went away
      done = true;
      unwatch?.();
    },
  });
}

export const videoEventRoutes = (deps: AppDeps) =>
  new Elysia({ prefix: "/v1", tags: ["videos"] })
    .use(requireKey(deps))
    .get("/videos/generations/:id/events", async ({ principal, params, request }) => {
      const [row] = await readWatchedJobs(deps.database.db, [params.id]);
      if (!row || row.accountId !== principal.accountId) throw jobNotFound(params.id);
      if (row.status === "expired" || (row.status === "completed" && row.expiresAt && row.expiresAt <= new Date())) throw videoExpired(params.id);
      const base = deps.config.publicUrl ?? row.linksBase ?? new URL(request.url).origin;
      return new Response(eventStream(deps.jobWatcher, row, base), {
        headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" },
      });
    }, {
      params: t.Object({ id: t.String({ maxLength: 64, error: "'id' must be a video job id." }) }),
      detail: {
        summary: "Stream a job's progress (SSE)",
        description: "Server-sent events of the job's status and progress as they change, ending with the final job object (no video bytes). Events are named `video.generation.queued`, `.processing` (again each time `progress` moves), then one of `.completed`, `.failed`, `.cancelled`, after which the stream ends. Each `data` is the job as polling shows it, without `data[].b64_json`, plus `urls` (poll, events, content). The first event is the current state, so reconnecting is always safe. Works on any instance, whichever one runs the job.",
        security: [{ bearer: [] }],
        ...EVENTS_DOCS,
      },
      response: { 404: ErrorEnvelope, 410: ErrorEnvelope, ...authErrors },
    });
