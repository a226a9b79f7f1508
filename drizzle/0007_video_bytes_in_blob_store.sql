-- the bytes a video job kept in its own row move behind the Postgres blob store (src/blob-store/), under the keys the video module reads
INSERT INTO "blobs" ("key", "content_type", "size", "data")
  SELECT 'videos/' || "id" || '/source', coalesce("image_mime", 'application/octet-stream'), octet_length("image"), "image" FROM "video_jobs" WHERE "image" IS NOT NULL
  ON CONFLICT ("key") DO NOTHING;--> statement-breakpoint
INSERT INTO "blobs" ("key", "content_type", "size", "data")
  SELECT 'videos/' || "id" || '/video.mp4', 'video/mp4', octet_length("result"), "result" FROM "video_jobs" WHERE "result" IS NOT NULL
  ON CONFLICT ("key") DO NOTHING;--> statement-breakpoint
UPDATE "video_jobs" SET "blob_store" = 'postgres', "result_size" = octet_length("result"), "variants" = '{}'
  WHERE "image" IS NOT NULL OR "result" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "video_jobs_stored_objects_idx" ON "video_jobs" USING btree ("completed_at") WHERE "video_jobs"."blob_store" IS NOT NULL AND "video_jobs"."status" IN ('expired', 'failed');--> statement-breakpoint
ALTER TABLE "video_jobs" DROP COLUMN "image";--> statement-breakpoint
ALTER TABLE "video_jobs" DROP COLUMN "result";