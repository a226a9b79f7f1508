-- the W3C traceparent of the request that created a batch (null when tracing is off): each line's span joins its trace, on any instance
ALTER TABLE "batches" ADD COLUMN "traceparent" text;