ALTER TABLE "usage_records" ADD COLUMN "cached_tokens" integer;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "cache_write_tokens" integer;