/** A video job as OpenAI's video object: one job table, seen through the Videos API's words. */
import type { JobView } from "../videos/job-table/columns.ts";
import type { Video } from "./model.ts";

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);
const STATUS = { queued: "queued", processing: "in_progress", completed: "completed", expired: "completed", failed: "failed" } as const;

export function presentVideo(job: JobView): Video {
  const done = job.status === "completed" || job.status === "expired";
  const fraction = job.progress ?? 0;
  return {
    id: job.id,
    object: "video",
    model: job.model,
    status: STATUS[job.status],
    // 100 only when the video exists; a running job shows at most 99
    progress: done ? 100 : job.status === "queued" ? 0 : Math.min(99, Math.max(0, Math.floor(fraction * 100))),
    created_at: unix(job.createdAt)!,
    completed_at: unix(job.completedAt),
    expires_at: done ? unix(job.expiresAt) : null,
    prompt: job.prompt,
    seconds: String(job.seconds),
    size: `${job.width}x${job.height}`,
    remixed_from_video_id: job.remixedFrom,
    error: job.status === "failed" ? { code: job.errorCode ?? "generation_failed", message: job.errorMessage ?? "The video generation failed." } : null,
  };
}
