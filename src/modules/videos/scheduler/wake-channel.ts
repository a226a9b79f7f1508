/**
 * Wake-ups between instances: a hook (a Replicate webhook) reaches whichever instance the load
 * balancer picked, while the job is polled by the instance that claimed it. A wake-up no job here
 * takes is sent as a NOTIFY on `reelay_video_wake`; every instance listens and wakes the job if it
 * runs it. Only misses are sent (one instance: none at all), so the channel carries a few messages
 * per finished job at most. NOTIFY is not durable: a lost wake-up costs one poll interval, no more.
 * Under PGlite there is one instance (the data directory is locked), so no channel is opened.
 */
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../../deps.ts";
import { listen } from "../../../db/listen.ts";

const CHANNEL = "reelay_video_wake";

export interface WakeChannel {
  send(model: string, handle: string): void;
  close(): Promise<void>;
}

export function openWakeChannel(deps: Pick<AppDeps, "database" | "logger">, owner: string, onWake: (model: string, handle: string) => void): WakeChannel {
  if (deps.database.kind !== "postgres") return { send() {}, close: async () => {} };
  const db = deps.database.db;
  const unlisten = listen(deps.database, CHANNEL, (payload) => {
    try {
      const [from, model, handle] = JSON.parse(payload) as [string, string, string];
      if (from !== owner && typeof model === "string" && typeof handle === "string") onWake(model, handle);
    } catch {
      // not ours to read: ignore
    }
  }).catch((err) => {
    deps.logger.warn({ err }, "video wake-ups from other instances are off (LISTEN failed): their jobs are polled at their interval");
    return null;
  });
  return {
    send(model, handle) {
      // ≤ 8000 bytes: a handle is ≤ 1024 characters, a model id ≤ 128
      db.execute(sql`SELECT pg_notify(${CHANNEL}, ${JSON.stringify([owner, model, handle])})`).catch((err) => {
        deps.logger.debug({ err }, "could not send a video wake-up to other instances");
      });
    },
    async close() {
      const stop = await unlisten;
      await stop?.().catch(() => {});
    },
  };
}
