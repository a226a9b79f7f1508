CREATE TABLE "files" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"filename" text NOT NULL,
	"purpose" text NOT NULL,
	"bytes" bigint NOT NULL,
	"parts" integer NOT NULL,
	"blob_store" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "batch_lines" (
	"batch_id" text NOT NULL,
	"line" integer NOT NULL,
	"custom_id" text NOT NULL,
	"body" jsonb NOT NULL,
	"result" text,
	"ok" boolean,
	CONSTRAINT "batch_lines_batch_id_line_pk" PRIMARY KEY("batch_id","line")
);
--> statement-breakpoint
CREATE TABLE "batch_slices" (
	"batch_id" text NOT NULL,
	"slice" integer NOT NULL,
	"first_line" integer NOT NULL,
	"last_line" integer NOT NULL,
	"done" boolean DEFAULT false NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	CONSTRAINT "batch_slices_batch_id_slice_pk" PRIMARY KEY("batch_id","slice")
);
--> statement-breakpoint
CREATE TABLE "batches" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text,
	"principal" jsonb NOT NULL,
	"endpoint" text NOT NULL,
	"input_file_id" text NOT NULL,
	"completion_window" text NOT NULL,
	"metadata" jsonb,
	"status" text NOT NULL,
	"errors" jsonb,
	"output_file_id" text,
	"error_file_id" text,
	"total" integer DEFAULT 0 NOT NULL,
	"completed" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"in_progress_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"finalizing_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"failed_at" timestamp with time zone,
	"expired_at" timestamp with time zone,
	"cancelling_at" timestamp with time zone,
	"cancelled_at" timestamp with time zone,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "files_account_created_idx" ON "files" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "files_expires_idx" ON "files" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "batches_account_created_idx" ON "batches" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "batches_status_idx" ON "batches" USING btree ("status");