CREATE TABLE "database_identity" (
	"id" text PRIMARY KEY NOT NULL
);
--> statement-breakpoint
DROP INDEX "ledger_hold_kind_uniq";--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "kind" text DEFAULT 'request' NOT NULL;--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "owner" text;--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "in_flight" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "return_requested_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "anomaly" text;--> statement-breakpoint
CREATE INDEX "holds_lease_owner_idx" ON "holds" USING btree ("owner") WHERE "holds"."kind" = 'lease' AND "holds"."state" = 'open';--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_ref_charge_uniq" ON "ledger" USING btree ("ref","kind") WHERE "ledger"."ref" IS NOT NULL AND "ledger"."kind" IN ('charge', 'shortfall');--> statement-breakpoint
CREATE UNIQUE INDEX "usage_ref_uniq" ON "usage_records" USING btree ("ref");--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_hold_kind_uniq" ON "ledger" USING btree ("hold_id","kind") WHERE "ledger"."hold_id" IS NOT NULL AND "ledger"."kind" IN ('hold', 'release');--> statement-breakpoint
UPDATE "holds" SET "kind" = 'job' WHERE "expires_at" IS NULL;--> statement-breakpoint
INSERT INTO "database_identity" ("id") VALUES (gen_random_uuid()::text);