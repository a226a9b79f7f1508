-- The blob trigger of 0010 updated video_jobs also when the INSERT into "blobs" came from the row
-- trigger itself (the previous release completing a job: its MP4 in the row, copied to "blobs" by
-- reelay_video_bytes_row): that UPDATE touched the very row the outer UPDATE was writing, and
-- Postgres refused the outer one ("tuple to be updated was already modified by an operation
-- triggered by the current command"), so an old instance could complete no job on this schema.
-- The row trigger has already put the bytes in the row then: the blob trigger acts only on blobs
-- written by a statement of its own (trigger depth 1). Dropped with the rest of 0010 (see there).
CREATE OR REPLACE FUNCTION reelay_video_bytes_blob() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF pg_trigger_depth() > 1 THEN
    RETURN NULL;
  END IF;
  IF NEW.key LIKE 'videos/%/video.mp4' THEN
    UPDATE video_jobs SET result = NEW.data WHERE id = split_part(NEW.key, '/', 2) AND result IS NULL AND blob_store = 'postgres';
  ELSIF NEW.key LIKE 'videos/%/source' THEN
    UPDATE video_jobs SET image = NEW.data WHERE id = split_part(NEW.key, '/', 2) AND image IS NULL AND blob_store = 'postgres' AND status IN ('queued', 'processing');
  END IF;
  RETURN NULL;
END $$;
