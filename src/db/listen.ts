/**
 * LISTEN on a channel, for both drivers. postgres.js keeps one dedicated connection for all its
 * listeners and re-issues LISTEN after a reconnect (`onListen` runs each time: notifications sent
 * while it was away are lost, so callers re-check their state then). PGlite delivers notifications
 * of its single in-process connection.
 */
import type { Database } from "./index.ts";

type PostgresClient = { listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<{ unlisten(): Promise<void> }> };
type PgliteClient = { listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> };

/** Returns the function that stops listening. */
export async function listen(database: Database, channel: string, onNotify: (payload: string) => void, onListen: () => void = () => {}): Promise<() => Promise<void>> {
  const client = (database.db as unknown as { $client: unknown }).$client;
  if (database.kind === "postgres") {
    const sub = await (client as PostgresClient).listen(channel, onNotify, onListen);
    return () => sub.unlisten();
  }
  const unlisten = await (client as PgliteClient).listen(channel, onNotify);
  onListen();
  return unlisten;
}
