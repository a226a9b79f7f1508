/**
 * bytea parameters go to PostgreSQL in binary format (postgres.js 3.4.9, patched by
 * patches/postgres+3.4.9.patch): postgres.js sent every parameter as text, a bytea as `\x` + hex,
 * so a video result stored in the blob store crossed the socket at twice its size after a hex
 * encoding (a 300 kB put cost 4.8 ms of CPU, a 2 MB one 68 ms; 3.3 and 28 ms binary).
 * What a caller sees is the same bytes back; what the patch changes is what crosses the socket,
 * counted here by a TCP relay between the pool and the server.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { Socket, TCPSocketListener } from "bun";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";

let url: string;
let database: Database;

/**
 * Writes to a Bun socket in order, whole: `socket.write` takes what fits in the socket's buffer and
 * returns how much (a 1.5 MB statement under load: less), so the rest waits for `drain`. Writing
 * without this dropped the rest of a large message, and the pool waited for the server's answer to
 * a statement the server never got whole (the test hung in 3 of 27 runs on a loaded machine).
 * What is written before the socket is attached (the relay still connecting) waits for it too.
 */
class Outbox {
  private queue: Uint8Array[] = [];
  private socket: { write(b: Uint8Array): number } | null = null;
  attach(socket: { write(b: Uint8Array): number }): void {
    this.socket = socket;
    this.drain();
  }
  /** `chunk` is copied if it must wait (Bun reuses a data callback's buffer) */
  write(chunk: Uint8Array): void {
    if (this.queue.length > 0 || !this.socket) return void this.queue.push(new Uint8Array(chunk));
    const n = this.socket.write(chunk);
    if (n < chunk.byteLength) this.queue.push(new Uint8Array(chunk.subarray(Math.max(0, n))));
  }
  drain(): void {
    while (this.socket && this.queue.length > 0) {
      const head = this.queue[0]!;
      const n = this.socket.write(head);
      if (n < head.byteLength) return void (this.queue[0] = head.subarray(Math.max(0, n)));
      this.queue.shift();
    }
  }
}

interface Relayed { upstream?: Socket<{ client: Socket<Relayed> }>; toServer: Outbox; toClient: Outbox }
let relay: TCPSocketListener<Relayed>;
let sentToServer = 0;

beforeAll(async () => {
  url = await createTestDatabase();
  const target = new URL(url);
  // client → relay → PostgreSQL, counting the bytes the client sends
  relay = Bun.listen<Relayed>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async open(client) {
        client.data = { toServer: new Outbox(), toClient: new Outbox() };
        client.data.toClient.attach(client);
        const upstream = await Bun.connect<{ client: Socket<Relayed> }>({
          hostname: target.hostname,
          port: Number(target.port || 5432),
          data: { client },
          socket: {
            data: (s, chunk) => s.data.client.data.toClient.write(chunk),
            drain: (s) => s.data.client.data.toServer.drain(),
            close: (s) => void s.data.client.end(),
            error: (s) => void s.data.client.end(),
          },
        });
        client.data.upstream = upstream;
        client.data.toServer.attach(upstream);
      },
      data(client, chunk) {
        sentToServer += chunk.byteLength;
        client.data.toServer.write(chunk);
      },
      drain: (client) => client.data.toClient.drain(),
      close: (client) => void client.data.upstream?.end(),
    },
  });
  const via = new URL(url);
  via.hostname = "127.0.0.1";
  via.port = String(relay.port);
  database = await openDatabase({ databaseUrl: via.toString(), dataDir: "/nonexistent", poolSize: 2 });
  await query(database.db, sql`CREATE TABLE b (k text PRIMARY KEY, v bytea)`);
});
afterAll(async () => {
  await database?.close();
  relay?.stop(true);
  if (url) await dropDatabase(url);
});

const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");

test("bytes of every value, a view into a larger buffer, an empty value and 3 MB come back exactly, prepared or not", async () => {
  const every = Uint8Array.from({ length: 4096 }, (_, i) => i % 256);
  const backing = new Uint8Array(10_000).map((_, i) => (i * 7) % 256);
  const view = Buffer.from(backing.buffer, 1234, 5000);
  const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 31 + (i >> 8)) % 256);
  const values: Array<[string, Uint8Array]> = [["every", every], ["view", view], ["empty", new Uint8Array(0)], ["big", big]];
  for (const [k, v] of values) await query(database.db, sql`INSERT INTO b (k, v) VALUES (${k}, ${v})`);
  // drizzle's execute: an unnamed statement, described first
  await database.db.execute(sql`INSERT INTO b (k, v) VALUES (${"unprepared"}, ${every})`);
  const rows = await query<{ k: string; n: number; m: string }>(database.db, sql`SELECT k, length(v) AS n, md5(v) AS m FROM b ORDER BY k`);
  expect(rows).toEqual([
    { k: "big", n: big.byteLength, m: md5(big) },
    { k: "empty", n: 0, m: md5(new Uint8Array(0)) },
    { k: "every", n: 4096, m: md5(every) },
    { k: "unprepared", n: 4096, m: md5(every) },
    { k: "view", n: 5000, m: md5(view) },
  ]);
  const [back] = await query<{ v: Uint8Array }>(database.db, sql`SELECT v FROM b WHERE k = 'view'`);
  expect(Buffer.from(back!.v).equals(view)).toBe(true);
});

test("a 2 MB value crosses the socket once at its size, not as hex at twice it", async () => {
  const value = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i * 13) % 256);
  await query(database.db, sql`INSERT INTO b (k, v) VALUES (${"warm"}, ${new Uint8Array(1)}) ON CONFLICT (k) DO NOTHING`);
  const before = sentToServer;
  await query(database.db, sql`INSERT INTO b (k, v) VALUES (${"sized"}, ${value}) ON CONFLICT (k) DO UPDATE SET v = excluded.v`);
  const sent = sentToServer - before;
  expect(sent).toBeGreaterThanOrEqual(value.byteLength);
  expect(sent).toBeLessThan(value.byteLength + 4096);
  const [row] = await query<{ m: string }>(database.db, sql`SELECT md5(v) AS m FROM b WHERE k = 'sized'`);
  expect(row!.m).toBe(md5(value));
});

test("two bytea values with text after each in one statement, and many puts pipelined at once, come back exactly", async () => {
  await query(database.db, sql`CREATE TABLE IF NOT EXISTS b2 (k text PRIMARY KEY, a bytea, t text, c bytea, u text)`);
  const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * seed + 11) % 256);
  // small statements share one socket write (postgres.js gathers them for a tick); large ones go at once
  const rows = Array.from({ length: 24 }, (_, i) => ({ k: `r${i}`, a: bytes(i % 3 === 0 ? 300_000 + i : 10 + i, 7 + i), t: `text ${i} ✓`, c: bytes(i % 4 === 0 ? 1_500_000 : 200 + i, 13 + i), u: `after ${i}` }));
  await Promise.all(rows.map((r) => query(database.db, sql`INSERT INTO b2 (k, a, t, c, u) VALUES (${r.k}, ${r.a}, ${r.t}, ${r.c}, ${r.u})`)));
  const back = await query<{ k: string; am: string; t: string; cm: string; u: string }>(database.db, sql`SELECT k, md5(a) AS am, t, md5(c) AS cm, u FROM b2 ORDER BY k`);
  expect(back).toEqual(rows.map((r) => ({ k: r.k, am: md5(r.a), t: r.t, cm: md5(r.c), u: r.u })).sort((x, y) => (x.k < y.k ? -1 : 1)));
});
