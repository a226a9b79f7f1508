CREATE TABLE "budget_alerts" (
	"window_id" text NOT NULL,
	"threshold" integer NOT NULL,
	"account_id" text NOT NULL,
	"budget_id" text NOT NULL,
	"spent" bigint NOT NULL,
	"limit_amount" bigint NOT NULL,
	"reached_at" timestamp with time zone DEFAULT now() NOT NULL,
	"enqueued_at" timestamp with time zone,
	CONSTRAINT "budget_alerts_window_id_threshold_pk" PRIMARY KEY("window_id","threshold")
);
--> statement-breakpoint
CREATE TABLE "budget_windows" (
	"id" text PRIMARY KEY NOT NULL,
	"budget_id" text NOT NULL,
	"account_id" text NOT NULL,
	"starts_at" timestamp with time zone NOT NULL,
	"ends_at" timestamp with time zone,
	"limit_amount" bigint NOT NULL,
	"spent" bigint DEFAULT 0 NOT NULL,
	"held" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "budget_windows_amounts_nonnegative" CHECK ("budget_windows"."spent" >= 0 AND "budget_windows"."held" >= 0)
);
--> statement-breakpoint
CREATE TABLE "budgets" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"key_id" text,
	"period" text NOT NULL,
	"limit_amount" bigint NOT NULL,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"models" text[],
	"thresholds" integer[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"removed_at" timestamp with time zone,
	CONSTRAINT "budgets_limit_nonnegative" CHECK ("budgets"."limit_amount" >= 0)
);
--> statement-breakpoint
CREATE TABLE "price_plans" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text,
	"adjustment_bp" integer DEFAULT 0 NOT NULL,
	"models" text DEFAULT '{}' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "budgets_version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "plan_id" text;--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "windows" text[];--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "budgets_version" integer;--> statement-breakpoint
ALTER TABLE "holds" ADD COLUMN "pricing" text;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "plan" text;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "pricing" text;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "budget_windows" text[];--> statement-breakpoint
ALTER TABLE "budget_windows" ADD CONSTRAINT "budget_windows_budget_id_budgets_id_fk" FOREIGN KEY ("budget_id") REFERENCES "public"."budgets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "budget_alerts_pending_idx" ON "budget_alerts" USING btree ("reached_at") WHERE "budget_alerts"."enqueued_at" IS NULL;--> statement-breakpoint
CREATE INDEX "budget_alerts_account_idx" ON "budget_alerts" USING btree ("account_id","reached_at");--> statement-breakpoint
CREATE INDEX "budget_windows_budget_idx" ON "budget_windows" USING btree ("budget_id","starts_at");--> statement-breakpoint
CREATE INDEX "budgets_account_active_idx" ON "budgets" USING btree ("account_id") WHERE "budgets"."removed_at" IS NULL;