-- the API route a video job was submitted with, for its usage row (jobs from before stay null: which API made them is not known)
ALTER TABLE "video_jobs" ADD COLUMN "route" text;