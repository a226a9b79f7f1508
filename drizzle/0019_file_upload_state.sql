-- expand only (the previous release's INSERTs fill none of these: they get 'processed', now(), null): a file's row exists from before its first part is put (status 'uploading', parts counted before each put) so a kill -9 mid-write leaves a row the sweeper finds; a batch's output and error files name their batch, so a finalization deletes what an earlier, killed one of the same batch wrote
ALTER TABLE "files" ADD COLUMN "status" text DEFAULT 'processed' NOT NULL;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "files" ADD COLUMN "batch_id" text;--> statement-breakpoint
CREATE INDEX "files_unfinished_idx" ON "files" USING btree ("updated_at") WHERE "files"."status" <> 'processed';--> statement-breakpoint
CREATE INDEX "files_batch_idx" ON "files" USING btree ("batch_id") WHERE "files"."batch_id" IS NOT NULL;