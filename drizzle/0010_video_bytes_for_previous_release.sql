-- Expand/contract (docs/architecture.md "Schema changes"): 0007 moved a video job's bytes into
-- "blobs" and dropped video_jobs.image and .result, which the previous release (222e0b0) still
-- reads and writes: its instances failed every job read during a rolling upgrade. The columns are
-- back for one release, filled from "blobs" for the jobs that still need them, and kept in step with
-- "blobs" both ways by the triggers below (Postgres blob store only: the previous release knows no
-- other). The release after next drops the triggers, the function and the columns.
ALTER TABLE "video_jobs" ADD COLUMN IF NOT EXISTS "image" "bytea";--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN IF NOT EXISTS "result" "bytea";--> statement-breakpoint
UPDATE "video_jobs" j SET "image" = b."data" FROM "blobs" b
  WHERE j."image" IS NULL AND j."status" IN ('queued', 'processing') AND b."key" = 'videos/' || j."id" || '/source';--> statement-breakpoint
UPDATE "video_jobs" j SET "result" = b."data" FROM "blobs" b
  WHERE j."result" IS NULL AND j."status" = 'completed' AND b."key" = 'videos/' || j."id" || '/video.mp4';--> statement-breakpoint
-- a row as either release writes it: bytes the previous release put in the row go to "blobs" (where
-- this release reads them); a source image this release put in "blobs" first comes into the row
-- (where the previous release's scheduler reads it); a job that ended keeps no source, and only a
-- completed one its video
CREATE FUNCTION reelay_video_bytes_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND NEW.image IS NULL AND NEW.blob_store = 'postgres' AND NEW.status IN ('queued', 'processing') THEN
    NEW.image := (SELECT data FROM blobs WHERE key = 'videos/' || NEW.id || '/source');
  END IF;
  IF NEW.status = 'completed' AND NEW.result IS NULL AND NEW.blob_store = 'postgres' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'completed') THEN
    NEW.result := (SELECT data FROM blobs WHERE key = 'videos/' || NEW.id || '/video.mp4');
  END IF;
  -- (only IS NULL tests on OLD: comparing the bytes themselves would read them on every progress update)
  IF NEW.image IS NOT NULL AND NEW.status IN ('queued', 'processing') AND (TG_OP = 'INSERT' OR OLD.image IS NULL) THEN
    INSERT INTO blobs (key, content_type, size, data)
      VALUES ('videos/' || NEW.id || '/source', coalesce(NEW.image_mime, 'application/octet-stream'), octet_length(NEW.image), NEW.image)
      ON CONFLICT (key) DO NOTHING;
    NEW.blob_store := coalesce(NEW.blob_store, 'postgres');
  END IF;
  IF NEW.result IS NOT NULL AND NEW.status = 'completed' AND (TG_OP = 'INSERT' OR OLD.result IS NULL) THEN
    INSERT INTO blobs (key, content_type, size, data)
      VALUES ('videos/' || NEW.id || '/video.mp4', 'video/mp4', octet_length(NEW.result), NEW.result)
      ON CONFLICT (key) DO NOTHING;
    NEW.blob_store := coalesce(NEW.blob_store, 'postgres');
    NEW.result_size := coalesce(NEW.result_size, octet_length(NEW.result));
    NEW.variants := coalesce(NEW.variants, '{}');
  END IF;
  IF NEW.status NOT IN ('queued', 'processing') THEN
    NEW.image := NULL;
  END IF;
  IF NEW.status <> 'completed' THEN
    NEW.result := NULL;
  END IF;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER video_jobs_bytes BEFORE INSERT OR UPDATE ON video_jobs FOR EACH ROW EXECUTE FUNCTION reelay_video_bytes_row();
--> statement-breakpoint
-- a job's video (or source) this release stored in "blobs" after the row was written: into the row too
CREATE FUNCTION reelay_video_bytes_blob() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.key LIKE 'videos/%/video.mp4' THEN
    UPDATE video_jobs SET result = NEW.data WHERE id = split_part(NEW.key, '/', 2) AND result IS NULL AND blob_store = 'postgres';
  ELSIF NEW.key LIKE 'videos/%/source' THEN
    UPDATE video_jobs SET image = NEW.data WHERE id = split_part(NEW.key, '/', 2) AND image IS NULL AND blob_store = 'postgres' AND status IN ('queued', 'processing');
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER blobs_video_bytes AFTER INSERT ON blobs FOR EACH ROW EXECUTE FUNCTION reelay_video_bytes_blob();
