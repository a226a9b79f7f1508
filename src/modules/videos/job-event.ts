/**
 * A job as its events show it (webhooks and the /events stream): the polling view without the
 * video bytes, plus links to poll it, stream its events and download the MP4.
 */
import type { VideoJobStatus } from "../../db/schema/index.ts";
import type { EventPayload, EventType } from "../webhooks/model.ts";
import type { JobView } from "./job-table/columns.ts";
import { present } from "./poll.ts";

export type JobEventData = EventPayload["data"];

/** The event a job state is: cancels are failures with code `cancelled`; a queued job is an event of the stream only. */
export function eventTypeFor(status: Exclude<VideoJobStatus, "queued">, errorCode?: string | null): EventType;
export function eventTypeFor(status: VideoJobStatus, errorCode?: string | null): EventType | "video.generation.queued";
export function eventTypeFor(status: VideoJobStatus, errorCode: string | null = null): EventType | "video.generation.queued" {
  if (status === "failed") return errorCode === "cancelled" ? "video.generation.cancelled" : "video.generation.failed";
  if (status === "expired") return "video.generation.completed";
  return `video.generation.${status}`;
}

/** `base`: the origin links point at (REELAY_PUBLIC_URL or the submit request's); null gives root-relative links. */
export function jobEventData(row: JobView, base: string | null): JobEventData {
  const job = present(row); // never the video
  const self = `${base ?? ""}/v1/videos/generations/${row.id}`;
  const urls: JobEventData["urls"] = { poll: self, events: `${self}/events` };
  if (job.status === "completed") urls.content = `${self}/content`;
  return { ...(job as Omit<JobEventData, "urls">), urls };
}
