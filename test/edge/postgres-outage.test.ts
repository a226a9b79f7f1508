/**
 * PostgreSQL goes away under traffic and comes back, on a cluster this test owns: while it is down
 * every request is a 503 service_unavailable with Retry-After and /readyz says not ready; nothing
 * is charged for refused requests; `pg_ctl stop -m fast` does not hang on reelay's connections; and
 * requests succeed again within 1 s of the database's return.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startServer, type Running } from "../../src/boot.ts";
import { createLogger } from "../../src/logger.ts";
import { ADMIN_TOKEN, testConfig } from "../support/harness.ts";
import { startPgCluster, type PgCluster } from "../support/pg-cluster.ts";

let pg: PgCluster;
let server: Running;
let url: string;
let key: string;
let accountId: string;

const admin = (path: string, body?: unknown) =>
  fetch(url + path, { method: body ? "POST" : "GET", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });

beforeAll(async () => {
  pg = await startPgCluster();
  const databaseUrl = await pg.createDatabase("reelay_outage");
  // holds of requests cut by the outage are released by the sweeper after 5 s; no approvals from a
  // credit lease without the database (by default they continue up to 5 s: test/billing/outage.test.ts)
  const config = testConfig({ DATABASE_URL: databaseUrl, REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_HOLD_TTL_SECONDS: "5", REELAY_HOLD_SWEEP_MS: "200", REELAY_KEY_CACHE_MS: "60000", REELAY_BILLING_OFFLINE_MS: "0" });
  server = await startServer(config, { logger: createLogger(config) });
  url = server.url!;
  accountId = (await (await admin("/admin/accounts", { name: "outage", amount: 10_000_000 })).json()).id;
  key = (await (await admin(`/admin/accounts/${accountId}/keys`, { name: "k" })).json()).key;
});

afterAll(async () => {
  await server?.stop();
  await pg?.destroy();
});

interface Sample { at: number; status: number; ms: number; retryAfter: string | null; code?: string; requestId: string | null }

async function embed(): Promise<Sample> {
  const at = performance.now();
  const res = await fetch(url + "/v1/embeddings", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "use-lite", input: "outage" }) });
  const body = (await res.json()) as { error?: { code: string } };
  return { at, status: res.status, ms: performance.now() - at, retryAfter: res.headers.get("retry-after"), code: body.error?.code, requestId: res.headers.get("x-request-id") };
}

test("503 while down, not ready, nothing charged for refused requests, recovery within 1 s", async () => {
  expect((await embed()).status).toBe(200);
  const samples: Sample[] = [];
  let running = true;
  // 4 clients in a loop: traffic during the stop, the outage and the return
  const traffic = Promise.all(Array.from({ length: 4 }, async () => {
    while (running) {
      samples.push(await embed());
      await Bun.sleep(10);
    }
  }));
  await Bun.sleep(300);
  const stopMs = await pg.stop("fast");
  const downAt = performance.now();
  await Bun.sleep(1500);
  const ready = await fetch(url + "/readyz");
  expect(ready.status).toBe(503);
  expect(((await ready.json()) as { status: string }).status).toBe("not_ready");
  // every route that needs the database says so the same way
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  for (const [method, path, body, asAdmin] of [
    ["GET", "/v1/account", undefined, false], ["GET", "/v1/usage", undefined, false], ["GET", "/v1/videos/generations", undefined, false],
    ["POST", "/v1/videos/generations", { model: "preview-motion", prompt: "zoom", image: png, seconds: 1 }, false],
    ["GET", "/admin/accounts", undefined, true], ["POST", `/admin/accounts/${accountId}/credits`, { amount: 5 }, true],
  ] as const) {
    const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${asAdmin ? ADMIN_TOKEN : key}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
    const json = (await res.json()) as { error?: { code: string; type: string } };
    expect({ path, status: res.status, code: json.error?.code, retryAfter: res.headers.get("retry-after") }).toEqual({ path, status: 503, code: "service_unavailable", retryAfter: "1" });
  }
  const startMs = await pg.start();
  const upAt = performance.now();
  // keep the traffic going until a success after the return, then 1 s more
  for (let i = 0; i < 100 && !samples.some((x) => x.at > upAt && x.status === 200); i++) await Bun.sleep(100);
  while (performance.now() < upAt + 2500) await Bun.sleep(100);
  running = false;
  await traffic;

  const during = samples.filter((s) => s.at > downAt + 100 && s.at + s.ms < upAt - startMs);
  expect(during.length).toBeGreaterThan(5);
  for (const s of during) {
    expect({ status: s.status, code: s.code, retryAfter: s.retryAfter }).toEqual({ status: 503, code: "service_unavailable", retryAfter: "1" });
    expect(s.requestId).toMatch(/^req_/);
    expect(s.ms).toBeLessThan(2_500); // fail fast: a refused connection, at worst the 2 s connect timeout
  }
  expect(samples.every((s) => s.status === 200 || s.status === 503)).toBe(true);
  const firstOk = samples.filter((s) => s.at > upAt && s.status === 200).sort((a, b) => a.at + a.ms - (b.at + b.ms))[0];
  expect(firstOk).toBeDefined();
  // when the first request that succeeded was sent (and answered), after the database was back
  const recoveryMs = Math.max(0, firstOk!.at - upAt);
  const answeredMs = firstOk!.at + firstOk!.ms - upAt;
  // recovered within 1 s: a success by then, and every request sent from then on succeeds (a pool
  // connection attempt begun while the server was still starting may fail once just before)
  const afterRecovery = samples.filter((s) => s.at > upAt + 1_000);
  if (process.env.OUTAGE_DEBUG) console.log(samples.filter((s) => s.at > upAt - 3000).map((s) => `${(s.at - upAt).toFixed(0)}:${s.status}:${s.ms.toFixed(0)}`).join(" "), "startMs", startMs);
  expect(recoveryMs).toBeLessThan(1_000);
  expect(afterRecovery.length).toBeGreaterThan(3);
  expect(afterRecovery.filter((s) => s.status !== 200).map((s) => `${(s.at - upAt).toFixed(0)} ms: ${s.status}`)).toEqual([]);
  expect(stopMs).toBeLessThan(10_000);
  expect((await fetch(url + "/readyz")).status).toBe(200);

  // money: every 200 charged exactly once (by its request id), nothing for a 503; no hold left once the sweeper has run
  const ok = samples.filter((s) => s.status === 200).length + 1;
  let acct: { balance: number; held: number } = { balance: 0, held: -1 };
  for (let i = 0; i < 75 && acct.held !== 0; i++) {
    await Bun.sleep(200);
    acct = (await (await admin(`/admin/accounts/${accountId}`)).json()) as { balance: number; held: number };
  }
  const ledger: Array<{ kind: string; amount: number; ref: string | null }> = [];
  for (let before: number | null = null, more = true; more; ) {
    const page = (await (await admin(`/admin/accounts/${accountId}/ledger?limit=500${before ? `&before=${before}` : ""}`)).json()) as { data: typeof ledger; has_more: boolean; next_before: number | null };
    ledger.push(...page.data);
    more = page.has_more;
    before = page.next_before;
  }
  const charges = ledger.filter((r) => r.kind === "charge");
  const chargedRefs = charges.map((r) => r.ref);
  expect(acct.held).toBe(0);
  for (const s of samples) {
    const n = chargedRefs.filter((ref) => ref === s.requestId).length;
    expect({ status: s.status, charges: n }).toEqual({ status: s.status, charges: s.status === 200 ? 1 : 0 });
  }
  expect(charges.length).toBe(ok);
  expect(acct.balance).toBe(10_000_000 + charges.reduce((n, r) => n + Number(r.amount), 0));
  console.log(`postgres outage: pg_ctl stop -m fast ${stopMs.toFixed(0)} ms under traffic; ${during.length} requests while down, all 503 (max ${Math.max(...during.map((s) => s.ms)).toFixed(0)} ms each); first successful request sent ${recoveryMs.toFixed(0)} ms (answered ${answeredMs.toFixed(0)} ms) after the database accepted connections again, ${samples.filter((s) => s.at > upAt && s.at <= upAt + 1000 && s.status !== 200).length} refused in the first second after; ${ok} charged, ${samples.length + 1 - ok} refused`);
});

test("after the outage a graceful stop does not wait on connections the outage broke", async () => {
  // postgres.js keeps a transaction's `begin` sent on a connection lost in the outage: it never
  // completes, and closing the pool waited out its 5 s end timeout for it on every stop
  const started = performance.now();
  await server.stop();
  const stopMs = performance.now() - started;
  expect(stopMs).toBeLessThan(2_000);
  console.log(`postgres outage: graceful stop after the outage ${stopMs.toFixed(0)} ms`);
});
