/**
 * Databases as earlier releases left them: `buildFixture(db, n)` applies migrations 0..n (the list in
 * src/db/migrations.ts, whatever it holds when the test runs) and fills the result with the data a
 * server of that schema writes: accounts with grants and charges, keys, exact holds open (in flight
 * and dangling), leases open of a dead instance, job holds, usage rows, video jobs in every state
 * (their bytes where that schema kept them: in the row before 0007, in `blobs` after), webhook
 * endpoints and deliveries, stored responses.
 *
 * The SQL is built from the schema found in the database (information_schema), not from a copy per
 * migration: a row is written with the columns that exist, a NOT NULL column this file has never
 * heard of (a sibling's new migration) gets a value of its type, and a table that does not exist
 * yet is skipped. So a new migration is picked up without touching this file; a migration that
 * changes what a column *means* needs a line here (as 0004's lease kind and 0007's blobs have).
 *
 * `expected` is what the API must answer for that data after the upgrade: balances, keys, jobs,
 * stored responses, usage.
 */
import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../src/db/index.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { migrate, type Db } from "../../src/db/index.ts";
import { createSecretBox } from "../../src/modules/webhooks/secret-box.ts";

/** REELAY_SECRET_KEY of the fixture (its webhook secrets are sealed with it) */
export const FIXTURE_SECRET_KEY = "fixture-secret-key-0123456789abcdef0123";

interface Column {
  name: string;
  udt: string;
  nullable: boolean;
  hasDefault: boolean;
}
type Schema = Map<string, Map<string, Column>>;

async function readSchema(db: Tx): Promise<Schema> {
  const rows = await query<{ table_name: string; column_name: string; udt_name: string; is_nullable: string; column_default: string | null; is_identity: string }>(db, sql`
    SELECT table_name, column_name, udt_name, is_nullable, column_default, is_identity
    FROM information_schema.columns WHERE table_schema = 'public'`);
  const s: Schema = new Map();
  for (const r of rows) {
    if (!s.has(r.table_name)) s.set(r.table_name, new Map());
    s.get(r.table_name)!.set(r.column_name, { name: r.column_name, udt: r.udt_name, nullable: r.is_nullable === "YES", hasDefault: r.column_default !== null || r.is_identity === "YES" });
  }
  return s;
}

/** a value of the column's type for a NOT NULL column without default that the fixture does not know */
function filler(c: Column): unknown {
  if (c.udt.startsWith("_")) return [];
  if (/^int|^float|^numeric/.test(c.udt)) return 0;
  if (c.udt === "bool") return false;
  if (c.udt === "timestamptz" || c.udt === "timestamp") return new Date();
  if (c.udt === "jsonb" || c.udt === "json") return {};
  if (c.udt === "bytea") return new Uint8Array(0);
  return "fixture";
}

const arrayLiteral = (xs: unknown[]) => `{${xs.map((x) => `"${String(x).replace(/["\\]/g, (m) => "\\" + m)}"`).join(",")}}`;

/** a parameter as text plus an explicit cast: the same on postgres.js and PGlite */
function param(c: Column, v: unknown) {
  if (v === null || v === undefined) return sql`NULL`;
  let text: string;
  if (c.udt === "bytea") return sql`decode(${Buffer.from(v as Uint8Array).toString("hex")}, 'hex')`;
  if (c.udt.startsWith("_")) text = arrayLiteral(v as unknown[]);
  else if (c.udt === "jsonb" || c.udt === "json") text = JSON.stringify(v);
  else if (v instanceof Date) text = v.toISOString();
  else text = String(v);
  return sql`${text}::${sql.raw(c.udt.startsWith("_") ? `${c.udt.slice(1)}[]` : c.udt)}`;
}

class Writer {
  constructor(private readonly db: Tx, readonly schema: Schema) {}
  has(table: string, column?: string) {
    const t = this.schema.get(table);
    return Boolean(t && (!column || t.has(column)));
  }
  /** insert what the table has of `row` (skipped when the table does not exist yet) */
  async insert(table: string, row: Record<string, unknown>) {
    const cols = this.schema.get(table);
    if (!cols) return;
    const values: Array<[Column, unknown]> = [];
    for (const c of cols.values()) {
      if (c.name in row) values.push([c, row[c.name]]);
      else if (!c.nullable && !c.hasDefault) values.push([c, filler(c)]);
    }
    await this.db.execute(sql`INSERT INTO ${sql.raw(`"${table}"`)} (${sql.raw(values.map(([c]) => `"${c.name}"`).join(", "))}) VALUES (${sql.join(values.map(([c, v]) => param(c, v)), sql`, `)})`);
  }
}

export interface FixtureAccount {
  id: string;
  key: string;
  balance: number;
  /** held after the sweep: in-flight exact holds and open job holds (dangling holds and the dead instance's lease are released) */
  heldAfterSweep: number;
  usageRefs: string[];
}
export interface FixtureJob {
  id: string;
  accountId: string;
  status: string;
  seed: number;
  size: string;
  seconds: number;
  model: string;
  /** completed: the MP4's bytes */
  result: Uint8Array | null;
  errorCode: string | null;
}
export interface FixtureResponse {
  id: string;
  accountId: string;
  text: string;
}
export interface Fixture {
  migrations: string[];
  accounts: FixtureAccount[];
  jobs: FixtureJob[];
  responses: FixtureResponse[];
  webhooks: Array<{ id: string; accountId: string; url: string }>;
  revokedKey: string;
}

export const MODEL = "preview-motion";
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);
const minutesAhead = (m: number) => new Date(Date.now() + m * 60_000);
/** a few bytes that are not an MP4 but are stored and served as one */
const fakeMp4 = (tag: string) => new TextEncoder().encode(`\0\0\0\x18ftypisom fixture video ${tag}`);
/** a 1x1 PNG */
const PNG = Uint8Array.from(Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64"));

/** Apply migrations 0..n (inclusive) and fill the database as a server of that schema would have. */
export async function buildFixture(db: Db, n: number, tag = "f"): Promise<Fixture> {
  const migrations = MIGRATIONS.slice(0, n + 1);
  await migrate(db, migrations);
  // one transaction: a commit per row cost ~20 ms each on a loaded machine
  return db.transaction(async (tx) => fill(tx, migrations.map((m) => m.name), tag));
}

async function fill(db: Tx, migrationNames: string[], tag: string): Promise<Fixture> {
  const w = new Writer(db, await readSchema(db));
  const leases = w.has("holds", "kind");
  const blobsInTable = !w.has("video_jobs", "result") && w.has("blobs");
  const box = createSecretBox(FIXTURE_SECRET_KEY);
  const fx: Fixture = { migrations: migrationNames, accounts: [], jobs: [], responses: [], webhooks: [], revokedKey: "" };

  for (let a = 0; a < 3; a++) {
    const id = `acct_${tag}${a}`;
    const grant = 5_000_000 + a * 1_000_000;
    let balance = grant;
    let held = 0;
    let heldAfterSweep = 0;
    let ledgerAt = 600;
    const ledger = (row: Record<string, unknown>) => w.insert("ledger", { account_id: id, created_at: minutesAgo(ledgerAt--), ...row });
    const hold = async (h: { id: string; ref: string; amount: number; kind: "request" | "job" | "lease"; state?: string; expiresAt: Date | null; owner?: string; charged?: number | null }) => {
      if (h.kind === "lease" && !leases) return false;
      await w.insert("holds", { id: h.id, account_id: id, ref: h.ref, amount: h.amount, state: h.state ?? "open", charged: h.charged ?? null, expires_at: h.expiresAt, kind: h.kind, owner: h.owner ?? null, in_flight: 0, created_at: minutesAgo(300) });
      return true;
    };
    await w.insert("accounts", { id, name: `fixture ${a}`, balance: 0, held: 0, rpm_limit: a === 2 ? 600 : null, created_at: minutesAgo(900) });
    await ledger({ kind: "grant", amount: grant, held_change: 0, ref: null, reason: "fixture grant" });

    const key = `rl-fixture${tag}${a}${"k".repeat(30)}`.slice(0, 43);
    await w.insert("api_keys", { id: `key_${tag}${a}`, account_id: id, name: "production", prefix: key.slice(0, 11), hash: createHash("sha256").update(key).digest("hex"), scopes: ["chat", "embeddings", "video"], allowed_models: null, created_at: minutesAgo(800), last_used_at: minutesAgo(5) });
    if (a === 0) {
      fx.revokedKey = `rl-fixturerevoked${tag}${"r".repeat(30)}`.slice(0, 43);
      await w.insert("api_keys", { id: `key_${tag}revoked`, account_id: id, name: "old", prefix: fx.revokedKey.slice(0, 11), hash: createHash("sha256").update(fx.revokedKey).digest("hex"), scopes: null, created_at: minutesAgo(800), revoked_at: minutesAgo(60) });
    }

    // settled requests: exact hold, charge, release of the rest, usage row
    const usageRefs: string[] = [];
    for (let r = 0; r < 4; r++) {
      const ref = `req_${tag}${a}_${r}`;
      const amount = 40_000, cost = 1_000 + 250 * r + a;
      const hid = `hold_${tag}${a}_${r}`;
      await hold({ id: hid, ref, amount, kind: "request", state: "settled", charged: cost, expiresAt: minutesAgo(200) });
      await ledger({ kind: "hold", amount: 0, held_change: amount, hold_id: hid, ref, reason: "chat request" });
      await ledger({ kind: "charge", amount: -cost, held_change: -cost, hold_id: hid, ref, reason: "chat usage" });
      await ledger({ kind: "release", amount: 0, held_change: -(amount - cost), hold_id: hid, ref, reason: "chat usage" });
      await w.insert("usage_records", { account_id: id, key_id: `key_${tag}${a}`, ref, kind: "chat", model: "use-lite", prompt_tokens: 12 + r, completion_tokens: 30, cost, status: 200, disconnected: r === 3, latency_ms: 40, route: "/v1/chat/completions", created_at: minutesAgo(200 - r) });
      balance -= cost;
      usageRefs.push(ref);
    }
    // in flight: an exact hold that has not expired (the request is still running)
    const live = `hold_${tag}${a}_live`;
    await hold({ id: live, ref: `req_${tag}${a}_live`, amount: 30_000, kind: "request", expiresAt: minutesAhead(30) });
    await ledger({ kind: "hold", amount: 0, held_change: 30_000, hold_id: live, ref: `req_${tag}${a}_live`, reason: "chat request" });
    held += 30_000;
    heldAfterSweep += 30_000;
    // dangling: the request's process died; the sweeper releases it
    const dead = `hold_${tag}${a}_dead`;
    await hold({ id: dead, ref: `req_${tag}${a}_dead`, amount: 20_000, kind: "request", expiresAt: minutesAgo(10) });
    await ledger({ kind: "hold", amount: 0, held_change: 20_000, hold_id: dead, ref: `req_${tag}${a}_dead`, reason: "chat request" });
    held += 20_000;
    // a lease of an instance that stopped, with one charge from it; its expiry has passed: swept
    const leaseId = `lease_${tag}${a}`;
    if (await hold({ id: leaseId, ref: leaseId, amount: 100_000 - 700, kind: "lease", owner: "old-instance#dead", charged: 700, expiresAt: minutesAgo(3) })) {
      await ledger({ kind: "lease", amount: 0, held_change: 100_000, hold_id: leaseId, ref: leaseId, reason: "credit leased ahead by instance old-instance#dead" });
      const ref = `req_${tag}${a}_leased`;
      await ledger({ kind: "charge", amount: -700, held_change: -700, hold_id: leaseId, ref, reason: "chat usage" });
      await w.insert("usage_records", { account_id: id, key_id: `key_${tag}${a}`, ref, kind: "chat", model: "use-lite", prompt_tokens: 5, completion_tokens: 5, cost: 700, status: 200, latency_ms: 20, route: "/v1/chat/completions", created_at: minutesAgo(4) });
      balance -= 700;
      held += 100_000 - 700;
      usageRefs.push(ref);
    }

    // video jobs, one per state
    const states = ["queued", "processing", "completed", "failed", "expired"] as const;
    for (const [s, status] of states.entries()) {
      const jid = `vid_${tag}${a}_${status}`;
      const jobHold = `hold_${tag}${a}_job_${status}`;
      const price = 200_000;
      const active = status === "queued" || status === "processing";
      const result = status === "completed" ? fakeMp4(jid) : null;
      // job holds have no expiry (0004 calls them kind 'job'); the active ones are still open
      await hold({ id: jobHold, ref: jid, amount: price, kind: "job", state: active ? "open" : status === "failed" ? "released" : "settled", charged: active ? null : status === "failed" ? null : price, expiresAt: null });
      await ledger({ kind: "hold", amount: 0, held_change: price, hold_id: jobHold, ref: jid, reason: "video job" });
      if (active) {
        held += price;
        heldAfterSweep += price;
      } else if (status === "failed") {
        await ledger({ kind: "release", amount: 0, held_change: -price, hold_id: jobHold, ref: jid, reason: "video job failed" });
      } else {
        await ledger({ kind: "charge", amount: -price, held_change: -price, hold_id: jobHold, ref: jid, reason: "video job" });
        await w.insert("usage_records", { account_id: id, key_id: `key_${tag}${a}`, ref: jid, kind: "video", model: MODEL, seconds: 2, cost: price, status: 200, latency_ms: 9_000, route: "/v1/videos/generations", created_at: minutesAgo(100 - s) });
        balance -= price;
        usageRefs.push(jid);
      }
      const job: Record<string, unknown> = {
        id: jid, account_id: id, key_id: `key_${tag}${a}`, model: MODEL, status, prompt: `a lighthouse, take ${s}`, negative_prompt: null, seed: 1000 + s, steps: 4, seconds: 2, width: 256, height: 256,
        image_mime: "image/png", hold_id: jobHold, idempotency_key: s === 0 ? `idem-${tag}${a}` : null, request_hash: null, attempts: status === "queued" ? 0 : 1,
        // the processing job's lease is held by a live-looking instance for a while: the readback sees it as it was
        lease_owner: status === "processing" ? "old-instance#busy" : null, lease_expires_at: status === "processing" ? minutesAhead(30) : null,
        next_run_at: status === "queued" ? minutesAhead(60) : minutesAgo(100),
        progress: status === "processing" ? 0.5 : null, error_code: status === "failed" ? "render_failed" : null, error_message: status === "failed" ? "the renderer crashed" : null,
        created_at: minutesAgo(120 - s), started_at: active && status === "queued" ? null : minutesAgo(119 - s), completed_at: active ? null : minutesAgo(110 - s),
        expires_at: status === "completed" ? minutesAhead(600) : status === "expired" ? minutesAgo(1) : null,
        webhook_url: s === 2 ? "https://hooks.example.com/reelay" : null, links_base: null, route: "/v1/videos/generations",
      };
      if (w.has("video_jobs", "image")) {
        job.image = active ? PNG : null;
        job.result = result;
      }
      if (blobsInTable) {
        // 0007 on: the bytes live behind the blob store
        job.blob_store = active || result ? "postgres" : null;
        job.result_size = result?.length ?? null;
        job.variants = [];
        if (active) await w.insert("blobs", { key: `videos/${jid}/source`, content_type: "image/png", size: PNG.length, data: PNG });
        if (result) await w.insert("blobs", { key: `videos/${jid}/video.mp4`, content_type: "video/mp4", size: result.length, data: result });
      }
      await w.insert("video_jobs", job);
      fx.jobs.push({ id: jid, accountId: id, status, seed: 1000 + s, size: "256x256", seconds: 2, model: MODEL, result, errorCode: status === "failed" ? "render_failed" : null });
    }

    // webhooks: an endpoint with one delivery done and one pending that a dead worker had leased
    if (w.has("webhook_endpoints")) {
      const ep = `whep_${tag}${a}`;
      await w.insert("webhook_account_secrets", { account_id: id, secret_ciphertext: box.seal(`whsec_${"s".repeat(32)}`, id) });
      await w.insert("webhook_endpoints", { id: ep, account_id: id, url: `https://hooks.example.com/${a}`, events: ["video.generation.completed", "video.generation.failed"], description: "fixture", secret_ciphertext: box.seal(`whsec_${"e".repeat(32)}`, id), enabled: true, created_at: minutesAgo(500) });
      const payload = JSON.stringify({ type: "video.generation.completed", data: { id: `vid_${tag}${a}_completed` } });
      await w.insert("webhook_deliveries", { id: `whd_${tag}${a}_done`, account_id: id, endpoint_id: ep, job_id: `vid_${tag}${a}_completed`, event_type: "video.generation.completed", url: `https://hooks.example.com/${a}`, payload, status: "delivered", attempts: 1, give_up_at: minutesAhead(1000), last_status: 200, delivered_at: minutesAgo(100), created_at: minutesAgo(101) });
      await w.insert("webhook_deliveries", { id: `whd_${tag}${a}_pending`, account_id: id, endpoint_id: ep, job_id: `vid_${tag}${a}_failed`, event_type: "video.generation.failed", url: `https://hooks.example.com/${a}`, payload, status: "pending", attempts: 2, next_attempt_at: minutesAhead(600), give_up_at: minutesAhead(1000), lease_owner: "old-instance#dead", lease_expires_at: minutesAgo(1), last_status: 503, created_at: minutesAgo(100) });
      fx.webhooks.push({ id: ep, accountId: id, url: `https://hooks.example.com/${a}` });
    }

    // stored responses
    if (w.has("responses")) {
      for (let r = 0; r < 2; r++) {
        const rid = `resp_${tag}${a}${r}${"0".repeat(20)}`;
        const text = `stored answer ${a}.${r}`;
        const body = {
          id: rid, object: "response", created_at: Math.floor(minutesAgo(50).getTime() / 1000), status: "completed", error: null, incomplete_details: null, model: "use-lite", output_text: text, previous_response_id: r === 1 ? `resp_${tag}${a}0${"0".repeat(20)}` : null,
          output: [{ type: "message", id: `msg_${tag}${a}${r}`, status: "completed", role: "assistant", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] }],
          usage: { input_tokens: 4, output_tokens: 4, total_tokens: 8 }, store: true,
        };
        await w.insert("responses", { id: rid, account_id: id, key_id: `key_${tag}${a}`, model: "use-lite", previous_response_id: body.previous_response_id, input: [{ type: "message", role: "user", content: `question ${r}` }], response: body, created_at: minutesAgo(50), expires_at: minutesAhead(60 * 24) });
        fx.responses.push({ id: rid, accountId: id, text });
      }
    }

    await db.execute(sql`UPDATE accounts SET balance = ${balance}, held = ${held} WHERE id = ${id}`);
    fx.accounts.push({ id, key, balance, heldAfterSweep, usageRefs });
  }
  return fx;
}
