CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"balance" bigint DEFAULT 0 NOT NULL,
	"held" bigint DEFAULT 0 NOT NULL,
	"rpm_limit" integer,
	"tpm_limit" integer,
	"video_concurrency_limit" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_balance_nonnegative" CHECK ("accounts"."balance" >= 0),
	CONSTRAINT "accounts_held_within_balance" CHECK ("accounts"."held" >= 0 AND "accounts"."held" <= "accounts"."balance")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"scopes" text[],
	"allowed_models" text[],
	"rpm_limit" integer,
	"tpm_limit" integer,
	"video_concurrency_limit" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "api_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "holds" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"ref" text NOT NULL,
	"amount" bigint NOT NULL,
	"state" text DEFAULT 'open' NOT NULL,
	"charged" bigint,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp with time zone,
	CONSTRAINT "holds_ref_unique" UNIQUE("ref"),
	CONSTRAINT "holds_amount_nonnegative" CHECK ("holds"."amount" >= 0)
);
--> statement-breakpoint
CREATE TABLE "ledger" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"kind" text NOT NULL,
	"amount" bigint NOT NULL,
	"held_change" bigint DEFAULT 0 NOT NULL,
	"hold_id" text,
	"ref" text,
	"reason" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_records" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text,
	"ref" text NOT NULL,
	"kind" text NOT NULL,
	"model" text NOT NULL,
	"prompt_tokens" integer,
	"completion_tokens" integer,
	"delivered_tokens" integer,
	"reported_tokens" integer,
	"token_source" text,
	"seconds" integer,
	"cost" bigint NOT NULL,
	"status" integer NOT NULL,
	"disconnected" boolean DEFAULT false NOT NULL,
	"latency_ms" integer,
	"plugin" text,
	"error_code" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "video_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text,
	"model" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"prompt" text NOT NULL,
	"negative_prompt" text,
	"seed" bigint NOT NULL,
	"steps" integer,
	"seconds" integer NOT NULL,
	"width" integer NOT NULL,
	"height" integer NOT NULL,
	"image" "bytea",
	"image_mime" text,
	"hold_id" text,
	"idempotency_key" text,
	"request_hash" text,
	"plugin_handle" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error_streak" integer DEFAULT 0 NOT NULL,
	"next_run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"progress" real,
	"error_code" text,
	"error_message" text,
	"result" "bytea",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "holds" ADD CONSTRAINT "holds_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger" ADD CONSTRAINT "ledger_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger" ADD CONSTRAINT "ledger_hold_id_holds_id_fk" FOREIGN KEY ("hold_id") REFERENCES "public"."holds"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD CONSTRAINT "video_jobs_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_account_idx" ON "api_keys" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "holds_open_expiry_idx" ON "holds" USING btree ("expires_at") WHERE "holds"."state" = 'open' AND "holds"."expires_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "holds_account_open_idx" ON "holds" USING btree ("account_id") WHERE "holds"."state" = 'open';--> statement-breakpoint
CREATE INDEX "ledger_account_idx" ON "ledger" USING btree ("account_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_hold_kind_uniq" ON "ledger" USING btree ("hold_id","kind") WHERE "ledger"."hold_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "usage_account_idx" ON "usage_records" USING btree ("account_id","id");--> statement-breakpoint
CREATE INDEX "usage_created_idx" ON "usage_records" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "video_jobs_idempotency_uniq" ON "video_jobs" USING btree ("account_id","idempotency_key") WHERE "video_jobs"."idempotency_key" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "video_jobs_due_idx" ON "video_jobs" USING btree ("next_run_at") WHERE "video_jobs"."status" IN ('queued', 'processing');--> statement-breakpoint
CREATE INDEX "video_jobs_account_idx" ON "video_jobs" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "video_jobs_expiry_idx" ON "video_jobs" USING btree ("expires_at") WHERE "video_jobs"."status" = 'completed';