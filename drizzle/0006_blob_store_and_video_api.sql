CREATE TABLE "blobs" (
	"key" text PRIMARY KEY NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "price_basis" text;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "blob_store" text;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "result_size" bigint;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "variants" text[];--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "price_basis" text;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "remixed_from" text;--> statement-breakpoint
-- MP4s and JPEGs do not compress: keep them out of line, uncompressed, so substring() reads only the chunks of a range
ALTER TABLE "blobs" ALTER COLUMN "data" SET STORAGE EXTERNAL;
