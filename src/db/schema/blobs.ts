import { bigint, pgTable, text, timestamp } from "drizzle-orm/pg-core";
import { bytea } from "./video-jobs.ts";

/**
 * The Postgres blob store's objects (src/blob-store/postgres-store.ts): video results, thumbnails,
 * spritesheets and source images, by key. `data` is stored out of line and uncompressed (the
 * migration sets STORAGE EXTERNAL: an MP4 or JPEG does not compress), so a ranged read with
 * `substring` fetches only the TOAST chunks it needs.
 */
export const blobs = pgTable("blobs", {
  /** e.g. "videos/vid_…/video.mp4" */
  key: text("key").primaryKey(),
  contentType: text("content_type").notNull(),
  size: bigint("size", { mode: "number" }).notNull(),
  data: bytea("data").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
