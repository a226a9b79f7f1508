CREATE TABLE "responses" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text,
	"model" text NOT NULL,
	"previous_response_id" text,
	"input" jsonb NOT NULL,
	"response" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "route" text;--> statement-breakpoint
ALTER TABLE "responses" ADD CONSTRAINT "responses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "responses_expires_idx" ON "responses" USING btree ("expires_at");