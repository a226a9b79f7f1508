CREATE TABLE "usage_rollups_minute" (
	"bucket_start" timestamp with time zone NOT NULL,
	"model" text NOT NULL,
	"kind" text NOT NULL,
	"requests" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"seconds" bigint NOT NULL,
	"credits" bigint NOT NULL,
	"errors" bigint NOT NULL,
	"client_errors" bigint NOT NULL,
	"last_error_at" timestamp with time zone,
	"last_error_code" text,
	"latency_hist" integer[] NOT NULL,
	CONSTRAINT "usage_rollups_minute_bucket_start_model_kind_pk" PRIMARY KEY("bucket_start","model","kind")
);
