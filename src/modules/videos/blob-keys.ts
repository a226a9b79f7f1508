/** Where a job's objects live in the blob store: one prefix per job, so retention deletes them together. */
export type StillVariant = "thumbnail" | "spritesheet";

export const sourceKey = (jobId: string) => `videos/${jobId}/source`;
export const videoKey = (jobId: string) => `videos/${jobId}/video.mp4`;
export const stillKey = (jobId: string, variant: StillVariant) => `videos/${jobId}/${variant}.jpg`;
export const allKeys = (jobId: string) => [sourceKey(jobId), videoKey(jobId), stillKey(jobId, "thumbnail"), stillKey(jobId, "spritesheet")];
