-- the W3C traceparent of the request that submitted a video job, and of the job on its webhook deliveries (null when tracing is off): the scheduler and the delivery worker continue the trace on any instance
ALTER TABLE "video_jobs" ADD COLUMN "traceparent" text;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "traceparent" text;