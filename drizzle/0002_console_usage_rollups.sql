CREATE TABLE "usage_rollup_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"rolled_until" timestamp with time zone NOT NULL,
	"rolled_max_id" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_rollups" (
	"bucket_start" timestamp with time zone NOT NULL,
	"model" text NOT NULL,
	"kind" text NOT NULL,
	"requests" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"seconds" bigint NOT NULL,
	"credits" bigint NOT NULL,
	"errors" bigint NOT NULL,
	"latency_hist" integer[] NOT NULL,
	CONSTRAINT "usage_rollups_bucket_start_model_kind_pk" PRIMARY KEY("bucket_start","model","kind")
);
--> statement-breakpoint
CREATE INDEX "usage_account_created_idx" ON "usage_records" USING btree ("account_id","created_at");